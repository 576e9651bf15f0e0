/* range.c - range locks in a directory space: shared, intent and
 * exclusive locks on half-open ranges [lo, hi) of lock NAME, with the
 * policies, upgrade of an intent range, downgrade and shrinking
 * (dirlock_acquire_range, dirlock_shrink).
 *
 * ENDPOINTS are doubles (finite, lo < hi): seed 002 keeps its tree as
 * nested real intervals, and a double holds every interval a bisecting
 * tree makes down to 52 levels; two ranges overlap when lo1 < hi2 and
 * lo2 < hi1.
 *
 * ENTRIES.  Every range holder and waiter is one entry (a symlink holding
 * its owner record) in D/NAME.ranges/, named
 *     <state><mode>.<seq>.<lo>.<hi>.<T>
 * state h (holds) or w (waits: a reservation), mode s (shared), i
 * (intent), x (exclusive) or u (an intent holder upgrading: it keeps
 * holding its range as intent and holds off new overlapping readers),
 * seq the holder's arrival number (DL_RANGE_SEQ_DIGITS digits), lo and hi
 * the IEEE-754 bits of the endpoints in hex (exact), T its token.
 * An entry's age counts from its last change (INVARIANT C, exclusive.c);
 * holders refresh it, waiters renew it while they wait.  A scan reads the
 * names only; an entry's record is read, and the entry broken if it is
 * stale or its owner is dead on this host, when it stands in someone's
 * way (so ranges that never meet never look at each other).
 *
 * THE META-LOCK.  Every scan of D/NAME.ranges and every change of an entry
 * except a holder's own removal (release) happens while holding the
 * meta-lock: flock(LOCK_EX) on the file D/.NAME.rmeta, held only for one
 * scan and the renames and creations that follow it -- never while
 * waiting for anything: well under a millisecond on tmpfs, a millisecond
 * or two on a busy ext4.  The kernel drops it when its holder dies, so it
 * needs no stale breaking; range locks need a local filesystem anyway (the
 * scans need every entry visible at once, as rwlock.c's readers do).  A
 * process stopped while it holds the meta-lock holds it up for the
 * others: they try with LOCK_NB and back off (from 50 us, jittered) until
 * their deadline.  So a scan never misses an entry that is
 * being renamed, and the arrival numbers are drawn in order (the largest
 * present plus one).  A release may unlink its entry at any time: a scan
 * that misses a leaving holder loses nothing.
 *
 * RANGES AMONG THEMSELVES (range_try, under the meta-lock).  Two entries
 * conflict when their ranges overlap and their modes conflict (the mode
 * table, lib/modes.c: s-s and s-i do not; i-i, x-anything, and u against a
 * new s or i do); under policy `simple` every pair does.  An acquirer is
 * blocked by every conflicting holder, and by conflicting waiters that
 * arrived before it (a smaller seq): all of them under policies fair and
 * simple; under `writer` not by waiting readers if it writes; under `reader`
 * not by waiting writers if it reads.  Waiters that arrived after it never
 * block it, so arrival numbers order every wait and no two waiters can hold
 * each other off, whatever their policies.  Not
 * blocked: it holds (a new held entry, or its waiting entry renamed to
 * held).  Blocked: it waits with a reservation (its waiting entry, created
 * on the first wait and keeping its seq), so that under `fair` a waiting
 * writer holds off new overlapping readers, and readers that waited before
 * it go first: neither side is locked out.
 *
 * RANGES AGAINST WHOLE LOCKS.  A whole-lock holder of NAME (dirlock_acquire)
 * conflicts with every range of NAME, whatever the modes.  This is the
 * handshake of rwlock.c's readers and writers again, between two groups:
 *   range:  1. hold (its held entry, under the meta-lock)
 *           2. look at W (D/NAME.lock, any holder) and the whole readers
 *              (live r./a. entries of D/NAME.readers); any -> withdraw
 *              (held entry back to waiting) and wait
 *   whole:  1. announce (take W, or its reader entry)
 *           2. look at D/NAME.ranges (rwlock.c, wait_ranges_clear); held entries
 *              -> wait, keeping its announcement, until none is left
 * Each side makes itself visible before it looks at the other, so of a
 * range and a whole holder at least one sees the other; the range side
 * always withdraws, so the whole side never waits for a range that waits
 * for it.  Whole holders thus go before range acquirers.
 *
 * UPGRADE (intent range -> exclusive): the entry becomes u (new overlapping
 * readers and intents wait), then, at each wake-up, x once no overlapping
 * shared holder is left; on timeout it goes back to i.  DOWNGRADE: x or i
 * -> s, at once.  SHRINK: the entry is renamed to the narrower range (a
 * holder can only narrow: growing could deadlock), and the waiters that
 * no longer overlap are woken by the rename.
 * CRASHES: a dead holder's entry is broken by the next scan (at once on
 * this host, else after the stale age), waking its waiters. */
