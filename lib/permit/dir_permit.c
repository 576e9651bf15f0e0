/* permits.c - counting locks in a directory space: lock NAME admits at most
 * N holders at once, each holding one of N permits (dirlock_acquire_permit),
 * and every permit is an exclusive lock of its own.
 *
 * LAYOUT (layout.h).  D/NAME.permits/n<N>/ holds the permits of the
 * holders that ask for N: permit K (0 <= K < N) is the lock directory
 * D/NAME.permits/n<N>/<K>, taken, released, refreshed, judged and broken
 * exactly as D/NAME.lock is (exclusive.c): a prepared directory
 * D/.NAME.<T>.new holding owner.<T> is renamed onto it.  Waiters queue in
 * D/NAME.permits/queue/ and wait as the waiters of a lock do (lib/core/dir_queue.c
 * dl_dir_take): the first one is woken by releases (the rmdir of a permit in
 * n<N>/), every other one by the departure of the waiter ahead.
 *
 * INVARIANT P (never more than N): a holder that asked for N holds one of
 * the N lock directories of n<N>, and each of them is held by at most one
 * owner entry (INVARIANTS A and B of exclusive.c).  So at most N holders
 * asking N hold at any moment, through every crash, pause and stale break
 * the exclusive lock survives, whatever the interleaving: the count is
 * never read and then acted on, it is the number of directories.
 * No permit is leaked: a permit whose holder died holds an owner entry
 * that every judging attempt (below) judges and breaks as a lock's -- at
 * once when the holder is provably dead on this host, else after its
 * stale age.  No permit is lost: a permit is free exactly when its
 * directory is absent or empty (INVARIANT A), and a release, a break, or
 * a crash between a holder's unlink and rmdir all leave it so.
 *
 * INVARIANT Q (one N at a time): no two holders that asked different N
 * hold at once, so "at most N" holds for every holder.  After taking a
 * permit of n<N>, a taker looks at every other group n<M> of
 * D/NAME.permits: a live holder there, and it gives its permit back and
 * fails with DIRLOCK_EINVAL naming that holder's N.  (Stale holders there
 * are broken, and empty permits and groups removed on the way.)  It is
 * the handshake of rwlock.c again: each taker makes itself visible (its
 * permit) before it looks at the others, and directory operations are
 * linearisable, so of two takers asking different N the later one to take
 * finds the earlier one's permit, which stays until the earlier one's own
 * look is over -- at least one of the two refuses, and only a refusing
 * taker ever lets go of a permit it did not return DIRLOCK_OK for.
 *
 * ATTEMPT (dl_permit_try): read the names of n<N> (one readdir); rename
 * the prepared directory onto each absent permit in turn until one rename
 * succeeds (EEXIST/ENOTEMPTY: another taker was faster).  A judging
 * attempt also looks into every permit that is present: a stale holder is
 * broken and its permit taken, an empty permit (its releaser died between
 * unlink and rmdir) is taken.  Judging attempts are the first of every
 * acquire and those of waiters whose watched holder died or whose
 * re-check interval passed (rwlock.c), so a dead holder's permit goes
 * back within that interval at most.  tests/model/permits.pml checks P and
 * Q, and that no permit is leaked, with spin.
 *
 * Like the exclusive lock it is built on, a counting lock works between
 * the clients of a network filesystem (lib/netfs/netfs.c; rename is atomic there);
 * its waiters then poll with backoff instead of queueing.  Permits come
 * and go whole by rename, as NAME.lock does, but NAME.permits, its groups
 * and its queue -- directories others make entries in -- are never
 * removed there once made (KEPT DIRECTORIES in lib/netfs/netfs.c): a taker renaming
 * into a group another client had just removed and made again, through
 * its cached name, would hold a permit nobody else could see.  Every
 * listing here is whole or an error (dl_dir_names): a group read short
 * would hide a holder from INVARIANT Q's look. */
#include "dir_fsops.h"
#include "permit.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Digits of the largest permit number. */
#define K_DIGITS 5

