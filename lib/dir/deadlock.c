/* deadlock.c - deadlock detection in a directory space: a thread that
 * waits for a lock while it holds locks of the same space finds out
 * whether its wait closes a cycle of waits, and gets DIRLOCK_EDEADLK
 * naming the cycle instead of waiting out its timeout (seed 001's P->Q
 * against Q->P, with any number of locks and processes).
 *
 * THE GRAPH.  Its nodes are threads blocked in a wait: the wait
 * register's t.<...> entries (waits.c), each with the wait's record: the
 * lock, what blocks it (the record's `for`), the mode and range asked.
 * A wait is blocked by holds (blockers() below): W's owner entry, the
 * readers' entries, held range entries, or the permits of its group --
 * those whose modes conflict with what it asks.  A hold belongs to the
 * thread its owner record names (tid), and, for a lock held with a
 * partner (dirlock_options.partner_pid: the dirlock command's COMMAND),
 * also to the partner's main thread: the caller lets go of such a lock
 * only once the partner has exited (bin/dirlock does), so a partner that
 * waits keeps it.  A wait cannot end while a hold blocking it stays and
 * the waiter does not give up.  Holds of other hosts, of records without
 * a thread (DIRLOCK_NO_DEADLOCK, older records), and waits of pending
 * acquires (which block no thread) are never followed.
 *
 * STUCK.  The asker X, which is about to wait, is stuck when its wait is
 * blocked by holds of stuck threads: one is enough for a lock; a permit
 * wait ends when any of the N permits is given back, so it needs N.  A
 * thread whose wait is blocked by a hold of X is stuck (the cycle closes
 * through X, whose holds stay while it waits), and so, recursively, is a
 * thread blocked by holds of stuck threads -- searched depth first, at
 * most DEPTH_MAX threads deep and VISITS_MAX threads in all, a thread
 * never twice on one path.  A cycle that does not go through X is not
 * X's to report (its own threads' checks find it).
 *
 * NEVER A FALSE REPORT.  INVARIANT D: X reports a cycle only when at one
 * moment every hold of its proof was held, and every thread of the proof
 * was alive and blocked in the wait its record names -- a cycle of waits
 * existed then.  The proof is read twice:
 *   pass 1 (the search) reads entries one at a time and keeps what it
 *          used: holds (entry paths) and wait records (paths and ids);
 *   pass 2 reads every hold again (the path must still exist), then
 *          every wait record again (the same id), then checks that every
 *          thread of the proof is alive (its process and its thread).
 * Let t1 be the end of pass 1 and t2 the start of pass 2.  A wait record
 * read with the same id at both passes was in place all the time between
 * (INVARIANT W, waits.c), so its thread was blocked in that one wait
 * throughout [t1, t2] and did nothing to its holds -- which only a breaker
 * can take away, for good, since every entry's path carries its holder's
 * token and tokens are never reused (INVARIANT B, exclusive.c) -- so each
 * of its holds seen again in pass 2, before its record was, was held
 * throughout [t1, t2].  X's own holds stay while X is in its acquire.
 * Alive after pass 2 means alive throughout.  So the whole cycle existed
 * at t1.  A lock let go while pass 1 looked (the hard case), or a waiter
 * that gave up, shows in pass 2 as a hold gone or a record changed: no
 * report, and the waiter checks again at its next re-check
 * (DL_DEADLOCK_RECHECK_MS).  Two kinds of entries are no holds but steps
 * of their owners' own waits, made under the same token as the wait:
 * the reader entry a waiting reader makes to look at W again (withdrawn
 * if W is in its way; or its admission, which it will take up), and the
 * range entry a range acquire makes to look at the whole holders
 * (withdrawn likewise), and the W a writer of policy `reader` takes to
 * scan the readers (let go if they are there).  They are skipped
 * (transient()); INVARIANT W's "a blocked thread does nothing to its
 * holds" holds for the rest.
 * tests/model/deadlock.pml checks this with spin, and refutes the
 * detector that reports from one pass.
 *
 * PROMPTNESS.  Every waiter makes its entry before its first check
 * (WHEN in waits.c), so the waiter of a cycle whose first check comes
 * last finds every other's entry in place.  Every
 * blocking waiter checks DL_DEADLOCK_FIRST_MS after it starts waiting
 * (its wait wakes for it; most waits for a lock in use are over by then,
 * and never pay for a check) and again every DL_DEADLOCK_RECHECK_MS
 * while it waits, so a cycle is reported within DL_DEADLOCK_FIRST_MS in
 * the usual case, and within a recheck when a lock changing hands made
 * the first check prove nothing.  When a check runs changes no verdict:
 * the proof stands on what the two passes read.  Two waits that close a
 * cycle at the same moment may both report it: each saw the whole cycle,
 * which did exist.  (Even a thread that holds
 * no lock of its own checks: it may be the partner of holds -- the
 * command run by a dirlock that holds them -- and most checks end at
 * once, the holder in the way having no wait entry.)
 *
 * ON A NETWORK FILESYSTEM (netfs.c) the graph is this host's: a thread of
 * another host is never a node, so a cycle through one is not reported.
 * Listings go through dl_dir_names (whole or nothing: a listing that
 * misses a blocker proves less, never more), and pass 2 asks whether a
 * hold is still there of a listing of its directory (dl_fs_present),
 * since a client may still find by name an entry another client has
 * removed. */