#include "dir_range.h"
#include "dir_fsops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the handle's range state ----------------------------------------------- */

struct dl_range {
        struct dl_range_meta meta; /* D/NAME.ranges and its meta-lock        */
        char *readers_dir;         /* D/NAME.readers: the whole lock's readers */
        char *entry;               /* our entry's path, NULL when we have none */
        char state, mode;          /* of our entry */
        unsigned long long seq;
};

static struct dl_range *range_of(const dirlock *h)
{
        return dl_dir_of(h)->kind_state;
}

static const struct dl_dir_kind range_kind;

/* The backend's `range` entry: h (open, h->lo and h->hi set) becomes a
 * range lock, its paths and meta-lock made. */
static int range_prepare(dirlock *h, dirlock_error *err)
{
        struct dl_dir *d = dl_dir_of(h);
        struct dl_range *r = calloc(1, sizeof *r);
        if (r == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        dl_dir_make_kind(h, &range_kind, r);
        r->meta.fd = -1;
        int rc = dl_range_meta_init(&r->meta, d->lockdir, d->lockdir_mode, h->name, h->token, err);
        if (rc == DIRLOCK_OK &&
            (r->readers_dir = dl_layout_path(d->lockdir, h->name, DL_SUFFIX_READERS)) == NULL)
                rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        return rc; /* on failure range_free() (the kind's close) frees what was made */
}

static void range_free(dirlock *h)
{
        struct dl_range *r = range_of(h);
        if (r == NULL)
                return;
        dl_range_meta_free(&r->meta);
        free(r->readers_dir);
        free(r->entry);
        free(r);
        dl_dir_of(h)->kind_state = NULL;
}

/* ---- who blocks whom -------------------------------------------------------- */

/* Do entries of modes `theirs` and `ours` (letters) conflict on
 * overlapping ranges, ours under our policy?  The one mode table's answer
 * (lib/modes.c). */
static bool modes_conflict(char theirs, char ours, int policy)
{
        return dl_modes_conflict(dl_mode_of_letter(theirs),
                                 dl_mode_under_policy(dl_mode_of_letter(ours), policy));
}

/* Does waiting entry e (theirs) hold us off under our policy?  Only a
 * waiter that arrived before us ever does: arrival numbers are a total
 * order, so no two waiters can hold each other off, whatever their
 * policies, and the first waiter waits only for holders. */
static bool waiter_blocks(const struct dl_range_entry *e, char ours, unsigned long long my_seq, int policy)
{
        if (e->seq >= my_seq)
                return false;
        bool they_write = e->mode != DL_RANGE_SHARED, we_write = ours != DL_RANGE_SHARED;
        switch (policy) {
        case DIRLOCK_POLICY_WRITER: /* writers do not wait for waiting readers */
                return !(we_write && !they_write);
        case DIRLOCK_POLICY_READER: /* readers do not wait for waiting writers */
                return !(!we_write && they_write);
        default: /* fair, simple */
                return true;
        }
}

/* The live entry among s that blocks ours (mode `ours`, seq my_seq, range
 * of h), judging (and breaking) the candidates on the way; NULL when none
 * (or on error: err->code set, *failed). */
static const struct dl_range_entry *blocker(struct dl_range_scan *s, const dirlock *h, char ours,
                                            unsigned long long my_seq, bool *failed, dirlock_error *err)
{
        *failed = false;
        for (size_t i = 0; i < s->n; i++) {
                struct dl_range_entry *e = &s->e[i];
                if (strcmp(e->token, h->token) == 0 || !dl_range_overlap(e->lo, e->hi, h->lo, h->hi) ||
                    !modes_conflict(e->mode, ours, h->opts.policy))
                        continue;
                if (e->state != DL_RANGE_HELD && !waiter_blocks(e, ours, my_seq, h->opts.policy))
                        continue;
                int live = dl_range_judge(s, e, h->opts.stale_age, err);
                if (live < 0) {
                        *failed = true;
                        return NULL;
                }
                if (live)
                        return e;
        }
        return NULL;
}

/* ---- our entry ------------------------------------------------------------------ */

/* Make our entry `state`/`mode` (creating, or renaming the one we have). */
static int set_entry(dirlock *h, char state, char mode, dirlock_error *err)
{
        struct dl_range *r = range_of(h);
        char leaf[DL_RANGE_LEAF_SIZE];
        dl_range_leaf(leaf, state, mode, r->seq, h->lo, h->hi, h->token);
        char *path = dl_join(r->meta.ranges_dir, leaf, NULL);
        if (path == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        int rc;
        if (r->entry != NULL) {
                rc = strcmp(r->entry, path) == 0 ? 0 : dl_fs_rename(r->entry, path);
        } else {
                rc = -1;
                for (int round = 0; round < 100 && rc != 0; round++) {
                        rc = dl_entry_create(path, h, dl_range_mode_of_letter(mode));
                        /* ESTALE after its tries (lib/core/dir_fsops.c): the directory
                         * was replaced under us, as good as missing. */
                        bool missing = rc != 0 && (errno == ENOENT || errno == ESTALE);
                        if (missing && dl_fs_mkdir_in(r->meta.ranges_dir, dl_dir_of(h)->lockdir_mode) != 0 &&
                            errno != EEXIST && errno != ESTALE)
                                break;
                        if (rc != 0 && !missing)
                                break;
                }
        }
        if (rc != 0) {
                int e = errno;
                free(path);
                if (e == ENOENT && r->entry != NULL) {
                        free(r->entry);
                        r->entry = NULL;
                        return dl_fail(err, DIRLOCK_ELOST, 0, "range lock of '%s' was broken as stale",
                                       h->name);
                }
                return dl_fail(err, DIRLOCK_EIO, e, "cannot write range entry in '%s'", r->meta.ranges_dir);
        }
        free(r->entry);
        r->entry = path;
        r->state = state;
        r->mode = mode;
        return DIRLOCK_OK;
}

static void drop_entry(dirlock *h)
{
        struct dl_range *r = range_of(h);
        if (r->entry == NULL)
                return;
        dl_fs_unlink(r->entry);
        if (!dl_dir_of(h)->fs->network)          /* KEPT DIRECTORIES in lib/netfs/netfs.c */
                dl_fs_rmdir(r->meta.ranges_dir); /* if that was the last one */
        free(r->entry);
        r->entry = NULL;
}

/* ---- the whole lock, from a range's side ---------------------------------------- */

/* Is a whole-lock holder of NAME there (W, or a live reader)?  1 yes (one
 * in *who), 0 no, -1 error. */
static int whole_busy(dirlock *h, dl_record *who, dirlock_error *err)
{
        switch (dl_excl_judge(h, who, NULL, err)) {
        case DL_ERROR:
                return -1;
        case DL_HELD:
                return 1;
        case DL_FREE:
                break;
        }
        dl_scan sc = {.active = "ra"};
        if (dl_scan_dir(range_of(h)->readers_dir, h->opts.stale_age, dl_dir_of(h)->fs, &sc, err) != 0)
                return -1;
        if (sc.live == 0)
                return 0;
        *who = sc.one;
        return 1;
}

/* ---- acquiring -------------------------------------------------------------------- */

/* One attempt, under the meta-lock.  DIRLOCK_OK (held), DIRLOCK_EBUSY
 * (*who filled; with `queue` we have a reservation now), or an error. */
static int range_try(dirlock *h, bool queue, dl_record *who, dirlock_error *err)
{
        struct dl_range *r = range_of(h);
        char ours = dl_range_mode_letter(h->opts.mode);
        struct dl_range_scan s = {0};
        if (dl_range_scan_dir(&r->meta, &s, err) != 0) {
                dl_range_scan_free(&s);
                return err->code;
        }
        if (r->entry == NULL)
                r->seq = s.max_seq + 1; /* a new arrival */
        bool failed;
        const struct dl_range_entry *b = blocker(&s, h, ours, r->seq, &failed, err);
        int rc;
        if (failed) {
                dl_range_scan_free(&s);
                return err->code;
        }
        if (b != NULL) {
                *who = b->rec;
                rc = queue ? set_entry(h, DL_RANGE_WAITING, ours, err) : DIRLOCK_OK;
                dl_range_scan_free(&s);
                return rc == DIRLOCK_OK ? DIRLOCK_EBUSY : rc;
        }
        dl_range_scan_free(&s);
        /* Among the ranges we may: hold, then look at the whole lock. */
        rc = set_entry(h, DL_RANGE_HELD, ours, err);
        if (rc != DIRLOCK_OK)
                return rc;
        int busy = whole_busy(h, who, err);
        if (busy == 0)
                return DIRLOCK_OK;
        if (busy < 0) {
                drop_entry(h);
                return err->code;
        }
        /* A whole-lock holder is there: withdraw. */
        if (queue) {
                rc = set_entry(h, DL_RANGE_WAITING, ours, err);
                return rc == DIRLOCK_OK ? DIRLOCK_EBUSY : rc;
        }
        drop_entry(h);
        return DIRLOCK_EBUSY;
}

static const char *holder_text(const dl_record *who, char buf[300])
{
        if (who->pid <= 0)
                return "an unknown holder";
        snprintf(buf, 300, "pid %ld on %s", (long)who->pid, who->host[0] ? who->host : "an unknown host");
        return buf;
}

/* Watch what can let us in: the ranges (releases, renames), D (W and the
 * meta-lock), the whole readers.  True when the whole readers' directory
 * was missing: a reader that makes it after this is not watched (its
 * leaving is an unlink in there, nothing in D), so the caller looks again
 * without sleeping once it exists. */
static bool range_waiter_rewatch(dl_waiter *w, dirlock *h)
{
        if (!w->notify)
                return false;
        dl_waiter_watch_dir(w, range_of(h)->meta.ranges_dir); /* a vanished one is fine */
        return dl_waiter_watch_missing(w, range_of(h)->readers_dir);
}

/* Wake only for entries that could let us in: one overlapping ours that
 * left (released, gave up, broken) or changed (shrunk, downgraded); not a
 * waiter that became a holder (a waiting entry renamed), and not ranges
 * that do not overlap ours.  Names that are not entries count. */
static bool range_event_matters(const char *name, unsigned mask, void *arg)
{
        const dirlock *h = arg;
        struct dl_range_entry e;
        if (!dl_range_parse_leaf(name, &e))
                return true;
        if (e.state == DL_RANGE_WAITING && (mask & IN_MOVED_FROM))
                return false;
        return dl_range_overlap(e.lo, e.hi, h->lo, h->hi);
}

static bool range_waiter(dl_waiter *w, dirlock *h)
{
        dl_waiter_init(w, dl_dir_of(h)->lockdir, h->opts.flags, h->token, h->opts.stale_age);
        dl_waiter_cancel_on(w, h->opts.cancel_fd);
        w->relevant = range_event_matters;
        w->relevant_arg = h;
        return range_waiter_rewatch(w, h);
}

/* Attempt (under the meta-lock) until `step` says done or the deadline. */
typedef int (*range_step)(dirlock *h, bool queue, dl_record *who, dirlock_error *err);

static int range_wait(dirlock *h, range_step step, const dl_time *deadline, const char *what,
                      dirlock_error *err)
{
        dl_record who;
        memset(&who, 0, sizeof who);
        bool queue = h->opts.timeout != 0;
        dl_waiter w;
        bool waiting = false, unwatched = false;
        int rc;
        for (;;) {
                rc = dl_range_meta_take(&range_of(h)->meta, deadline, err);
                if (rc != DIRLOCK_OK)
                        break;
                rc = step(h, queue, &who, err);
                dl_range_meta_give(&range_of(h)->meta);
                if (rc != DIRLOCK_EBUSY)
                        break;
                if (!queue || dl_deadline_passed(deadline)) {
                        char buf[300];
                        rc = dl_fail(err, queue ? DIRLOCK_ETIMEDOUT : DIRLOCK_EBUSY, 0,
                                     "%s of lock '%s' is held by %s", what, h->name, holder_text(&who, buf));
                        break;
                }
                if (!waiting) {
                        bool upgrade = step != range_try; /* it holds its range: whole holders wait for it */
                        rc = upgrade ? dl_dir_wait_begin(h, DL_FOR_RANGE_UPGRADE, DIRLOCK_WAIT_UPGRADE,
                                                         DIRLOCK_EXCLUSIVE, err)
                                     : dl_dir_wait_begin(h, DL_FOR_RANGE, DIRLOCK_WAIT_RANGE, h->mode, err);
                        if (rc != DIRLOCK_OK)
                                break;
                        unwatched = range_waiter(&w, h);
                        waiting = true;
                        continue; /* the watches exist: look again before sleeping */
                }
                /* The whole readers' directory was missing when we watched
                 * and exists now: watch it and look again first. */
                if (unwatched && !(unwatched = range_waiter_rewatch(&w, h)))
                        continue;
                dl_waiter_watch_owner(&w, &who);
                int waited = dl_waiter_wait(&w, deadline);
                if (waited == 0 && (rc = dl_dir_wait_step(h, err)) != DIRLOCK_OK)
                        break;
                if (w.notify) /* the directories may have been made again */
                        unwatched = range_waiter_rewatch(&w, h);
                if (range_of(h)->entry != NULL && range_of(h)->state == DL_RANGE_WAITING)
                        dl_fs_touch(range_of(h)->entry); /* renew */
                if (waited == DIRLOCK_ECANCELED) {
                        /* One last try, then give up. */
                        if (dl_range_meta_take(&range_of(h)->meta, deadline, err) == DIRLOCK_OK) {
                                rc = step(h, false, &who, err);
                                dl_range_meta_give(&range_of(h)->meta);
                                if (rc != DIRLOCK_EBUSY)
                                        break;
                        }
                        rc = dl_fail(err, DIRLOCK_ECANCELED, 0, "canceled waiting for %s of lock '%s'", what,
                                     h->name);
                        break;
                }
        }
        if (waiting)
                dl_waiter_close(&w);
        dl_dir_wait_end(h);
        return rc;
}

/* ---- the kind's entries ---------------------------------- */

static int range_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        dirlock_error local;
        if (err == NULL)
                err = &local;
        int rc = range_wait(h, range_try, deadline, "a range", err);
        if (rc != DIRLOCK_OK)
                drop_entry(h); /* our reservation, if any */
        return rc;
}

static int range_release(dirlock *h, dirlock_error *err)
{
        struct dl_range *r = range_of(h);
        if (r->entry == NULL)
                return DIRLOCK_OK;
        int rc = dl_fs_unlink(r->entry);
        int e = errno;
        if (!dl_dir_of(h)->fs->network)          /* KEPT DIRECTORIES in lib/netfs/netfs.c */
                dl_fs_rmdir(r->meta.ranges_dir); /* if that was the last one */
        free(r->entry);
        r->entry = NULL;
        if (rc == 0)
                return DIRLOCK_OK;
        if (e == ENOENT)
                return dl_fail(err, DIRLOCK_ELOST, 0, "range lock of '%s' was broken as stale before release",
                               h->name);
        return dl_fail(err, DIRLOCK_EIO, e, "cannot release range lock of '%s'", h->name);
}

static int range_refresh(dirlock *h, dirlock_error *err)
{
        struct dl_range *r = range_of(h);
        if (r->entry != NULL && dl_fs_touch(r->entry) == 0)
                return DIRLOCK_OK;
        if (r->entry == NULL || errno == ENOENT)
                return dl_fail(err, DIRLOCK_ELOST, 0, "range lock of '%s' was broken as stale", h->name);
        return dl_fail(err, DIRLOCK_EIO, errno, "cannot refresh range lock of '%s'", h->name);
}

static int range_check(const dirlock *h, dirlock_error *err)
{
        const struct dl_range *r = range_of(h);
        int present = r->entry != NULL ? dl_fs_present(r->entry, dl_dir_of(h)->fs->network) : 0;
        if (present == 1)
                return DIRLOCK_OK;
        if (present == 0)
                return dl_fail(err, DIRLOCK_ELOST, 0, "range lock of '%s' was broken as stale", h->name);
        return dl_fail(err, DIRLOCK_EIO, errno, "cannot check range lock of '%s'", h->name);
}

/* Under the meta-lock: our entry is u; become x once no overlapping shared
 * holder is left. */
static int upgrade_try(dirlock *h, bool queue, dl_record *who, dirlock_error *err)
{
        (void)queue;
        struct dl_range *r = range_of(h);
        struct dl_range_scan s = {0};
        if (dl_range_scan_dir(&r->meta, &s, err) != 0) {
                dl_range_scan_free(&s);
                return err->code;
        }
        bool mine = false, readers = false;
        for (size_t i = 0; i < s.n && !readers; i++) {
                struct dl_range_entry *e = &s.e[i];
                if (strcmp(e->token, h->token) == 0) {
                        mine = true;
                } else if (e->state == DL_RANGE_HELD && e->mode == DL_RANGE_SHARED &&
                           dl_range_overlap(e->lo, e->hi, h->lo, h->hi)) {
                        int live = dl_range_judge(&s, e, h->opts.stale_age, err);
                        if (live < 0) {
                                dl_range_scan_free(&s);
                                return err->code;
                        }
                        if (live) {
                                readers = true;
                                *who = e->rec;
                        }
                }
        }
        for (size_t i = 0; i < s.n && !mine; i++)
                mine = strcmp(s.e[i].token, h->token) == 0;
        dl_range_scan_free(&s);
        if (!mine)
                return dl_fail(err, DIRLOCK_ELOST, 0, "range lock of '%s' was broken as stale", h->name);
        if (readers)
                return DIRLOCK_EBUSY;
        return set_entry(h, DL_RANGE_HELD, DL_RANGE_EXCL, err);
}

static int range_upgrade(dirlock *h, const dirlock_options *opts, dirlock_error *err)
{
        dirlock_error local;
        if (err == NULL)
                err = &local;
        if (h->mode == DIRLOCK_EXCLUSIVE)
                return DIRLOCK_OK;
        if (h->mode == DIRLOCK_SHARED)
                return dl_fail(
                    err, DIRLOCK_EUPGRADE, 0,
                    "a read range of lock '%s' cannot be upgraded: take it in intent mode to upgrade",
                    h->name);
        dirlock_options o = opts != NULL ? *opts : h->opts;
        dl_time deadline = dl_deadline(o.timeout);
        int rc = dl_range_meta_take(&range_of(h)->meta, &deadline, err);
        if (rc != DIRLOCK_OK)
                return rc;
        rc =
            set_entry(h, DL_RANGE_HELD, DL_RANGE_UPGRADING, err); /* new overlapping readers wait from here */
        dl_range_meta_give(&range_of(h)->meta);
        if (rc != DIRLOCK_OK)
                return rc;
        double saved_timeout = h->opts.timeout;
        int saved_cancel = h->opts.cancel_fd;
        h->opts.timeout = o.timeout;
        h->opts.cancel_fd = (o.flags & DIRLOCK_CANCEL_FD) ? o.cancel_fd : -1;
        rc = range_wait(h, upgrade_try, &deadline, "a read range overlapping the upgrade", err);
        h->opts.timeout = saved_timeout;
        h->opts.cancel_fd = saved_cancel;
        if (rc == DIRLOCK_OK) {
                h->mode = DIRLOCK_EXCLUSIVE;
                return DIRLOCK_OK;
        }
        if (rc != DIRLOCK_ELOST) { /* keep the intent range */
                dirlock_error ignored;
                dl_time never = dl_deadline(-1);
                if (dl_range_meta_take(&range_of(h)->meta, &never, &ignored) == DIRLOCK_OK) {
                        set_entry(h, DL_RANGE_HELD, DL_RANGE_INTENT, &ignored);
                        dl_range_meta_give(&range_of(h)->meta);
                }
        }
        return rc;
}

static int range_downgrade(dirlock *h, dirlock_error *err)
{
        if (h->mode == DIRLOCK_SHARED)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "the range of lock '%s' is already a read range",
                               h->name);
        dl_time never = dl_deadline(-1);
        int rc = dl_range_meta_take(&range_of(h)->meta, &never, err);
        if (rc != DIRLOCK_OK)
                return rc;
        rc = set_entry(h, DL_RANGE_HELD, DL_RANGE_SHARED, err);
        dl_range_meta_give(&range_of(h)->meta);
        if (rc == DIRLOCK_OK)
                h->mode = DIRLOCK_SHARED;
        return rc;
}

