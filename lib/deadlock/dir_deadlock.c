/* deadlock.c - deadlock detection in a directory space: a thread that
 * waits for a lock while it holds locks of the same space finds out
 * whether its wait is part of a knot of waits that can never end -- a
 * cycle (seed 001's P->Q against Q->P, with any number of locks and
 * processes), or a knot through counting locks, readers and ranges -- and
 * if it is that knot's one victim, gets DIRLOCK_EDEADLK naming it instead
 * of waiting out its timeout; the other members wait on and get their
 * locks.
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
 * a thread (DIRLOCK_NO_DEADLOCK, older records), a hold the asking
 * thread's records give it under a token none of its handles has (what
 * a failed release left: it lasts only to its stale age), waits of
 * pending acquires (which block no thread), and waits marked told (ONE
 * VICTIM: their threads are leaving) are never followed.
 *
 * KNOTS.  A wait for a lock, or for readers or ranges to drain, ends only
 * when every hold in its way is let go: one stuck hold keeps it stuck (an
 * AND of its blockers).  A wait for one of N permits ends when any one of
 * them is given back: it is stuck only when all N are (an OR: `need` N).
 * So the deadlock of a graph with counting locks is a knot, not a cycle:
 * a set of waits each kept out by at least its `need` holds of threads of
 * the set (CLOSED: none of them can end before another does, so none
 * ever does), every one reaching every other through those holds
 * (STRONGLY CONNECTED: each is a cause of the others' waits, so telling
 * any one of them breaks the knot).  Pass 1 reads the graph from the
 * asker X breadth first -- every thread whose hold is in the way of a
 * wait read, at most NODES_MAX threads -- and takes the largest closed,
 * strongly connected set around X: the closed ones (the greatest: start
 * from all, drop any wait fewer than `need` of whose holds belong to the
 * rest, until none drops), narrowed to the waits X's reaches and that
 * reach X's, again until neither drops one.  A wait blocked by a knot of
 * others, itself in none, is not X's to report: the knot's own victim
 * breaks it, and X's wait then ends.  Every member of the knot finds the
 * same set from the same records: it is the largest closed, strongly
 * connected set around each of them.  A thread not read (past NODES_MAX)
 * counts as not stuck: less is proven, never more.
 *
 * NEVER A FALSE REPORT.  INVARIANT D: X reports a knot only when at one
 * moment every hold of its proof was held, and every thread of the knot
 * was alive and blocked in the wait its record names, kept out by its
 * `need` holds of the proof -- a knot of waits existed then.  The proof
 * is read twice:
 *   pass 1 (the search) reads entries one at a time and keeps what it
 *          used: holds (entry paths) and wait records (paths and ids);
 *   pass 2 reads every hold of the proof again (the path must still
 *          exist), then every wait record of the knot again (the same
 *          id, not told), then checks that every thread of the knot is
 *          alive (its process and its thread).
 * Let t1 be the end of pass 1 and t2 the start of pass 2.  A wait record
 * read with the same id at both passes was in place all the time between
 * (INVARIANT W, waits.c), so its thread was blocked in that one wait
 * throughout [t1, t2] and did nothing to its holds -- which only a breaker
 * can take away, for good, since every entry's path carries its holder's
 * token and tokens are never reused (INVARIANT B, exclusive.c) -- so each
 * of its holds seen again in pass 2, before its record was, was held
 * throughout [t1, t2].  X's own holds stay while X is in its acquire.
 * Alive after pass 2 means alive throughout.  So the whole knot existed
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
 *
 * ONE VICTIM.  A knot is broken by telling one of its members; telling
 * two breaks it twice over, and both requests fail where one would do.
 * The victim is the knot's youngest wait -- the latest `acquired` (the
 * moment the wait began), then the larger id: a total order every member
 * computes the same from the same records -- and a member that finds a
 * knot it is not the victim of keeps waiting and checks again at its
 * next re-check.  What the members read is not of one moment, though: a
 * wait that joins a knot while another member's check is under way, or a
 * member that gives up and waits again (a retry: now the youngest), can
 * make two checks each see itself as the youngest of what it read.  So a
 * victim also claims its report, in steps:
 *   1. before the pass 1 its proof uses, it reads the verdict counter V
 *      (D/.waits/verdicts, a COUNTER of dir_fence.c: made once, moved
 *      only by a rename that succeeds while it still holds what the
 *      renamer read) -- only once a first reading found it the victim,
 *      so a check that finds no knot of its own costs nothing more;
 *   2. after pass 2, it marks its entry told (dl_wait_told, one atomic
 *      rename): from then on a reader of the entry finds a thread that is
 *      leaving, no node -- and the told entry stays until the wait ends
 *      (the entry goes), or until step 3 fails;
 *   3. it advances the counter from V.  Done: it is told DIRLOCK_EDEADLK.
 *      Failed (someone else advanced it since step 1: another report):
 *      it takes the mark off and checks again at once.
 * INVARIANT V: of two reports, the later one's knot holds no wait of the
 * earlier one's thread but later ones -- it is a knot the earlier report
 * leaves whole.  Proof: the counter's moves are one after another, each
 * from the value its mover read at step 1.  Let R1's move come first.
 * R2's move from the value it read succeeded, so that read came after
 * R1's move (before it, R1 would have moved the counter from under R2),
 * hence after R1's mark, and so did all of R2's pass 1: every reading of
 * R1's entry in it found R1 told, or gone, or waiting anew.  R1's told
 * wait is no node of R2's graph, so none of R2's knot, which existed at
 * R2's t1 (INVARIANT D), closed: each of its waits kept out by holds of
 * its own blocked threads, whatever R1's thread does.  So no report is
 * wasted: in a cycle of exclusive locks, each wait with one hold in its
 * way, two members are never both told (a cycle through R1's wait passes
 * through no node); in a knot, a second member is told only of a knot
 * that outlives the first report, which needed a victim of its own.
 * tests/model/deadlock.pml checks INVARIANTS D and V with spin, and
 * refutes the detector that reports from one pass, the one whose every
 * member reports, and the victim rule without the claim.  A victim that
 * is stopped keeps its knot until it runs again (its holds stay; the
 * others wait on -- at most their timeouts -- and it reports when it
 * checks); one that dies breaks the knot (pass 2 finds it dead; its
 * holds are broken as a dead owner's); a slow check delays its report,
 * and nobody else's: a victim stopped between its mark and its claim
 * shows the others a member leaving, and they find no knot through it
 * until it runs on.
 *
 * PROMPTNESS.  Every waiter makes its entry before its first check
 * (WHEN in waits.c).  A cycle closes when its last wait begins -- a
 * thread blocked in a wait takes no lock -- and that wait is the
 * youngest: its first check, DL_DEADLOCK_FIRST_MS later, finds every
 * other's entry in place and reports -- unless another member, slow to
 * run, made its entry later still; its second check,
 * DL_DEADLOCK_SECOND_MS into the wait, is for that.  Every blocking
 * waiter checks DL_DEADLOCK_FIRST_MS and DL_DEADLOCK_SECOND_MS after it
 * starts waiting (its wait wakes for them; most waits for a lock in use
 * are over by then, and never pay for a check) and again every
 * DL_DEADLOCK_RECHECK_MS while it waits, so a knot is reported within
 * DL_DEADLOCK_FIRST_MS in the usual case, DL_DEADLOCK_SECOND_MS on a busy
 * machine, and within a recheck when a lock changing hands made the
 * checks prove nothing.  When a check runs changes no verdict: the proof
 * stands on what the two passes read.
 * (Even a thread that holds no lock of its own checks: it may be the
 * partner of holds -- the command run by a dirlock that holds them -- and
 * most checks end at once, the holder in the way having no wait entry.)
 *
 * ON A NETWORK FILESYSTEM (lib/netfs/netfs.c) the graph is this host's: a thread of
 * another host is never a node, so a knot through one is not reported.
 * Listings go through dl_dir_names (whole or nothing: a listing that
 * misses a blocker proves less, never more), and pass 2 asks whether a
 * hold is still there of a listing of its directory (dl_fs_present),
 * since a client may still find by name an entry another client has
 * removed.  The verdict counter is shared by the hosts of the directory:
 * their reports are claimed one after another, which costs nothing. */