#include "fsops.h"
#include "range_internal.h"
#include "rw_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEPTH_MAX  16 /* threads on one path of the search */
#define VISITS_MAX 64 /* wait records read in one search */
#define PROOF_MAX  64 /* holds and records one proof keeps */

/* A hold: the entry (or entries: W's and its U) that make it, and the
 * owner record of the holder. */
struct hold {
        char *path, *path2;
        dl_record rec;
        const char *looks; /* the waits of its owner that make it a step (transient) */
};

/* What one search keeps: the proof so far (a stack, cut back when a
 * branch fails) and the threads on the current path. */
struct search {
        const char *lockdir;
        const dl_wait_record *self; /* X's wait */
        char *holds[PROOF_MAX];     /* entry paths to see again */
        size_t nholds;
        struct {
                char *path;
                char id[DIRLOCK_TOKEN_LEN + 1];
                dl_record who;
        } waits[PROOF_MAX];
        size_t nwaits;
        dl_record path_who[DEPTH_MAX]; /* the threads on the path */
        size_t depth;
        unsigned visits;
        char story[480]; /* the cycle, for the message, from X on */
        size_t story_len;
        bool full; /* the proof outgrew PROOF_MAX: give up */
};

static bool same_thread(const dl_record *a, pid_t pid, pid_t tid, const dl_record *b)
{
        return pid == b->pid && tid == b->tid && a->pidns == b->pidns && strcmp(a->boot_id, b->boot_id) == 0;
}

/* ---- reading the space ------------------------------------------------------- */

static void hold_free(struct hold *h, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(h[i].path);
                free(h[i].path2);
        }
        free(h);
}

/* Read entry `path` (a symlink holding an owner record): 0 live, -1 gone,
 * stale or unreadable (not a hold that stays). */
static int read_hold(const char *path, double stale_age, const dl_fs *fs, dl_record *rec)
{
        double age;
        if (dl_entry_read(path, rec, &age) != 0 || rec->pid <= 0)
                return -1;
        return dl_entry_stale(rec, age, stale_age, fs) ? -1 : 0;
}

static int add_hold(struct hold **v, size_t *n, size_t *cap, char *path, char *path2, const dl_record *rec,
                    const char *looks)
{
        if (*n == *cap) {
                size_t c = *cap ? *cap * 2 : 8;
                struct hold *g = realloc(*v, c * sizeof *g);
                if (g == NULL) {
                        free(path);
                        free(path2);
                        return -1;
                }
                *v = g;
                *cap = c;
        }
        (*v)[(*n)++] = (struct hold){path, path2, *rec, looks};
        return 0;
}

static int read_wait(const char *path, dl_wait_record *w)
{
        char text[DL_WAIT_RECORD_MAX];
        ssize_t n = dl_fs_readlink(path, text, sizeof text);
        return n < 0 || (size_t)n >= sizeof text ? -1 : dl_wait_record_parse(text, (size_t)n, w);
}

