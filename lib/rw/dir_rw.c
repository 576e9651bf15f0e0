/* rwlock.c - the reader-writer layer: shared, intent and exclusive modes of
 * lock NAME over the exclusive primitive (exclusive.c), with the policies
 * fair, writer, reader and simple, upgrade and downgrade.
 *
 * ======================================================================
 * FILES: the table is in layout.h.  The protocol below names them
 *   W         D/NAME.lock, the exclusive lock (exclusive.c): held by a
 *             writer (record mode exclusive, or shared for a `simple`
 *             reader) or by an intent holder (record mode intent);
 *   r./a./w.  a reader's entry in D/NAME.readers: announced, admitted by
 *             a fair writer, waiting for a write phase to end;
 *   U         D/NAME.up.<T>: intent holder T is upgrading / upgraded;
 *   x.        a writer's entry in D/NAME.wq while it waits (policy writer);
 *   tickets   D/NAME.fifo (fifo.c).
 * Every entry's age counts from its last change (INVARIANT C in
 * exclusive.c).  NAME.wq is removed by whoever empties it.  NAME.readers
 * is removed by a writer whose drain found no reader left (and by
 * cleanup; on a network filesystem neither is ever removed: KEPT
 * DIRECTORIES in netfs.c), not by the last reader out: readers come and go far more
 * often than writers, and a kept directory saves each of them a mkdir and
 * an rmdir (and the race of one reader's rmdir with the next one's
 * announce); after a write, "no readers" still costs the next writer a
 * single stat() that fails with ENOENT.
 *
 * "W blocks readers" means: W is held, and its record mode is not intent,
 * or it is intent and U exists for W's token.  (judge_w)
 *
 * ======================================================================
 * THE CORE RULE (a Dekker-style handshake over directory operations)
 *
 *   reader:  1. announce: create r.<T>      2. look at W
 *   writer:  1. take W                      2. look at NAME.readers
 *   upgrade: 1. create U                    2. look at NAME.readers
 *
 * Each side first makes itself visible, then looks at the other.  Local
 * directory operations are linearisable (each is atomic under the parent's
 * lock), so of a reader and a writer at least one sees the other: if the
 * reader's look found W not blocking, the writer's take (or U) came after
 * it, hence after the reader's announce, and the writer's look sees r.<T>.
 * A reader that sees W blocking withdraws (removes or renames r.<T>) before
 * it waits; a writer that sees readers waits, holding W, until none is left.
 * Readdir caveat: an entry renamed during a scan may be missed by it; every
 * rename of an entry during a writer's scan is either a withdrawal (missing
 * it is harmless) or a re-announce followed by a look at W, which the
 * writer already holds (the reader then withdraws again).
 *
 * NETWORK FILESYSTEMS: the handshake needs every look to see the other
 * side's latest entry.  Lookups of names another client has just made, and
 * listings, are answered by the server on GlusterFS, so the handshake
 * holds there across clients; an NFS or SMB client may answer a lookup
 * from its cache that a name does not exist, so there shared and intent
 * locks are refused (DIRLOCK_ENETFS) unless every user of the lock
 * directory is on one client (DIRLOCK_ONE_CLIENT).  The table and the
 * reasons are in netfs.c.  The exclusive lock alone needs only rename's
 * atomicity at the server and is safe between the clients of all of them.
 *
 * INVARIANT M (mutual exclusion): while a writer is past its look (or an
 * upgrader past its look), no r.<T> or a.<T> entry of a reader that is in
 * its critical section exists, and none can be created that is not
 * withdrawn before its reader enters.  W itself excludes writers, intent
 * holders and `simple` holders from each other (exclusive.c).
 *
 * ======================================================================
 * OPERATIONS
 *
 * EXCLUSIVE acquire (policies fair, writer; `simple` for every mode):
 *   take W (one try, then waiting in NAME.fifo's queue, where a release
 *   wakes only the first waiter: dl_take_w; no try past a queue with
 *   DIRLOCK_FIFO; registered in NAME.wq while it waits when the policy is
 *   `writer`), then drain: scan NAME.readers until
 *   no live r./a. entry is left, breaking dead readers' entries.  The
 *   uncontended path is W plus one stat() of NAME.readers (ENOENT).  A fair
 *   writer's first scan admits the waiting readers (w.<T> -> a.<T>): they
 *   read before it writes; it also remembers the tokens of the readers it
 *   saw announced (r.<T>), and admits those too if they withdraw later (an
 *   announce that crossed our take of W); without this a reader could lose
 *   that race forever (found by the model, tests/model/rwlock.pml).  On
 *   timeout W is released (DIRLOCK_ETIMEDOUT).
 * EXCLUSIVE acquire, policy `reader`: W is not held while readers are
 *   present, waiting ones (w.<T>) included: wait until the scan finds none,
 *   take W, scan again; readers found -> release W and wait again.  So W
 *   blocks readers only for the length of a scan or of the write itself,
 *   and a reader that waited for the write goes before the next writer.
 *   (Such a writer does not queue for W: DIRLOCK_FIFO does not apply.)
 * SHARED acquire (fair, writer, reader):
 *   announce r.<T>; look at W (policy `writer`: also at NAME.wq, a live
 *   waiting writer counts as blocking).  Not blocking -> in.  Blocking ->
 *   withdraw (fair and reader: rename r.<T> -> w.<T>, staying visible as a
 *   waiting reader; writer: unlink) and wait for W's release, U's removal,
 *   a waiting writer leaving, or our admission (w.<T> -> a.<T>).
 *   Woken: admitted -> in (a.<T> is our entry, the admitting writer holds
 *   W and drains it before writing).  Else look at W without announcing;
 *   still blocking -> wait again (no events of our own, no busy loop);
 *   else announce again (fair: rename w.<T> -> r.<T>) and look again.
 * SHARED acquire, `simple`: as EXCLUSIVE (W with record mode shared).
 * INTENT acquire: take W with record mode intent.  Readers see intent
 *   without U as compatible; writers and intent holders wait for W.
 *   (`simple`: intent at once creates U and drains, i.e. is exclusive.)
 * UPGRADE (intent -> exclusive): create U, then drain NAME.readers.  New
 *   readers see U and wait; present ones finish.  On timeout U is removed
 *   and the intent lock kept.  A plain shared lock cannot upgrade
 *   (DIRLOCK_EUPGRADE): two readers upgrading would each wait for the
 *   other.  Two intent holders cannot exist at once (W), hence no deadlock.
 * DOWNGRADE (exclusive or intent -> shared): create r.<T>, remove U, release
 *   W.  We are a registered reader before W is free: no writer slips in.
 * DOWNGRADE TO INTENT (upgraded intent -> intent): remove U.  W stays ours
 *   (writers and intent holders still wait); readers waiting for U's
 *   removal wake and enter.  (`simple`: U stays, intent is exclusive.)
 * RELEASE: reader: unlink our entry (ENOENT -> DIRLOCK_ELOST); NAME.readers
 *   stays for the next reader.  W holder: unlink U if ours, release W.
 * REFRESH renews our entry's age (reader entry, U, W's owner entry).
 * A writer draining readers (and an upgrader) renews W and U as it waits.
 *
 * ======================================================================
 * BOUNDS (and why they hold)
 *
 * fair:   a writer waits for the writers ahead of it on W (in arrival order
 *         with DIRLOCK_FIFO) and then for one read phase: once it holds W
 *         no new reader gets in, so the drain ends when the readers present
 *         (plus the waiting readers it admitted) finish.  A reader arriving
 *         during a write phase waits for that phase: the next fair writer
 *         admits it before writing; if no writer comes, W's release lets it
 *         in.  If its re-announce races with the next writer's scan it may
 *         wait one more write phase (it is admitted by the writer after).
 * writer: waiting writers (NAME.wq) and the writer holding W hold off new
 *         readers; readers can be locked out by a stream of writers.
 * reader: a reader waits only while W is held for a write or a scan (or by
 *         an upgraded intent holder), and then goes before the next
 *         `reader` writer (which gives way to w.<T> entries); writers can be
 *         locked out by overlapping readers.
 * simple: one holder at a time, in W's queue order (an arrival may take
 *         a free W ahead of the queue, except with DIRLOCK_FIFO).
 * MIXED POLICIES on one name are safe (M holds whatever the policies), and
 *   each waiter's own policy decides how it waits: a `reader` writer never
 *   holds readers off while it waits; a `writer`/`fair` writer holds W while
 *   it drains, which holds off readers of every policy; waiting writers hold
 *   off only `writer` readers; only a fair writer admits waiting readers
 *   (with other writers they re-announce when W is released, and a
 *   `writer` writer may keep them out); a `simple` holder is a writer to
 *   everyone else.
 *
 * CRASHES.  Every entry names its owner.  W is judged and broken by the
 * core (dead owner on this host at once, else after the stale age); a
 * waiting reader also judges and breaks it (judge_w).  Scans break dead
 * readers', waiting readers' and waiting writers' entries and FIFO tickets.
 * U counts only while its token owns W, so a dead upgrader's U is inert
 * (dirlock_cleanup removes it).  A holder broken while it still waited
 * (a writer draining, anyone waiting for ranges: it was paused past the
 * stale age) takes the lock again under a new token, never its old one
 * (INVARIANT B in exclusive.c).  Waiters watch one live holder's pidfd and
 * re-judge at least every 100 ms or third of the stale age (wait.c), so
 * survivors on this host go on well within 1 s; across hosts after the
 * stale age (refresh renews reader entries and U too).  An entry that this
 * user may not remove (another user's, in a sticky directory) is reported
 * (DIRLOCK_EPERM, docs/sharing.md), never counted as gone.
 */
