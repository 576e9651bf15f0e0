/* postqueue.c - the pending-post queue (see postqueue.h): how a post is
 * queued, claimed, committed by whoever holds the board's lock, and
 * withdrawn.
 *
 * Processes are named by pid and start time, PID-START (process.h): a
 * pid alone can be reused by a later process, which would then pass for
 * the live holder of a dead holder's claims and strand them.
 *
 * Protocol, for a post P with id ID and the board's write lock L:
 *
 *   1. enqueue   write ID.msg.tmp.PID-START.ID, watch it (inotify,
 *                IN_ATTRIB: link count changes), rename it to ID.msg,
 *                keep it open.
 *                Keeps I1: a name ending in .msg is always a whole entry.
 *                No fsync: a queued post is not acknowledged; only the log
 *                that holds it, synced, makes it so.
 *   2. wait      for L, or for the entry's link count to change, whichever
 *                comes first (the watch is L's DIRLOCK_CANCEL_FD).  The
 *                entry has no name left (fstat: st_nlink 0): P's message
 *                was committed by a holder (I3); answer "stored", without
 *                ever taking L.  L taken: look again, and if the entry
 *                still has a name P leads (step 4).  The wait for L
 *                failed: withdraw (step 6).
 *   3. (a canceled wait whose entry still has a name waits again, with
 *      what is left of the timeout)
 *   4. lead      claim: rename each X.msg to X.claim.PID-START (the
 *                leader's; oldest first, at most max) and take over (by
 *                rename) every X.claim.P whose process P is gone: no such
 *                pid, or the pid now names a process that started at
 *                another time.  A live P's claims are left alone: P was
 *                paused past the stale age and its lock broken; it will
 *                find the lock lost before its rename and give them back
 *                (or P is exiting: the kernel drops a flock as it closes
 *                a dying process's files, before the process is gone).
 *                A leader whose own entry is such a claim (pq_claimer)
 *                releases L, waits for P's end or its entry's commit (a
 *                pidfd, the watch) -- a short while, growing, since P
 *                giving the claim back is a rename no watch hears -- and
 *                goes back to step 2; out of time, step 6.
 *                A claim that cannot be read for want of descriptors or
 *                memory is given back as X.msg and the batch fails (step
 *                5): it may be whole.  One that is no message (cut
 *                short, unparsable, not a file, an I/O error) never will
 *                be: it is removed, and said on stderr -- given back, it
 *                would fail every later batch first.
 *                Read the log; each claimed X whose id is already in the
 *                log (its holder died after the log's rename) is not
 *                added again (I4); the others get the next numbers.
 *                Write the log as for one post: temp file, fsync, rename,
 *                directory fsync.
 *   5. settle    success: unlink every X.claim.PID-START; lead again if
 *                P's own entry was beyond max.  Failure: give every claim
 *                back as X.msg (their posters will try themselves and get
 *                their own answer), except P's own, which is removed; P
 *                answers with the error.  Release L.
 *   6. withdraw  (no lock) unlink ID.msg.  Success: no holder has it and
 *                none ever will (a holder only commits what it claimed), so
 *                "not stored" is true.  ENOENT: a holder claimed it, it may
 *                be stored, and P says so.
 *
 * Invariants:
 *   I1  only whole entries are named .msg or .claim;
 *   I2  only L's holder renames X.msg to X.claim.PID-START, or takes over,
 *       unlinks or renames a claim, and never a live process's claim but
 *       its own;
 *   I3  an entry loses its name only after the log holding its message (by
 *       id) is durable, or by its own poster (step 5 failure, step 6), so a
 *       poster that finds its entry without a name was stored (renames
 *       between .msg and .claim.PID-START keep the one link) -- save an
 *       entry that is no message, which step 1 never writes;
 *   I4  the log never holds the same id twice, so a holder that died
 *       between the log's rename and step 5 causes no duplicate.
 * A holder whose lock was broken as stale keeps its claims (I2) and finds
 * the lock lost right before its rename (see locking.c), so it neither
 * writes the log nor has its posts stored by another; its poster gets a
 * true "not stored".  Claims are judged by pid and start time, so the
 * queue assumes all of a board's processes run on one host (group_commit
 * = no otherwise).
 *
 * Names of earlier versions.  Before the start time was recorded, claims
 * were ID.claim.PID and temp files ID.msg.tmp.PID.ID; a deployment
 * restarted onto this version may have left some.  They are still read,
 * and judged by the pid alone (process_gone): no such process -> gone, so
 * a leader takes the claim over in step 4 (renaming it to its own long
 * name) and the temp file is removed; this process's own pid -> gone too
 * (this version names its own entries with the start time, so an earlier
 * process with the same pid made it); another live pid -> left alone, as
 * before (it may be a holder still running the earlier version while the
 * board restarts; once that pid is gone, the next leader takes it). */
