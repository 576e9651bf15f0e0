/* waits.c - the wait register of a directory space: every process that
 * waits for a lock of D has an entry in D/.waits/ while it waits (a
 * blocked thread's from DL_WAIT_LIST_MS into its wait: WHEN), so that
 * dirlock_waiters() and `dirlock status` list every waiter -- for a whole
 * lock in any mode, an upgrade, a range, a permit -- and deadlock
 * detection (deadlock.c) can follow a waiting thread to what it waits for.
 *
 * ENTRIES (layout.h).  D/.waits/t.<B>.<NS>.<P>.<TID> is thread TID of
 * process P (on the host whose boot id is B, in pid namespace NS) blocked
 * in a wait: the name deadlock detection computes from a holder's owner
 * record.  D/.waits/o.<T> is any other wait of handle T: a pending
 * acquire's, which blocks no thread (the event loop runs on and may
 * release what the thread holds), or one taken with DIRLOCK_NO_DEADLOCK;
 * it is listed, never followed.  Each entry is a symlink whose target is
 * the wait record (lib/wait_record.c): the lock, what kind of wait and
 * mode, what blocks it, an id drawn for this one wait, and the waiter's
 * owner record with the moment the wait began.
 *
 * INVARIANT W: an entry t.<...> holding a record with id I exists only
 * while its thread is inside the one wait I names -- made once the wait
 * has lasted DL_WAIT_LIST_MS and before its first deadlock check, removed
 * on every way out before the acquire returns -- and I is never used
 * again.  So the same I
 * read at two moments means that thread waited, for what the record says,
 * all the time in between (deadlock.c builds on this).  Within the wait
 * only the record's `told` mark changes (dl_wait_told: the thread's own
 * deadlock check, ONE VICTIM in deadlock.c), by the same atomic rename.
 * A thread waits for
 * one thing at a time; a stale entry of its own (left by a wait that did
 * not end through dl_wait_end: a thread canceled mid-wait) is replaced.
 *
 * WHEN.  A thread's entry is made only once its wait has lasted
 * DL_WAIT_LIST_MS (the wait wakes for it): most waits for a lock in use
 * end sooner, and an entry made and removed is three directory
 * operations on the path of every hand-off (+26 % on a hand-off on ext4,
 * measured).  Nothing is lost: deadlock detection needs a waiter's entry
 * only from its own first check on (PROMPTNESS in deadlock.c), which
 * comes later, and a lister sees every wait that lasts.  Other entries
 * (o.<T>) are made at once: no wait of a pending acquire wakes for one.
 *
 * LIFE.  The waiter renews its entry every quarter of its stale age (as
 * holders refresh locks, INVARIANT C of exclusive.c): an entry older than
 * the stale age (the larger of the lister's and the one it recorded), or
 * whose process is provably dead on this host, belongs to a dead waiter,
 * and whoever lists the waiters or cleans up removes it.  The register is
 * for seeing and never stands in a lock's way: nothing waits for it, an
 * entry that cannot be made (a full disk) leaves the wait unlisted.
 *
 * On a network filesystem (lib/netfs/netfs.c) every call goes through fsops.c, a
 * listing is whole or an error, an entry's age breaks it only once this
 * thread has also seen it unchanged (CLOCKS), and D/.waits, which others
 * make entries in, is never removed (KEPT DIRECTORIES). */
#include "deadlock.h"
#include "dir_counter.h"
#include "dir_fsops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The moment `ms` milliseconds after the wait's start (`checked` until
 * the first check), now at the earliest. */
static dl_time since_start(const struct dl_wreg *w, double ms)
{
        double left = ms - dl_ms_since(&w->checked);
        return dl_deadline(left > 0 ? left / 1e3 : 0);
}

/* Make h's entry (w->path) now; the wait goes unlisted when it cannot
 * be made (the register is never in the way). */
static void write_now(dirlock *h, struct dl_wreg *w)
{
        char text[DL_WAIT_RECORD_MAX];
        w->unwritten = false;
        if (dl_wait_record_format(&w->rec, text, sizeof text) < 0 ||
            dl_wait_entry_write(w->path, text, h->token, dl_dir_of(h)->lockdir_mode) != 0) {
                if (w->waking)
                        dl_waiter_wake_by(NULL);
                w->waking = false;
                free(w->path);
                w->path = NULL;
                return;
        }
        w->renewed = dl_now();
}