#include "fsops.h"
#include "range_internal.h"
#include "rw_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- state --------------------------------------------------------------- */

int dl_rw_state(dirlock *h, dirlock_error *err)
{
        struct dl_dir *d = dl_dir_of(h);
        if (d->rw != NULL)
                return DIRLOCK_OK;
        struct dl_rw *rw = calloc(1, sizeof *rw);
        if (rw == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        d->rw = rw;
        rw->readers_dir = dl_layout_path(d->lockdir, h->name, DL_SUFFIX_READERS);
        rw->wq_dir = dl_layout_path(d->lockdir, h->name, DL_SUFFIX_WQ);
        /* A counting lock's waiters queue among its permits (permits.c). */
        rw->fifo_dir = h->permits > 0 ? dl_join(d->lockdir, h->name, DL_SUFFIX_PERMITS "/" DL_PERMITS_QUEUE)
                                      : dl_layout_path(d->lockdir, h->name, DL_SUFFIX_FIFO);
        rw->ranges_dir = dl_layout_path(d->lockdir, h->name, DL_SUFFIX_RANGES);
        rw->up_path = dl_layout_up(d->lockdir, h->name, h->token);
        if (rw->readers_dir != NULL && rw->wq_dir != NULL) {
                rw->r_path = dl_layout_entry(rw->readers_dir, DL_ENTRY_READER, h->token);
                rw->a_path = dl_layout_entry(rw->readers_dir, DL_ENTRY_ADMITTED, h->token);
                rw->w_path = dl_layout_entry(rw->readers_dir, DL_ENTRY_WAITING, h->token);
                rw->wq_entry = dl_layout_entry(rw->wq_dir, DL_ENTRY_WRITER, h->token);
        }
        if (rw->readers_dir == NULL || rw->wq_dir == NULL || rw->fifo_dir == NULL || rw->ranges_dir == NULL ||
            rw->up_path == NULL || rw->r_path == NULL || rw->a_path == NULL || rw->w_path == NULL ||
            rw->wq_entry == NULL) {
                dl_rw_free(h); /* never a state with paths missing: the next call builds it anew */
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        return DIRLOCK_OK;
}

void dl_rw_free(dirlock *h)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        if (rw == NULL)
                return;
        dl_fifo_unview(rw);
        free(rw->readers_dir);
        free(rw->r_path);
        free(rw->a_path);
        free(rw->w_path);
        free(rw->up_path);
        free(rw->wq_dir);
        free(rw->wq_entry);
        free(rw->fifo_dir);
        free(rw->ranges_dir);
        free(rw->ticket);
        free(rw);
        dl_dir_of(h)->rw = NULL;
}

void dl_rw_retoken(dirlock *h)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        if (rw == NULL)
                return;
        if (rw->ticket != NULL || rw->reader_entry != NULL || rw->up_held || rw->wq_held) {
                dl_rw_free(h); /* rebuilt on use */
                return;
        }
        char *const with_token[] = {rw->r_path, rw->a_path, rw->w_path, rw->up_path, rw->wq_entry};
        for (size_t i = 0; i < sizeof with_token / sizeof with_token[0]; i++)
                dl_layout_retoken(with_token[i], h->token);
}

static int timeout_code(const dirlock *h, const dirlock_options *o)
{
        (void)h;
        return o->timeout == 0 ? DIRLOCK_EBUSY : DIRLOCK_ETIMEDOUT;
}

/* Start a waiter on `dir` (where releases happen: D, or for a counting
 * lock its permits' group), plus `extra` directories that exist (a
 * directory that vanished meanwhile must not turn inotify off). */
static void waiter_start_in(dl_waiter *w, const dirlock *h, const char *dir, const char *extra1,
                            const char *extra2)
{
        dl_waiter_init(w, dir, h->opts.flags, h->token, h->opts.stale_age);
        dl_waiter_cancel_on(w, h->opts.cancel_fd);
        const char *extra[2] = {extra1, extra2};
        for (int i = 0; i < 2; i++) {
                if (extra[i] == NULL || !w->notify)
                        continue;
                dl_waiter_watch_dir(w, extra[i]); /* a vanished one is fine */
        }
}

static void waiter_start(dl_waiter *w, const dirlock *h, const char *extra1, const char *extra2)
{
        waiter_start_in(w, h, dl_dir_of(h)->lockdir, extra1, extra2);
}

/* How a wait ended without the lock, for messages: "timed out after 2 s"
 * or "canceled". */
static const char *gave_up(int waited, double timeout, char buf[48])
{
        if (waited == DIRLOCK_ECANCELED)
                return "canceled";
        snprintf(buf, 48, "timed out after %.3g s", timeout);
        return buf;
}

/* ---- judging W from a reader's side -------------------------------------- */

enum wstate { W_OPEN, W_BLOCK, W_ERROR };

/* Looks at D/NAME.lock: W_OPEN when free or held in intent mode without U;
 * W_BLOCK otherwise (*holder filled when known).  A stale holder is broken
 * here exactly as exclusive.c breaks it (unlink the judged entry). */
static enum wstate judge_w(dirlock *h, dl_record *holder, dirlock_error *err)
{
        char token[DIRLOCK_TOKEN_LEN + 1];
        switch (dl_excl_judge(h, holder, token, err)) {
        case DL_ERROR:
                return W_ERROR;
        case DL_FREE:
                return W_OPEN;
        case DL_HELD:
                break;
        }
        if (token[0] == '\0' || holder->mode != DIRLOCK_INTENT)
                return W_BLOCK; /* a writer, or foreign content */
        char *up_path = dl_layout_up(dl_dir_of(h)->lockdir, h->name, token);
        if (up_path == NULL) {
                dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                return W_ERROR;
        }
        /* On a network filesystem a listing says whether U is there: a
         * client may have cached that it is not (NEGATIVE LOOKUPS in
         * fsops.c). */
        int present = dl_fs_present(up_path, dl_dir_of(h)->fs->network);
        free(up_path);
        return present != 0 ? W_BLOCK : W_OPEN; /* only ENOENT says U is not there */
}

