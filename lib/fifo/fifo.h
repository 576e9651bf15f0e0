/* fifo.h - what the queue module's files share (dir_fifo.c: the tickets
 * and the queue's steps; dir_fifo_view.c: the thread's view of a queue):
 * a handle's place in a queue.  The protocols are at the top of each. */
#ifndef DIRLOCK_FIFO_H
#define DIRLOCK_FIFO_H

#include "dir.h"

struct dl_fifo_view;

/* A handle's place in the queue of the slots it waits for (its
 * queue_state, dir.h). */
struct dl_fifo {
        char *dir;                     /* the queue: D/NAME.fifo, or the slots' own */
        char *ticket;                  /* our ticket path while queued, NULL        */
        unsigned long long ticket_seq; /* and its number                            */
        dl_time ticket_renewed;        /* when it was made or last renewed          */
        /* The current wait's: the ticket of the waiter we follow (or
         * NULL), whether that waiter is a task of this thread followed
         * through the view (`local`), and whether the slots were free at
         * the last re-check (a waiter behind, without DIRLOCK_FIFO). */
        char *ahead;
        bool local;
        bool free_before;
        /* While queued through the thread's view of the queue: */
        struct dl_fifo_view *view;
        struct dl_fifo *view_prev, *view_next; /* the view's other members */
        dl_listener *wake;                     /* the waiter's, poked when the one ahead goes */
};

static inline struct dl_fifo *dl_fifo_of(const dirlock *h)
{
        return (struct dl_fifo *)dl_dir_of(h)->queue_state;
}

/* ---- the names of tickets (dir_ticket.c) ---------------------------------- */

/* QUEUE_DIR/t.<SEQ>: malloc'd, NULL when out of memory. */
char *dl_layout_ticket(const char *queue_dir, unsigned long long seq);
/* "t.<SEQ>": 1 and *seq, else 0. */
int dl_layout_ticket_seq(const char *leaf, unsigned long long *seq);

/* ---- the thread's view of a queue (dir_fifo_view.c) --------------------- */

/* Whether h's queue is followed through a view: a task's (a pending
 * acquire, lib/async), where inotify hears the queue's changes. */
bool dl_view_wanted(const dirlock *h);
/* The thread's view of queue `dir`, made when there is none (NULL when
 * it cannot be had). */
struct dl_fifo_view *dl_view_get(const char *dir);
/* A second member's join makes a view active (ACTIVE in dir_fifo_view.c). */
void dl_view_activate(struct dl_fifo_view *v);
/* Whether the view follows its directory now (its events applied, read
 * again when it had stopped; `self`, the looker's own listener, is not
 * kicked); never while it is not active.  Its largest ticket seen. */
bool dl_view_sync(struct dl_fifo_view *v, const dl_listener *self);
unsigned long long dl_view_max(const struct dl_fifo_view *v);
/* f joins (its ticket `seq` made) or leaves the view (its slot goes). */
void dl_view_join(struct dl_fifo_view *v, struct dl_fifo *f, unsigned long long seq);
void dl_view_leave(struct dl_fifo *f);
/* A view nobody joined goes. */
void dl_view_release(struct dl_fifo_view *v);
/* Whether f's queue is followed through the view now: its directory's
 * changes kick the waiter behind (no ticket to watch). */
bool dl_view_follows(const struct dl_fifo *f);
/* dl_fifo_ahead through the view (dir_fifo.c's contract). */
int dl_view_ahead(dirlock *h, dl_record *ahead, char **ahead_path, bool *local, dirlock_error *err);

#endif