static int wait_begin(dirlock *h, enum dl_wait_target target, int kind, int mode, dirlock_error *err)
{
        (void)err; /* the register is never in the way; the check comes later */
        struct dl_dir *d = dl_dir_of(h);
        if (d->wait_state == NULL && (d->wait_state = calloc(1, sizeof(struct dl_wreg))) == NULL)
                return DIRLOCK_OK; /* unlisted: never in the way */
        struct dl_wreg *w = d->wait_state;
        DL_ASSERT(w->path == NULL); /* one wait at a time */
        dl_wait_record *r = &w->rec;
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "%s", h->name);
        r->kind = kind;
        r->mode = mode;
        r->target = (char)target;
        r->permits = h->permits;
        r->pending = dl_task_current() != NULL;
        if (h->ranged) {
                r->lo = h->lo;
                r->hi = h->hi;
        }
        dl_record_self(&r->who, h->token, mode, h->opts.stale_age, h->opts.partner_pid, h->partner_start);
        w->node = !r->pending && !(h->opts.flags & DIRLOCK_NO_DEADLOCK);
        if (!w->node)
                r->who.tid = 0; /* nobody follows it: no thread to name */
        if (dl_random_token(r->id, NULL) != DIRLOCK_OK)
                return DIRLOCK_OK;
        w->path =
            w->node ? dl_layout_wait_thread(d->lockdir, r->who.boot_id, r->who.pidns, r->who.pid, r->who.tid)
                    : dl_layout_wait_other(d->lockdir, h->token);
        if (w->path == NULL)
                return DIRLOCK_OK;
        w->renewed = w->checked = dl_now();
        if (!w->node) {
                write_now(h, w);
                return DIRLOCK_OK;
        }
        /* The entry once the wait has lasted DL_WAIT_LIST_MS, and the
         * first check a little later still (most waits for a lock in use
         * end sooner: both would be work for nothing); the wait wakes for
         * them. */
        w->unwritten = true;
        w->waking = true;
        w->checks = 0;
        dl_time at = since_start(w, DL_WAIT_LIST_MS);
        dl_waiter_wake_by(&at);
        return DIRLOCK_OK;
}

static void wait_end(dirlock *h);

static int wait_step(dirlock *h, dirlock_error *err)
{
        struct dl_wreg *w = dl_dir_of(h)->wait_state;
        if (w == NULL || w->path == NULL)
                return DIRLOCK_OK;
        if (w->unwritten) {
                if (dl_ms_since(&w->checked) < DL_WAIT_LIST_MS)
                        return DIRLOCK_OK;
                write_now(h, w); /* WHEN: before the first check */
                if (w->path == NULL)
                        return DIRLOCK_OK;
                dl_time at = since_start(w, DL_DEADLOCK_FIRST_MS);
                dl_waiter_wake_by(&at);
        }
        if (dl_ms_since(&w->renewed) >= h->opts.stale_age * 1e3 / 4) {
                dl_fs_touch(w->path);
                w->renewed = dl_now();
        }
        /* Due: the first DL_DEADLOCK_FIRST_MS into the wait, the second
         * DL_DEADLOCK_SECOND_MS into it, then every DL_DEADLOCK_RECHECK_MS. */
        double after = w->checks == 0   ? DL_DEADLOCK_FIRST_MS
                       : w->checks == 1 ? DL_DEADLOCK_SECOND_MS - DL_DEADLOCK_FIRST_MS
                                        : DL_DEADLOCK_RECHECK_MS;
        if (!w->node || dl_ms_since(&w->checked) < after)
                return DIRLOCK_OK;
        w->checked = dl_now();
        if (++w->checks == 1) {
                dl_time at = dl_deadline((DL_DEADLOCK_SECOND_MS - DL_DEADLOCK_FIRST_MS) / 1e3);
                dl_waiter_wake_by(&at);
        } else if (w->waking) {
                w->waking = false;
                dl_waiter_wake_by(NULL); /* the rechecks ride on the waits' own */
        }
        int rc = dl_deadlock_check(h, &w->rec, err);
        if (rc != DIRLOCK_OK)
                wait_end(h);
        return rc;
}