/* Reader's look: W, and for policy `writer` the waiting writers too. */
static enum wstate reader_look(dirlock *h, dl_record *holder, dirlock_error *err)
{
        enum wstate s = judge_w(h, holder, err);
        if (s != W_OPEN || h->opts.policy != DIRLOCK_POLICY_WRITER)
                return s;
        if (dl_fs_present(dl_dir_of(h)->rw->wq_dir, dl_dir_of(h)->fs->network) == 0)
                return W_OPEN;
        dl_scan sc = {.active = "x"};
        if (dl_rw_scan(dl_dir_of(h)->rw->wq_dir, h->opts.stale_age, dl_dir_of(h)->fs, &sc, err) != 0)
                return W_ERROR;
        if (sc.live == 0)
                return W_OPEN;
        *holder = sc.one;
        return W_BLOCK;
}

/* ---- shared ---------------------------------------------------------------- */

static int announce(dirlock *h, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        if (dl_rw_entry_make(rw->readers_dir, rw->r_path, h, DIRLOCK_SHARED) != 0)
                return dl_fail(err, DIRLOCK_EIO, errno, "cannot register as reader in '%s'", rw->readers_dir);
        return DIRLOCK_OK;
}

static void reader_give_up(dirlock *h)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        dl_fs_unlink(rw->r_path);
        dl_fs_unlink(rw->w_path);
        dl_fs_unlink(rw->a_path); /* admitted at the last moment */
}

/* Readers of policies fair and reader stay visible while they wait (w.<T>):
 * fair writers admit them, `reader` writers give way to them. */
static bool waits_visibly(const dirlock *h)
{
        return h->opts.policy == DIRLOCK_POLICY_FAIR || h->opts.policy == DIRLOCK_POLICY_READER;
}

/* Withdraw a failed announce (see waits_visibly). */
static int withdraw(dirlock *h, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        int rc = waits_visibly(h) ? dl_fs_rename(rw->r_path, rw->w_path) : dl_fs_unlink(rw->r_path);
        if (rc != 0 && errno != ENOENT)
                return dl_fail(err, DIRLOCK_EIO, errno, "cannot withdraw reader entry '%s'", rw->r_path);
        return DIRLOCK_OK;
}

/* Admitted by a fair writer while we waited (w.<T> renamed a.<T>)? */
static bool reader_admitted(dirlock *h)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        if (dl_fs_present(rw->a_path, dl_dir_of(h)->fs->network) != 1)
                return false;
        rw->reader_entry = rw->a_path;
        return true;
}

/* A waiting reader found W not blocking at its peek: announce again (fair:
 * w.<T> -> r.<T>), look again.  DIRLOCK_OK: in (h's reader entry set);
 * DIRLOCK_EBUSY: W blocks again, withdrawn (*holder, *s); an error. */
static int reader_reenter(dirlock *h, bool fair, dl_record *holder, enum wstate *s, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        int rc = DIRLOCK_OK;
        if (fair && dl_fs_rename(rw->w_path, rw->r_path) != 0) {
                if (errno == ENOENT && reader_admitted(h))
                        return DIRLOCK_OK;
                rc = announce(h, err); /* w.<T> was broken as stale */
        } else if (!fair) {
                rc = announce(h, err);
        }
        if (rc != DIRLOCK_OK)
                return rc;
        *s = reader_look(h, holder, err);
        if (*s == W_OPEN) {
                rw->reader_entry = rw->r_path;
                return DIRLOCK_OK;
        }
        if (*s == W_ERROR)
                return err->code;
        rc = withdraw(h, err);
        return rc != DIRLOCK_OK ? rc : DIRLOCK_EBUSY;
}

/* A reader waits, withdrawn, for W's release, U's removal, a waiting
 * writer leaving or (fair) its admission; each wake-up peeks at W without
 * announcing (no events of its own, no busy loop) and announces again only
 * when W does not block (reader_reenter).  The watch exists before the
 * next look: no lost wake-ups. */
static int reader_wait(dirlock *h, bool fair, dl_record *holder, const dl_time *deadline, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        int rc = dl_wait_begin(h, DL_FOR_W_TO_READ, DIRLOCK_WAIT_LOCK, DIRLOCK_SHARED, err);
        if (rc != DIRLOCK_OK)
                return rc;
        dl_waiter w;
        waiter_start(&w, h, fair ? rw->readers_dir : NULL,
                     h->opts.policy == DIRLOCK_POLICY_WRITER ? rw->wq_dir : NULL);
        dl_waiter_watch_owner(&w, holder);
        for (bool first = true;; first = false) {
                int waited = first ? 0 : dl_waiter_wait(&w, deadline);
                if (waited == 0 && (rc = dl_wait_step(h, err)) != DIRLOCK_OK)
                        break;
                if (fair) {
                        if (reader_admitted(h)) {
                                rc = DIRLOCK_OK;
                                break;
                        }
                        dl_fs_touch(rw->w_path);
                }
                enum wstate s = reader_look(h, holder, err); /* peek, no events of ours */
                rc = s == W_ERROR  ? err->code
                     : s == W_OPEN ? reader_reenter(h, fair, holder, &s, err)
                                   : DIRLOCK_EBUSY;
                if (rc != DIRLOCK_EBUSY)
                        break;
                /* INVARIANT: waiting, we hold no reader entry that a writer
                 * would count: r.<T> is withdrawn (w.<T> or gone). */
                DL_ASSERT(rw->reader_entry == NULL);
                dl_waiter_watch_owner(&w, holder);
                if (waited != 0) {
                        char why[48];
                        rc = dl_fail(err, waited, 0,
                                     "%s waiting to read '%s': held for writing by pid %ld on %s",
                                     gave_up(waited, h->opts.timeout, why), h->name, (long)holder->pid,
                                     holder->host[0] ? holder->host : "an unknown host");
                        break;
                }
        }
        dl_waiter_close(&w);
        dl_wait_end(h);
        return rc;
}

static int shared_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        bool fair = waits_visibly(h); /* fair or reader: waits as w.<T> */
        dl_record holder;
        int rc = announce(h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        enum wstate s = reader_look(h, &holder, err);
        if (s == W_OPEN) {
                rw->reader_entry = rw->r_path;
                return DIRLOCK_OK;
        }
        if (s == W_ERROR || (rc = withdraw(h, err)) != DIRLOCK_OK) {
                reader_give_up(h);
                return err->code;
        }
        if (dl_deadline_passed(deadline)) {
                reader_give_up(h);
                return dl_fail(err, timeout_code(h, &h->opts), 0,
                               "lock '%s' is held for writing by pid %ld on %s", h->name, (long)holder.pid,
                               holder.host[0] ? holder.host : "an unknown host");
        }
        rc = reader_wait(h, fair, &holder, deadline, err);
        if (rc != DIRLOCK_OK) {
                reader_give_up(h);
                return rc;
        }
        if (fair)
                dl_fs_unlink(rw->w_path); /* normally gone already */
        return DIRLOCK_OK;
}

/* ---- taking W -------------------------------------------------------------- */

static void wq_leave(dirlock *h)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        if (rw->wq_held) {
                dl_rw_entry_drop(h, rw->wq_dir, rw->wq_entry);
                rw->wq_held = false;
        }
}

/* What dl_take_w takes is W, or for a counting lock one of its permits
 * (permits.c): the same queue and the same waiting, over these three. */

/* One attempt (exclusive.c dl_excl_try, permits.c dl_permit_try). */
static int w_attempt(dirlock *h, dl_record *holder, bool judge, dirlock_error *err)
{
        return h->permits > 0 ? dl_permit_try(h, holder, judge, err) : dl_excl_try(h, holder, judge, err);
}

/* Whether it looks taken, or free, at a glance that judges nothing (an
 * error looking is neither). */
static bool w_looks_taken(dirlock *h)
{
        struct stat st;
        return h->permits > 0 ? !dl_permit_looks_free(h) : dl_fs_lstat(dl_dir_of(h)->lock_path, &st) == 0;
}

static bool w_looks_free(dirlock *h)
{
        struct stat st;
        return h->permits > 0 ? dl_permit_looks_free(h)
                              : dl_fs_lstat(dl_dir_of(h)->lock_path, &st) != 0 && errno == ENOENT;
}