/* A handle's counting-lock state (dl_dir's `permits`). */
struct dl_permits {
        unsigned n;          /* the permits asked for                          */
        char *dir;           /* D/NAME.permits                                 */
        char *group;         /* D/NAME.permits/n<N>                            */
        unsigned char *seen; /* a bit per permit: present at the last listing  */
};

static struct dl_permits *permits_of(const dirlock *h)
{
        return dl_dir_of(h)->kind_state;
}

static const struct dl_dir_kind permit_kind;

/* ---- names ------------------------------------------------------------------ */

char *dl_layout_permit_group(const char *permits_dir, unsigned n)
{
        char leaf[sizeof DL_PERMITS_GROUP + 10];
        snprintf(leaf, sizeof leaf, DL_PERMITS_GROUP "%u", n);
        return dl_join(permits_dir, leaf, NULL);
}

/* 1..DIRLOCK_PERMITS_MAX decimal digits without a leading zero (or "0"
 * when `zero`): 1 and *v, else 0. */
static int small_number(const char *s, bool zero, unsigned *v)
{
        unsigned long x = 0;
        size_t n = strlen(s);
        if (n == 0 || n > 5 || (s[0] == '0' && (n > 1 || !zero)))
                return 0;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return 0;
                x = x * 10 + (unsigned)(*s - '0');
        }
        if (x > DIRLOCK_PERMITS_MAX)
                return 0;
        *v = (unsigned)x;
        return 1;
}

int dl_layout_permit_group_n(const char *leaf, unsigned *n)
{
        size_t p = sizeof DL_PERMITS_GROUP - 1;
        return strncmp(leaf, DL_PERMITS_GROUP, p) == 0 && small_number(leaf + p, false, n);
}

int dl_layout_permit_k(const char *leaf, unsigned *k)
{
        return small_number(leaf, true, k) && *k < DIRLOCK_PERMITS_MAX;
}

/* rmdir of a directory others make entries in: never on a network
 * filesystem (KEPT DIRECTORIES in lib/netfs/netfs.c); ENOTEMPTY leaves it. */
static void remove_kept(const char *dir, const dl_fs *fs)
{
        if (!fs->network)
                dl_fs_rmdir(dir);
}

/* ---- the handle ------------------------------------------------------------ */

/* The backend's `permit` entry: h (open, h->permits set) becomes a permit
 * of counting lock h->name: its paths. */