static void wait_end(dirlock *h)
{
        struct dl_wreg *w = dl_dir_of(h)->wait_state;
        if (w == NULL || w->path == NULL)
                return;
        if (w->waking)
                dl_waiter_wake_by(NULL);
        w->waking = false;
        if (!w->unwritten)
                dl_fs_unlink(w->path);
        w->unwritten = false;
        free(w->path);
        w->path = NULL;
}

static void wait_close(dirlock *h)
{
        wait_end(h);
        free(dl_dir_of(h)->wait_state);
        dl_dir_of(h)->wait_state = NULL;
}

const struct dl_dir_waits dl_register_waits = {wait_begin, wait_step, wait_end, wait_close};

/* ---- from outside the waiters ------------------------------------------- */

/* Read entry `leaf` of the register `dir` (on `fs`): 1 a live waiter's
 * (*w and its age filled), 0 not an entry or gone, and a dead waiter's
 * removed -- dead when provably so on this host, or older than its stale
 * age (on a network filesystem, also seen unchanged long enough: CLOCKS
 * in lib/netfs/netfs.c). */
static int read_waiter(const char *dir, const char *leaf, const dl_fs *fs, dl_wait_record *w, double *age)
{
        if ((leaf[0] != DL_WAIT_THREAD && leaf[0] != DL_WAIT_OTHER) || leaf[1] != '.')
                return 0;
        char *path = dl_join(dir, leaf, NULL);
        if (path == NULL)
                return 0;
        long long now = dl_wall_ns(); /* the clock first: INVARIANT C */
        char text[DL_WAIT_RECORD_MAX];
        ssize_t n = dl_fs_readlink(path, text, sizeof text);
        struct stat st;
        if (n < 0 || dl_fs_lstat(path, &st) != 0) {
                free(path);
                return 0;
        }
        long long m = dl_ts_ns(&st.st_mtim), c = dl_ts_ns(&st.st_ctim), changed = m > c ? m : c;
        *age = (double)(now - changed) / 1e9;
        bool readable = (size_t)n < sizeof text && dl_wait_record_parse(text, (size_t)n, w) == 0;
        double limit = DIRLOCK_DEFAULT_STALE_AGE;
        if (readable && (double)w->who.stale_ms / 1e3 > limit)
                limit = (double)w->who.stale_ms / 1e3;
        bool aged = dl_fs_aged_out(fs, readable ? w->who.token : "", changed, *age, limit);
        bool dead = aged || (readable && dl_record_owner_alive(&w->who) == 0);
        if (dead)
                dl_fs_unlink(path);
        free(path);
        return readable && !dead;
}

/* Call fn for every live waiter of `name` (all when NULL). */
static int each_waiter(const char *lockdir, const char *name,
                       int (*fn)(const dl_wait_record *, double, void *), void *arg, dirlock_error *err)
{
        char *dir = dl_join(lockdir, DL_WAITS_DIR, NULL);
        if (dir == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        const dl_fs *fs = dl_fs_of(lockdir, NULL);
        char **names;
        size_t n;
        int rc = dl_dir_names(dir, fs, &names, &n, err);
        for (size_t i = 0; i < n && rc == DIRLOCK_OK; i++) {
                dl_wait_record w;
                double age;
                if (read_waiter(dir, names[i], fs, &w, &age) && (name == NULL || strcmp(w.name, name) == 0))
                        rc = fn(&w, age, arg);
        }
        dl_dir_names_free(names, n);
        free(dir);
        return rc;
}

struct listing {
        dirlock_waiter *v;
        size_t n, cap;
        dirlock_error *err;
};

static int add_waiter(const dl_wait_record *w, double age, void *arg)
{
        struct listing *l = arg;
        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 8;
                dirlock_waiter *grown = realloc(l->v, cap * sizeof *grown);
                if (grown == NULL)
                        return dl_fail(l->err, DIRLOCK_ENOMEM, 0, "out of memory");
                l->v = grown;
                l->cap = cap;
        }
        dirlock_waiter *o = &l->v[l->n++];
        memset(o, 0, sizeof *o);
        snprintf(o->name, sizeof o->name, "%s", w->name);
        o->kind = w->kind;
        o->mode = w->mode;
        o->lo = w->lo;
        o->hi = w->hi;
        o->permits = w->permits;
        o->pid = w->who.pid;
        o->tid = w->who.tid;
        o->start_time = w->who.start_time;
        snprintf(o->host, sizeof o->host, "%s", w->who.host);
        o->since = (double)w->who.acquired_ns / 1e9;
        o->age = age;
        o->pending = w->pending;
        o->owner_alive = dl_record_owner_alive(&w->who);
        return DIRLOCK_OK;
}