/* The directory where its releases are removals. */
static const char *w_release_dir(const dirlock *h)
{
        return h->permits > 0 ? dl_permit_release_dir(h) : dl_dir_of(h)->lockdir;
}

/* One attempt at W honouring the FIFO queue.  DIRLOCK_EBUSY with *holder
 * the one to watch (W's holder or the waiter ahead). */
static int w_try(dirlock *h, dl_record *holder, bool judge, dirlock_error *err)
{
        if (dl_dir_of(h)->rw->ticket != NULL) {
                int first = dl_fifo_first(h, holder, err);
                if (first < 0)
                        return err->code;
                if (first == 0)
                        return DIRLOCK_EBUSY;
        }
        return w_attempt(h, holder, judge, err);
}

/* How often a queued waiter renews its ticket: so that at least every
 * third of the stale age passes between renewals (INVARIANT C in
 * exclusive.c applies to waiting entries too) even though a renewal can
 * only happen when a wait ends, at the latest a re-check interval later;
 * at most every quarter of it, so that waiters do not write on every
 * wake-up. */
static double ticket_renew_ms(const dirlock *h, const dl_waiter *w)
{
        double third = h->opts.stale_age * 1e3 / 3, every = h->opts.stale_age * 1e3 / 4;
        if (third - w->recheck_ms < every)
                every = third - w->recheck_ms;
        return every > 0 ? every : 0;
}

static double ms_since(const dl_time *then)
{
        dl_time now = dl_now();
        return (double)(now.tv_sec - then->tv_sec) * 1e3 + (double)(now.tv_nsec - then->tv_nsec) / 1e6;
}

/* One wait for W (dl_take_w): what a step of the queue keeps between wake-ups. */
struct w_wait {
        dl_waiter w;
        dl_record holder;    /* the one to watch: W's holder or the waiter ahead */
        char *ahead;         /* the ticket of the waiter we follow, or NULL      */
        dl_time last_judged; /* the last judging attempt at W                    */
        bool judge;          /* the next attempt judges W's holder               */
        bool free_before;    /* W was free at the last re-check (not first)      */
        double renew_ms;     /* how often our ticket is renewed                  */
};

/* Join the queues a waiter for W stands in (dl_take_w says who queues). */
static int w_enqueue(dirlock *h, bool fifo, struct w_wait *ww, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        int rc;
        if (fifo && (rc = dl_fifo_join(h, err)) != DIRLOCK_OK)
                return rc;
        if (h->opts.policy == DIRLOCK_POLICY_WRITER && h->mode != DIRLOCK_INTENT && h->permits == 0) {
                if (dl_rw_entry_make(rw->wq_dir, rw->wq_entry, h, h->mode) != 0) {
                        rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot register as a waiting writer in '%s'",
                                     rw->wq_dir);
                        dl_fifo_leave(h);
                        return rc;
                }
                rw->wq_held = true;
        }
        waiter_start_in(&ww->w, h, w_release_dir(h), NULL, NULL);
        /* Without DIRLOCK_FIFO we queue too, once our one try at W has
         * failed, where releases can be watched (not on a network
         * filesystem: no release wakes anyone there, and every waiter
         * polls W). */
        if (!fifo && ww->w.notify && (rc = dl_fifo_join(h, err)) != DIRLOCK_OK) {
                dl_waiter_close(&ww->w);
                wq_leave(h);
                return rc;
        }
        if (rw->view != NULL && ww->w.notify) {
                /* Queued through the thread's view (fifo.c): poked when
                 * the one ahead goes, or the view stops.  Its steps watch
                 * whom they follow; a waiter behind one of this thread
                 * watches nobody (no pidfd for each of a thousand). */
                rw->wake = &ww->w.listener;
        } else {
                dl_waiter_watch_owner(&ww->w, &ww->holder);
        }
        ww->renew_ms = ticket_renew_ms(h, &ww->w);
        ww->last_judged = dl_now();
        ww->judge = true;
        return DIRLOCK_OK;
}

/* The first waiter's step: an attempt at W, made after releases are
 * watched.  DIRLOCK_EBUSY: wait. */
static int w_step_first(dirlock *h, struct w_wait *ww, dirlock_error *err)
{
        int rc;
        dl_waiter_lockdir_events(&ww->w, true); /* before the attempt */
        /* Woken as the new first waiter, W is normally held by the waiter
         * that went before: a lookup saves the rename that would fail
         * (ACQUIRE 2 in exclusive.c).  Only where releases wake us: a free
         * but empty W (its releaser died before the rmdir) sends no event,
         * and the judging attempt at the next re-check takes it. */
        if (!ww->judge && ww->w.notify && w_looks_taken(h))
                rc = DIRLOCK_EBUSY;
        else
                rc = w_attempt(h, &ww->holder, ww->judge, err);
        if (rc == DIRLOCK_EBUSY && ww->judge) {
                dl_waiter_watch_owner(&ww->w, &ww->holder);
                ww->last_judged = dl_now();
        }
        return rc;
}

/* The step of a waiter behind others: watch the ticket ahead.  Without
 * DIRLOCK_FIFO it also looks at W once per re-check interval, and tries
 * when it finds W free at two looks in a row: the first waiter normally
 * takes a free W within a millisecond, so W free that long means it has
 * stopped running (SIGSTOP, swapped out), and it then holds the others up
 * for two intervals at most, not for the stale age its ticket needs to go
 * stale.  (A FIFO queue waits for that.)  DIRLOCK_EBUSY: wait; EAGAIN
 * (not a dirlock code): the one ahead left after our look, look again. */
#define W_LOOK_AGAIN (-1)
static int w_step_behind(dirlock *h, bool fifo, bool local, struct w_wait *ww, dirlock_error *err)
{
        if (local) {
                /* The one ahead is a pending acquire of this thread: it
                 * runs when we do, and the thread's view of the queue
                 * pokes us when it goes (fifo.c).  Nothing to watch, and
                 * W's being free for long is its business. */
                dl_waiter_lockdir_events(&ww->w, false);
                dl_waiter_unwatch_owner(&ww->w);
                return DIRLOCK_EBUSY;
        }
        if (!fifo && ww->judge) {
                ww->last_judged = dl_now();
                bool free_now = w_looks_free(h);
                if (free_now && ww->free_before) {
                        dl_record w_holder;
                        int rc = w_attempt(h, &w_holder, true, err);
                        if (rc != DIRLOCK_EBUSY)
                                return rc;
                }
                ww->free_before = free_now;
        }
        dl_waiter_lockdir_events(&ww->w, false);
        /* Through an active view the queue's directory is watched
         * already: the ticket ahead going pokes us. */
        if (!dl_fifo_viewed(dl_dir_of(h)->rw) && dl_waiter_watch_entry(&ww->w, ww->ahead) != 0 &&
            errno == ENOENT)
                return W_LOOK_AGAIN;
        dl_waiter_watch_owner(&ww->w, &ww->holder);
        return DIRLOCK_EBUSY;
}

/* How long a waiter behind one of its own thread's waits between wakes:
 * long enough to cost nothing, short enough that its ticket and wait
 * register entry are renewed in time (every ticket_renew_ms, checked at
 * each wake: at most renew + span apart, within a third of the stale
 * age); 0 (the re-check interval) when that is not longer. */
static double follower_span_ms(const dirlock *h, const struct w_wait *ww)
{
        double span = (h->opts.stale_age * 1e3 / 3 - ww->renew_ms) / 2;
        return span > ww->w.recheck_ms ? span : 0;
}

/* "lock 'NAME' is held by pid P on HOST", or for a counting lock "the N
 * permits of lock 'NAME' are held, e.g. by ...", after `prefix`. */
static int w_busy(dirlock *h, int code, const char *prefix, const dl_record *holder, dirlock_error *err)
{
        const char *host = holder->host[0] ? holder->host : "an unknown host";
        if (h->permits > 0)
                return dl_fail(err, code, 0, "%sthe %u permit%s of lock '%s' %s held, e.g. by pid %ld on %s",
                               prefix, h->permits, h->permits > 1 ? "s" : "", h->name,
                               h->permits > 1 ? "are all" : "is", (long)holder->pid, host);
        return dl_fail(err, code, 0, "%slock '%s' is held by pid %ld on %s", prefix, h->name,
                       (long)holder->pid, host);
}