/* Whether entry `token` (W's owner entry, a reader's or a range's) of
 * record `rec`'s thread is no hold but a step of that thread's own wait
 * for `name`: the thread waits for `name` under the entry's token, in one
 * of the waits `looks` names (the letters of the waits that make such
 * entries only to look: a waiting reader's re-announce, a range
 * acquire's held entry, a `reader` writer's W -- each withdrawn when
 * something is in its way).  A hold a wait keeps while it waits (a
 * writer's W while it drains, an upgrade's range, a reader waiting for
 * ranges) is no step. */
static bool transient(const char *lockdir, const dl_record *rec, const char *token, const char *name,
                      const char *looks)
{
        if (rec->tid <= 0)
                return false;
        char *path = dl_layout_wait_thread(lockdir, rec->boot_id, rec->pidns, rec->pid, rec->tid);
        dl_wait_record w;
        bool yes = path != NULL && read_wait(path, &w) == 0 && strcmp(w.name, name) == 0 &&
                   strchr(looks, w.target) != NULL && strcmp(w.who.token, token) == 0;
        free(path);
        return yes;
}

/* The letters of those waits, for each kind of entry. */
static const char w_looks[] = {DL_FOR_READERS_OR_W, '\0'};
static const char reader_looks[] = {DL_FOR_W_TO_READ, '\0'};
static const char range_looks[] = {DL_FOR_RANGE, '\0'};

/* W's holder, when it holds; `to_read`: only when it holds readers off
 * (its mode is not intent, or its U exists -- then U is part of the
 * hold). */
static int w_hold(const char *lockdir, const char *name, bool to_read, double stale_age, struct hold **v,
                  size_t *n, size_t *cap)
{
        char *lock = dl_layout_path(lockdir, name, DL_SUFFIX_LOCK);
        dl_lock_view view;
        int rc = 0;
        const dl_fs *fs = dl_fs_of(lockdir, NULL);
        if (lock != NULL && dl_lock_look(lock, fs, &view) == 0 && view.state == DL_LOCK_OWNED &&
            view.rec.pid > 0 && !dl_entry_stale(&view.rec, view.age, stale_age, fs) &&
            !transient(lockdir, &view.rec, view.token, name, w_looks)) {
                char *entry = dl_join(lock, view.leaf, NULL), *up = NULL;
                bool blocks = true;
                if (to_read && view.rec.mode == DIRLOCK_INTENT) {
                        up = dl_layout_up(lockdir, name, view.token);
                        blocks = up != NULL && dl_fs_present(up, fs->network) == 1;
                }
                if (entry != NULL && blocks)
                        rc = add_hold(v, n, cap, entry, up, &view.rec, w_looks);
                else {
                        free(entry);
                        free(up);
                }
        }
        free(lock);
        return rc;
}

/* The readers' entries (r. and a.) of `name`, but `token`'s own and those
 * that are steps of their readers' waits (transient). */
static int reader_holds(const char *lockdir, const char *name, const char *token, double stale_age,
                        struct hold **v, size_t *n, size_t *cap)
{
        const dl_fs *fs = dl_fs_of(lockdir, NULL);
        char *dir = dl_layout_path(lockdir, name, DL_SUFFIX_READERS);
        char **names = NULL;
        size_t count = 0;
        if (dir == NULL || dl_dir_names(dir, fs, &names, &count, NULL) != DIRLOCK_OK) {
                free(dir);
                return 0; /* none seen: fewer blockers prove less, never more */
        }
        int rc = 0;
        for (size_t i = 0; i < count && rc == 0; i++) {
                int kind = dl_layout_entry_kind(names[i]);
                if ((kind != DL_ENTRY_READER && kind != DL_ENTRY_ADMITTED) ||
                    strcmp(names[i] + 2, token) == 0)
                        continue;
                char *entry = dl_join(dir, names[i], NULL);
                dl_record rec;
                if (entry != NULL && read_hold(entry, stale_age, fs, &rec) == 0 &&
                    !transient(lockdir, &rec, names[i] + 2, name, reader_looks))
                        rc = add_hold(v, n, cap, entry, NULL, &rec, reader_looks);
                else
                        free(entry);
        }
        dl_dir_names_free(names, count);
        free(dir);
        return rc;
}