#include "postqueue.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "fileio.h"
#include "hex.h"
#include "process.h"
#include "random.h"
#include "tempname.h"

#define QUEUED_SUFFIX  ".msg"
#define CLAIMED_SUFFIX ".claim."
#define ENTRY_NAME_MAX (LOGRECORD_ID_LEN + 16 + PROCESS_ID_MAX)
/* A queued line: a 64 KiB body at most doubles when escaped. */
#define ENTRY_MAX_BYTES (512 * 1024)

static void entry_name(char out[ENTRY_NAME_MAX], const char *id, const char *suffix)
{
        snprintf(out, ENTRY_NAME_MAX, "%s%s", id, suffix);
}

/* ID.claim.PID-START: claimed by process `holder` (process.h). */
static void claim_name(char out[ENTRY_NAME_MAX], const char *id, const struct process_id *holder)
{
        char who[PROCESS_ID_MAX];
        process_format(holder, who);
        snprintf(out, ENTRY_NAME_MAX, "%s" CLAIMED_SUFFIX "%s", id, who);
}

/* This process's claim on entry `id`. */
static void own_claim_name(char out[ENTRY_NAME_MAX], const char *id)
{
        struct process_id self;
        process_self(&self);
        claim_name(out, id, &self);
}

/* One inotify instance per process, kept: closing one waits for a kernel
 * grace period (see lib/wait.c). */
static int notify_fd = -2; /* -2 not tried yet, -1 not available */

static int notify_instance(void)
{
        if (notify_fd == -2) {
                notify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
                if (notify_fd < 0)
                        notify_fd = -1;
        }
        return notify_fd;
}

void pq_notify_drain(void)
{
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        while (notify_fd >= 0 && read(notify_fd, buf, sizeof buf) > 0)
                ;
}

int pq_notify_fd(const struct pq_ticket *t)
{
        return t->wd >= 0 ? notify_fd : -1;
}

int pq_stored(const struct pq_ticket *t)
{
        struct stat st;
        return fstat(t->fd, &st) == 0 && st.st_nlink == 0;
}

void pq_ticket_close(struct pq_ticket *t)
{
        if (t->wd >= 0)
                inotify_rm_watch(notify_fd, t->wd); /* EINVAL when already gone */
        if (t->fd >= 0)
                close(t->fd);
        pq_notify_drain();
        t->fd = -1;
        t->wd = -1;
}