/* Who holds W now, for a message: W's owner, or for a counting lock one
 * of its permits' holders.  False when nobody does (the lock is between
 * holders) or the record cannot be read. */
static bool w_holder_now(dirlock *h, dl_record *holder)
{
        struct dl_dir *d = dl_dir_of(h);
        if (h->permits > 0) {
                dirlock_owner *o = NULL;
                size_t n = 0, cap = 0;
                bool found = dl_permit_holders(d->lockdir, h->name, h->opts.stale_age, &o, &n, &cap, NULL) ==
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
        dl_lock_view v;
        if (dl_lock_look(d->lock_path, d->fs, &v) != 0 || v.state != DL_LOCK_OWNED || v.rec.pid <= 0)
                return false;
        *holder = v.rec;
        return true;
}

/* Why a waiter gave up or a try failed (`code`): W's holder -- never the
 * waiter ahead in the queue, which is only in the way -- or, when W is
 * between holders, the waiter ahead that goes first. */
static int w_refused(dirlock *h, int code, const char *prefix, const dl_record *ahead, dirlock_error *err)
{
        dl_record holder;
        if (w_holder_now(h, &holder))
                return w_busy(h, code, prefix, &holder, err);
        if (ahead->pid <= 0)
                return dl_fail(err, code, 0, "%slock '%s' is held", prefix, h->name);
        return dl_fail(err, code, 0, "%slock '%s' goes first to a waiter ahead, pid %ld on %s", prefix,
                       h->name, (long)ahead->pid, ahead->host[0] ? ahead->host : "an unknown host");
}

/* The wait ended without W (`waited`: timed out or canceled): one last
 * judging try, else the error naming who holds it. */
static int w_gave_up(dirlock *h, int waited, struct w_wait *ww, dirlock_error *err)
{
        char why[48], prefix[64];
        int rc = w_try(h, &ww->holder, true, err);
        if (rc == DIRLOCK_EBUSY) {
                snprintf(prefix, sizeof prefix, "%s: ", gave_up(waited, h->opts.timeout, why));
                rc = w_refused(h, waited, prefix, &ww->holder, err);
        }
        return rc;
}

/* Take W by the deadline, waiting in the queue of NAME.fifo (fifo.c);
 * policy writer: also registered in NAME.wq while waiting.
 *
 * Who queues: a DIRLOCK_FIFO waiter always (and it makes no first try
 * while a queue exists: arrival order); any other waiter after one try at
 * W has failed, where inotify works (a local filesystem): it may take a
 * free lock ahead of the queue on arrival -- like ReentrantLock's
 * non-fair mode -- and, while queued, one it finds free at two re-checks
 * in a row (so a stopped first waiter cannot hold it up for long).
 * Without inotify (a network filesystem) a non-FIFO waiter does not
 * queue; it polls W with backoff.
 *
 * Waiting in the queue wakes one process per step instead of all of
 * them: only the first waiter lets releases of W wake it (and watches W's
 * holder); every other one watches just the ticket of the waiter ahead of
 * it (and that waiter's process), which is removed when that waiter takes
 * W or gives up.  So a release wakes the first waiter, and its taking W
 * wakes the next, whatever the length of the queue.  Each step turns its
 * watch on before it looks (the queue, then W), so no release or
 * departure after the look is missed; a waiter also looks again at least
 * every re-check interval (wait.c), whatever it watches, and renews its
 * ticket (ticket_renew_ms).  A release wakes the first waiter, which
 * makes one rename attempt; the holder is judged (readdir, readlink,
 * /proc) only when the watched owner died or the re-check interval
 * passed. */
int dl_take_w(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        bool fifo = (h->opts.flags & DIRLOCK_FIFO) != 0;
        struct w_wait ww = {.ahead = NULL, .free_before = false};
        memset(&ww.holder, 0, sizeof ww.holder);
        struct stat st;
        int rc = DIRLOCK_EBUSY;
        /* One try (timeout 0) cannot queue, so it tries even past a FIFO
         * queue, as tryLock() does on a fair lock. */
        if (!fifo || h->opts.timeout == 0 || dl_fs_stat(rw->fifo_dir, &st) != 0)
                rc = w_attempt(h, &ww.holder, true, err);
        if (rc != DIRLOCK_EBUSY)
                return rc;
        if (dl_deadline_passed(deadline))
                return w_refused(h, timeout_code(h, &h->opts), "", &ww.holder, err);
        /* Waiting from here on: seen in the wait register (waits.c),
         * and checked for a cycle as it goes on (deadlock.c). */
        rc = h->permits > 0 ? dl_wait_begin(h, DL_FOR_PERMIT, DIRLOCK_WAIT_PERMIT, h->mode, err)
                            : dl_wait_begin(h, DL_FOR_W, DIRLOCK_WAIT_LOCK, h->mode, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if ((rc = w_enqueue(h, fifo, &ww, err)) != DIRLOCK_OK) {
                dl_wait_end(h);
                return rc;
        }
        for (;;) {
                int first = 1;
                bool local = false;
                free(ww.ahead);
                ww.ahead = NULL;
                if (rw->ticket != NULL) {
                        first =
                            dl_fifo_ahead(h, &ww.holder, &ww.ahead, rw->wake != NULL ? &local : NULL, err);
                        if (first < 0) {
                                rc = err->code;
                                break;
                        }
                }
                rc = first ? w_step_first(h, &ww, err) : w_step_behind(h, fifo, local, &ww, err);
                if (rc == W_LOOK_AGAIN)
                        continue;
                if (rc != DIRLOCK_EBUSY)
                        break;
                /* INVARIANT: a step that waits has its watch on (releases
                 * of W for the first waiter, the ticket ahead for the
                 * others: through the thread's view of the queue when it
                 * is in one) from before its look. */
                DL_ASSERT(!ww.w.notify || ww.w.lockdir_muted == !first);
                DL_ASSERT(!local || rw->wake == &ww.w.listener);
                dl_waiter_span(&ww.w, local ? follower_span_ms(h, &ww) : 0);
                int waited = dl_waiter_wait(&ww.w, deadline);
                ww.judge = dl_waiter_owner_died(&ww.w) || ms_since(&ww.last_judged) >= ww.w.recheck_ms;
                if (waited != 0) {
                        rc = w_gave_up(h, waited, &ww, err);
                        break;
                }
                if ((rc = dl_wait_step(h, err)) != DIRLOCK_OK)
                        break;
                dl_fifo_touch(h, ww.renew_ms);
                if (rw->wq_held)
                        dl_fs_touch(rw->wq_entry);
        }
        free(ww.ahead);
        dl_waiter_close(&ww.w);
        dl_wait_end(h);
        dl_fifo_leave(h);
        wq_leave(h);
        return rc;
}

/* While we hold W (and U) and wait, we renew them as a holder would
 * (every quarter of the stale age): otherwise a long drain would let our
 * own W age into staleness and be broken under us.  DIRLOCK_ELOST when it
 * was broken all the same (we were paused past the stale age). */
static int keep_w_fresh(dirlock *h, long long *renewed_ns, dirlock_error *err)
{
        long long now = dl_wall_ns();
        if ((double)(now - *renewed_ns) < h->opts.stale_age * 1e9 / 4)
                return DIRLOCK_OK;
        *renewed_ns = now;
        if (dl_dir_of(h)->rw->up_held)
                dl_fs_touch(dl_dir_of(h)->rw->up_path);
        return dl_excl_refresh(h, err);
}

/* A drain found no reader left: remove NAME.readers, so that the next
 * writer's "no readers" is one failing stat().  ENOTEMPTY (waiting
 * readers, dead entries, a reader announcing right now) leaves it: such a
 * reader then finds W held and withdraws, as with the directory kept.
 * Never on a network filesystem (KEPT DIRECTORIES in netfs.c). */
static void tidy_readers_dir(const dirlock *h)
{
        if (!dl_dir_of(h)->fs->network)
                dl_fs_rmdir(dl_dir_of(h)->rw->readers_dir);
}

/* Holding W (or U): wait until no live reader is left.  `admit`: the fair
 * writer's first scan lets the waiting readers in first; `kind` says what
 * the wait is for (dirlock_wait_kind: a lock or an upgrade).  DIRLOCK_ELOST
 * when W was broken while we waited. */
static int drain(dirlock *h, const dirlock_options *o, const dl_time *deadline, bool admit, int kind,
                 bool seen_there, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        /* (`seen_there`: the caller's own look since W found NAME.readers.) */
        if (!seen_there && dl_fs_present(rw->readers_dir, dl_dir_of(h)->fs->network) == 0)
                return DIRLOCK_OK; /* the fast path: no readers at all */
        /* fair: the first scan admits the waiting readers and remembers
         * every reader it saw; one that withdraws later (its re-announce
         * crossed our take of W) is admitted by a later scan. */
        dl_scan sc = {.active = "ra", .admit_from = "w", .admit = admit, .remember = admit};
        if (dl_rw_scan(rw->readers_dir, h->opts.stale_age, dl_dir_of(h)->fs, &sc, err) != 0) {
                dl_rw_scan_done(&sc);
                return err->code;
        }
        if (sc.live == 0) {
                dl_rw_scan_done(&sc);
                tidy_readers_dir(h);
                return DIRLOCK_OK;
        }
        if (dl_deadline_passed(deadline)) {
                dl_rw_scan_done(&sc);
                return dl_fail(err, timeout_code(h, o), 0, "lock '%s' is held for reading by %u reader(s)",
                               h->name, sc.live);
        }
        int rc = dl_wait_begin(h, DL_FOR_READERS, kind,
                               kind == DIRLOCK_WAIT_UPGRADE ? DIRLOCK_EXCLUSIVE : h->mode, err);
        if (rc != DIRLOCK_OK) {
                dl_rw_scan_done(&sc);
                return rc;
        }
        dl_waiter w;
        waiter_start(&w, h, NULL, NULL);
        sc.remember = false;
        sc.admit_known = true;
        long long renewed = dl_wall_ns();
        /* NAME.readers is watched again before every scan, so a reader
         * leaving after that scan always wakes us even when the directory
         * was removed meanwhile (dirlock_cleanup removes an empty one) and
         * made again by the next reader: a watch set on the old one would
         * not hear it (the drain then slept a whole re-check interval).  A
         * directory missing when we watched but found by the scan was made
         * in between, unwatched: look again without sleeping (it is
         * watched first). */
        bool unwatched = false;
        for (bool first = true;; first = false) {
                if (sc.have_one)
                        dl_waiter_watch_owner(&w, &sc.one);
                int waited = first || unwatched ? 0 : dl_waiter_wait(&w, deadline);
                if ((rc = keep_w_fresh(h, &renewed, err)) != DIRLOCK_OK ||
                    (rc = dl_wait_step(h, err)) != DIRLOCK_OK)
                        break;
                unwatched = dl_waiter_watch_missing(&w, rw->readers_dir);
                if (dl_rw_scan(rw->readers_dir, h->opts.stale_age, dl_dir_of(h)->fs, &sc, err) != 0) {
                        rc = err->code;
                        break;
                }
                if (sc.live == 0) {
                        tidy_readers_dir(h);
                        break;
                }
                if (waited != 0) {
                        char why[48];
                        rc = dl_fail(err, waited, 0,
                                     "%s: lock '%s' is held for reading by %u reader(s), e.g. pid %ld",
                                     gave_up(waited, o->timeout, why), h->name, sc.live, (long)sc.one.pid);
                        break;
                }
        }
        dl_waiter_close(&w);
        dl_wait_end(h);
        dl_rw_scan_done(&sc);
        return rc;
}

/* Our hold was broken as stale while we waited (DIRLOCK_ELOST) and we
 * take the lock again: under a new token.  A breaker that judged the old
 * hold may still unlink the path it judged (INVARIANT B, exclusive.c);
 * under the old token that would remove the new hold, and a reader's new
 * entry, unseen by the writer that comes next. */
static int new_token_for_retry(dirlock *h, dirlock_error *err)
{
        dl_excl_discard_prep(h); /* made under the old token */
        /* What dl_handle_new_token does for dirlock_reacquire, for this
         * layer's own retries: what a failed step left goes first. */
        int rc = dl_rw_release_kept(h, err);
        if (rc == DIRLOCK_OK)
                rc = dl_random_token(h->token, err);
        if (rc != DIRLOCK_OK)
                return rc;
        dl_excl_retoken(h);
        dl_rw_retoken(h);
        return dl_rw_state(h, err);
}

/* Writer (and `simple` holder): take W, then drain.  A W broken while we
 * drained (we were paused past the stale age) is taken again. */
static int exclusive_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        for (;;) {
                struct dl_rw *rw = dl_dir_of(h)->rw; /* a retry's new token may remake it */
                int rc = dl_take_w(h, deadline, err);
                if (rc != DIRLOCK_OK)
                        return rc;
                /* On a network filesystem "absent" is asked of a listing of
                 * D (fsops.c): one listing answers for NAME.readers (the
                 * drain's fast path) and NAME.ranges (wait_ranges_clear's),
                 * a look after W was taken, as both require. */
                int ranges = 1;
                int readers =
                    dl_dir_of(h)->fs->network ? dl_fs_present2(rw->readers_dir, rw->ranges_dir, &ranges) : -1;
                rw->ranges_absent_seen = readers >= 0 && ranges == 0;
                rc = readers == 0 ? DIRLOCK_OK
                                  : drain(h, &h->opts, deadline, h->opts.policy == DIRLOCK_POLICY_FAIR,
                                          DIRLOCK_WAIT_LOCK, readers == 1, err);
                if (rc == DIRLOCK_OK)
                        return rc;
                dl_excl_release(h, NULL);
                if (rc != DIRLOCK_ELOST || (rc = new_token_for_retry(h, err)) != DIRLOCK_OK)
                        return rc;
        }
}

/* Writer, policy `reader`: hold W only when no reader is there. */
static int reader_pref_write(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        dl_waiter w;
        bool waiting = false, unwatched = false;
        dl_scan sc = {.active = "raw"}; /* waiting readers go first */
        int rc;
        bool canceled = false;
        for (;;) {
                rc = dl_rw_scan(rw->readers_dir, h->opts.stale_age, dl_dir_of(h)->fs, &sc, err);
                if (rc != 0) {
                        rc = err->code;
                        break;
                }
                dl_record holder = sc.one;
                if (sc.live == 0) {
                        rc = dl_excl_try(h, &holder, true, err);
                        if (rc == DIRLOCK_OK) {
                                rc = dl_rw_scan(rw->readers_dir, h->opts.stale_age, dl_dir_of(h)->fs, &sc,
                                                err) != 0
                                         ? (err->code)
                                         : DIRLOCK_OK;
                                if (rc == DIRLOCK_OK && sc.live == 0)
                                        break;
                                dirlock_error step_err;
                                int released = dl_excl_release(h, &step_err);
                                if (released == DIRLOCK_ELOST) /* broken: a new token (INVARIANT B) */
                                        released = new_token_for_retry(h, &step_err);
                                if (released != DIRLOCK_OK) {
                                        *err = step_err; /* W stays ours: do not wait on it */
                                        rc = released;
                                        break;
                                }
                                rw = dl_dir_of(h)->rw; /* rebuilt with the token */
                                holder = sc.one;
                                if (rc != DIRLOCK_OK)
                                        break;
                        } else if (rc != DIRLOCK_EBUSY) {
                                break;
                        }
                }
                if (canceled || dl_deadline_passed(deadline)) {
                        rc = dl_fail(err, canceled ? DIRLOCK_ECANCELED : timeout_code(h, &h->opts), 0,
                                     "%slock '%s' is held (policy reader: waiting for %u reader(s) and the "
                                     "writer, if any)",
                                     canceled ? "canceled: " : "", h->name, sc.live);
                        break;
                }
                if (!waiting) {
                        if ((rc = dl_wait_begin(h, DL_FOR_READERS_OR_W, DIRLOCK_WAIT_LOCK, h->mode, err)) !=
                            DIRLOCK_OK)
                                break;
                        /* Watch first, then look again before sleeping: no
                         * lost wake-ups. */
                        waiter_start(&w, h, NULL, NULL);
                        unwatched = dl_waiter_watch_missing(&w, rw->readers_dir);
                        waiting = true;
                        continue;
                }
                /* Readers found in a directory that was missing when we
                 * last watched it: it was made since, unwatched; watch and
                 * look again before sleeping (as drain() does). */
                if (!(unwatched && sc.live > 0)) {
                        dl_waiter_watch_owner(&w, &holder);
                        canceled = dl_waiter_wait(&w, deadline) == DIRLOCK_ECANCELED; /* one more try first */
                        if ((rc = dl_wait_step(h, err)) != DIRLOCK_OK)
                                break;
                }
                /* The readers directory may have been removed (by a
                 * writer holding W whose drain found it empty, or by
                 * cleanup) and made again since we started watching:
                 * watch it again. */
                unwatched = dl_waiter_watch_missing(&w, rw->readers_dir);
        }
        if (waiting)
                dl_waiter_close(&w);
        dl_wait_end(h);
        return rc;
}

static int intent_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        for (;;) {
                int rc = dl_take_w(h, deadline, err);
                if (rc != DIRLOCK_OK || h->opts.policy != DIRLOCK_POLICY_SIMPLE)
                        return rc;
                if (dl_entry_create(dl_dir_of(h)->rw->up_path, h, DIRLOCK_INTENT) != 0) {
                        rc =
                            dl_fail(err, DIRLOCK_EIO, errno, "cannot create '%s'", dl_dir_of(h)->rw->up_path);
                } else {
                        dl_dir_of(h)->rw->up_held = true;
                        rc = drain(h, &h->opts, deadline, false, DIRLOCK_WAIT_LOCK, false, err);
                }
                if (rc == DIRLOCK_OK)
                        return rc;
                if (dl_dir_of(h)->rw->up_held)
                        dl_fs_unlink(dl_dir_of(h)->rw->up_path);
                dl_dir_of(h)->rw->up_held = false;
                dl_excl_release(h, NULL);
                /* else: broken while we drained, take it again */
                if (rc != DIRLOCK_ELOST || (rc = new_token_for_retry(h, err)) != DIRLOCK_OK)
                        return rc;
        }
}