/* The caller (lib/rw/rw.c) checked that this is an upgraded intent range:
 * back to i, which overlapping readers share; the rename wakes them. */
static int range_downgrade_intent(dirlock *h, dirlock_error *err)
{
        dl_time never = dl_deadline(-1);
        int rc = dl_range_meta_take(&range_of(h)->meta, &never, err);
        if (rc != DIRLOCK_OK)
                return rc;
        rc = set_entry(h, DL_RANGE_HELD, DL_RANGE_INTENT, err);
        dl_range_meta_give(&range_of(h)->meta);
        if (rc == DIRLOCK_OK)
                h->mode = DIRLOCK_INTENT;
        return rc;
}

/* The caller (range.c) checked that [lo, hi) is a part of the held range. */
static int range_shrink(dirlock *h, double lo, double hi, dirlock_error *err)
{
        struct dl_range *r = range_of(h);
        dl_time never = dl_deadline(-1);
        int rc = dl_range_meta_take(&range_of(h)->meta, &never, err);
        if (rc != DIRLOCK_OK)
                return rc;
        double old_lo = h->lo, old_hi = h->hi;
        h->lo = lo;
        h->hi = hi;
        rc = set_entry(h, r->state, r->mode, err); /* the rename wakes the waiters */
        dl_range_meta_give(&range_of(h)->meta);
        if (rc != DIRLOCK_OK && rc != DIRLOCK_ELOST) {
                h->lo = old_lo;
                h->hi = old_hi;
        }
        return rc;
}

