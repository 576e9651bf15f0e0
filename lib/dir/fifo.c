/* fifo.c - the waiting queue of a name's exclusive lock (D/NAME.lock):
 * tickets in arrival order.  DIRLOCK_FIFO waiters are served strictly in
 * that order; other waiters queue too, after one failed try (rwlock.c
 * dl_take_w), so that a release wakes one waiter instead of all of them.
 *
 * QUEUE.  D/NAME.fifo/ holds one ticket per waiter: a symlink t.<SEQ>
 * (SEQ zero-padded decimal, so names sort as numbers) whose target is the
 * waiter's owner record.  A waiter takes the next number by creating
 * t.<max+1>, where max is the largest ticket it saw; symlink(2) fails with
 * EEXIST when another waiter took that number first, and it tries the next.
 * The creation is the atomic step: of two waiters, the one whose symlink
 * came first holds the smaller number, so sequence order is arrival order
 * among waiters that overlap.  (When the queue empties, numbering starts
 * again from what is left: a waiter that read the old maximum just before
 * may be numbered after a later one.  Only the order suffers, never mutual
 * exclusion: the queue decides who tries, the lock decides who holds.)
 *
 * INVARIANT F: of the queued waiters, only the one with the smallest live
 * ticket tries to take NAME.lock (rwlock.c looks with dl_fifo_ahead before
 * every try).  It gives its ticket back once it holds the lock (or gives
 * up).
 *
 * WAKE-UPS (rwlock.c dl_take_w, wait.c).  Each waiter follows the nearest
 * live ticket below its own: it watches that one entry (inotify
 * IN_DELETE_SELF) and its owner's process (pidfd), and only the first
 * waiter watches the lock directory for releases.  A release therefore
 * wakes the first waiter; its giving back the ticket wakes the second,
 * which becomes first; nobody else runs.  A look (dl_fifo_ahead) reads the
 * queue's names and then only the tickets from ours down to the nearest
 * live one.
 *
 * DEAD WAITERS.  A ticket whose owner is provably dead on this host, or
 * whose age exceeds the stale age (waiters renew theirs at least every
 * third of it while they wait), is unlinked by the waiter behind it when
 * it looks (woken by the owner's pidfd, or at the re-check interval):
 * that waiter then follows the next live ticket, or tries the lock.
 *
 * A one-try acquire (timeout 0) does not queue at all, like tryLock() on
 * a fair lock; an acquire without DIRLOCK_FIFO tries once on arrival, so
 * it may take a free lock ahead of the queue, and while queued it takes
 * one it finds free at two re-checks in a row (no lock-out of the queue
 * results: its first waiter is woken by every release; and a first waiter
 * that stopped running holds the others up for two re-check intervals,
 * not for the stale age its ticket takes to go stale, as it does in a
 * DIRLOCK_FIFO queue). */
#include "fsops.h"
#include "rw_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Largest ticket number present; 0 when none. */
static int max_seq(const char *dir, unsigned long long *max)
{
        *max = 0;
        DIR *d = dl_fs_opendir(dir);
        if (d == NULL)
                return errno == ENOENT ? 0 : -1;
        struct dirent *de;
        unsigned long long seq;
        int more;
        while ((more = dl_fs_next(d, &de)) > 0)
                if (dl_layout_ticket_seq(de->d_name, &seq) && seq > *max)
                        *max = seq;
        int e = errno;
        closedir(d);
        errno = e;
        return more < 0 ? -1 : 0;
}

int dl_fifo_join(dirlock *h, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        if (rw->ticket != NULL)
                return DIRLOCK_OK;
        unsigned long long seq = 0;
        for (int round = 0; round < 1000; round++) {
                if (round == 0 || errno == ENOENT) {
                        if (max_seq(rw->fifo_dir, &seq) != 0)
                                return dl_fail(err, DIRLOCK_EIO, errno, "cannot read queue '%s'",
                                               rw->fifo_dir);
                }
                seq++;
                char *path = dl_layout_ticket(rw->fifo_dir, seq);
                if (path == NULL)
                        return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                dl_time made = dl_now(); /* no later than the ticket's ctime */
                if (dl_rw_entry_make(rw->fifo_dir, path, h, h->mode) == 0) {
                        rw->ticket = path;
                        rw->ticket_seq = seq;
                        rw->ticket_renewed = made;
                        return DIRLOCK_OK;
                }
                int e = errno;
                free(path);
                if (e != EEXIST)
                        return dl_fail(err, DIRLOCK_EIO, e, "cannot queue in '%s'", rw->fifo_dir);
                errno = e;
        }
        return dl_fail(err, DIRLOCK_EIO, EAGAIN, "cannot queue in '%s'", rw->fifo_dir);
}

/* A ticket seen in the queue. */
struct seen {
        unsigned long long seq;
        char leaf[2 + DL_TICKET_DIGITS + 1];
};

static int cmp_seq_desc(const void *a, const void *b)
{
        unsigned long long x = ((const struct seen *)a)->seq, y = ((const struct seen *)b)->seq;
        return x < y ? 1 : x > y ? -1 : 0;
}

/* The tickets below ours, largest first: malloc'd in *out (NULL when
 * none), their count in *n.  0, or -1 with errno. */