/* ---- whole locks against ranges ---------------------------------------------- */

/* Announced (W taken, or our reader entry made): wait until no range of
 * the name is held (RANGES AGAINST WHOLE LOCKS in range.c), keeping the
 * announcement fresh as a holder would. */
static int wait_ranges_clear(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        const char *dir = dl_dir_of(h)->rw->ranges_dir;
        bool seen_absent = dl_dir_of(h)->rw->ranges_absent_seen;
        dl_dir_of(h)->rw->ranges_absent_seen = false;
        if (seen_absent || dl_fs_present(dir, dl_dir_of(h)->fs->network) == 0)
                return DIRLOCK_OK; /* the fast path: no ranges at all */
        struct dl_range_meta m;
        int rc =
            dl_range_meta_init(&m, dl_dir_of(h)->lockdir, dl_dir_of(h)->lockdir_mode, h->name, h->token, err);
        if (rc != DIRLOCK_OK)
                return rc;
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
                rc = first ? dl_wait_begin(h, DL_FOR_RANGES, DIRLOCK_WAIT_LOCK, h->mode, err)
                           : dl_wait_step(h, err);
                if (rc != DIRLOCK_OK)
                        break;
        }
        dl_waiter_close(&w);
        dl_wait_end(h);
        dl_range_meta_free(&m);
        return rc;
}