int pq_enqueue(const char *dir, const struct logrecord *msg, struct pq_ticket *t, struct board_error *err)
{
        t->fd = -1;
        t->wd = -1;
        if (ensure_dir(dir, err) < 0)
                return -1;
        unsigned char rnd[LOGRECORD_ID_LEN / 2];
        if (random_bytes(rnd, sizeof rnd, err) < 0)
                return -1;
        hex_encode(rnd, sizeof rnd, t->id);

        struct logrecord rec = *msg; /* shares the strings; not freed */
        rec.no = 1;                  /* numbered when committed */
        memcpy(rec.id, t->id, sizeof rec.id);
        char *line = NULL;
        size_t len = 0;
        int lrc = logrecord_serialize(&rec, &line, &len);
        if (lrc != LOGRECORD_OK)
                return board_fail(err, 500, "cannot queue the message: %s", logrecord_strerror(lrc));

        struct buf tmp = BUF_INIT, final = BUF_INIT;
        buf_printf(&final, "%s/%s" QUEUED_SUFFIX, dir, t->id);
        int rc = 0;
        if (final.oom) {
                rc = board_fail(err, 500, "out of memory");
                goto out;
        }
        rc = temp_name_make(final.data, t->id, &tmp, err);
        if (rc < 0)
                goto out;
        int fd = open(tmp.data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) {
                int e = errno;
                rc = board_fail(err, 500, "cannot queue the message in '%s': %s%s", dir, strerror(e),
                                storage_hint(e));
                goto out;
        }
        int bad = write_all(fd, line, len);
        int e = errno;
        /* Watch before the entry can be claimed: no change is missed. */
        int ifd = bad ? -1 : notify_instance();
        if (ifd >= 0)
                t->wd = inotify_add_watch(ifd, tmp.data, IN_ATTRIB);
        if (!bad && rename(tmp.data, final.data) < 0) {
                bad = -1;
                e = errno;
        }
        if (bad) {
                unlink(tmp.data);
                t->fd = fd;
                pq_ticket_close(t);
                rc = board_fail(err, 500, "cannot queue the message in '%s': %s%s", dir, strerror(e),
                                storage_hint(e));
        } else {
                t->fd = fd; /* kept: fstat tells when the entry is gone */
        }
out:
        free(line);
        buf_free(&tmp);
        buf_free(&final);
        return rc;
}

struct candidate {
        char name[ENTRY_NAME_MAX]; /* as found */
        char id[LOGRECORD_ID_LEN + 1];
        bool claimed;
        struct process_id claimer; /* when claimed */
        struct timespec queued;
};

/* "ID.msg", or "ID.claim.PID-START" (or the older "ID.claim.PID"), with a
 * valid id: fills c (all but time). */
static int parse_entry_name(const char *name, struct candidate *c)
{
        size_t n = strlen(name);
        if (n <= LOGRECORD_ID_LEN || !logrecord_valid_id(name, LOGRECORD_ID_LEN))
                return 0;
        const char *suffix = name + LOGRECORD_ID_LEN;
        size_t cs = strlen(CLAIMED_SUFFIX);
        if (n >= ENTRY_NAME_MAX)
                return 0;
        if (strcmp(suffix, QUEUED_SUFFIX) == 0) {
                c->claimed = false;
        } else if (strncmp(suffix, CLAIMED_SUFFIX, cs) == 0) {
                const char *end = process_parse(suffix + cs, &c->claimer);
                if (end == NULL || *end != '\0')
                        return 0;
                c->claimed = true;
        } else {
                return 0;
        }
        memcpy(c->name, name, n + 1);
        memcpy(c->id, name, LOGRECORD_ID_LEN);
        c->id[LOGRECORD_ID_LEN] = '\0';
        return 1;
}

/* Claims left by a dead holder first (they were queued earlier), then by
 * queueing time, then by id. */
static int candidate_order(const void *pa, const void *pb)
{
        const struct candidate *a = pa, *b = pb;
        if (a->claimed != b->claimed)
                return a->claimed ? -1 : 1;
        if (a->queued.tv_sec != b->queued.tv_sec)
                return a->queued.tv_sec < b->queued.tv_sec ? -1 : 1;
        if (a->queued.tv_nsec != b->queued.tv_nsec)
                return a->queued.tv_nsec < b->queued.tv_nsec ? -1 : 1;
        return strcmp(a->id, b->id);
}

/* What reading a claimed entry found (read_claim). */
enum claim_read {
        CLAIM_READ = 0,     /* a whole message: *rec                                 */
        CLAIM_CORRUPT = -1, /* no message, and never will be (cut short, unparsable,
                               not a file, an I/O error)                             */
        CLAIM_UNREAD = -2   /* not read for want of descriptors or memory: may be  */
};