/* ---- whole locks against ranges ---------------------------------------------- */

/* The guard of NAME's ranges (dir.h): a whole lock announced (W taken, or
 * its reader entry made) waits until no range of the name is held
 * (RANGES AGAINST WHOLE LOCKS above), keeping the announcement fresh as a
 * holder would.  `seen`: D/NAME.ranges was there at the caller's look
 * (dl_dir_neighbours); one that left since is found by the scan. */
static int ranges_guard(dirlock *h, const dl_time *deadline, bool seen, dirlock_error *err)
{
        (void)seen;
        struct dl_range_meta m;
        int rc =
            dl_range_meta_init(&m, dl_dir_of(h)->lockdir, dl_dir_of(h)->lockdir_mode, h->name, h->token, err);
        if (rc != DIRLOCK_OK)
                return rc;
        const char *dir = m.ranges_dir;
        dl_waiter w;
        dl_waiter_init(&w, dl_dir_of(h)->lockdir, h->opts.flags, h->token, h->opts.stale_age);
        dl_waiter_cancel_on(&w, h->opts.cancel_fd);
        long long renewed = dl_wall_ns();
        for (bool first = true;; first = false) {
                if (w.notify)
                        dl_waiter_watch_dir(&w, dir);
                int waited = first ? 0 : dl_waiter_wait(&w, deadline);
                /* We hold our announcement while we wait: keep it fresh. */
                if ((double)(dl_wall_ns() - renewed) >= h->opts.stale_age * 1e9 / 4) {
                        renewed = dl_wall_ns();
                        if ((rc = dl_dir_of(h)->kind->refresh(h, err)) != DIRLOCK_OK)
                                break;
                }
                dl_record one;
                int n = dl_range_held(&m, h->opts.stale_age, &one, deadline, err);
                if (n < 0) {
                        rc = err->code;
                        break;
                }
                if (n == 0)
                        break;
                dl_waiter_watch_owner(&w, &one);
                if (waited == 0 && h->opts.timeout == 0)
                        waited = DIRLOCK_EBUSY; /* one try */
                if (waited != 0) {
                        rc = dl_fail(err, waited, 0,
                                     "%s: %d range(s) of lock '%s' are held, e.g. by pid %ld on %s",
                                     waited == DIRLOCK_ECANCELED ? "canceled"
                                     : waited == DIRLOCK_EBUSY   ? "busy"
                                                                 : "timed out",
                                     n, h->name, (long)one.pid, one.host[0] ? one.host : "an unknown host");
                        break;
                }
                rc = first ? dl_dir_wait_begin(h, DL_FOR_RANGES, DIRLOCK_WAIT_LOCK, h->mode, err)
                           : dl_dir_wait_step(h, err);
                if (rc != DIRLOCK_OK)
                        break;
        }
        dl_waiter_close(&w);
        dl_dir_wait_end(h);
        dl_range_meta_free(&m);
        return rc;
}

