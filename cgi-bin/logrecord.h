/* logrecord.h - one line of the message log: the message type of the board
 * and its serialization (pure, no global state; suitable for fuzzing).
 *
 *   no TAB time TAB name TAB subject TAB body TAB pwhash [TAB id] LF
 *
 * id, when present, is the post id that the pending-post queue gave the
 * message (LOGRECORD_ID_LEN lower-case hex digits, see postqueue.h); it is
 * how a message committed by a writer that then died is recognised.
 *
 * Text fields are written as given except '\' -> "\\", TAB -> "\t",
 * LF -> "\n", CR -> "\r", so any bytes round-trip:
 * parse(serialize(x)) == x for every record with no >= 1 and time >= 0. */
#ifndef BOARD_LOGRECORD_H
#define BOARD_LOGRECORD_H

#include <stddef.h>

#define LOGRECORD_ID_LEN 16

struct lr_text {
        char *ptr; /* NUL-terminated; may contain NUL bytes; NULL = empty */
        size_t len;
};

struct logrecord {
        long long no;   /* 1.. */
        long long time; /* seconds since the epoch, >= 0 */
        struct lr_text name;
        struct lr_text subject;
        struct lr_text body;
        struct lr_text pwhash;         /* crypt(3) hash or empty */
        char id[LOGRECORD_ID_LEN + 1]; /* post id or "" */
};

enum {
        LOGRECORD_OK = 0,
        LOGRECORD_EFIELDS, /* not six or seven TAB-separated fields  */
        LOGRECORD_ENUMBER, /* bad message number                     */
        LOGRECORD_ETIME,   /* bad time                               */
        LOGRECORD_EESCAPE, /* unknown escape or trailing backslash   */
        LOGRECORD_ELINE,   /* raw LF inside the line                 */
        LOGRECORD_ENOMEM,
        LOGRECORD_EID /* seventh field not a post id            */
};

/* 1 when s is a post id: LOGRECORD_ID_LEN lower-case hex digits. */
int logrecord_valid_id(const char *s, size_t len);

/* Parse one line (`len` bytes, an optional single trailing LF allowed).
 * On success *out owns new strings (all non-NULL); free with
 * logrecord_free().  On error *out is zeroed. */
int logrecord_parse(const char *line, size_t len, struct logrecord *out);

/* Serialize `rec` as one line ending in LF into a new buffer (*out,
 * *out_len; free with free()).  LOGRECORD_ENUMBER/ETIME when no < 1 or
 * time < 0. */
int logrecord_serialize(const struct logrecord *rec, char **out, size_t *out_len);

void logrecord_free(struct logrecord *rec);

/* 1 when both records hold the same values. */
int logrecord_equal(const struct logrecord *a, const struct logrecord *b);

/* Set a text field to a copy of s[0..len); 0 or LOGRECORD_ENOMEM. */
int lr_text_set(struct lr_text *t, const char *s, size_t len);

const char *logrecord_strerror(int code);

#endif