/* Held range entries of `name` that block a wait for [lo, hi) in `mode`
 * (any held range when `any`), but `token`'s own and those that are steps
 * of their holders' waits (transient). */
static int range_holds(const char *lockdir, const char *name, bool any, double lo, double hi, int mode,
                       const char *token, double stale_age, struct hold **v, size_t *n, size_t *cap)
{
        const dl_fs *fs = dl_fs_of(lockdir, NULL);
        char *dir = dl_layout_path(lockdir, name, DL_SUFFIX_RANGES);
        char **names = NULL;
        size_t count = 0;
        if (dir == NULL || dl_dir_names(dir, fs, &names, &count, NULL) != DIRLOCK_OK) {
                free(dir);
                return 0;
        }
        int rc = 0;
        char ours = dl_range_mode_letter(mode);
        for (size_t i = 0; i < count && rc == 0; i++) {
                struct dl_range_entry e;
                if (!dl_range_parse_leaf(names[i], &e) || e.state != DL_RANGE_HELD ||
                    strcmp(e.token, token) == 0)
                        continue;
                if (!any && (!dl_range_overlap(e.lo, e.hi, lo, hi) || !dl_range_modes_conflict(e.mode, ours)))
                        continue;
                char *entry = dl_join(dir, names[i], NULL);
                dl_record rec;
                if (entry != NULL && read_hold(entry, stale_age, fs, &rec) == 0 &&
                    !transient(lockdir, &rec, e.token, name, range_looks))
                        rc = add_hold(v, n, cap, entry, NULL, &rec, range_looks);
                else
                        free(entry);
        }
        dl_dir_names_free(names, count);
        free(dir);
        return rc;
}

/* The permits held in group n<N> of `name`. */
static int permit_holds(const char *lockdir, const char *name, unsigned permits, double stale_age,
                        struct hold **v, size_t *n, size_t *cap)
{
        const dl_fs *fs = dl_fs_of(lockdir, NULL);
        char *pdir = dl_layout_path(lockdir, name, DL_SUFFIX_PERMITS);
        char *group = pdir != NULL ? dl_layout_permit_group(pdir, permits) : NULL;
        free(pdir);
        char **names = NULL;
        size_t count = 0;
        if (group == NULL || dl_dir_names(group, fs, &names, &count, NULL) != DIRLOCK_OK) {
                free(group);
                return 0;
        }
        int rc = 0;
        unsigned k;
        for (size_t i = 0; i < count && rc == 0; i++) {
                if (!dl_layout_permit_k(names[i], &k))
                        continue;
                char *slot = dl_join(group, names[i], NULL);
                dl_lock_view view;
                if (slot != NULL && dl_lock_look(slot, fs, &view) == 0 && view.state == DL_LOCK_OWNED &&
                    view.rec.pid > 0 && !dl_entry_stale(&view.rec, view.age, stale_age, fs)) {
                        char *entry = dl_join(slot, view.leaf, NULL);
                        if (entry != NULL)
                                rc = add_hold(v, n, cap, entry, NULL, &view.rec, "");
                }
                free(slot);
        }
        dl_dir_names_free(names, count);
        free(group);
        return rc;
}

/* The holds that block wait `w`, and how many of them must be stuck for
 * it to be (*need).  0, or -1 (out of memory: nothing proven). */