static int permit_prepare(dirlock *h, dirlock_error *err)
{
        struct dl_dir *d = dl_dir_of(h);
        struct dl_permits *p = calloc(1, sizeof *p);
        if (p == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        dl_dir_make_kind(h, &permit_kind, p);
        p->n = h->permits;
        p->dir = dl_layout_path(d->lockdir, h->name, DL_SUFFIX_PERMITS);
        p->group = p->dir ? dl_layout_permit_group(p->dir, p->n) : NULL;
        p->seen = calloc((p->n + 7) / 8, 1);
        /* lock_path and entry_path become the paths of the permit tried
         * or held (exclusive.c works on them), written in place. */
        size_t slot_len = (p->group ? strlen(p->group) : 0) + 1 + K_DIGITS + 1;
        char *slot = malloc(slot_len), *entry = malloc(slot_len + sizeof DL_OWNER_PREFIX + DIRLOCK_TOKEN_LEN);
        if (p->group == NULL || p->seen == NULL || slot == NULL || entry == NULL) {
                free(slot);
                free(entry);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory"); /* freed by permit_free */
        }
        free(d->lock_path);
        free(d->entry_path);
        d->lock_path = slot;
        d->entry_path = entry;
        snprintf(slot, slot_len, "%s/0", p->group);
        snprintf(entry, slot_len + sizeof DL_OWNER_PREFIX + DIRLOCK_TOKEN_LEN, "%s/" DL_OWNER_PREFIX "%s",
                 slot, h->token);
        return DIRLOCK_OK;
}

static void permit_free(dirlock *h)
{
        struct dl_permits *p = permits_of(h);
        if (p == NULL)
                return;
        free(p->dir);
        free(p->group);
        free(p->seen);
        free(p);
        dl_dir_of(h)->kind_state = NULL;
}

/* Point lock_path and entry_path at permit k (same lengths or shorter:
 * the buffers are made for the longest). */
static void aim(dirlock *h, unsigned k)
{
        struct dl_dir *d = dl_dir_of(h);
        size_t group_len = strlen(permits_of(h)->group);
        sprintf(d->lock_path + group_len, "/%u", k);
        sprintf(d->entry_path, "%s/" DL_OWNER_PREFIX "%s", d->lock_path, h->token);
}

static int make_dirs(dirlock *h, dirlock_error *err)
{
        struct dl_permits *p = permits_of(h);
        unsigned mode = dl_dir_of(h)->lockdir_mode;
        for (int i = 0; i < 2; i++) {
                const char *dir = i == 0 ? p->dir : p->group;
                if (dl_fs_mkdir_in(dir, mode) == 0 || errno == EEXIST)
                        continue;
                int e = errno;
                if (e == ENOENT && i == 0 && !(h->opts.flags & DIRLOCK_NO_MKDIR) &&
                    dl_make_dirs(dl_dir_of(h)->lockdir) == 0 && dl_fs_mkdir_in(dir, mode) == 0)
                        continue; /* the lock directory itself was removed */
                return dl_fail(err, e == EACCES || e == EPERM ? DIRLOCK_EPERM : DIRLOCK_EIO, e,
                               "cannot create '%s'", dir);
        }
        return DIRLOCK_OK;
}

/* List which permits of our group are present into p->seen; their number. */
static int read_group(dirlock *h, unsigned *present, dirlock_error *err)
{
        struct dl_permits *p = permits_of(h);
        memset(p->seen, 0, (p->n + 7) / 8);
        *present = 0;
        char **names;
        size_t n;
        int rc = dl_dir_names(p->group, dl_dir_of(h)->fs, &names, &n, err);
        if (rc != DIRLOCK_OK)
                return rc; /* none (ENOENT): made by the attempt */
        unsigned k;
        for (size_t i = 0; i < n; i++)
                if (dl_layout_permit_k(names[i], &k) && k < p->n && !(p->seen[k / 8] & (1u << (k % 8)))) {
                        p->seen[k / 8] |= (unsigned char)(1u << (k % 8));
                        (*present)++;
                }
        dl_dir_names_free(names, n);
        return DIRLOCK_OK;
}

static bool permit_looks_free(dirlock *h)
{
        unsigned present;
        return read_group(h, &present, NULL) != DIRLOCK_OK || present < permits_of(h)->n;
}

/* One attempt at a permit, judging the permits present when `judge`:
 * DIRLOCK_OK (lock_path is the permit, excl_held set), DIRLOCK_EBUSY
 * (*holder: a holder to watch, when one was judged), or an error. */
static int permit_try(dirlock *h, dl_record *holder, bool judge, dirlock_error *err)
{
        struct dl_permits *p = permits_of(h);
        dirlock_error local;
        if (err == NULL)
                err = &local;
        for (int round = 0;; round++) {
                unsigned present;
                int rc = read_group(h, &present, err);
                if (rc != DIRLOCK_OK)
                        return rc;
                bool vanished = false;
                rc = DIRLOCK_EBUSY;
                for (unsigned k = 0; k < p->n && rc == DIRLOCK_EBUSY; k++) {
                        bool there = p->seen[k / 8] & (1u << (k % 8));
                        if (there && !judge)
                                continue;
                        aim(h, k);
                        dl_record seen;
                        memset(&seen, 0, sizeof seen);
                        rc = dl_excl_try(h, &seen, there, err);
                        if (rc == DIRLOCK_EBUSY && seen.pid > 0)
                                *holder = seen; /* the one to watch */
                        if (rc == DIRLOCK_EIO && err->sys_errno == ENOENT) {
                                vanished = true; /* not made yet, or removed (cleanup) */
                                break;
                        }
                }
                if (!vanished)
                        return rc;
                if (round == 8)
                        return dl_fail(err, DIRLOCK_EIO, ENOENT, "the permits of lock '%s' keep vanishing",
                                       h->name);
                if ((rc = make_dirs(h, err)) != DIRLOCK_OK)
                        return rc;
        }
}

/* Whether group directory `group` holds a live permit; stale ones are
 * broken, empty ones removed, and the group too when that left it empty
 * (not on a network filesystem).  1 with *who filled, 0, -1 with err. */
static int group_live(dirlock *h, const char *group, dl_record *who, dirlock_error *err)
{
        const dl_fs *fs = dl_dir_of(h)->fs;
        char **names;
        size_t n;
        if (dl_dir_names(group, fs, &names, &n, err) != DIRLOCK_OK)
                return -1;
        int live = 0;
        unsigned k;
        for (size_t i = 0; i < n && live == 0; i++) {
                if (!dl_layout_permit_k(names[i], &k))
                        continue;
                char *slot = dl_join(group, names[i], NULL);
                dl_lock_view v;
                if (slot == NULL) {
                        live = -1;
                        dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                } else if (dl_lock_look(slot, fs, &v) != 0) {
                        live = -1;
                        dl_fail(err, DIRLOCK_EIO, errno, "cannot read '%s'", slot);
                } else if (v.state == DL_LOCK_OWNED &&
                           !dl_entry_stale(&v.rec, v.age, h->opts.stale_age, fs)) {
                        live = 1;
                        *who = v.rec;
                } else if (v.state == DL_LOCK_OWNED) {
                        dl_excl_break_entry(slot, v.leaf); /* ENOENT: gone already */
                } else if (v.state == DL_LOCK_FOREIGN && v.age <= h->opts.stale_age) {
                        live = 1; /* not ours to judge yet: count it as held */
                        memset(who, 0, sizeof *who);
                } else if (v.state != DL_LOCK_ABSENT) {
                        dl_lock_clear_foreign(slot); /* rmdir of an empty one, too */
                }
                free(slot);
        }
        dl_dir_names_free(names, n);
        if (live == 0)
                remove_kept(group, fs); /* ENOTEMPTY: someone took one meanwhile */
        return live;
}

/* INVARIANT Q: holding a permit of our group, look at the other groups. */
static int other_groups(dirlock *h, dirlock_error *err)
{
        struct dl_permits *p = permits_of(h);
        char **names;
        size_t n;
        int rc = dl_dir_names(p->dir, dl_dir_of(h)->fs, &names, &n, err);
        unsigned m;
        for (size_t i = 0; i < n && rc == DIRLOCK_OK; i++) {
                if (!dl_layout_permit_group_n(names[i], &m) || m == p->n)
                        continue;
                char *group = dl_join(p->dir, names[i], NULL);
                if (group == NULL) {
                        rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                        break;
                }
                dl_record who;
                int live = group_live(h, group, &who, err);
                free(group);
                if (live < 0)
                        rc = err->code;
                else if (live > 0)
                        rc =
                            dl_fail(err, DIRLOCK_EINVAL, 0,
                                    "counting lock '%s' is held with %u permit%s (by pid %ld on %s), not %u: "
                                    "its holders must agree on the number",
                                    h->name, m, m == 1 ? "" : "s", (long)who.pid,
                                    who.host[0] ? who.host : "an unknown host", p->n);
        }
        dl_dir_names_free(names, n);
        return rc;
}

static const struct dl_slots permit_slots;

/* Take a permit by the deadline (dl_dir_take, then INVARIANT Q). */
static int permit_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        dirlock_error local;
        if (err == NULL)
                err = &local;
        int rc = dl_dir_take(h, &permit_slots, deadline, err);
        if (rc != DIRLOCK_OK)
                return rc;
        rc = other_groups(h, err);
        if (rc != DIRLOCK_OK)
                dl_excl_release(h, NULL);
        return rc;
}

