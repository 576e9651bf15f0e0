/* random.h - random bytes for post ids, temp file names, CSRF cookies and
 * secrets (getrandom). */
#ifndef BOARD_RANDOM_H
#define BOARD_RANDOM_H

#include <stddef.h>

#include "board_error.h"

/* Fill buf with `n` random bytes.  0, or -1 with a 500 error. */
int random_bytes(void *buf, size_t n, struct board_error *err);

#endif
