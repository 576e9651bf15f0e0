/* hex.h - lower-case hex of bytes (post ids, temp names, CSRF values). */
#ifndef BOARD_HEX_H
#define BOARD_HEX_H

#include <stddef.h>

/* Lower-case hex of n bytes into out (2n+1 bytes, NUL-terminated). */
void hex_encode(const unsigned char *in, size_t n, char *out);

#endif
