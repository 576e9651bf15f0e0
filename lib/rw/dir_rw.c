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
 * DIRECTORIES in lib/netfs/netfs.c), not by the last reader out: readers come and go far more
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
 * reasons are in lib/netfs/netfs.c.  The exclusive lock alone needs only rename's
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
#include "dir_rw.h"
#include "dir_fsops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- names ------------------------------------------------------------------ */

char *dl_layout_up(const char *lockdir, const char *name, const char *token)
{
        char leaf[DIRLOCK_NAME_MAX + sizeof DL_INFIX_UP + DIRLOCK_TOKEN_LEN];
        snprintf(leaf, sizeof leaf, "%s" DL_INFIX_UP "%s", name, token);
        return dl_join(lockdir, leaf, NULL);
}

/* "NAME.up.<T>": the token, with NAME's length in *name_len, else NULL. */
static const char *dl_layout_up_token(const char *leaf, size_t *name_len)
{
        const char *up = strstr(leaf, DL_INFIX_UP);
        if (up == NULL || up == leaf)
                return NULL;
        const char *token = up + sizeof DL_INFIX_UP - 1;
        if (!dl_layout_is_token(token, true))
                return NULL;
        *name_len = (size_t)(up - leaf);
        return token;
}

/* ---- state --------------------------------------------------------------- */

/* A whole lock's reader-writer state (the kind's kind_state, dir.h): the
 * paths of one name's reader-writer files, all in the lock directory D,
 * and which of them the handle holds. */
struct dl_rw {
        char *readers_dir;        /* D/NAME.readers                      */
        char *r_path;             /* D/NAME.readers/r.<T>                */
        char *a_path;             /* D/NAME.readers/a.<T>                */
        char *w_path;             /* D/NAME.readers/w.<T>                */
        char *up_path;            /* D/NAME.up.<T>                       */
        char *wq_dir;             /* D/NAME.wq                           */
        char *wq_entry;           /* D/NAME.wq/x.<T>                     */
        const char *reader_entry; /* r_path or a_path while reading      */
        bool up_held;             /* up_path is ours                     */
        bool wq_held;             /* wq_entry is ours                    */
};

/* A whole lock's reader-writer state, made on first use (the handle's
 * kind_state): the exclusive lock as the core takes it needs none. */
static struct dl_rw *rw_of(const dirlock *h)
{
        return dl_dir_of(h)->kind_state;
}

static void rw_free(dirlock *h);

