/* utf8.h - UTF-8 validation and decoding (pure functions). */
#ifndef BOARD_UTF8_H
#define BOARD_UTF8_H

#include <stddef.h>
#include <stdint.h>

enum { UTF8_OK = 0, UTF8_EINVALID, UTF8_ECONTROL };

/* Decode one well-formed sequence at s (len > 0): returns its length (1..4)
 * and stores the code point, or 0 when s does not start a valid sequence
 * (overlong forms, surrogates and values above U+10FFFF are invalid). */
size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp);

/* 1 when the whole buffer is valid UTF-8. */
int utf8_valid(const char *s, size_t len);

/* UTF8_OK when s is valid UTF-8 without control characters; TAB, LF and
 * CR are allowed only when `multiline` is set.  *bad_pos (may be NULL) gets
 * the offset of the first offending byte. */
int utf8_check_text(const char *s, size_t len, int multiline, size_t *bad_pos);

/* How many characters (code points) valid UTF-8 s[0..len) holds: its
 * bytes that do not continue a sequence. */
size_t utf8_count(const char *s, size_t len);

#endif