static int tickets_ahead(DIR *d, unsigned long long mine, struct seen **out, size_t *n)
{
        struct seen *v = NULL;
        size_t len = 0, cap = 0;
        unsigned long long seq;
        struct dirent *de;
        int more;
        while ((more = dl_fs_next(d, &de)) > 0) {
                if (!dl_layout_ticket_seq(de->d_name, &seq) || seq >= mine)
                        continue;
                if (len == cap) {
                        cap = cap ? cap * 2 : 16;
                        struct seen *grown = realloc(v, cap * sizeof *v);
                        if (grown == NULL) {
                                free(v);
                                errno = ENOMEM;
                                return -1;
                        }
                        v = grown;
                }
                v[len].seq = seq;
                memcpy(v[len].leaf, de->d_name, sizeof v[len].leaf); /* checked: exactly this long */
                len++;
        }
        if (more < 0) {
                int e = errno;
                free(v);
                errno = e;
                return -1;
        }
        if (len > 1)
                qsort(v, len, sizeof *v, cmp_seq_desc);
        *out = v;
        *n = len;
        return 0;
}

/* One look (dl_fifo_ahead); -2 with errno ESTALE when the queue's
 * directory was replaced as we read it. */
static int fifo_ahead_once(dirlock *h, dl_record *ahead, char **ahead_path, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        DIR *d = dl_fs_opendir(rw->fifo_dir);
        if (d == NULL) {
                if (errno == ESTALE)
                        return -2;
                dl_fail(err, DIRLOCK_EIO, errno, "cannot read queue '%s'", rw->fifo_dir);
                return -1;
        }
        struct seen *seen;
        size_t n;
        if (tickets_ahead(d, rw->ticket_seq, &seen, &n) != 0) {
                int e = errno;
                closedir(d);
                if (e == ESTALE)
                        return -2;
                dl_fail(err, e == ENOMEM ? DIRLOCK_ENOMEM : DIRLOCK_EIO, e, "cannot read queue '%s'",
                        rw->fifo_dir);
                return -1;
        }
        /* Nearest first: the first live one is the waiter we follow; the
         * dead ones on the way are skipped (INVARIANT F, DEAD WAITERS). */
        int first = 1;
        for (size_t i = 0; i < n && first; i++) {
                const char *leaf = seen[i].leaf;
                dl_record rec;
                double age;
                if (dl_entry_readat(dirfd(d), leaf, &rec, &age) != 0) {
                        if (errno == ENOENT || errno == EINVAL)
                                continue; /* gone meanwhile, or not a ticket (not a symlink) */
                        if (errno == ESTALE) {
                                first = -2; /* the queue was replaced: look again */
                                break;
                        }
                        dl_fail(err, DIRLOCK_EIO, errno, "cannot read ticket %s of lock '%s'", leaf, h->name);
                        first = -1;
                        break;
                }
                if (dl_entry_stale(&rec, age, h->opts.stale_age, dl_dir_of(h)->fs)) {
                        /* A dead waiter's ticket is skipped -- once it is
                         * gone: one we may not remove still holds its place. */
                        if (unlinkat(dirfd(d), leaf, 0) != 0 && (errno == EPERM || errno == EACCES)) {
                                int e = errno;
                                char what[DIRLOCK_NAME_MAX + 64];
                                snprintf(what, sizeof what, "queue ticket %s of lock '%s'", leaf, h->name);
                                dl_fail_unbreakable(err, what, &rec, e);
                                first = -1;
                        }
                        continue;
                }
                first = 0;
                *ahead = rec;
                if (ahead_path != NULL) {
                        *ahead_path = dl_layout_ticket(rw->fifo_dir, seen[i].seq);
                        if (*ahead_path == NULL) {
                                dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                                first = -1;
                        }
                }
        }
        free(seen);
        closedir(d);
        if (first != 0 && ahead_path != NULL) {
                free(*ahead_path);
                *ahead_path = NULL;
        }
        return first;
}

int dl_fifo_ahead(dirlock *h, dl_record *ahead, char **ahead_path, dirlock_error *err)
{
        if (ahead_path != NULL)
                *ahead_path = NULL;
        for (int try = 0;; try++) {
                int first = fifo_ahead_once(h, ahead, ahead_path, err);
                if (first != -2)
                        return first;
                if (try == DL_ESTALE_TRIES) {
                        dl_fail(err, DIRLOCK_EIO, ESTALE, "queue '%s' keeps changing as it is read",
                                dl_dir_of(h)->rw->fifo_dir);
                        return -1;
                }
                dl_fs_refresh(dl_dir_of(h)->rw->fifo_dir); /* fsops.c */
        }
}

int dl_fifo_first(dirlock *h, dl_record *ahead, dirlock_error *err)
{
        return dl_fifo_ahead(h, ahead, NULL, err);
}

void dl_fifo_leave(dirlock *h)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        if (rw == NULL || rw->ticket == NULL)
                return;
        /* Only our own ticket: if it was broken as stale, its number may be
         * someone else's now. */
        dl_record rec;
        double age;
        if (dl_entry_read(rw->ticket, &rec, &age) == 0 && strcmp(rec.token, h->token) == 0)
                dl_rw_entry_drop(h, rw->fifo_dir, rw->ticket);
        free(rw->ticket);
        rw->ticket = NULL;
}

void dl_fifo_touch(dirlock *h, double every_ms)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        if (rw == NULL || rw->ticket == NULL)
                return;
        dl_time now = dl_now(); /* monotonic: a wall-clock step cannot delay it */
        double since_ms = (double)(now.tv_sec - rw->ticket_renewed.tv_sec) * 1e3 +
                          (double)(now.tv_nsec - rw->ticket_renewed.tv_nsec) / 1e6;
        if (since_ms < every_ms)
                return;
        dl_fs_touch(rw->ticket);
        rw->ticket_renewed = now;
}