static int by_since(const void *a, const void *b)
{
        double x = ((const dirlock_waiter *)a)->since, y = ((const dirlock_waiter *)b)->since;
        return x < y ? -1 : x > y;
}

int dl_waits_list(const char *lockdir, const char *name, dirlock_waiter **out, size_t *count,
                  dirlock_error *err)
{
        struct listing l = {NULL, 0, 0, err};
        int rc = each_waiter(lockdir, name, add_waiter, &l, err);
        if (rc != DIRLOCK_OK) {
                free(l.v);
                return rc;
        }
        if (l.n > 1)
                qsort(l.v, l.n, sizeof *l.v, by_since);
        *out = l.v;
        *count = l.n;
        return DIRLOCK_OK;
}

static int count_one(const dl_wait_record *w, double age, void *arg)
{
        (void)w;
        (void)age;
        (*(unsigned *)arg)++;
        return DIRLOCK_OK;
}

unsigned dl_waits_count(const char *lockdir, const char *name)
{
        unsigned n = 0;
        return each_waiter(lockdir, name, count_one, &n, NULL) == DIRLOCK_OK ? n : 0;
}

struct names {
        char **v;
        size_t n, cap;
};

static int add_name(const dl_wait_record *w, double age, void *arg)
{
        (void)age;
        struct names *l = arg;
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->v[i], w->name) == 0)
                        return DIRLOCK_OK;
        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 8;
                char **grown = realloc(l->v, cap * sizeof *grown);
                if (grown == NULL)
                        return DIRLOCK_ENOMEM;
                l->v = grown;
                l->cap = cap;
        }
        if ((l->v[l->n] = strdup(w->name)) == NULL)
                return DIRLOCK_ENOMEM;
        l->n++;
        return DIRLOCK_OK;
}

int dl_waits_names(const char *lockdir, char ***names, size_t *count)
{
        struct names l = {NULL, 0, 0};
        int rc = each_waiter(lockdir, NULL, add_name, &l, NULL);
        if (rc != DIRLOCK_OK) {
                while (l.n > 0)
                        free(l.v[--l.n]);
                free(l.v);
                return rc;
        }
        *names = l.v;
        *count = l.n;
        return DIRLOCK_OK;
}

void dl_waits_cleanup(const char *lockdir)
{
        unsigned n = 0;
        each_waiter(lockdir, NULL, count_one, &n, NULL); /* removes the dead ones */
        char *dir = dl_join(lockdir, DL_WAITS_DIR, NULL);
        if (dir == NULL)
                return;
        /* Leftovers of a write cut short, older than any write: .n<T>, and
         * .v<T>, a verdict counter being made (deadlock.c), with its 0. */
        const dl_fs *fs = dl_fs_of(lockdir, NULL);
        char **names;
        size_t count;
        if (dl_dir_names(dir, fs, &names, &count, NULL) == DIRLOCK_OK) {
                long long now = dl_wall_ns();
                for (size_t i = 0; i < count; i++) {
                        bool entry = strncmp(names[i], ".n", 2) == 0;
                        if ((!entry && strncmp(names[i], DL_WAITS_PREP, 2) != 0) ||
                            !dl_layout_is_token(names[i] + 2, true))
                                continue;
                        char *path = dl_join(dir, names[i], NULL);
                        struct stat st;
                        if (path != NULL && dl_fs_lstat(path, &st) == 0 &&
                            (double)(now - dl_ts_ns(&st.st_ctim)) / 1e9 > DIRLOCK_DEFAULT_STALE_AGE) {
                                if (entry)
                                        dl_fs_unlink(path);
                                else
                                        dl_counter_prep_remove(path);
                        }
                        free(path);
                }
                dl_dir_names_free(names, count);
        }
        /* Only if empty; never on a network filesystem, where others make
         * their entries in it (KEPT DIRECTORIES in lib/netfs/netfs.c). */
        if (!fs->network)
                dl_fs_rmdir(dir);
        free(dir);
}