/* ---- the module ---------------------------------------------------------------- */

static int range_list(const char *lockdir, const char *name, dirlock_range_info **out, size_t *count,
                      dirlock_error *err)
{
        return dl_range_list(lockdir, name, 0, out, count, err);
}

/* dirlock_inspect: the ranges held of `name`. */
static void range_inspect(const char *lockdir, const char *name, double stale_age, dirlock_owner *owner)
{
        (void)stale_age;
        owner->ranges = dl_range_count_held(lockdir, name);
}

static const struct dl_dir_kind range_kind = {
    .what = "a range lock",
    .acquire = range_acquire,
    .release = range_release,
    .refresh = range_refresh,
    .check = range_check,
    .close = range_free,
    .upgrade = range_upgrade,
    .downgrade = range_downgrade,
    .downgrade_intent = range_downgrade_intent,
    .shrink = range_shrink,
};

static const struct dl_dir_kind *const range_kinds[] = {&range_kind, NULL};
static const dl_backend range_entries = {.range = range_prepare, .ranges = range_list};

static struct dl_dir_module range_module = {
    .name = "the range module (lib/range)",
    .offers = &range_entries,
    .kinds = range_kinds,
    .guards = DL_NEAR_RANGES,
    .guard = ranges_guard,
    .inspect = range_inspect,
};
DL_DIR_MODULE(range_module)