static int blockers(const char *lockdir, const dl_wait_record *w, struct hold **v, size_t *n, unsigned *need)
{
        size_t cap = 0;
        *v = NULL;
        *n = 0;
        *need = 1;
        double stale = w->who.stale_ms > 0 ? (double)w->who.stale_ms / 1e3 : DIRLOCK_DEFAULT_STALE_AGE;
        const char *name = w->name, *tok = w->who.token;
        switch (w->target) {
        case DL_FOR_W:
                return w_hold(lockdir, name, false, stale, v, n, &cap);
        case DL_FOR_W_TO_READ:
                return w_hold(lockdir, name, true, stale, v, n, &cap);
        case DL_FOR_READERS:
                return reader_holds(lockdir, name, tok, stale, v, n, &cap);
        case DL_FOR_READERS_OR_W:
                if (w_hold(lockdir, name, false, stale, v, n, &cap) != 0)
                        return -1;
                return reader_holds(lockdir, name, tok, stale, v, n, &cap);
        case DL_FOR_RANGES:
                return range_holds(lockdir, name, true, 0, 0, 0, tok, stale, v, n, &cap);
        case DL_FOR_RANGE:
                if (w_hold(lockdir, name, false, stale, v, n, &cap) != 0 ||
                    reader_holds(lockdir, name, tok, stale, v, n, &cap) != 0)
                        return -1;
                return range_holds(lockdir, name, false, w->lo, w->hi, w->mode, tok, stale, v, n, &cap);
        case DL_FOR_RANGE_UPGRADE:
                return range_holds(lockdir, name, false, w->lo, w->hi, DIRLOCK_EXCLUSIVE, tok, stale, v, n,
                                   &cap);
        case DL_FOR_PERMIT:
                *need = w->permits > 0 ? w->permits : 1;
                return permit_holds(lockdir, name, w->permits, stale, v, n, &cap);
        default:
                return 0; /* a letter this version does not know: nothing followed */
        }
}

/* ---- the search (pass 1) ---------------------------------------------------------- */