/* The errors of a read that may succeed later: this process's or the
 * system's descriptors, or memory, ran out.  Any other error stays with
 * the entry (a symlink, a directory, a bad block): giving it back would
 * make every later leader claim it first and fail. */
static enum claim_read unread_or_corrupt(int e)
{
        return e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOBUFS || e == EAGAIN || e == EINTR
                   ? CLAIM_UNREAD
                   : CLAIM_CORRUPT;
}

/* Read and check claimed entry `id`: CLAIM_READ and *rec, or one of the
 * others with `why`. */
static enum claim_read read_claim(int dfd, const char *id, struct logrecord *rec, const char **why)
{
        char name[ENTRY_NAME_MAX];
        own_claim_name(name, id);
        int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
                *why = strerror(errno);
                return unread_or_corrupt(errno);
        }
        struct buf b = BUF_INIT;
        char chunk[16384];
        ssize_t n;
        while ((n = read(fd, chunk, sizeof chunk)) != 0) {
                if (n < 0 && errno == EINTR)
                        continue;
                enum claim_read bad = n < 0                                 ? unread_or_corrupt(errno)
                                      : b.len + (size_t)n > ENTRY_MAX_BYTES ? CLAIM_CORRUPT
                                      : buf_append(&b, chunk, (size_t)n) < 0 ? CLAIM_UNREAD
                                                                             : CLAIM_READ;
                if (bad != CLAIM_READ) {
                        *why = n < 0 ? strerror(errno) : bad == CLAIM_CORRUPT ? "too large" : "out of memory";
                        close(fd);
                        buf_free(&b);
                        return bad;
                }
        }
        close(fd);
        enum claim_read rc = CLAIM_CORRUPT;
        if (b.len == 0 || b.data[b.len - 1] != '\n') {
                *why = "incomplete";
        } else {
                int lrc = logrecord_parse(b.data, b.len, rec);
                if (lrc != LOGRECORD_OK)
                        *why = logrecord_strerror(lrc);
                else if (strcmp(rec->id, id) != 0)
                        *why = "its id does not match its name";
                else
                        rc = CLAIM_READ;
                if (lrc == LOGRECORD_ENOMEM)
                        rc = CLAIM_UNREAD;
                if (rc != CLAIM_READ)
                        logrecord_free(rec);
        }
        buf_free(&b);
        return rc;
}

static int batch_push(struct pq_batch *b, struct logrecord *rec)
{
        struct logrecord *items = realloc(b->items, (b->count + 1) * sizeof *items);
        if (!items)
                return -1;
        b->items = items;
        b->items[b->count++] = *rec;
        return 0;
}

