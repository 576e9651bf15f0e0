/* rw_internal.h - what the reader-writer files (rwlock.c, rw_entries.c,
 * fifo.c) share: the per-handle reader-writer state, the entry directory
 * scanner and the FIFO ticket queue.  See lib/dir/rwlock.c for the protocol. */
#ifndef DIRLOCK_RW_INTERNAL_H
#define DIRLOCK_RW_INTERNAL_H

#include "dir.h"

/* Paths of one name's reader-writer files, all in the lock directory D
 * (the layout is in layout.h). */
struct dl_rw {
        char *readers_dir;             /* D/NAME.readers                      */
        char *r_path;                  /* D/NAME.readers/r.<T>                */
        char *a_path;                  /* D/NAME.readers/a.<T>                */
        char *w_path;                  /* D/NAME.readers/w.<T>                */
        char *up_path;                 /* D/NAME.up.<T>                       */
        char *wq_dir;                  /* D/NAME.wq                           */
        char *wq_entry;                /* D/NAME.wq/x.<T>                     */
        char *fifo_dir;                /* D/NAME.fifo                         */
        char *ranges_dir;              /* D/NAME.ranges                       */
        char *ticket;                  /* our ticket path while queued, NULL  */
        unsigned long long ticket_seq; /* and its number                 */
        dl_time ticket_renewed;        /* when it was made or last renewed */
        const char *reader_entry;      /* r_path or a_path while reading      */
        bool up_held;                  /* up_path is ours                     */
        bool wq_held;                  /* wq_entry is ours                    */
        bool ranges_absent_seen;       /* W taken, then no ranges_dir listed  */
        /* While queued through the thread's view of the queue (fifo.c): */
        struct dl_fifo_view *view;
        struct dl_rw *view_prev, *view_next; /* the view's other members       */
        dl_listener *wake;                   /* the waiter's, poked when the one ahead goes */
};

/* Allocate h->rw (idempotent).  DIRLOCK_OK or DIRLOCK_ENOMEM. */
int dl_rw_state(dirlock *h, dirlock_error *err);
/* Take W by the deadline, queued in h->rw->fifo_dir while it waits (the
 * protocol is above it in rwlock.c); for a counting lock's handle, one of
 * its permits (permits.c) the same way. */
int dl_take_w(dirlock *h, const dl_time *deadline, dirlock_error *err);

/* ---- entry directories (rw_entries.c) ---------------------------------- */

/* Result of scanning an entry directory. */
typedef struct dl_scan {
        const char *active;                   /* kinds counted as live holders ("ra")  */
        const char *admit_from;               /* with admit: rename "w." entries ...    */
        bool admit;                           /* ... to "a." (fair writer's first scan) */
        bool remember;                        /* record the tokens of live r./w. entries */
        bool admit_known;                     /* admit w.<T> only for remembered tokens  */
        char (*known)[DIRLOCK_TOKEN_LEN + 1]; /* remembered tokens (malloc'd)           */
        unsigned nknown, cap;
        unsigned live;     /* live entries of an active kind         */
        unsigned admitted; /* waiting readers let in by this scan    */
        bool have_one;     /* `one` holds a live holder's record     */
        dl_record one;
} dl_scan;

/* Scan `dir` (absent = empty; on filesystem `fs`): break every stale entry
 * (unlink exactly the judged path), count live entries whose kind letter is in s->active and,
 * when s->admit, rename live waiting entries w.<T> to a.<T> (only those
 * whose token was remembered by an earlier scan when s->admit_known).
 * s->remember: remember the tokens of the live r. and w. entries seen.
 * 0 or -1 with a dirlock_code in err; dl_rw_scan_done frees the memory. */
int dl_rw_scan(const char *dir, double stale_age, const dl_fs *fs, dl_scan *s, dirlock_error *err);
void dl_rw_scan_done(dl_scan *s);

/* Create entry `path` (our record, `mode`) in directory `dir`, making the
 * directory when it is missing (an empty one may be removed at any time:
 * by the last one out, or for NAME.readers by a writer).  0 or -1 with
 * errno. */
int dl_rw_entry_make(const char *dir, const char *path, const dirlock *h, int mode);

/* Remove our entry `path`, then `dir` if that left it empty (not on a
 * network filesystem: KEPT DIRECTORIES in netfs.c).  0, or -1 with errno
 * (ENOENT: the entry had been broken). */
int dl_rw_entry_drop(const dirlock *h, const char *dir, const char *path);

/* ---- FIFO ticket queue (fifo.c) ---------------------------------------- */

/* Take a ticket: the next sequence number in D/NAME.fifo. */
int dl_fifo_join(dirlock *h, dirlock_error *err);
/* 1 when no live ticket precedes ours (dead ones are broken on the way),
 * 0 otherwise with *ahead the nearest live waiter ahead; -1 on error.
 * Only the tickets from ours down to the nearest live one are read. */
int dl_fifo_first(dirlock *h, dl_record *ahead, dirlock_error *err);
/* The same, and with 0 also that waiter's ticket path in *ahead_path
 * (malloc'd; NULL otherwise): the entry a queued waiter watches.  `local`
 * (may be NULL): set when that waiter is a pending acquire of this thread,
 * followed through the thread's view of the queue -- then *ahead is not
 * read, nothing needs watching (the view pokes h->rw->wake when it goes)
 * and nothing needs re-checking. */
int dl_fifo_ahead(dirlock *h, dl_record *ahead, char **ahead_path, bool *local, dirlock_error *err);
/* Give the ticket back (idempotent). */
void dl_fifo_leave(dirlock *h);
/* Leave the thread's view of the queue, if in one (dl_rw_free). */
void dl_fifo_unview(struct dl_rw *rw);
/* Whether rw's queue is followed through the thread's view of it now: its
 * directory's changes kick the waiter behind (no ticket to watch). */
bool dl_fifo_viewed(const struct dl_rw *rw);
/* Renew the ticket's age while waiting, once `every_ms` have passed since
 * it was made or last renewed (0: every call). */
void dl_fifo_touch(dirlock *h, double every_ms);

#endif