/* Append to the story of the cycle (cut short when it is long). */
static void tell(struct search *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tell(struct search *s, const char *fmt, ...)
{
        if (s->story_len + 1 >= sizeof s->story)
                return;
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(s->story + s->story_len, sizeof s->story - s->story_len, fmt, ap);
        va_end(ap);
        if (k > 0)
                s->story_len += (size_t)k;
        if (s->story_len >= sizeof s->story)
                s->story_len = sizeof s->story - 1;
}

static bool keep_hold(struct search *s, const struct hold *h)
{
        if (s->nholds + 2 > PROOF_MAX) {
                s->full = true;
                return false;
        }
        s->holds[s->nholds++] = strdup(h->path);
        if (h->path2 != NULL)
                s->holds[s->nholds++] = strdup(h->path2);
        return s->holds[s->nholds - 1] != NULL;
}

static void cut_back(struct search *s, size_t nholds, size_t nwaits, size_t story_len)
{
        while (s->nholds > nholds)
                free(s->holds[--s->nholds]);
        while (s->nwaits > nwaits)
                free(s->waits[--s->nwaits].path);
        s->story_len = story_len;
        s->story[story_len] = '\0';
}

static bool stuck(struct search *s, const dl_wait_record *w);

/* Whether thread (pid, tid) of the host and namespace of `ref` is stuck:
 * X itself, or blocked in a wait (its entry in the register) that is. */
static bool thread_stuck(struct search *s, const struct hold *h, const char *name, pid_t pid, pid_t tid)
{
        const dl_record *ref = &h->rec;
        const dl_record *x = &s->self->who;
        if (same_thread(ref, pid, tid, x))
                return true;
        if (tid <= 0 || !dl_record_same_host(ref) || s->depth + 1 >= DEPTH_MAX || s->visits >= VISITS_MAX ||
            s->nwaits >= PROOF_MAX)
                return false;
        for (size_t i = 0; i < s->depth; i++)
                if (same_thread(ref, pid, tid, &s->path_who[i]))
                        return false; /* a cycle that does not go through X */
        char *path = dl_layout_wait_thread(s->lockdir, ref->boot_id, ref->pidns, pid, tid);
        dl_wait_record w;
        s->visits++;
        if (path == NULL || read_wait(path, &w) != 0 || w.pending || w.who.pid != pid || w.who.tid != tid) {
                free(path);
                return false;
        }
        /* This very wait, which the second reading confirms, may be the one
         * whose step the hold is (transient): then it is no hold. */
        if (strcmp(w.name, name) == 0 && strcmp(w.who.token, h->rec.token) == 0 &&
            strchr(h->looks, w.target)) {
                free(path);
                return false;
        }
        size_t at = s->nwaits++;
        s->waits[at].path = path;
        memcpy(s->waits[at].id, w.id, sizeof w.id);
        s->waits[at].who = w.who;
        s->path_who[s->depth++] = w.who;
        bool yes = stuck(s, &w);
        s->depth--;
        return yes;
}

/* Whether wait `w` is stuck: enough of its blocking holds belong to
 * stuck threads. */
static bool stuck(struct search *s, const dl_wait_record *w)
{
        struct hold *v;
        size_t n;
        unsigned need;
        if (blockers(s->lockdir, w, &v, &n, &need) != 0) {
                hold_free(v, n);
                return false;
        }
        unsigned found = 0;
        for (size_t i = 0; i < n && found < need && !s->full; i++) {
                const dl_record *r = &v[i].rec;
                size_t nh = s->nholds, nw = s->nwaits, ns = s->story_len;
                if (found == 0 && s->depth > 0)
                        tell(s, ", which waits for '%s'", w->name);
                if (!keep_hold(s, &v[i])) {
                        cut_back(s, nh, nw, ns);
                        continue;
                }
                bool by_self = same_thread(r, r->pid, r->tid, &s->self->who) ||
                               (r->partner > 0 && same_thread(r, r->partner, r->partner, &s->self->who));
                if (found == 0 && by_self)
                        tell(s,
                             r->pid == s->self->who.pid ? " held by this thread"
                                                        : " held for this process by pid %ld, which runs it",
                             (long)r->pid);
                else if (found == 0 && r->partner > 0)
                        tell(s, " held by pid %ld on %s for its command, pid %ld", (long)r->pid, r->host,
                             (long)r->partner);
                else if (found == 0)
                        tell(s, " held by pid %ld (thread %ld) on %s", (long)r->pid, (long)r->tid, r->host);
                if (by_self || (r->tid > 0 && thread_stuck(s, &v[i], w->name, r->pid, r->tid)) ||
                    (r->partner > 0 && thread_stuck(s, &v[i], w->name, r->partner, r->partner)))
                        found++;
                else
                        cut_back(s, nh, nw, ns);
        }
        hold_free(v, n);
        return found >= need;
}

/* ---- pass 2 ---------------------------------------------------------------------- */

static bool thread_alive(const dl_record *who)
{
        if (!dl_record_same_host(who) || dl_process_alive(who->pid, who->start_time) != 1)
                return false;
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/task/%ld", (long)who->pid, (long)who->tid);
        struct stat st;
        return stat(path, &st) == 0;
}

static bool confirmed(const struct search *s)
{
        /* On a network filesystem a hold's presence is asked of a listing
         * of its directory: a client may still find by name an entry
         * another client has removed (LISTINGS in fsops.c). */
        bool network = dl_fs_of(s->lockdir, NULL)->network;
        for (size_t i = 0; i < s->nholds; i++)
                if (s->holds[i] == NULL || dl_fs_present(s->holds[i], network) != 1)
                        return false;
        for (size_t i = 0; i < s->nwaits; i++) {
                dl_wait_record w;
                if (read_wait(s->waits[i].path, &w) != 0 || strcmp(w.id, s->waits[i].id) != 0)
                        return false;
        }
        for (size_t i = 0; i < s->nwaits; i++)
                if (!thread_alive(&s->waits[i].who))
                        return false;
        return true;
}

int dl_deadlock_check(dirlock *h, const dl_wait_record *self, dirlock_error *err)
{
        if (self->who.tid <= 0)
                return DIRLOCK_OK;
        struct search *s = calloc(1, sizeof *s);
        if (s == NULL)
                return DIRLOCK_OK;
        s->lockdir = dl_dir_of(h)->lockdir;
        s->self = self;
        s->story_len =
            (size_t)snprintf(s->story, sizeof s->story, "this thread (pid %ld) would wait for '%s'",
                             (long)self->who.pid, self->name);
        bool proven = stuck(s, self) && !s->full && confirmed(s);
        int rc = DIRLOCK_OK;
        if (proven)
                rc = dl_fail(err, DIRLOCK_EDEADLK, 0, "deadlock: %s: a cycle of waits, which would never end",
                             s->story);
        cut_back(s, 0, 0, 0);
        free(s);
        return rc;
}
