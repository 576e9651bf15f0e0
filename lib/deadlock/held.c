/* held.c - the locks this process holds, by thread, for the one question
 * deadlock detection asks of the process itself: does this thread ask,
 * through a new handle, for a lock it already holds in a conflicting
 * way?  Then it would wait for itself for ever, and it gets
 * DIRLOCK_EDEADLK at once, before anything is tried
 * (dl_held_self_deadlock) -- in every kind of space that gives a space
 * key, flock(2) files included, where a second open file of the same
 * process waits for the first one's lock.
 *
 * The table holds one row per handle that holds its lock: the handle,
 * and the process and thread that took it.  Rows are added when an
 * acquire (or a reentrant handle's first hold) succeeds and removed when
 * the lock is let go or the handle freed; a forked child's copy of its
 * parent's rows is told apart by the pid.  A handle counts as held by the
 * thread that took it, as its owner record says (owner.c); one taken with
 * DIRLOCK_NO_DEADLOCK, which another thread may let go, has no row.  A
 * lock server's search for knots asks it too (thread_holds): a hold its
 * records give this thread, under a token no row has, is no wait for
 * ever. */
#include "backend.h"
#include "deadlock.h"
#include "modes.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct row {
        const dirlock *h;
        pid_t pid, tid;
};

static struct {
        pthread_mutex_t mutex;
        struct row *rows;
        size_t n, cap;
} table = {.mutex = PTHREAD_MUTEX_INITIALIZER};

static const char *key_of(const dirlock *h)
{
        return h->be->space_key != NULL ? h->be->space_key(h) : NULL;
}

static void held_note(const dirlock *h, bool held)
{
        /* DIRLOCK_NO_DEADLOCK: never a thread's hold in any check. */
        if (h->be == NULL || h->be->space_key == NULL || (h->opts.flags & DIRLOCK_NO_DEADLOCK))
                return;
        pthread_mutex_lock(&table.mutex);
        size_t i = 0;
        while (i < table.n && table.rows[i].h != h)
                i++;
        if (!held && i < table.n) {
                table.rows[i] = table.rows[--table.n];
        } else if (held && i == table.n) {
                if (table.n == table.cap) {
                        size_t cap = table.cap ? table.cap * 2 : 16;
                        struct row *grown = realloc(table.rows, cap * sizeof *grown);
                        if (grown != NULL) {
                                table.rows = grown;
                                table.cap = cap;
                        }
                }
                if (table.n < table.cap) /* out of memory: unknown to the checks, no harm */
                        table.rows[table.n++] = (struct row){h, dl_self_pid(), dl_self_tid()};
        }
        pthread_mutex_unlock(&table.mutex);
}

/* Row r: this thread's, for a lock of h's backend in h's space. */
static bool ours_in_space(const struct row *r, const dirlock *h, const char *key)
{
        if (r->pid != dl_self_pid() || r->tid != dl_self_tid() || r->h == h || r->h->be != h->be)
                return false;
        const char *k = key_of(r->h);
        return k != NULL && strcmp(k, key) == 0;
}

/* Would `want` wait for ever for `held` (both this thread's, one name)? */
static bool waits_for_itself(const dirlock *held, const dirlock *want)
{
        if (held->permits > 0 || want->permits > 0)
                return false; /* a permit is its own lock; of N, the backend's check */
        if (held->opts.policy == DIRLOCK_POLICY_SIMPLE || want->opts.policy == DIRLOCK_POLICY_SIMPLE)
                return true;
        if (held->ranged != want->ranged)
                return true; /* a whole lock conflicts with every range */
        if (held->ranged && !(held->lo < want->hi && want->lo < held->hi))
                return false;
        return dl_modes_conflict(held->mode, want->opts.mode); /* the mode table, lib/rw/modes.c */
}

static int self_deadlock(const dirlock *h, dirlock_error *err)
{
        if (h->opts.timeout == 0 || (h->opts.flags & DIRLOCK_NO_DEADLOCK) || dl_task_current() != NULL)
                return DIRLOCK_OK; /* a try says busy; a pending acquire blocks no thread */
        const char *key = key_of(h);
        if (key == NULL)
                return DIRLOCK_OK;
        const dirlock *held = NULL;
        pthread_mutex_lock(&table.mutex);
        for (size_t i = 0; i < table.n && held == NULL; i++) {
                const dirlock *o = table.rows[i].h;
                if (ours_in_space(&table.rows[i], h, key) && strcmp(o->name, h->name) == 0 &&
                    waits_for_itself(o, h))
                        held = o;
        }
        pthread_mutex_unlock(&table.mutex);
        /* Still held?  One broken as stale meanwhile is no wait for ever.
         * (The handle is this thread's own: no other uses it now.) */
        if (held == NULL || held->be->check(held, NULL) != DIRLOCK_OK)
                return DIRLOCK_OK;
        return dl_fail(
            err, DIRLOCK_EDEADLK, 0,
            "deadlock: this thread (pid %ld) already holds lock '%s' (%s%s) through another handle, "
            "and would wait for itself for ever; take it again with dirlock_reacquire() on a "
            "DIRLOCK_REENTRANT handle",
            (long)dl_self_pid(), h->name, dirlock_mode_name(held->mode), held->ranged ? ", a range" : "");
}

static bool thread_holds(const char *token)
{
        bool found = false;
        pthread_mutex_lock(&table.mutex);
        for (size_t i = 0; i < table.n && !found; i++)
                found = table.rows[i].pid == dl_self_pid() && table.rows[i].tid == dl_self_tid() &&
                        strcmp(table.rows[i].h->token, token) == 0;
        pthread_mutex_unlock(&table.mutex);
        return found;
}

static const dl_handle_hooks held_hooks = {held_note, self_deadlock, thread_holds};

DL_ON_LOAD(held_register)
{
        dl_handle_hooks_set(&held_hooks);
}