/* Make rw_of(h) (idempotent).  DIRLOCK_OK or DIRLOCK_ENOMEM. */
static int rw_state(dirlock *h, dirlock_error *err)
{
        struct dl_dir *d = dl_dir_of(h);
        if (d->kind_state != NULL)
                return DIRLOCK_OK;
        struct dl_rw *rw = calloc(1, sizeof *rw);
        if (rw == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        d->kind_state = rw;
        rw->readers_dir = dl_layout_path(d->lockdir, h->name, DL_SUFFIX_READERS);
        rw->wq_dir = dl_layout_path(d->lockdir, h->name, DL_SUFFIX_WQ);
        rw->up_path = dl_layout_up(d->lockdir, h->name, h->token);
        if (rw->readers_dir != NULL && rw->wq_dir != NULL) {
                rw->r_path = dl_layout_entry(rw->readers_dir, DL_ENTRY_READER, h->token);
                rw->a_path = dl_layout_entry(rw->readers_dir, DL_ENTRY_ADMITTED, h->token);
                rw->w_path = dl_layout_entry(rw->readers_dir, DL_ENTRY_WAITING, h->token);
                rw->wq_entry = dl_layout_entry(rw->wq_dir, DL_ENTRY_WRITER, h->token);
        }
        if (rw->readers_dir == NULL || rw->wq_dir == NULL || rw->up_path == NULL || rw->r_path == NULL ||
            rw->a_path == NULL || rw->w_path == NULL || rw->wq_entry == NULL) {
                rw_free(h); /* never a state with paths missing: the next call builds it anew */
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        return DIRLOCK_OK;
}

static void rw_free(dirlock *h)
{
        struct dl_rw *rw = rw_of(h);
        if (rw == NULL)
                return;
        free(rw->readers_dir);
        free(rw->r_path);
        free(rw->a_path);
        free(rw->w_path);
        free(rw->up_path);
        free(rw->wq_dir);
        free(rw->wq_entry);
        free(rw);
        dl_dir_of(h)->kind_state = NULL;
}

/* h->token is new (dirlock_reacquire, a retry): put it in h's
 * reader-writer paths, or free them when they still hold something of
 * the old token. */
static void rw_retoken(dirlock *h)
{
        struct dl_rw *rw = rw_of(h);
        if (rw == NULL)
                return;
        if (rw->reader_entry != NULL || rw->up_held || rw->wq_held) {
                rw_free(h); /* rebuilt on use */
                return;
        }
        char *const with_token[] = {rw->r_path, rw->a_path, rw->w_path, rw->up_path, rw->wq_entry};
        for (size_t i = 0; i < sizeof with_token / sizeof with_token[0]; i++)
                dl_layout_retoken(with_token[i], h->token);
}

/* Our hold was broken as stale while we waited (DIRLOCK_ELOST) and we
 * take the lock again: under a new token (dl_dir_new_token).  A breaker
 * that judged the old hold may still unlink the path it judged (INVARIANT
 * B, dir_exclusive.c); under the old token that would remove the new
 * hold, and a reader's new entry, unseen by the writer that comes next. */
static int rw_new_token(dirlock *h, dirlock_error *err)
{
        int rc = dl_dir_new_token(h, err);
        return rc != DIRLOCK_OK ? rc : rw_state(h, err);
}

static int timeout_code(const dirlock *h, const dirlock_options *o)
{
        (void)h;
        return o->timeout == 0 ? DIRLOCK_EBUSY : DIRLOCK_ETIMEDOUT;
}

/* Start a waiter on D (where releases happen), plus `extra` directories
 * that exist (a directory that vanished meanwhile must not turn inotify
 * off). */
static void waiter_start(dl_waiter *w, const dirlock *h, const char *extra1, const char *extra2)
{
        dl_waiter_init(w, dl_dir_of(h)->lockdir, h->opts.flags, h->token, h->opts.stale_age);
        dl_waiter_cancel_on(w, h->opts.cancel_fd);
        const char *extra[2] = {extra1, extra2};
        for (int i = 0; i < 2; i++) {
                if (extra[i] == NULL || !w->notify)
                        continue;
                dl_waiter_watch_dir(w, extra[i]); /* a vanished one is fine */
        }
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
         * lib/netfs/netfs_fsops.c). */
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
        if (dl_fs_present(rw_of(h)->wq_dir, dl_dir_of(h)->fs->network) == 0)
                return W_OPEN;
        dl_scan sc = {.active = "x"};
        if (dl_scan_dir(rw_of(h)->wq_dir, h->opts.stale_age, dl_dir_of(h)->fs, &sc, err) != 0)
                return W_ERROR;
        if (sc.live == 0)
                return W_OPEN;
        *holder = sc.one;
        return W_BLOCK;
}

/* ---- shared ---------------------------------------------------------------- */

static int announce(dirlock *h, dirlock_error *err)
{
        struct dl_rw *rw = rw_of(h);
        if (dl_entry_make_in(rw->readers_dir, rw->r_path, h, DIRLOCK_SHARED) != 0)
                return dl_fail(err, DIRLOCK_EIO, errno, "cannot register as reader in '%s'", rw->readers_dir);
        return DIRLOCK_OK;
}

static void reader_give_up(dirlock *h)
{
        struct dl_rw *rw = rw_of(h);
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
        struct dl_rw *rw = rw_of(h);
        int rc = waits_visibly(h) ? dl_fs_rename(rw->r_path, rw->w_path) : dl_fs_unlink(rw->r_path);
        if (rc != 0 && errno != ENOENT)
                return dl_fail(err, DIRLOCK_EIO, errno, "cannot withdraw reader entry '%s'", rw->r_path);
        return DIRLOCK_OK;
}

/* Admitted by a fair writer while we waited (w.<T> renamed a.<T>)?  The
 * rename keeps w.<T>'s change time, and a reader slow to wake (a paused
 * process) finds its admission aged: a writer's drain may judge it stale
 * in the moment after we took it up, and write beside us.  So an
 * admission is taken up only while young (under half the stale age, by
 * this reader's clock) and renewed at once -- no judge can have found it
 * stale before the renewal -- else given up: the writer's drain stops
 * waiting for it, and we wait for W as a reader not yet announced. */
static bool reader_admitted(dirlock *h)
{
        struct dl_rw *rw = rw_of(h);
        dl_record rec;
        double age;
        if (dl_fs_present(rw->a_path, dl_dir_of(h)->fs->network) != 1 ||
            dl_entry_read(rw->a_path, &rec, &age) != 0)
                return false;
        if (age >= h->opts.stale_age / 2 || dl_fs_touch(rw->a_path) != 0) {
                dl_fs_unlink(rw->a_path);
                return false;
        }
        rw->reader_entry = rw->a_path;
        return true;
}

/* A waiting reader found W not blocking at its peek: announce again (fair:
 * w.<T> -> r.<T>), look again.  DIRLOCK_OK: in (h's reader entry set);
 * DIRLOCK_EBUSY: W blocks again, withdrawn (*holder, *s); an error. */
static int reader_reenter(dirlock *h, bool fair, dl_record *holder, enum wstate *s, dirlock_error *err)
{
        struct dl_rw *rw = rw_of(h);
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
        struct dl_rw *rw = rw_of(h);
        int rc = dl_dir_wait_begin(h, DL_FOR_W_TO_READ, DIRLOCK_WAIT_LOCK, DIRLOCK_SHARED, err);
        if (rc != DIRLOCK_OK)
                return rc;
        dl_waiter w;
        waiter_start(&w, h, fair ? rw->readers_dir : NULL,
                     h->opts.policy == DIRLOCK_POLICY_WRITER ? rw->wq_dir : NULL);
        dl_waiter_watch_owner(&w, holder);
        for (bool first = true;; first = false) {
                int waited = first ? 0 : dl_waiter_wait(&w, deadline);
                if (waited == 0 && (rc = dl_dir_wait_step(h, err)) != DIRLOCK_OK)
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
        dl_dir_wait_end(h);
        return rc;
}

static int shared_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        struct dl_rw *rw = rw_of(h);
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
        struct dl_rw *rw = rw_of(h);
        if (rw->wq_held) {
                dl_entry_drop(h, rw->wq_dir, rw->wq_entry);
                rw->wq_held = false;
        }
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
        if (rw_of(h)->up_held)
                dl_fs_touch(rw_of(h)->up_path);
        return dl_excl_refresh(h, err);
}

/* A drain found no reader left: remove NAME.readers, so that the next
 * writer's "no readers" is one failing stat().  ENOTEMPTY (waiting
 * readers, dead entries, a reader announcing right now) leaves it: such a
 * reader then finds W held and withdraws, as with the directory kept.
 * Never on a network filesystem (KEPT DIRECTORIES in lib/netfs/netfs.c). */
static void tidy_readers_dir(const dirlock *h)
{
        if (!dl_dir_of(h)->fs->network)
                dl_fs_rmdir(rw_of(h)->readers_dir);
}

/* A fair writer's admission of the waiting readers, as its drain scans
 * NAME.readers (dl_scan's live_entry): the first scan remembers every
 * live reader's token and admits (w.<T> -> a.<T>) the waiting ones; the
 * later scans admit only readers the first one saw. */
struct admission {
        bool admit;                           /* rename waiting entries w.<T> to a.<T>        */
        bool remember;                        /* record the tokens of live r./w. entries       */
        bool admit_known;                     /* admit w.<T> only for remembered tokens        */
        char (*known)[DIRLOCK_TOKEN_LEN + 1]; /* remembered tokens (malloc'd) */
        unsigned nknown, cap;
};

static bool admissible(const struct admission *ad, const char *token)
{
        if (!ad->admit_known)
                return true;
        for (unsigned i = 0; i < ad->nknown; i++)
                if (strcmp(ad->known[i], token) == 0)
                        return true;
        return false;
}

/* Remember the token of a live entry; 0, or -1 and err. */
static int remember(struct admission *ad, const char *token, dirlock_error *err)
{
        if (ad->nknown == ad->cap) {
                unsigned cap = ad->cap ? ad->cap * 2 : 16;
                char(*k)[DIRLOCK_TOKEN_LEN + 1] = realloc(ad->known, cap * sizeof *k);
                if (k == NULL) {
                        dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                        return -1;
                }
                ad->known = k;
                ad->cap = cap;
        }
        memcpy(ad->known[ad->nknown++], token, DIRLOCK_TOKEN_LEN + 1);
        return 0;
}

static int admit_entry(dl_scan *s, int dfd, const char *leaf, int kind, dirlock_error *err)
{
        struct admission *ad = s->arg;
        const char *token = leaf + 2;
        if (ad->remember && (kind == DL_ENTRY_READER || kind == DL_ENTRY_WAITING) && ad->nknown < 4096 &&
            remember(ad, token, err) != 0)
                return -1;
        if (!ad->admit || kind != DL_ENTRY_WAITING || !admissible(ad, token))
                return DL_SCAN_DEFAULT;
        char to[DL_ENTRY_LEAF_SIZE];
        snprintf(to, sizeof to, "%c.%s", (char)DL_ENTRY_ADMITTED, token);
        return renameat(dfd, leaf, dfd, to) == 0 ? DL_SCAN_LIVE : DL_SCAN_SKIP;
}

/* Holding W (or U): wait until no live reader is left.  `admit`: the fair
 * writer's first scan lets the waiting readers in first; `kind` says what
 * the wait is for (dirlock_wait_kind: a lock or an upgrade).  DIRLOCK_ELOST
 * when W was broken while we waited. */
static int drain(dirlock *h, const dirlock_options *o, const dl_time *deadline, bool admit, int kind,
                 bool seen_there, dirlock_error *err)
{
        struct dl_rw *rw = rw_of(h);
        /* (`seen_there`: the caller's own look since W found NAME.readers.) */
        if (!seen_there && dl_fs_present(rw->readers_dir, dl_dir_of(h)->fs->network) == 0)
                return DIRLOCK_OK; /* the fast path: no readers at all */
        /* fair: the first scan admits the waiting readers and remembers
         * every reader it saw; one that withdraws later (its re-announce
         * crossed our take of W) is admitted by a later scan. */
        struct admission ad = {.admit = admit, .remember = admit};
        dl_scan sc = {.active = "ra", .live_entry = admit_entry, .arg = &ad};
        if (dl_scan_dir(rw->readers_dir, h->opts.stale_age, dl_dir_of(h)->fs, &sc, err) != 0) {
                free(ad.known);
                return err->code;
        }
        if (sc.live == 0) {
                free(ad.known);
                tidy_readers_dir(h);
                return DIRLOCK_OK;
        }
        if (dl_deadline_passed(deadline)) {
                free(ad.known);
                return dl_fail(err, timeout_code(h, o), 0, "lock '%s' is held for reading by %u reader(s)",
                               h->name, sc.live);
        }
        int rc = dl_dir_wait_begin(h, DL_FOR_READERS, kind,
                                   kind == DIRLOCK_WAIT_UPGRADE ? DIRLOCK_EXCLUSIVE : h->mode, err);
        if (rc != DIRLOCK_OK) {
                free(ad.known);
                return rc;
        }
        dl_waiter w;
        waiter_start(&w, h, NULL, NULL);
        ad.remember = false;
        ad.admit_known = true;
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
                    (rc = dl_dir_wait_step(h, err)) != DIRLOCK_OK)
                        break;
                unwatched = dl_waiter_watch_missing(&w, rw->readers_dir);
                if (dl_scan_dir(rw->readers_dir, h->opts.stale_age, dl_dir_of(h)->fs, &sc, err) != 0) {
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
        dl_dir_wait_end(h);
        free(ad.known);
        return rc;
}

/* Writer, policy `reader`: hold W only when no reader is there. */
static int reader_pref_write(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        struct dl_rw *rw = rw_of(h);
        dl_waiter w;
        bool waiting = false, unwatched = false;
        dl_scan sc = {.active = "raw"}; /* waiting readers go first */
        int rc;
        bool canceled = false;
        for (;;) {
                rc = dl_scan_dir(rw->readers_dir, h->opts.stale_age, dl_dir_of(h)->fs, &sc, err);
                if (rc != 0) {
                        rc = err->code;
                        break;
                }
                dl_record holder = sc.one;
                if (sc.live == 0) {
                        rc = dl_excl_try(h, &holder, true, err);
                        if (rc == DIRLOCK_OK) {
                                rc = dl_scan_dir(rw->readers_dir, h->opts.stale_age, dl_dir_of(h)->fs, &sc,
                                                 err) != 0
                                         ? (err->code)
                                         : DIRLOCK_OK;
                                if (rc == DIRLOCK_OK && sc.live == 0)
                                        break;
                                dirlock_error step_err;
                                int released = dl_excl_release(h, &step_err);
                                if (released == DIRLOCK_ELOST) /* broken: a new token (INVARIANT B) */
                                        released = rw_new_token(h, &step_err);
                                if (released != DIRLOCK_OK) {
                                        *err = step_err; /* W stays ours: do not wait on it */
                                        rc = released;
                                        break;
                                }
                                rw = rw_of(h); /* rebuilt with the token */
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
                        if ((rc = dl_dir_wait_begin(h, DL_FOR_READERS_OR_W, DIRLOCK_WAIT_LOCK, h->mode,
                                                    err)) != DIRLOCK_OK)
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
                        if ((rc = dl_dir_wait_step(h, err)) != DIRLOCK_OK)
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
        dl_dir_wait_end(h);
        return rc;
}

static int intent_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        for (;;) {
                int rc = dl_dir_take(h, &dl_dir_w, deadline, err);
                if (rc != DIRLOCK_OK || h->opts.policy != DIRLOCK_POLICY_SIMPLE)
                        return rc;
                if (dl_entry_create(rw_of(h)->up_path, h, DIRLOCK_INTENT) != 0) {
                        rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot create '%s'", rw_of(h)->up_path);
                } else {
                        rw_of(h)->up_held = true;
                        rc = drain(h, &h->opts, deadline, false, DIRLOCK_WAIT_LOCK, false, err);
                }
                if (rc == DIRLOCK_OK)
                        return rc;
                if (rw_of(h)->up_held)
                        dl_fs_unlink(rw_of(h)->up_path);
                rw_of(h)->up_held = false;
                dl_excl_release(h, NULL);
                /* else: broken while we drained, take it again */
                if (rc != DIRLOCK_ELOST || (rc = rw_new_token(h, err)) != DIRLOCK_OK)
                        return rc;
        }
}

/* ---- the kind's entries -------------------------------------------------------- */

/* A writer of policy writer is registered in NAME.wq while it waits for
 * W: waiting writers hold off `writer` readers (reader_look). */
static int wq_enter(dirlock *h, dirlock_error *err)
{
        int rc = rw_state(h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        struct dl_rw *rw = rw_of(h);
        if (dl_entry_make_in(rw->wq_dir, rw->wq_entry, h, h->mode) != 0)
                return dl_fail(err, DIRLOCK_EIO, errno, "cannot register as a waiting writer in '%s'",
                               rw->wq_dir);
        rw->wq_held = true;
        return DIRLOCK_OK;
}

static void wq_renew(dirlock *h)
{
        if (rw_of(h) != NULL && rw_of(h)->wq_held)
                dl_fs_touch(rw_of(h)->wq_entry);
}

static void wq_out(dirlock *h)
{
        if (rw_of(h) != NULL)
                wq_leave(h);
}

/* W's slots for a writer of policy writer (made at load: the core's, and
 * the waiting writers' registration). */
static struct dl_slots writer_slots;

static int rw_release(dirlock *h, dirlock_error *err);
static bool rw_holds(const dirlock *h);

/* The modes and policies that take W as the core does, then its
 * neighbours -- exclusive under fair, writer and simple, and a `simple`
 * reader (W with record mode shared) -- and the others. */
static int rw_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        dirlock_error local; /* the steps below report through err->code */
        if (err == NULL)
                err = &local;
        int policy = h->opts.policy, mode = h->opts.mode;
        if ((mode == DIRLOCK_EXCLUSIVE && policy != DIRLOCK_POLICY_READER) ||
            (mode == DIRLOCK_SHARED && policy == DIRLOCK_POLICY_SIMPLE))
                return dl_dir_exclusive_acquire(
                    h, policy == DIRLOCK_POLICY_WRITER ? &writer_slots : &dl_dir_w, deadline, err);
        int rc = rw_state(h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        for (;;) {
                rc = mode == DIRLOCK_SHARED   ? shared_acquire(h, deadline, err)
                     : mode == DIRLOCK_INTENT ? intent_acquire(h, deadline, err)
                                              : reader_pref_write(h, deadline, err);
                if (rc != DIRLOCK_OK)
                        return rc;
                /* Announced (W, or our reader entry): now no range of the
                 * name may be held (lib/range, RANGES AGAINST WHOLE LOCKS);
                 * W's other neighbour, the readers, is the mode's own. */
                rc = dl_dir_neighbours(h, DL_NEAR_RANGES, deadline, err);
                if (rc == DIRLOCK_OK)
                        return rc;
                rw_release(h, NULL);
                /* else: broken while we waited for the ranges, again */
                if (rc != DIRLOCK_ELOST || (rc = rw_new_token(h, err)) != DIRLOCK_OK)
                        return rc;
        }
}

static int rw_release(dirlock *h, dirlock_error *err)
{
        struct dl_rw *rw = rw_of(h);
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

/* Release what a failed release left in place (an entry it could not
 * remove; its paths carry the old token).  An entry broken meanwhile is
 * no error: nothing is left. */
static int rw_release_kept(dirlock *h, dirlock_error *err)
{
        if (!rw_holds(h))
                return DIRLOCK_OK;
        int rc = rw_release(h, err);
        if (rc == DIRLOCK_ELOST) {
                dl_ok(err);
                return DIRLOCK_OK;
        }
        return rc;
}

/* True while h still has an entry of its own in place: held, or left by a
 * release that failed. */
static bool rw_holds(const dirlock *h)
{
        const struct dl_rw *rw = rw_of(h);
        return dl_dir_of(h)->excl_held || (rw != NULL && (rw->reader_entry != NULL || rw->up_held));
}

static int rw_refresh(dirlock *h, dirlock_error *err)
{
        struct dl_rw *rw = rw_of(h);
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

static int rw_check(const dirlock *h, dirlock_error *err)
{
        const struct dl_rw *rw = rw_of(h);
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
static int rw_upgrade(dirlock *lock, const dirlock_options *opts, dirlock_error *err)
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
        rc = rw_state(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        rc = dl_excl_check(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        dirlock_options o = opts != NULL ? *opts : lock->opts;
        dl_time deadline = dl_deadline(o.timeout);
        struct dl_rw *rw = rw_of(lock);
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

static int rw_downgrade(dirlock *lock, dirlock_error *err)
{
        dirlock_error local;
        if (err == NULL)
                err = &local;
        int rc;
        if (lock->mode == DIRLOCK_SHARED)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "lock '%s' is already a read lock", lock->name);
        rc = rw_state(lock, err);
        if (rc == DIRLOCK_OK)
                rc = dl_excl_check(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        struct dl_rw *rw = rw_of(lock);
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
static int rw_downgrade_intent(dirlock *lock, dirlock_error *err)
{
        dirlock_error local;
        if (err == NULL)
                err = &local;
        int rc = rw_state(lock, err);
        if (rc == DIRLOCK_OK)
                rc = dl_excl_check(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        struct dl_rw *rw = rw_of(lock);
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

/* dirlock_cleanup, for each leaf of D: the readers' and the waiting
 * writers' directories (dead entries broken, the directory removed when
 * that left it empty -- never on a network filesystem), and U entries. */
static void rw_cleanup(const char *lockdir, const dl_fs *fs, const char *leaf, const char *path)
{
        if (dl_layout_has_suffix(leaf, DL_SUFFIX_READERS) || dl_layout_has_suffix(leaf, DL_SUFFIX_WQ)) {
                dl_scan sc = {.active = "rawx"};
                if (dl_scan_dir(path, DIRLOCK_DEFAULT_STALE_AGE, fs, &sc, NULL) == 0 && !fs->network)
                        dl_fs_rmdir(path); /* only if empty; never on a network filesystem */
        } else {
                clean_up_entry(lockdir, fs, path, leaf);
        }
}

/* dirlock_inspect: the shared and intent holders of `name`. */
static void rw_inspect(const char *lockdir, const char *name, double stale_age, dirlock_owner *owner)
{
        (void)stale_age;
        char *dir = dl_layout_path(lockdir, name, DL_SUFFIX_READERS);
        if (dir == NULL)
                return;
        dl_scan sc = {.active = "ra"};
        unsigned n = dl_scan_dir(dir, DIRLOCK_DEFAULT_STALE_AGE, dl_fs_of(lockdir, NULL), &sc, NULL) == 0
                         ? sc.live
                         : 0;
        free(dir);
        /* An intent holder is a reader too. */
        char *lock = dl_layout_path(lockdir, name, DL_SUFFIX_LOCK);
        dl_lock_view v;
        if (lock != NULL && dl_lock_look(lock, dl_fs_of(lockdir, NULL), &v) == 0 &&
            v.state == DL_LOCK_OWNED && v.rec.mode == DIRLOCK_INTENT)
                n++;
        free(lock);
        owner->readers = n;
}

/* The readers' entries (r. and a.) of `name`, appended. */
static int rw_holders(const char *lockdir, const char *name, double stale_age, dirlock_owner **out,
                      size_t *count, size_t *cap, dirlock_error *err)
{
        const dl_fs *fs = dl_fs_of(lockdir, NULL);
        char *dir, **names;
        size_t n;
        if (!dl_dir_names_of(lockdir, name, DL_SUFFIX_READERS, fs, &dir, &names, &n))
                return DIRLOCK_OK; /* none (or unreadable: as inspect counts them) */
        int rc = DIRLOCK_OK;
        for (size_t i = 0; i < n && rc == DIRLOCK_OK; i++) {
                int kind = dl_layout_entry_kind(names[i]);
                if (kind != DL_ENTRY_READER && kind != DL_ENTRY_ADMITTED)
                        continue;
                dl_lock_view v;
                memset(&v, 0, sizeof v);
                char *entry = dl_join(dir, names[i], NULL);
                if (entry == NULL || dl_entry_read(entry, &v.rec, &v.age) != 0) {
                        free(entry);
                        continue; /* gone meanwhile */
                }
                free(entry);
                v.state = DL_LOCK_OWNED;
                v.token = names[i] + 2;
                dirlock_owner *o = dl_owner_append(out, count, cap);
                if (o == NULL)
                        rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                else
                        dl_lock_describe(&v, stale_age, fs, o);
        }
        dl_dir_names_free(names, n);
        free(dir);
        return rc;
}

/* The drain of NAME's readers, W held: how a writer waits for them (the
 * guard of the readers, dir.h). */
static int rw_guard(dirlock *h, const dl_time *deadline, bool seen, dirlock_error *err)
{
        int rc = rw_state(h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        return drain(h, &h->opts, deadline, h->opts.policy == DIRLOCK_POLICY_FAIR, DIRLOCK_WAIT_LOCK, seen,
                     err);
}

static const struct dl_dir_kind rw_kind = {
    .what = "a reader-writer lock",
    .acquire = rw_acquire,
    .release = rw_release,
    .release_kept = rw_release_kept,
    .refresh = rw_refresh,
    .check = rw_check,
    .retoken = rw_retoken,
    .close = rw_free,
    .upgrade = rw_upgrade,
    .downgrade = rw_downgrade,
    .downgrade_intent = rw_downgrade_intent,
};

static struct dl_dir_module rw_module = {
    .name = "the reader-writer module (lib/rw)",
    .whole = &rw_kind,
    .guards = DL_NEAR_READERS,
    .guard = rw_guard,
    .inspect = rw_inspect,
    .holders = rw_holders,
    .cleanup = rw_cleanup,
};

DL_ON_LOAD(rw_register)
{
        writer_slots = dl_dir_w;
        writer_slots.enter = wq_enter;
        writer_slots.renew = wq_renew;
        writer_slots.leave = wq_out;
        dl_dir_module_add(&rw_module);
}