/* ---- the layer's entry points ------------------------------------------------ */

static int acquire_mode(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        int policy = h->opts.policy;
        switch (h->opts.mode) {
        case DIRLOCK_SHARED:
                return policy == DIRLOCK_POLICY_SIMPLE ? exclusive_acquire(h, deadline, err)
                                                       : shared_acquire(h, deadline, err);
        case DIRLOCK_INTENT:
                return intent_acquire(h, deadline, err);
        default:
                return policy == DIRLOCK_POLICY_READER ? reader_pref_write(h, deadline, err)
                                                       : exclusive_acquire(h, deadline, err);
        }
}

int dl_rw_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        dirlock_error local; /* the steps below report through err->code */
        if (err == NULL)
                err = &local;
        int rc = dl_rw_state(h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        for (;;) {
                dl_dir_of(h)->rw->ranges_absent_seen = false; /* only exclusive_acquire's own look */
                rc = acquire_mode(h, deadline, err);
                if (rc != DIRLOCK_OK)
                        return rc;
                /* Announced (W, or our reader entry): now no range of the
                 * name may be held (range.c, RANGES AGAINST WHOLE LOCKS). */
                rc = wait_ranges_clear(h, deadline, err);
                if (rc == DIRLOCK_OK)
                        return rc;
                dl_rw_release(h, NULL);
                /* else: broken while we waited, again */
                if (rc != DIRLOCK_ELOST || (rc = new_token_for_retry(h, err)) != DIRLOCK_OK)
                        return rc;
        }
}

int dl_rw_release(dirlock *h, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        if (rw != NULL && rw->reader_entry != NULL) {
                const char *entry = rw->reader_entry;
                if (dl_fs_unlink(entry) != 0) {
                        if (errno != ENOENT) /* still ours: the handle keeps it, a retry may work */
                                return dl_fail(err, DIRLOCK_EIO, errno, "cannot release read lock '%s'",
                                               entry);
                        rw->reader_entry = NULL;
                        return dl_fail(err, DIRLOCK_ELOST, 0,
                                       "read lock '%s' was broken as stale before release", h->name);
                }
                rw->reader_entry = NULL;
                return DIRLOCK_OK;
        }
        if (rw != NULL && rw->up_held) {
                dl_fs_unlink(rw->up_path);
                rw->up_held = false;
        }
        return dl_excl_release(h, err);
}

int dl_rw_release_kept(dirlock *h, dirlock_error *err)
{
        if (!dl_rw_holds(h))
                return DIRLOCK_OK;
        int rc = dl_rw_release(h, err);
        if (rc == DIRLOCK_ELOST) {
                dl_ok(err);
                return DIRLOCK_OK;
        }
        return rc;
}

bool dl_rw_holds(const dirlock *h)
{
        const struct dl_rw *rw = dl_dir_of(h)->rw;
        return dl_dir_of(h)->excl_held || (rw != NULL && (rw->reader_entry != NULL || rw->up_held));
}

int dl_rw_refresh(dirlock *h, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        if (rw != NULL && rw->reader_entry != NULL) {
                if (dl_fs_touch(rw->reader_entry) == 0)
                        return DIRLOCK_OK;
                if (errno == ENOENT)
                        return dl_fail(err, DIRLOCK_ELOST, 0, "read lock '%s' was broken as stale", h->name);
                return dl_fail(err, DIRLOCK_EIO, errno, "cannot refresh read lock '%s'", rw->reader_entry);
        }
        if (rw != NULL && rw->up_held)
                dl_fs_touch(rw->up_path);
        return dl_excl_refresh(h, err);
}

int dl_rw_check(const dirlock *h, dirlock_error *err)
{
        const struct dl_rw *rw = dl_dir_of(h)->rw;
        if (rw != NULL && rw->reader_entry != NULL) {
                int present = dl_fs_present(rw->reader_entry, dl_dir_of(h)->fs->network);
                if (present == 1)
                        return DIRLOCK_OK;
                if (present == 0)
                        return dl_fail(err, DIRLOCK_ELOST, 0, "read lock '%s' was broken as stale", h->name);
                return dl_fail(err, DIRLOCK_EIO, errno, "cannot check read lock '%s'", rw->reader_entry);
        }
        return dl_excl_check(h, err);
}

