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
 * conflict when their ranges overlap and their modes are incompatible:
 * s-s and s-i are compatible; i-i, x-anything, and u against a new s or
 * i are not; under policy `simple` every pair is.  An acquirer is blocked
 * by every conflicting holder, and by conflicting waiters that arrived
 * before it (a smaller seq): all of them under policies fair and simple;
 * under `writer` not by waiting readers if it writes; under `reader` not
 * by waiting writers if it reads.  Waiters that arrived after it never
 * block it, so arrival numbers order every wait and no two waiters can
 * hold each other off, whatever their policies.  Not
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
 *           2. look at D/NAME.ranges (dl_range_wait_clear); held entries
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
#include "backend.h"
#include "rw_internal.h"

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

#define SEQ_DIGITS  DL_RANGE_SEQ_DIGITS
#define LEAF_SIZE   (2 + 1 + SEQ_DIGITS + 1 + 16 + 1 + 16 + 1 + DL_TOKEN_LEN + 1)
#define MODE_SHARED 's'
#define MODE_INTENT 'i'
#define MODE_EXCL   'x'
#define MODE_UPGR   'u'

struct range_entry {
        char state; /* 'h' or 'w' */
        char mode;  /* s, i, x, u */
        unsigned long long seq;
        double lo, hi;
        char token[DL_TOKEN_LEN + 1];
        char leaf[LEAF_SIZE];
        bool judged, live; /* judge() looked: the record was read, it lives */
        dl_record rec;     /* when judged and live */
};

/* ---- names ---------------------------------------------------------------- */

static unsigned long long bits_of(double v)
{
        unsigned long long u;
        memcpy(&u, &v, sizeof u);
        return u;
}

static double double_of(unsigned long long u)
{
        double v;
        memcpy(&v, &u, sizeof v);
        return v;
}

static void leaf_of(char out[LEAF_SIZE], char state, char mode, unsigned long long seq, double lo, double hi,
                    const char *token)
{
        snprintf(out, LEAF_SIZE, "%c%c.%0*llu.%016llx.%016llx.%s", state, mode, SEQ_DIGITS, seq, bits_of(lo),
                 bits_of(hi), token);
}

static bool hex_field(const char **p, int digits, unsigned long long *out)
{
        unsigned long long v = 0;
        for (int i = 0; i < digits; i++) {
                char c = (*p)[i];
                int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
                if (d < 0)
                        return false;
                v = v << 4 | (unsigned)d;
        }
        *p += digits;
        *out = v;
        return true;
}

static bool parse_leaf(const char *leaf, struct range_entry *e)
{
        if (strlen(leaf) != LEAF_SIZE - 1 || (leaf[0] != 'h' && leaf[0] != 'w') ||
            strchr("sixu", leaf[1]) == NULL || leaf[1] == '\0' || leaf[2] != '.')
                return false;
        e->state = leaf[0];
        e->mode = leaf[1];
        const char *p = leaf + 3;
        unsigned long long v = 0;
        for (int i = 0; i < SEQ_DIGITS; i++, p++) {
                if (*p < '0' || *p > '9')
                        return false;
                v = v * 10 + (unsigned)(*p - '0');
        }
        e->seq = v;
        unsigned long long lo, hi;
        if (*p++ != '.' || !hex_field(&p, 16, &lo) || *p++ != '.' || !hex_field(&p, 16, &hi) || *p++ != '.' ||
            !dl_layout_is_token(p, true))
                return false;
        e->lo = double_of(lo);
        e->hi = double_of(hi);
        memcpy(e->token, p, DL_TOKEN_LEN + 1);
        return isfinite(e->lo) && isfinite(e->hi) && e->lo < e->hi;
}

static char mode_letter(int mode)
{
        return mode == DIRLOCK_SHARED ? MODE_SHARED : mode == DIRLOCK_INTENT ? MODE_INTENT : MODE_EXCL;
}