/* ---- from outside the holders --------------------------------------------- */

/* Append the live holders of group directory `group` (N = n) to *out. */
static int list_group(const char *group, unsigned n, double stale_age, const dl_fs *fs, dirlock_owner **out,
                      size_t *count, size_t *cap, dirlock_error *err)
{
        char **names;
        size_t nn;
        int rc = dl_dir_names(group, fs, &names, &nn, err);
        unsigned k;
        for (size_t i = 0; i < nn && rc == DIRLOCK_OK; i++) {
                if (!dl_layout_permit_k(names[i], &k) || k >= n)
                        continue;
                char *slot = dl_join(group, names[i], NULL);
                dl_lock_view v;
                if (slot == NULL) {
                        rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                } else if (dl_lock_look(slot, fs, &v) == 0 && v.state == DL_LOCK_OWNED) {
                        if (*count == *cap) {
                                size_t grown_cap = *cap ? *cap * 2 : 8;
                                dirlock_owner *grown = realloc(*out, grown_cap * sizeof **out);
                                if (grown == NULL)
                                        rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                                else {
                                        *out = grown;
                                        *cap = grown_cap;
                                }
                        }
                        if (rc == DIRLOCK_OK) {
                                dirlock_owner *o = &(*out)[(*count)++];
                                memset(o, 0, sizeof *o);
                                dl_lock_describe(&v, stale_age, fs, o);
                                o->permits = n;
                        }
                }
                free(slot);
        }
        dl_dir_names_free(names, nn);
        return rc;
}