int pq_claim(const char *dir, size_t max, struct pq_batch *b, struct board_error *err)
{
        DIR *d = opendir(dir);
        if (!d) {
                if (errno == ENOENT)
                        return 0;
                int e = errno;
                return board_fail(err, 500, "cannot read '%s': %s%s", dir, strerror(e), storage_hint(e));
        }
        int dfd = dirfd(d);
        struct candidate *cands = NULL;
        size_t count = 0, cap = 0;
        int rc = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                struct candidate c;
                if (temp_name_is_dead(de->d_name)) {
                        unlinkat(dfd, de->d_name, 0);
                        continue;
                }
                if (!parse_entry_name(de->d_name, &c))
                        continue;
                struct stat st;
                if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* withdrawn meanwhile */
                c.queued = st.st_mtim;
                if (count == cap) {
                        size_t ncap = cap ? 2 * cap : 32;
                        struct candidate *n = realloc(cands, ncap * sizeof *n);
                        if (!n) {
                                rc = board_fail(err, 500, "out of memory");
                                break;
                        }
                        cands = n;
                        cap = ncap;
                }
                cands[count++] = c;
        }
        if (rc == 0 && count > 0) {
                qsort(cands, count, sizeof *cands, candidate_order);
                for (size_t i = 0; i < count && b->count < max; i++) {
                        const struct candidate *c = &cands[i];
                        char to[ENTRY_NAME_MAX];
                        own_claim_name(to, c->id);
                        if (c->claimed && !process_is_self(&c->claimer) && !process_gone(&c->claimer))
                                continue; /* a live holder's (its lock was broken): its to give back */
                        const char *from = c->name;
                        if (strcmp(from, to) != 0 && renameat(dfd, from, dfd, to) < 0)
                                continue; /* withdrawn by its poster, or taken */
                        struct logrecord rec;
                        const char *why = "";
                        enum claim_read got = read_claim(dfd, cands[i].id, &rec, &why);
                        if (got == CLAIM_UNREAD) {
                                /* It may be whole: give it back, and fail the
                                 * batch (its poster, or the next leader, will
                                 * read it).  Removing it would tell its poster
                                 * "stored" (I3) of a post no log holds. */
                                char queued[ENTRY_NAME_MAX];
                                entry_name(queued, c->id, QUEUED_SUFFIX);
                                renameat(dfd, to, dfd, queued);
                                rc = board_fail(err, 500, "cannot read the pending post '%s/%s' now: %s", dir,
                                                queued, why);
                                break;
                        }
                        if (got == CLAIM_CORRUPT) {
                                fprintf(stderr, "board[%ld]: removed unreadable pending post '%s/%s': %s\n",
                                        (long)getpid(), dir, to, why);
                                unlinkat(dfd, to, 0);
                                continue;
                        }
                        if (batch_push(b, &rec) < 0) {
                                logrecord_free(&rec);
                                rc = board_fail(err, 500, "out of memory");
                                break;
                        }
                }
        }
        free(cands);
        closedir(d);
        return rc;
}

/* Remove the claims of *b (settle), or put them back in the queue except
 * `own`'s (give back). */
static void end_claims(const char *dir, const struct pq_batch *b, int give_back, const char *own)
{
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return;
        for (size_t i = 0; i < b->count; i++) {
                char claim[ENTRY_NAME_MAX], queued[ENTRY_NAME_MAX];
                own_claim_name(claim, b->items[i].id);
                entry_name(queued, b->items[i].id, QUEUED_SUFFIX);
                if (give_back && (own == NULL || strcmp(b->items[i].id, own) != 0))
                        renameat(dfd, claim, dfd, queued);
                else
                        unlinkat(dfd, claim, 0);
        }
        if (give_back && own != NULL) { /* also when it was not claimed (beyond max) */
                char queued[ENTRY_NAME_MAX], claim[ENTRY_NAME_MAX];
                entry_name(queued, own, QUEUED_SUFFIX);
                own_claim_name(claim, own);
                unlinkat(dfd, queued, 0);
                unlinkat(dfd, claim, 0);
        }
        close(dfd);
}

void pq_settle(const char *dir, const struct pq_batch *b)
{
        end_claims(dir, b, 0, NULL);
}

void pq_give_back(const char *dir, const struct pq_batch *b, const char *own)
{
        end_claims(dir, b, 1, own);
}

int pq_claimer(const char *dir, const struct pq_ticket *t, struct process_id *who)
{
        DIR *d = opendir(dir);
        if (d == NULL)
                return 0;
        int found = 0;
        struct dirent *de;
        while (!found && (de = readdir(d)) != NULL) {
                struct candidate c;
                if (parse_entry_name(de->d_name, &c) && c.claimed && strcmp(c.id, t->id) == 0 &&
                    !process_is_self(&c.claimer)) {
                        *who = c.claimer;
                        found = 1;
                }
        }
        closedir(d);
        return found;
}

int pq_withdraw(const char *dir, const struct pq_ticket *t)
{
        struct buf path = BUF_INIT;
        buf_printf(&path, "%s/%s" QUEUED_SUFFIX, dir, t->id);
        int rc = path.oom || unlink(path.data) < 0 ? 1 : 0;
        buf_free(&path);
        return rc;
}

void pq_batch_free(struct pq_batch *b)
{
        for (size_t i = 0; i < b->count; i++)
                logrecord_free(&b->items[i]);
        free(b->items);
        b->items = NULL;
        b->count = 0;
}
