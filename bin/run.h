/* run.h - the lock-and-run mode of the dirlock command (run.c): take the
 * named locks with COMMAND as their partner, run COMMAND under them,
 * release them, and exit as the manual page says. */
#ifndef DIRLOCK_BIN_RUN_H
#define DIRLOCK_BIN_RUN_H

#include "dirlock.h"

#include <stdbool.h>
#include <stddef.h>

/* The name the command's messages start with. */
#define DIRLOCK_COMMAND_NAME "dirlock"

/* The statuses dirlock ends with besides COMMAND's own and the conflict
 * code (-E, default 1); man/dirlock.1, EXIT STATUS, says when. */
enum {
        EXIT_ERROR = 2,        /* bad usage, a system error, a lock not ours to break */
        EXIT_NO_FENCE = 3,     /* the locks were had but not their fences: not run    */
        EXIT_DEADLOCK = 4,     /* waiting would close a cycle of waits: not run       */
        EXIT_CANNOT_RUN = 126, /* COMMAND cannot be run (126 and 127 as a shell's)   */
        EXIT_NOT_FOUND = 127,
        EXIT_SIGNAL = 128, /* + N: COMMAND died of signal N                          */
};

/* What to take and what to run. */
struct run_request {
        const char *space;    /* the lock space (-d)                           */
        char **names;         /* the lock names                                */
        size_t count;         /* how many (one for a range)                    */
        bool ranged;          /* --range LO:HI of names[0]                     */
        double lo, hi;        /* its ends                                      */
        unsigned permits;     /* --permits N: one of N permits of names[0]     */
        dirlock_options opts; /* mode, policy, flags, timeout, stale age       */
        bool quiet;           /* -q: no message on conflict                    */
        int conflict_code;    /* -E: the status when the locks cannot be had   */
        char **command;       /* COMMAND [ARGS...], NULL-terminated            */
};

/* Take the locks, run the command, release; the exit status to end with. */
int run_under_locks(struct run_request *rq);

#endif
