/* keeper.h - dirlock's keeper (keeper.c): a child of dirlock, forked once
 * the locks are taken and before the command is let run, that keeps the
 * command's locks for as long as the command lives, whatever becomes of
 * dirlock itself (killed, stopped). */
#ifndef DIRLOCK_BIN_KEEPER_H
#define DIRLOCK_BIN_KEEPER_H

#include "hold.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

/* What dirlock and its keepers tell each other, in a page both share
 * (made before the first keeper is forked).  Each flag only ever goes
 * from 0 to 1. */
struct keeper_news {
        atomic_int told;        /* the command was told of a lost lock (SIGTERM): by whoever set it */
        atomic_int held_at_end; /* a keeper found every lock held right after the command ended */
};

struct keeper {
        struct keeper_news *news;         /* the shared page; NULL where none could be made  */
        pid_t pid;                        /* the running keeper, 0: none                   */
        int ctl[2];                       /* dirlock holds both ends, a keeper the read     */
                                          /* end: at its EOF, dirlock is gone               */
        pid_t command;                    /* the command whose locks it keeps               */
        int command_fd;                   /* a pidfd of it, -1 where the kernel has none     */
        unsigned long long command_start; /* its start time, to poll it without a pidfd     */
        bool failed;                      /* a fork failed: no keeper from here on           */
};

/* Get ready to keep the locks of `command` (dirlock's child, not yet
 * waited for): 0, or -1 with errno. */
int keeper_init(struct keeper *k, pid_t command);
/* Fork a keeper of hold `h`; `other_fd` (-1: none) is a descriptor of
 * dirlock's that it must not keep open (the command's go pipe).  On
 * failure dirlock says so and goes on without one. */
void keeper_start(struct keeper *k, struct hold *h, int other_fd);
/* In dirlock's loop, after a SIGCHLD: when the keeper was killed (it is
 * reaped), say so and start another; one that gave up on its own is not
 * started again. */
void keeper_check(struct keeper *k, struct hold *h);
/* Stop the keeper (SIGKILL: it does nothing to the locks, whatever it was
 * doing) and reap it, before dirlock releases the locks itself. */
void keeper_stop(struct keeper *k);
/* Whether the caller is the one to tell the command of a lost lock (and
 * send it SIGTERM): true for the first of dirlock and its keeper to ask,
 * so that the command hears it once; true always without a shared page. */
bool keeper_claim_telling(struct keeper *k);
/* Whether a keeper found every lock held right after the command ended:
 * a loss dirlock finds later came after the command, not while it ran. */
bool keeper_held_at_end(const struct keeper *k);
/* Free what keeper_init made. */
void keeper_close(struct keeper *k);

#endif