/* The caller (handle.c) checked that this process owns the handle. */
int dl_rw_upgrade(dirlock *lock, const dirlock_options *opts, dirlock_error *err)
{
        dirlock_error local;
        if (err == NULL)
                err = &local;
        int rc;
        if (lock->mode == DIRLOCK_EXCLUSIVE)
                return DIRLOCK_OK;
        if (lock->mode == DIRLOCK_SHARED)
                return dl_fail(err, DIRLOCK_EUPGRADE, 0,
                               "read lock '%s' cannot be upgraded: two readers upgrading at once would wait "
                               "for each other forever; take it in intent mode (DIRLOCK_INTENT) to upgrade",
                               lock->name);
        rc = dl_rw_state(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        rc = dl_excl_check(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        dirlock_options o = opts != NULL ? *opts : lock->opts;
        dl_time deadline = dl_deadline(o.timeout);
        struct dl_rw *rw = dl_dir_of(lock)->rw;
        if (!rw->up_held) {
                if (dl_entry_create(rw->up_path, lock, DIRLOCK_INTENT) != 0 && errno != EEXIST)
                        return dl_fail(err, DIRLOCK_EIO, errno, "cannot create '%s'", rw->up_path);
                rw->up_held = true;
        }
        /* The drain's waiter watches the handle's cancel descriptor
         * (waiter_start), which the handle forgot after its acquire: for
         * the length of the upgrade it is this call's. */
        int saved_cancel = lock->opts.cancel_fd;
        lock->opts.cancel_fd = (o.flags & DIRLOCK_CANCEL_FD) ? o.cancel_fd : -1;
        rc = drain(lock, &o, &deadline, false, DIRLOCK_WAIT_UPGRADE, false, err);
        lock->opts.cancel_fd = saved_cancel;
        if (rc != DIRLOCK_OK) {
                dl_fs_unlink(rw->up_path); /* keep the intent lock */
                rw->up_held = false;
                return rc;
        }
        lock->mode = DIRLOCK_EXCLUSIVE;
        dl_ok(err);
        return DIRLOCK_OK;
}

int dl_rw_downgrade(dirlock *lock, dirlock_error *err)
{
        dirlock_error local;
        if (err == NULL)
                err = &local;
        int rc;
        if (lock->mode == DIRLOCK_SHARED)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "lock '%s' is already a read lock", lock->name);
        rc = dl_rw_state(lock, err);
        if (rc == DIRLOCK_OK)
                rc = dl_excl_check(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        struct dl_rw *rw = dl_dir_of(lock)->rw;
        /* Reader first, then let go of W: no writer can slip in between.
         * U goes last: a W that cannot be released keeps its U, and so
         * stays exclusive; a U without its W blocks nobody. */
        rc = announce(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        rc = dl_excl_release(lock, err);
        if (rc != DIRLOCK_OK) {
                dl_fs_unlink(rw->r_path);
                return rc;
        }
        if (rw->up_held) {
                dl_fs_unlink(rw->up_path);
                rw->up_held = false;
        }
        rw->reader_entry = rw->r_path;
        lock->mode = DIRLOCK_SHARED;
        dl_ok(err);
        return DIRLOCK_OK;
}

/* The caller (handle.c) checked that this is an upgraded intent lock. */
int dl_rw_downgrade_intent(dirlock *lock, dirlock_error *err)
{
        dirlock_error local;
        if (err == NULL)
                err = &local;
        int rc = dl_rw_state(lock, err);
        if (rc == DIRLOCK_OK)
                rc = dl_excl_check(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        struct dl_rw *rw = dl_dir_of(lock)->rw;
        if (rw->up_held && lock->opts.policy != DIRLOCK_POLICY_SIMPLE) {
                if (dl_fs_unlink(rw->up_path) != 0 && errno != ENOENT)
                        return dl_fail(err, DIRLOCK_EIO, errno, "cannot remove '%s'", rw->up_path);
                rw->up_held = false;
        }
        lock->mode = DIRLOCK_INTENT;
        dl_ok(err);
        return DIRLOCK_OK;
}

/* ---- maintenance ------------------------------------------------------------- */

/* U of an intent holder T is inert unless T holds W: removed when T does
 * not and U's owner is gone or U is old. */
static void clean_up_entry(const char *lockdir, const dl_fs *fs, const char *path, const char *leaf)
{
        size_t name_len;
        const char *token = dl_layout_up_token(leaf, &name_len);
        if (token == NULL || name_len > DIRLOCK_NAME_MAX)
                return;
        dl_record rec;
        double age;
        if (dl_entry_read(path, &rec, &age) != 0)
                return;
        char name[DIRLOCK_NAME_MAX + 1];
        memcpy(name, leaf, name_len);
        name[name_len] = '\0';
        char *lock = dl_layout_path(lockdir, name, DL_SUFFIX_LOCK);
        char *owner = lock ? dl_layout_owner_entry(lock, token) : NULL;
        struct stat st;
        if (owner != NULL && dl_fs_lstat(owner, &st) != 0 && errno == ENOENT &&
            (dl_entry_stale(&rec, age, DIRLOCK_DEFAULT_STALE_AGE, fs) || dl_record_owner_alive(&rec) == 0))
                dl_fs_unlink(path);
        free(owner);
        free(lock);
}

int dl_rw_cleanup(const char *lockdir, dirlock_error *err)
{
        DIR *d = dl_fs_opendir(lockdir);
        if (d == NULL)
                return dl_fail(err, DIRLOCK_EIO, errno, "cannot read lock directory '%s'", lockdir);
        const dl_fs *fs = dl_fs_of(lockdir, NULL);
        struct dirent *de;
        while (dl_fs_next(d, &de) > 0) {
                const char *n = de->d_name;
                if (n[0] == '.')
                        continue;
                char *path = dl_join(lockdir, n, NULL);
                if (path == NULL)
                        break;
                if (dl_layout_has_suffix(n, DL_SUFFIX_READERS) || dl_layout_has_suffix(n, DL_SUFFIX_WQ) ||
                    dl_layout_has_suffix(n, DL_SUFFIX_FIFO)) {
                        dl_scan sc = {.active = "rawxt"};
                        if (dl_rw_scan(path, DIRLOCK_DEFAULT_STALE_AGE, fs, &sc, NULL) == 0 && !fs->network)
                                dl_fs_rmdir(path); /* only if empty; never on a network filesystem */
                        dl_rw_scan_done(&sc);
                } else if (dl_layout_has_suffix(n, DL_SUFFIX_PERMITS)) {
                        dl_permits_cleanup(path, fs);
                } else {
                        clean_up_entry(lockdir, fs, path, n);
                }
                free(path);
        }
        closedir(d);
        dl_ok(err);
        return DIRLOCK_OK;
}

unsigned dl_rw_count_readers(const char *lockdir, const char *name)
{
        char *dir = dl_layout_path(lockdir, name, DL_SUFFIX_READERS);
        if (dir == NULL)
                return 0;
        dl_scan sc = {.active = "ra"};
        unsigned n =
            dl_rw_scan(dir, DIRLOCK_DEFAULT_STALE_AGE, dl_fs_of(lockdir, NULL), &sc, NULL) == 0 ? sc.live : 0;
        dl_rw_scan_done(&sc);
        free(dir);
        /* An intent holder is a reader too. */
        char *lock = dl_layout_path(lockdir, name, DL_SUFFIX_LOCK);
        dl_lock_view v;
        if (lock != NULL && dl_lock_look(lock, dl_fs_of(lockdir, NULL), &v) == 0 &&
            v.state == DL_LOCK_OWNED && v.rec.mode == DIRLOCK_INTENT)
                n++;
        free(lock);
        return n;
}