#include "deadlock.h"
#include "dir_counter.h"
#include "dir_fsops.h"
#include "dir_range.h"
#include "dir_rw.h"
#include "modes.h"
#include "permit.h"
#include "test_hooks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NODES_MAX 64  /* threads read in one search */
#define HOLDS_MAX 512 /* holds read in one search */

/* A hold: the entry (or entries: W's and its U) that make it, the owner
 * record of the holder, and the nodes it belongs to. */
struct hold {
        char *path, *path2;
        dl_record rec;
        const char *looks; /* the waits of its owner that make it a step (transient) */
        int by[2];         /* its thread's node, its partner's main thread's; -1: none */
};

/* A thread read in pass 1. */
struct node {
        pid_t pid, tid;
        char *path;          /* its register entry (NULL: the asker's own)    */
        dl_wait_record w;    /* its wait, when `waiting`                       */
        bool waiting;        /* blocked in a wait: a node of the graph         */
        size_t first, count; /* its blocking holds: holds[first, first + count) */
        unsigned need;       /* how many of them keep it out                   */
        bool in;             /* in the knot as narrowed so far                 */
        bool seen, back;     /* scratch of the reaches                         */
        int from, via;       /* the story's search: the node and hold before it */
};

/* What one search reads: the threads (node[0] the asker) and the holds. */
struct graph {
        const char *lockdir;
        struct node node[NODES_MAX];
        size_t nnodes;
        struct hold *hold;
        size_t nholds, cap;
};

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