static int permit_holders(const char *lockdir, const char *name, double stale_age, dirlock_owner **out,
                          size_t *count, size_t *cap, dirlock_error *err)
{
        char *dir = dl_layout_path(lockdir, name, DL_SUFFIX_PERMITS);
        if (dir == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        const dl_fs *fs = dl_fs_of(lockdir, NULL);
        char **names;
        size_t n;
        int rc = dl_dir_names(dir, fs, &names, &n, err);
        unsigned m;
        for (size_t i = 0; i < n && rc == DIRLOCK_OK; i++) {
                if (!dl_layout_permit_group_n(names[i], &m))
                        continue;
                char *group = dl_join(dir, names[i], NULL);
                rc = group == NULL ? dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory")
                                   : list_group(group, m, stale_age, fs, out, count, cap, err);
                free(group);
        }
        dl_dir_names_free(names, n);
        free(dir);
        return rc;
}

/* Break the stale permits of one group, remove its empty ones, and the
 * group when that left it empty (not on a network filesystem). */
static void clean_group(const char *group, const dl_fs *fs)
{
        char **names;
        size_t n;
        if (dl_dir_names(group, fs, &names, &n, NULL) != DIRLOCK_OK)
                return;
        unsigned k;
        for (size_t i = 0; i < n; i++) {
                if (!dl_layout_permit_k(names[i], &k))
                        continue;
                char *slot = dl_join(group, names[i], NULL);
                dl_lock_view v;
                if (slot != NULL && dl_lock_look(slot, fs, &v) == 0) {
                        if (v.state == DL_LOCK_OWNED &&
                            (dl_entry_stale(&v.rec, v.age, DIRLOCK_DEFAULT_STALE_AGE, fs) ||
                             (v.rec.pid > 0 && dl_record_owner_alive(&v.rec) == 0)))
                                dl_excl_break_entry(slot, v.leaf);
                        else if (v.state == DL_LOCK_EMPTY)
                                dl_fs_rmdir(slot); /* a lock directory: comes and goes whole */
                }
                free(slot);
        }
        dl_dir_names_free(names, n);
        remove_kept(group, fs);
}

/* dirlock_cleanup of one D/NAME.permits on filesystem `fs`: stale permits
 * broken, empty permits removed, and empty groups, queue and the
 * directory itself (not on a network filesystem: KEPT DIRECTORIES). */
static void permits_cleanup(const char *permits_dir, const dl_fs *fs)
{
        char **names;
        size_t n;
        if (dl_dir_names(permits_dir, fs, &names, &n, NULL) != DIRLOCK_OK)
                return;
        unsigned m;
        for (size_t i = 0; i < n; i++) {
                char *path = dl_join(permits_dir, names[i], NULL);
                if (path == NULL)
                        break;
                if (dl_layout_permit_group_n(names[i], &m)) {
                        clean_group(path, fs);
                } else if (strcmp(names[i], DL_PERMITS_QUEUE) == 0) {
                        dl_scan sc = {.active = "t"};
                        if (dl_scan_dir(path, DIRLOCK_DEFAULT_STALE_AGE, fs, &sc, NULL) == 0)
                                remove_kept(path, fs);
                }
                free(path);
        }
        dl_dir_names_free(names, n);
        remove_kept(permits_dir, fs); /* only if empty */
}

/* ---- the kind and the module ------------------------------------------------- */

/* The slots a permit's waiters wait for: the N permits of their group. */
static bool permit_looks_taken(dirlock *h)
{
        return !permit_looks_free(h);
}

/* The directory whose removals are the releases of h's permits. */
static const char *permit_release_dir(const dirlock *h)
{
        return permits_of(h)->group;
}

static char *permit_queue_dir(const dirlock *h)
{
        return dl_join(permits_of(h)->dir, DL_PERMITS_QUEUE, NULL);
}

/* A holder of one of the permits, for a message. */
static bool permit_holder_now(dirlock *h, dl_record *holder)
{
        dirlock_owner *o = NULL;
        size_t n = 0, cap = 0;
        bool found = permit_holders(dl_dir_of(h)->lockdir, h->name, h->opts.stale_age, &o, &n, &cap, NULL) ==
                         DIRLOCK_OK &&
                     n > 0;
        if (found) {
                memset(holder, 0, sizeof *holder);
                holder->pid = o[0].pid;
                snprintf(holder->host, sizeof holder->host, "%s", o[0].host);
        }
        free(o);
        return found;
}

static int permit_busy(dirlock *h, int code, const char *prefix, const dl_record *holder, dirlock_error *err)
{
        return dl_fail(err, code, 0, "%sthe %u permit%s of lock '%s' %s held, e.g. by pid %ld on %s", prefix,
                       h->permits, h->permits > 1 ? "s" : "", h->name, h->permits > 1 ? "are all" : "is",
                       (long)holder->pid, holder->host[0] ? holder->host : "an unknown host");
}

static const struct dl_slots permit_slots = {
    .target = DL_FOR_PERMIT,
    .kind = DIRLOCK_WAIT_PERMIT,
    .attempt = permit_try,
    .looks_taken = permit_looks_taken,
    .looks_free = permit_looks_free,
    .release_dir = permit_release_dir,
    .queue_dir = permit_queue_dir,
    .holder_now = permit_holder_now,
    .busy = permit_busy,
};

/* A permit is held, refreshed, checked and released as a lock directory
 * is (lock_path points at it). */
static const struct dl_dir_kind permit_kind = {
    .what = "a permit of a counting lock",
    .acquire = permit_acquire,
    .release = dl_excl_release,
    .release_kept = dl_excl_release_kept,
    .refresh = dl_excl_refresh,
    .check = dl_excl_check,
    .close = permit_free,
};

/* dirlock_inspect: the counting lock of `name`, its N and the permits held. */
static void permit_inspect(const char *lockdir, const char *name, double stale_age, dirlock_owner *owner)
{
        dirlock_owner *held = NULL;
        size_t n = 0, cap = 0;
        if (permit_holders(lockdir, name, stale_age, &held, &n, &cap, NULL) == DIRLOCK_OK && n > 0) {
                owner->permits = held[0].permits;
                owner->permit_holders = (unsigned)n;
        }
        free(held);
}

static void permit_cleanup(const char *lockdir, const dl_fs *fs, const char *leaf, const char *path)
{
        (void)lockdir;
        if (dl_layout_has_suffix(leaf, DL_SUFFIX_PERMITS))
                permits_cleanup(path, fs);
}

static const struct dl_dir_kind *const permit_kinds[] = {&permit_kind, NULL};
static const dl_backend permit_entries = {.permit = permit_prepare};

static struct dl_dir_module permit_module = {
    .name = "the counting-lock module (lib/permit)",
    .offers = &permit_entries,
    .kinds = permit_kinds,
    .inspect = permit_inspect,
    .holders = permit_holders,
    .cleanup = permit_cleanup,
};
DL_DIR_MODULE(permit_module)