static int mode_of_letter(char m)
{
        return m == MODE_SHARED ? DIRLOCK_SHARED : m == MODE_EXCL ? DIRLOCK_EXCLUSIVE : DIRLOCK_INTENT;
}

/* ---- the handle's range state ----------------------------------------------- */

struct dl_range {
        char *ranges_dir; /* D/NAME.ranges */
        char *entry;      /* our entry's path, NULL when we have none */
        char state, mode; /* of our entry */
        unsigned long long seq;
        char *meta_path; /* D/.NAME.rmeta, the file the meta-lock flocks */
        int meta_fd;     /* open on it, or -1 */
};

static struct dl_range *range_of(const dirlock *h)
{
        return dl_dir_of(h)->range;
}

int dl_range_prepare(dirlock *h, dirlock_error *err)
{
        struct dl_dir *d = dl_dir_of(h);
        struct dl_range *r = calloc(1, sizeof *r);
        if (r == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        r->ranges_dir = dl_layout_path(d->lockdir, h->name, DL_SUFFIX_RANGES);
        r->meta_fd = -1;
        char leaf[1 + DIRLOCK_NAME_MAX + sizeof DL_SUFFIX_RMETA];
        snprintf(leaf, sizeof leaf, ".%s" DL_SUFFIX_RMETA, h->name);
        r->meta_path = dl_join(d->lockdir, leaf, NULL);
        int rc =
            r->ranges_dir && r->meta_path ? DIRLOCK_OK : dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        d->range = r;
        return rc; /* on failure dl_range_free() (from close) frees what was made */
}

void dl_range_free(dirlock *h)
{
        struct dl_range *r = range_of(h);
        if (r == NULL)
                return;
        if (r->meta_fd >= 0)
                close(r->meta_fd);
        free(r->meta_path);
        free(r->ranges_dir);
        free(r->entry);
        free(r);
        dl_dir_of(h)->range = NULL;
}

/* ---- scanning ---------------------------------------------------------------- */

struct scan {
        const char *dir;
        struct range_entry *e;
        size_t n, cap;
        unsigned long long max_seq;
};

static void scan_free(struct scan *s)
{
        free(s->e);
        memset(s, 0, sizeof *s);
}

/* Read the entries of D/NAME.ranges into s, by name only (call with the
 * meta-lock held): an entry's record is read, and the entry broken if it
 * is stale, only when it matters (judge), so that ranges that never meet
 * never look at each other.  0, or -1 with err. */
static int scan_ranges(const char *dir, struct scan *s, dirlock_error *err)
{
        s->n = 0;
        s->max_seq = 0;
        s->dir = dir;
        DIR *d = opendir(dir);
        if (d == NULL) {
                if (errno == ENOENT)
                        return 0;
                dl_fail(err, DIRLOCK_EIO, errno, "cannot read '%s'", dir);
                return -1;
        }
        struct dirent *de;
        int rc = 0;
        while ((de = readdir(d)) != NULL) {
                struct range_entry e;
                if (!parse_leaf(de->d_name, &e))
                        continue;
                e.judged = false;
                memcpy(e.leaf, de->d_name, LEAF_SIZE);
                if (e.seq > s->max_seq)
                        s->max_seq = e.seq;
                if (s->n == s->cap) {
                        size_t cap = s->cap ? s->cap * 2 : 16;
                        struct range_entry *grown = realloc(s->e, cap * sizeof *grown);
                        if (grown == NULL) {
                                dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                                rc = -1;
                                break;
                        }
                        s->e = grown;
                        s->cap = cap;
                }
                s->e[s->n++] = e;
        }
        closedir(d);
        return rc;
}

/* Judge entry e of a scan: 1 live (its record in e->rec), 0 stale or gone
 * (broken now), -1 error (one this user may not break: DIRLOCK_EPERM). */
static int judge(const struct scan *s, struct range_entry *e, double stale_age, dirlock_error *err)
{
        if (e->judged)
                return e->live;
        e->judged = true;
        e->live = 0;
        char *path = dl_join(s->dir, e->leaf, NULL);
        if (path == NULL) {
                dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                return -1;
        }
        double age;
        int rc = 0;
        if (dl_entry_read(path, &e->rec, &age) != 0) {
                rc = 0; /* left meanwhile */
        } else if (!dl_entry_stale(&e->rec, age, stale_age)) {
                e->live = true;
                rc = 1;
        } else if (unlink(path) != 0 && (errno == EPERM || errno == EACCES)) {
                char what[64];
                snprintf(what, sizeof what, "a range entry of %.16s...", e->leaf);
                dl_fail_unbreakable(err, what, &e->rec, errno);
                rc = -1;
        }
        free(path);
        return rc;
}

static bool overlap(double lo1, double hi1, double lo2, double hi2)
{
        return lo1 < hi2 && lo2 < hi1;
}

/* Do modes a (theirs) and b (ours) conflict on overlapping ranges? */
static bool modes_conflict(char theirs, char ours, int policy)
{
        if (policy == DIRLOCK_POLICY_SIMPLE)
                return true;
        if (theirs == MODE_EXCL || ours == MODE_EXCL)
                return true;
        if (theirs == MODE_SHARED)
                return false; /* against s, i and u (an upgrader waits for readers itself) */
        if (ours == MODE_SHARED)
                return theirs == MODE_UPGR; /* i and s are compatible */
        return true;                        /* i/u against i */
}

/* Does waiting entry e (theirs) hold us off under our policy?  Only a
 * waiter that arrived before us ever does: arrival numbers are a total
 * order, so no two waiters can hold each other off, whatever their
 * policies, and the first waiter waits only for holders. */
static bool waiter_blocks(const struct range_entry *e, char ours, unsigned long long my_seq, int policy)
{
        if (e->seq >= my_seq)
                return false;
        bool they_write = e->mode != MODE_SHARED, we_write = ours != MODE_SHARED;
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
static const struct range_entry *blocker(struct scan *s, const dirlock *h, char ours,
                                         unsigned long long my_seq, bool *failed, dirlock_error *err)
{
        *failed = false;
        for (size_t i = 0; i < s->n; i++) {
                struct range_entry *e = &s->e[i];
                if (strcmp(e->token, h->token) == 0 || !overlap(e->lo, e->hi, h->lo, h->hi) ||
                    !modes_conflict(e->mode, ours, h->opts.policy))
                        continue;
                if (e->state != 'h' && !waiter_blocks(e, ours, my_seq, h->opts.policy))
                        continue;
                int live = judge(s, e, h->opts.stale_age, err);
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
        char leaf[LEAF_SIZE];
        leaf_of(leaf, state, mode, r->seq, h->lo, h->hi, h->token);
        char *path = dl_join(r->ranges_dir, leaf, NULL);
        if (path == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        int rc;
        if (r->entry != NULL) {
                rc = strcmp(r->entry, path) == 0 ? 0 : rename(r->entry, path);
        } else {
                rc = -1;
                for (int round = 0; round < 100 && rc != 0; round++) {
                        rc = dl_entry_create(path, h, mode_of_letter(mode));
                        if (rc != 0 && errno == ENOENT &&
                            dl_mkdir_in(r->ranges_dir, dl_dir_of(h)->lockdir_mode) != 0 && errno != EEXIST)
                                break;
                        if (rc != 0 && errno != ENOENT)
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
                return dl_fail(err, DIRLOCK_EIO, e, "cannot write range entry in '%s'", r->ranges_dir);
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
        unlink(r->entry);
        rmdir(r->ranges_dir); /* if that was the last one */
        free(r->entry);
        r->entry = NULL;
}

/* ---- the meta-lock ------------------------------------------------------------- */

/* Take the meta-lock (flock on D/.NAME.rmeta), by the deadline. */
static int meta_take(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        struct dl_range *r = range_of(h);
        if (r->meta_fd < 0) {
                r->meta_fd = open(r->meta_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
                if (r->meta_fd < 0)
                        return dl_fail(err, errno == EACCES || errno == EPERM ? DIRLOCK_EPERM : DIRLOCK_EIO,
                                       errno, "cannot open '%s'", r->meta_path);
                if (dl_dir_of(h)->lockdir_mode & (S_IWGRP | S_IWOTH))
                        fchmod(r->meta_fd, (mode_t)(dl_dir_of(h)->lockdir_mode & 0666));
        }
        double backoff_us = 50;
        unsigned long long jitter = (unsigned long long)h->token[0] * 2654435761ULL + 1;
        for (;;) {
                if (flock(r->meta_fd, LOCK_EX | LOCK_NB) == 0)
                        return DIRLOCK_OK;
                if (errno != EWOULDBLOCK && errno != EINTR)
                        return dl_fail(err, DIRLOCK_EIO, errno, "cannot lock '%s'", r->meta_path);
                if (dl_deadline_passed(deadline))
                        return dl_fail(
                            err, DIRLOCK_ETIMEDOUT, 0,
                            "timed out: the ranges of lock '%s' are being changed by a process that "
                            "does not let go (stopped?)",
                            h->name);
                jitter = jitter * 6364136223846793005ULL + 1442695040888963407ULL;
                double nap = backoff_us * (0.5 + (double)(jitter >> 11) / 9007199254740992.0);
                double left_us = dl_remaining(deadline) * 1e3;
                struct timespec ts = {0, (long)((nap < left_us ? nap : left_us) * 1e3)};
                nanosleep(&ts, NULL);
                if (backoff_us < 2000)
                        backoff_us *= 2;
        }
}

static void meta_give(dirlock *h)
{
        flock(range_of(h)->meta_fd, LOCK_UN);
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
        int rc = dl_rw_state(h, err);
        if (rc != DIRLOCK_OK)
                return -1;
        dl_scan sc = {.active = "ra"};
        if (dl_rw_scan(dl_dir_of(h)->rw->readers_dir, h->opts.stale_age, &sc, err) != 0) {
                dl_rw_scan_done(&sc);
                return -1;
        }
        dl_rw_scan_done(&sc);
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
        char ours = mode_letter(h->opts.mode);
        struct scan s = {0};
        if (scan_ranges(r->ranges_dir, &s, err) != 0) {
                scan_free(&s);
                return err->code;
        }
        if (r->entry == NULL)
                r->seq = s.max_seq + 1; /* a new arrival */
        bool failed;
        const struct range_entry *b = blocker(&s, h, ours, r->seq, &failed, err);
        int rc;
        if (failed) {
                scan_free(&s);
                return err->code;
        }
        if (b != NULL) {
                *who = b->rec;
                rc = queue ? set_entry(h, 'w', ours, err) : DIRLOCK_OK;
                scan_free(&s);
                return rc == DIRLOCK_OK ? DIRLOCK_EBUSY : rc;
        }
        scan_free(&s);
        /* Among the ranges we may: hold, then look at the whole lock. */
        rc = set_entry(h, 'h', ours, err);
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
                rc = set_entry(h, 'w', ours, err);
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
        dl_waiter_watch_dir(w, range_of(h)->ranges_dir); /* a vanished one is fine */
        return dl_dir_of(h)->rw != NULL && dl_waiter_watch_missing(w, dl_dir_of(h)->rw->readers_dir);
}

/* Wake only for entries that could let us in: one overlapping ours that
 * left (released, gave up, broken) or changed (shrunk, downgraded); not a
 * waiter that became a holder (a waiting entry renamed), and not ranges
 * that do not overlap ours.  Names that are not entries count. */
static bool range_event_matters(const char *name, unsigned mask, void *arg)
{
        const dirlock *h = arg;
        struct range_entry e;
        if (!parse_leaf(name, &e))
                return true;
        if (e.state == 'w' && (mask & IN_MOVED_FROM))
                return false;
        return overlap(e.lo, e.hi, h->lo, h->hi);
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
                rc = meta_take(h, deadline, err);
                if (rc != DIRLOCK_OK)
                        break;
                rc = step(h, queue, &who, err);
                meta_give(h);
                if (rc != DIRLOCK_EBUSY)
                        break;
                if (!queue || dl_deadline_passed(deadline)) {
                        char buf[300];
                        rc = dl_fail(err, queue ? DIRLOCK_ETIMEDOUT : DIRLOCK_EBUSY, 0,
                                     "%s of lock '%s' is held by %s", what, h->name, holder_text(&who, buf));
                        break;
                }
                if (!waiting) {
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
                if (w.notify) /* the directories may have been made again */
                        unwatched = range_waiter_rewatch(&w, h);
                if (range_of(h)->entry != NULL && range_of(h)->state == 'w')
                        utimensat(AT_FDCWD, range_of(h)->entry, NULL, AT_SYMLINK_NOFOLLOW); /* renew */
                if (waited == DIRLOCK_ECANCELED) {
                        /* One last try, then give up. */
                        if (meta_take(h, deadline, err) == DIRLOCK_OK) {
                                rc = step(h, false, &who, err);
                                meta_give(h);
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
        return rc;
}

/* ---- the backend's entries for range handles ---------------------------------- */

int dl_range_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        dirlock_error local;
        if (err == NULL)
                err = &local;
        int rc = dl_rw_state(h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        rc = range_wait(h, range_try, deadline, "a range", err);
        if (rc != DIRLOCK_OK)
                drop_entry(h); /* our reservation, if any */
        return rc;
}

int dl_range_release(dirlock *h, dirlock_error *err)
{
        struct dl_range *r = range_of(h);
        if (r->entry == NULL)
                return DIRLOCK_OK;
        int rc = unlink(r->entry);
        int e = errno;
        rmdir(r->ranges_dir); /* if that was the last one */
        free(r->entry);
        r->entry = NULL;
        if (rc == 0)
                return DIRLOCK_OK;
        if (e == ENOENT)
                return dl_fail(err, DIRLOCK_ELOST, 0, "range lock of '%s' was broken as stale before release",
                               h->name);
        return dl_fail(err, DIRLOCK_EIO, e, "cannot release range lock of '%s'", h->name);
}

int dl_range_refresh(dirlock *h, dirlock_error *err)
{
        struct dl_range *r = range_of(h);
        if (r->entry != NULL && utimensat(AT_FDCWD, r->entry, NULL, AT_SYMLINK_NOFOLLOW) == 0)
                return DIRLOCK_OK;
        if (r->entry == NULL || errno == ENOENT)
                return dl_fail(err, DIRLOCK_ELOST, 0, "range lock of '%s' was broken as stale", h->name);
        return dl_fail(err, DIRLOCK_EIO, errno, "cannot refresh range lock of '%s'", h->name);
}

int dl_range_check(const dirlock *h, dirlock_error *err)
{
        const struct dl_range *r = range_of(h);
        struct stat st;
        if (r->entry != NULL && lstat(r->entry, &st) == 0)
                return DIRLOCK_OK;
        if (r->entry == NULL || errno == ENOENT)
                return dl_fail(err, DIRLOCK_ELOST, 0, "range lock of '%s' was broken as stale", h->name);
        return dl_fail(err, DIRLOCK_EIO, errno, "cannot check range lock of '%s'", h->name);
}

/* Under the meta-lock: our entry is u; become x once no overlapping shared
 * holder is left. */
static int upgrade_try(dirlock *h, bool queue, dl_record *who, dirlock_error *err)
{
        (void)queue;
        struct dl_range *r = range_of(h);
        struct scan s = {0};
        if (scan_ranges(r->ranges_dir, &s, err) != 0) {
                scan_free(&s);
                return err->code;
        }
        bool mine = false, readers = false;
        for (size_t i = 0; i < s.n && !readers; i++) {
                struct range_entry *e = &s.e[i];
                if (strcmp(e->token, h->token) == 0) {
                        mine = true;
                } else if (e->state == 'h' && e->mode == MODE_SHARED && overlap(e->lo, e->hi, h->lo, h->hi)) {
                        int live = judge(&s, e, h->opts.stale_age, err);
                        if (live < 0) {
                                scan_free(&s);
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
        scan_free(&s);
        if (!mine)
                return dl_fail(err, DIRLOCK_ELOST, 0, "range lock of '%s' was broken as stale", h->name);
        if (readers)
                return DIRLOCK_EBUSY;
        return set_entry(h, 'h', MODE_EXCL, err);
}

int dl_range_upgrade(dirlock *h, const dirlock_options *opts, dirlock_error *err)
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
        int rc = meta_take(h, &deadline, err);
        if (rc != DIRLOCK_OK)
                return rc;
        rc = set_entry(h, 'h', MODE_UPGR, err); /* new overlapping readers wait from here */
        meta_give(h);
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
                if (meta_take(h, &never, &ignored) == DIRLOCK_OK) {
                        set_entry(h, 'h', MODE_INTENT, &ignored);
                        meta_give(h);
                }
        }
        return rc;
}

int dl_range_downgrade(dirlock *h, dirlock_error *err)
{
        if (h->mode == DIRLOCK_SHARED)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "the range of lock '%s' is already a read range",
                               h->name);
        dl_time never = dl_deadline(-1);
        int rc = meta_take(h, &never, err);
        if (rc != DIRLOCK_OK)
                return rc;
        rc = set_entry(h, 'h', MODE_SHARED, err);
        meta_give(h);
        if (rc == DIRLOCK_OK)
                h->mode = DIRLOCK_SHARED;
        return rc;
}

/* The caller (handle.c) checked that this is an upgraded intent range:
 * back to i, which overlapping readers share; the rename wakes them. */
int dl_range_downgrade_intent(dirlock *h, dirlock_error *err)
{
        dl_time never = dl_deadline(-1);
        int rc = meta_take(h, &never, err);
        if (rc != DIRLOCK_OK)
                return rc;
        rc = set_entry(h, 'h', MODE_INTENT, err);
        meta_give(h);
        if (rc == DIRLOCK_OK)
                h->mode = DIRLOCK_INTENT;
        return rc;
}

/* The caller (handle.c) checked that [lo, hi) is a part of the held range. */
int dl_range_shrink(dirlock *h, double lo, double hi, dirlock_error *err)
{
        struct dl_range *r = range_of(h);
        dl_time never = dl_deadline(-1);
        int rc = meta_take(h, &never, err);
        if (rc != DIRLOCK_OK)
                return rc;
        double old_lo = h->lo, old_hi = h->hi;
        h->lo = lo;
        h->hi = hi;
        rc = set_entry(h, r->state, r->mode, err); /* the rename wakes the waiters */
        meta_give(h);
        if (rc != DIRLOCK_OK && rc != DIRLOCK_ELOST) {
                h->lo = old_lo;
                h->hi = old_hi;
        }
        return rc;
}

/* ---- whole locks against ranges (called by rwlock.c) ------------------------------ */

/* Live held entries of D/NAME.ranges: their number, one of them in *one.
 * The scan is made under the meta-lock of a throwaway handle. */
static int held_ranges(dirlock *h, dl_record *one, const dl_time *deadline, dirlock_error *err)
{
        int rc = dl_range_prepare(h, err); /* only for its paths and meta-lock */
        if (rc != DIRLOCK_OK) {
                dl_range_free(h);
                return -1;
        }
        int n = -1;
        if (meta_take(h, deadline, err) == DIRLOCK_OK) {
                struct scan s = {0};
                if (scan_ranges(range_of(h)->ranges_dir, &s, err) == 0) {
                        n = 0;
                        for (size_t i = 0; i < s.n && n >= 0; i++) {
                                if (s.e[i].state != 'h')
                                        continue;
                                int live = judge(&s, &s.e[i], h->opts.stale_age, err);
                                if (live < 0)
                                        n = -1;
                                else if (live && n++ == 0)
                                        *one = s.e[i].rec;
                        }
                }
                scan_free(&s);
                meta_give(h);
        }
        dl_range_free(h);
        return n;
}

int dl_range_wait_clear(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        int rc = dl_rw_state(h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        const char *dir = dl_dir_of(h)->rw->ranges_dir;
        struct stat st;
        if (stat(dir, &st) != 0 && errno == ENOENT)
                return DIRLOCK_OK; /* the fast path: no ranges at all */
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
                        if ((rc = dl_rw_refresh(h, err)) != DIRLOCK_OK)
                                break;
                }
                dl_record one;
                int n = held_ranges(h, &one, deadline, err);
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
                        char buf[300];
                        rc = dl_fail(err, waited, 0, "%s: %d range(s) of lock '%s' are held, e.g. by %s",
                                     waited == DIRLOCK_ECANCELED ? "canceled"
                                     : waited == DIRLOCK_EBUSY   ? "busy"
                                                                 : "timed out",
                                     n, h->name, holder_text(&one, buf));
                        break;
                }
        }
        dl_waiter_close(&w);
        return rc;
}

/* ---- from outside the holders ---------------------------------------------------- */

int dl_range_list(const char *lockdir, const char *name, double stale_age, dirlock_range_info **out,
                  size_t *count, dirlock_error *err)
{
        *out = NULL;
        *count = 0;
        dirlock *h;
        int rc = dl_dir_handle_for(lockdir, name, stale_age, &h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        rc = dl_range_prepare(h, err);
        struct stat st;
        if (rc == DIRLOCK_OK && stat(range_of(h)->ranges_dir, &st) != 0) { /* no ranges */
                dl_handle_free(h);
                *out = calloc(1, sizeof **out);
                return *out ? DIRLOCK_OK : dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        dl_time soon = dl_deadline(5);
        if (rc == DIRLOCK_OK)
                rc = meta_take(h, &soon, err);
        if (rc != DIRLOCK_OK) {
                dl_handle_free(h);
                return rc;
        }
        struct scan s = {0};
        long long now = dl_wall_ns();
        if (scan_ranges(range_of(h)->ranges_dir, &s, err) != 0) {
                rc = err->code;
        } else if ((*out = calloc(s.n ? s.n : 1, sizeof **out)) == NULL) {
                rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        } else {
                size_t got = 0;
                for (size_t i = 0; i < s.n; i++) {
                        struct range_entry *e = &s.e[i];
                        if (judge(&s, e, h->opts.stale_age, NULL) != 1)
                                continue; /* stale (broken now) or gone */
                        dirlock_range_info *r = &(*out)[got++];
                        r->lo = e->lo;
                        r->hi = e->hi;
                        r->mode = mode_of_letter(e->mode);
                        r->waiting = e->state == 'w';
                        r->upgrading = e->mode == MODE_UPGR;
                        r->pid = e->rec.pid;
                        snprintf(r->host, sizeof r->host, "%s", e->rec.host);
                        r->age = e->rec.acquired_ns > 0 ? (double)(now - e->rec.acquired_ns) / 1e9 : 0;
                }
                *count = got;
        }
        meta_give(h);
        scan_free(&s);
        dl_handle_free(h);
        return rc;
}

unsigned dl_range_count_held(const char *lockdir, const char *name)
{
        dirlock_range_info *list;
        size_t n;
        if (dl_range_list(lockdir, name, DIRLOCK_DEFAULT_STALE_AGE, &list, &n, NULL) != DIRLOCK_OK)
                return 0;
        unsigned held = 0;
        for (size_t i = 0; i < n; i++)
                held += !list[i].waiting;
        free(list);
        return held;
}
