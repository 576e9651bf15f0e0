/* board_error.h - the board's error values: an HTTP status, an optional
 * Retry-After and a message a person can read, with what to do about the
 * usual storage failures; and the abort of a bug. */
#ifndef BOARD_BOARD_ERROR_H
#define BOARD_BOARD_ERROR_H

struct board_error {
        int status;      /* HTTP status to answer with (0 = no error) */
        int retry_after; /* seconds for Retry-After, 0 = none          */
        char msg[768];   /* always NUL-terminated, truncated if longer */
        /* The change may have been made after all (a post that a lock
         * holder had claimed before this request stopped waiting): the
         * answer must not say that nothing was done.  board_fail() clears
         * it. */
        int maybe_done;
};

#define BOARD_ERROR_INIT                                                                                     \
        {                                                                                                    \
                0, 0, "", 0                                                                                  \
        }

/* Fill *e (when not NULL) and return -1, so callers can
 * `return board_fail(err, 500, "...")`. */
int board_fail(struct board_error *e, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void board_error_clear(struct board_error *e);

/* The end of a message about a failed system call on the board's data
 * (errno `sys_errno`): what to do about the usual storage failures
 * (" (the disk is full)"), or "". */
const char *storage_hint(int sys_errno);

/* The status for a failed system call on the board's data: 503 when the
 * storage is out of reach for now (a network filesystem whose server or
 * link is down: ENOTCONN, ETIMEDOUT, ...), which a retry may get past;
 * else 500. */
int storage_status(int sys_errno);

/* board_fail() for a failed system call on the board's data: "MESSAGE:
 * strerror(sys_errno)" and its storage_hint(), with storage_status() (and
 * Retry-After 1 with a 503). */
int board_fail_storage(struct board_error *e, int sys_errno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A value no configuration can give reached code that dispatches on it
 * (a lock mode without a row, a write method without a case): a bug, not
 * bad input, since the configuration parser admits only values the board
 * has.  Says on stderr what the value was, and aborts. */
_Noreturn void board_bug_unknown(const char *what, int value);

#endif
