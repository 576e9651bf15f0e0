/* berr.h - error values of the board: an HTTP status, an optional
 * Retry-After and a message a person can read. */
#ifndef BOARD_BERR_H
#define BOARD_BERR_H

struct berr {
        int status;      /* HTTP status to answer with (0 = no error) */
        int retry_after; /* seconds for Retry-After, 0 = none          */
        char msg[768];   /* always NUL-terminated, truncated if longer */
};

#define BERR_INIT                                                                                            \
        {                                                                                                    \
                0, 0, ""                                                                                     \
        }

/* Fill *e (when not NULL) and return -1, so callers can `return berr_set(...)`. */
int berr_set(struct berr *e, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void berr_clear(struct berr *e);

#endif