/* Whether `rec` gives a hold to the asking thread under a token none of
 * its handles holds: an entry a failed release left (its handle freed),
 * which stays only until it is stale.  A knot through it would end
 * then: it proves nothing (less is proven, never more). */
static bool left_by_this_thread(const dl_record *rec)
{
        return rec->pid == dl_self_pid() && rec->tid == dl_self_tid() && dl_record_same_host(rec) == 1 &&
               dl_handle_thread_holds(rec->token) == 0;
}

static int add_hold(struct hold **v, size_t *n, size_t *cap, char *path, char *path2, const dl_record *rec,
                    const char *looks)
{
        if (left_by_this_thread(rec)) {
                free(path);
                free(path2);
                return 0;
        }
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
        (*v)[(*n)++] = (struct hold){path, path2, *rec, looks, {-1, -1}};
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

/* Entry `leaf` of folder `dir` of `name`, under `token` (a reader's or a
 * range's), added as a hold when it is live (read_hold) and no step of
 * its thread's wait (transient, in one of the waits `looks` names).  0,
 * or -1 (out of memory). */
static int add_entry_hold(const char *lockdir, const char *name, const char *dir, const char *leaf,
                          const char *token, double stale_age, const dl_fs *fs, const char *looks,
                          struct hold **v, size_t *n, size_t *cap)
{
        char *entry = dl_join(dir, leaf, NULL);
        dl_record rec;
        if (entry != NULL && read_hold(entry, stale_age, fs, &rec) == 0 &&
            !transient(lockdir, &rec, token, name, looks))
                return add_hold(v, n, cap, entry, NULL, &rec, looks);
        free(entry);
        return 0;
}

/* The readers' entries (r. and a.) of `name`, but `token`'s own and those
 * that are steps of their readers' waits (transient). */
static int reader_holds(const char *lockdir, const char *name, const char *token, double stale_age,
                        struct hold **v, size_t *n, size_t *cap)
{
        const dl_fs *fs = dl_fs_of(lockdir, NULL);
        char *dir, **names;
        size_t count;
        if (!dl_dir_names_of(lockdir, name, DL_SUFFIX_READERS, fs, &dir, &names, &count))
                return 0; /* none seen: fewer blockers prove less, never more */
        int rc = 0;
        for (size_t i = 0; i < count && rc == 0; i++) {
                int kind = dl_layout_entry_kind(names[i]);
                if ((kind != DL_ENTRY_READER && kind != DL_ENTRY_ADMITTED) ||
                    strcmp(names[i] + 2, token) == 0)
                        continue;
                rc = add_entry_hold(lockdir, name, dir, names[i], names[i] + 2, stale_age, fs, reader_looks,
                                    v, n, cap);
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
        char *dir, **names;
        size_t count;
        if (!dl_dir_names_of(lockdir, name, DL_SUFFIX_RANGES, fs, &dir, &names, &count))
                return 0;
        int rc = 0;
        for (size_t i = 0; i < count && rc == 0; i++) {
                struct dl_range_entry e;
                if (!dl_range_parse_leaf(names[i], &e) || e.state != DL_RANGE_HELD ||
                    strcmp(e.token, token) == 0)
                        continue;
                if (!any && (!dl_range_overlap(e.lo, e.hi, lo, hi) ||
                             !dl_modes_conflict(dl_mode_of_letter(e.mode), mode)))
                        continue;
                rc = add_entry_hold(lockdir, name, dir, names[i], e.token, stale_age, fs, range_looks, v, n,
                                    cap);
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

/* ---- pass 1: the graph ----------------------------------------------------------- */

static bool transient_for(const dl_wait_record *w, const char *name, const struct hold *h)
{
        return strcmp(w->name, name) == 0 && strcmp(w->who.token, h->rec.token) == 0 &&
               strchr(h->looks, w->target) != NULL;
}

/* The node of thread (pid, tid) of this host, read now if it is new (its
 * register entry: a node when it holds a wait of that thread, neither
 * pending nor told); -1 past NODES_MAX. */
static int node_of(struct graph *g, pid_t pid, pid_t tid)
{
        for (size_t i = 0; i < g->nnodes; i++)
                if (g->node[i].pid == pid && g->node[i].tid == tid)
                        return (int)i;
        if (g->nnodes == NODES_MAX)
                return -1;
        struct node *n = &g->node[g->nnodes];
        const dl_record *x = &g->node[0].w.who;
        memset(n, 0, sizeof *n);
        n->pid = pid;
        n->tid = tid;
        n->path = dl_layout_wait_thread(g->lockdir, x->boot_id, x->pidns, pid, tid);
        n->waiting = n->path != NULL && read_wait(n->path, &n->w) == 0 && !n->w.pending && !n->w.told &&
                     n->w.who.pid == pid && n->w.who.tid == tid;
        return (int)g->nnodes++;
}

/* The node hold h of a wait for `name` belongs to through thread (pid,
 * tid): -1 when none, or when that thread's wait, as read, is the one
 * whose step the hold is (transient: no hold). */
static int owner_node(struct graph *g, const struct hold *h, const char *name, pid_t pid, pid_t tid)
{
        int i = node_of(g, pid, tid);
        if (i >= 0 && g->node[i].waiting && transient_for(&g->node[i].w, name, h))
                return -1;
        return i;
}

/* Read node i's blocking holds into the graph, and their owners' nodes. */
static void read_blockers(struct graph *g, size_t i)
{
        struct hold *v;
        size_t n;
        unsigned need;
        struct node *w = &g->node[i];
        w->first = g->nholds;
        w->need = UINT_MAX; /* stuck on nothing it could not read */
        if (blockers(g->lockdir, &w->w, &v, &n, &need) != 0 || g->nholds + n > HOLDS_MAX) {
                hold_free(v, n);
                return;
        }
        if (g->nholds + n > g->cap) {
                size_t cap = g->cap ? g->cap : 16;
                while (cap < g->nholds + n)
                        cap *= 2;
                struct hold *grown = realloc(g->hold, cap * sizeof *grown);
                if (grown == NULL) {
                        hold_free(v, n);
                        return;
                }
                g->hold = grown;
                g->cap = cap;
        }
        char name[DIRLOCK_NAME_MAX + 1];
        memcpy(name, w->w.name, sizeof name);
        for (size_t k = 0; k < n; k++) {
                struct hold *h = &g->hold[g->nholds++];
                *h = v[k];
                h->by[0] = h->by[1] = -1;
                const dl_record *r = &h->rec;
                if (!dl_record_same_host(r))
                        continue;
                if (r->tid > 0)
                        h->by[0] = owner_node(g, h, name, r->pid, r->tid);
                if (r->partner > 0)
                        h->by[1] = owner_node(g, h, name, r->partner, r->partner);
        }
        free(v); /* the paths are the graph's now */
        g->node[i].count = n;
        g->node[i].need = need;
}

/* Pass 1: from the asker's wait, breadth first. */
static void read_graph(struct graph *g, const dl_wait_record *self)
{
        struct node *x = &g->node[0];
        memset(x, 0, sizeof *x);
        x->pid = self->who.pid;
        x->tid = self->who.tid;
        x->w = *self;
        x->waiting = true;
        g->nnodes = 1;
        for (size_t i = 0; i < g->nnodes; i++)
                if (g->node[i].waiting)
                        read_blockers(g, i);
}

static void graph_free(struct graph *g)
{
        for (size_t i = 0; i < g->nnodes; i++)
                free(g->node[i].path);
        for (size_t k = 0; k < g->nholds; k++) {
                free(g->hold[k].path);
                free(g->hold[k].path2);
        }
        free(g->hold);
        free(g);
}

/* ---- the knot ------------------------------------------------------------------ */

/* Whether hold h belongs to a node of the knot as narrowed so far. */
static bool held_in(const struct graph *g, const struct hold *h)
{
        return (h->by[0] >= 0 && g->node[h->by[0]].in) || (h->by[1] >= 0 && g->node[h->by[1]].in);
}

/* Drop every wait fewer than `need` of whose holds belong to the rest,
 * until none drops (CLOSED). */
static void keep_closed(struct graph *g)
{
        bool again = true;
        while (again) {
                again = false;
                for (size_t i = 0; i < g->nnodes; i++) {
                        struct node *n = &g->node[i];
                        unsigned found = 0;
                        for (size_t k = n->first; n->in && k < n->first + n->count && found < n->need; k++)
                                found += held_in(g, &g->hold[k]);
                        if (n->in && found < n->need)
                                n->in = false, again = true;
                }
        }
}

/* Mark `seen` the nodes of the knot that the asker's wait reaches through
 * their holds (forward), or that reach it (backward). */
static void reach(struct graph *g, bool forward)
{
        for (size_t i = 0; i < g->nnodes; i++)
                g->node[i].seen = i == 0;
        bool again = true;
        while (again) {
                again = false;
                for (size_t i = 0; i < g->nnodes; i++) {
                        struct node *n = &g->node[i];
                        for (size_t k = n->first; n->in && k < n->first + n->count; k++)
                                for (int j = 0; j < 2; j++) {
                                        int o = g->hold[k].by[j];
                                        if (o < 0 || !g->node[o].in)
                                                continue;
                                        bool *from = forward ? &n->seen : &g->node[o].seen;
                                        bool *to = forward ? &g->node[o].seen : &n->seen;
                                        if (*from && !*to)
                                                *to = again = true;
                                }
                }
        }
}

/* Keep the waits the asker's reaches and that reach it (STRONGLY
 * CONNECTED).  Whether one was dropped. */
static bool keep_connected(struct graph *g)
{
        reach(g, false);
        for (size_t i = 0; i < g->nnodes; i++)
                g->node[i].back = g->node[i].seen;
        reach(g, true);
        bool dropped = false;
        for (size_t i = 0; i < g->nnodes; i++)
                if (g->node[i].in && !(g->node[i].back && g->node[i].seen))
                        g->node[i].in = false, dropped = true;
        return dropped;
}

/* The largest closed, strongly connected set of waits around the asker's
 * (KNOTS), in the nodes' `in`: whether there is one. */
static bool knot(struct graph *g)
{
        for (size_t i = 0; i < g->nnodes; i++)
                g->node[i].in = g->node[i].waiting;
        do
                keep_closed(g);
        while (g->node[0].in && keep_connected(g));
        return g->node[0].in;
}

/* Whether wait a began after wait b (ONE VICTIM's order). */
static bool younger(const dl_wait_record *a, const dl_wait_record *b)
{
        if (a->who.acquired_ns != b->who.acquired_ns)
                return a->who.acquired_ns > b->who.acquired_ns;
        return strcmp(a->id, b->id) > 0;
}

/* Whether the asker's wait is the knot's youngest. */
static bool victim(const struct graph *g)
{
        for (size_t i = 1; i < g->nnodes; i++)
                if (g->node[i].in && younger(&g->node[i].w, &g->node[0].w))
                        return false;
        return true;
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

/* Whether hold h, `need` of which per wait the proof keeps, is there
 * still.  On a network filesystem a hold's presence is asked of a
 * listing of its directory: a client may still find by name an entry
 * another client has removed (LISTINGS in lib/netfs/netfs_fsops.c). */
static bool still_held(const struct hold *h, bool network)
{
        return dl_fs_present(h->path, network) == 1 &&
               (h->path2 == NULL || dl_fs_present(h->path2, network) == 1);
}

static bool confirmed(const struct graph *g)
{
        bool network = dl_fs_of(g->lockdir, NULL)->network;
        for (size_t i = 0; i < g->nnodes; i++) {
                const struct node *n = &g->node[i];
                unsigned kept = 0;
                for (size_t k = n->first; n->in && k < n->first + n->count && kept < n->need; k++) {
                        if (!held_in(g, &g->hold[k]))
                                continue;
                        if (!still_held(&g->hold[k], network))
                                return false;
                        kept++;
                }
        }
        for (size_t i = 1; i < g->nnodes; i++) {
                dl_wait_record w;
                if (g->node[i].in &&
                    (read_wait(g->node[i].path, &w) != 0 || w.told || strcmp(w.id, g->node[i].w.id) != 0))
                        return false;
        }
        for (size_t i = 1; i < g->nnodes; i++)
                if (g->node[i].in && !thread_alive(&g->node[i].w.who))
                        return false;
        return true;
}

/* ---- the report ------------------------------------------------------------------ */

struct story {
        char text[480]; /* from the asker on, cut short when long */
        size_t len;
};

static void tell(struct story *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tell(struct story *s, const char *fmt, ...)
{
        if (s->len + 1 >= sizeof s->text)
                return;
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(s->text + s->len, sizeof s->text - s->len, fmt, ap);
        va_end(ap);
        if (k > 0)
                s->len += (size_t)k;
        if (s->len >= sizeof s->text)
                s->len = sizeof s->text - 1;
}

/* Who holds h, which belongs to node `to` (0: the asker). */
static void tell_hold(struct story *s, const struct hold *h, int to, const dl_record *self)
{
        const dl_record *r = &h->rec;
        if (to == 0 && r->pid == self->pid)
                tell(s, " held by this thread");
        else if (to == 0)
                tell(s, " held for this process by pid %ld, which runs it", (long)r->pid);
        else if (r->partner > 0)
                tell(s, " held by pid %ld on %s for its command, pid %ld", (long)r->pid, r->host,
                     (long)r->partner);
        else
                tell(s, " held by pid %ld (thread %ld) on %s", (long)r->pid, (long)r->tid, r->host);
}

/* The shortest cycle of the knot through the asker (breadth first from
 * it), told from the asker on, and the knot's size when it is more. */
static void tell_knot(struct graph *g, struct story *s)
{
        for (size_t i = 0; i < g->nnodes; i++)
                g->node[i].from = g->node[i].via = -1;
        int queue[NODES_MAX], head = 0, tail = 0, last = -1, last_via = -1;
        queue[tail++] = 0;
        while (head < tail && last < 0) {
                int u = queue[head++];
                const struct node *n = &g->node[u];
                for (size_t k = n->first; k < n->first + n->count && last < 0; k++)
                        for (int j = 0; j < 2 && last < 0; j++) {
                                int o = g->hold[k].by[j];
                                if (o < 0 || !g->node[o].in)
                                        continue;
                                if (o == 0) {
                                        last = u, last_via = (int)k;
                                } else if (g->node[o].from < 0) {
                                        g->node[o].from = u;
                                        g->node[o].via = (int)k;
                                        queue[tail++] = o;
                                }
                        }
        }
        int path[NODES_MAX], vias[NODES_MAX], len = 0;
        for (int u = last; u > 0; u = g->node[u].from) {
                path[len] = u;
                vias[len++] = g->node[u].via;
        }
        const dl_record *self = &g->node[0].w.who;
        tell(s, "this thread (pid %ld) would wait for '%s'", (long)self->pid, g->node[0].w.name);
        for (int i = len - 1; i >= 0; i--) {
                tell_hold(s, &g->hold[vias[i]], path[i], self);
                tell(s, ", which waits for '%s'", g->node[path[i]].w.name);
        }
        if (last_via >= 0)
                tell_hold(s, &g->hold[last_via], 0, self);
        size_t members = 0;
        for (size_t i = 0; i < g->nnodes; i++)
                members += g->node[i].in;
        if (members > (size_t)len + 1)
                tell(s, "; %zu threads in all wait for locks only they hold", members);
}

/* ---- the verdict (ONE VICTIM) ---------------------------------------------------- */

/* The verdict counter (step 1): 1 and *n; 0 when it is not made yet (*n
 * 0); -1 when it cannot be read (no report can be claimed). */
static int verdict_read(const char *lockdir, unsigned long long *n)
{
        char *dir = dl_layout_verdicts(lockdir);
        *n = 0;
        int found = dir != NULL ? dl_counter_read(dir, n) : -1;
        if (found == -1 && errno == ESTALE) {
                dl_fs_refresh(dir); /* replaced as we read it (lib/core/dir_fsops.c): once more */
                found = dl_counter_read(dir, n);
        }
        free(dir);
        if (found == 0)
                *n = 0;
        return found < 0 ? -1 : found;
}

/* Step 3: advance the counter from n, which step 1 read (made first when
 * it was missing then): 1 done, 0 someone else advanced it first, -1
 * error.  The next value is taken from the clock too, as a fence is
 * (dir_fence.c): it keeps growing should the counter be removed. */
static int verdict_claim(const dirlock *h, const char *lockdir, int found, unsigned long long n)
{
        char *dir = dl_layout_verdicts(lockdir);
        char *prep = dl_layout_verdicts_prep(lockdir, h->token);
        int rc = -1;
        if (dir != NULL && prep != NULL &&
            (found || dl_counter_make(dir, prep, dl_dir_of(h)->lockdir_mode, NULL) == DIRLOCK_OK)) {
                unsigned long long now = (unsigned long long)(dl_wall_ns() / 1000);
                rc = dl_counter_swap(dir, n, n + 1 > now ? n + 1 : now) == 0 ? 1
                     : errno == ENOENT || errno == ESTALE                    ? 0
                                                                             : -1;
        }
        free(dir);
        free(prep);
        return rc;
}

/* Pass 1 from `self`: the graph, when it holds a knot whose victim is
 * the asker; else NULL. */
static struct graph *knot_of(const char *lockdir, const dl_wait_record *self)
{
        struct graph *g = calloc(1, sizeof *g);
        if (g == NULL)
                return NULL;
        g->lockdir = lockdir;
        read_graph(g, self);
        if (knot(g) && victim(g))
                return g;
        graph_free(g);
        return NULL;
}

int dl_deadlock_check(dirlock *h, const dl_wait_record *self, dirlock_error *err)
{
        if (self->who.tid <= 0)
                return DIRLOCK_OK;
        const char *lockdir = dl_dir_of(h)->lockdir;
        /* A claim lost to another report: look again at once (once). */
        for (int round = 0; round < 2; round++) {
                /* Nearly every check ends here, at the first reading; only
                 * one that finds itself a victim reads the counter (step 1)
                 * and then the graph again, the pass 1 its proof uses. */
                struct graph *g = knot_of(lockdir, self);
                unsigned long long v;
                int found = g != NULL ? verdict_read(lockdir, &v) : -1;
                if (g != NULL)
                        graph_free(g);
                g = found >= 0 ? knot_of(lockdir, self) : NULL;
                if (g != NULL && dl_test_hook(STOP_VICTIM) != NULL)
                        raise(SIGSTOP);
                if (g == NULL || !confirmed(g) || dl_wait_told(h, true) != 0) {
                        if (g != NULL)
                                graph_free(g);
                        return DIRLOCK_OK;
                }
                int claim = verdict_claim(h, lockdir, found, v);
                if (claim == 1) {
                        struct story s = {.len = 0};
                        tell_knot(g, &s);
                        graph_free(g);
                        return dl_fail(
                            err, DIRLOCK_EDEADLK, 0, "deadlock: %s: %s, which would never end", s.text,
                            strstr(s.text, " threads in all ") ? "a knot of waits" : "a cycle of waits");
                }
                dl_wait_told(h, false);
                graph_free(g);
                if (claim < 0)
                        break;
        }
        return DIRLOCK_OK;
}
