/* fifo.c - the FIFO ticket queue of DIRLOCK_FIFO: waiters for a name's
 * exclusive lock (D/NAME.lock) are served in arrival order.
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
 * INVARIANT F: only the waiter with the smallest live ticket tries to take
 * NAME.lock (rwlock.c checks dl_fifo_first before every try).  It gives
 * its ticket back once it holds the lock (or gives up), which wakes the
 * next one (inotify IN_DELETE on the queue directory).
 *
 * DEAD WAITERS.  A ticket whose owner is provably dead on this host, or
 * whose age exceeds the stale age (waiters renew theirs while they wait),
 * is unlinked by whoever scans past it: its successor goes next.
 *
 * The queue only orders waiters that use DIRLOCK_FIFO, and a one-try
 * acquire (timeout 0) does not queue at all, like tryLock() on a fair
 * lock; an acquire without the flag may still take a free lock ahead of
 * the queue (no lock-out of
 * the queue results: the head waiter is woken by every release). */
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
        DIR *d = opendir(dir);
        if (d == NULL)
                return errno == ENOENT ? 0 : -1;
        struct dirent *de;
        unsigned long long seq;
        while ((de = readdir(d)) != NULL)
                if (dl_layout_ticket_seq(de->d_name, &seq) && seq > *max)
                        *max = seq;
        closedir(d);
        return 0;
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
                if (dl_rw_entry_make(rw->fifo_dir, path, h, h->mode) == 0) {
                        rw->ticket = path;
                        rw->ticket_seq = seq;
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

int dl_fifo_first(dirlock *h, dl_record *ahead, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        unsigned long long mine = rw->ticket_seq, best = 0;
        DIR *d = opendir(rw->fifo_dir);
        if (d == NULL) {
                dl_fail(err, DIRLOCK_EIO, errno, "cannot read queue '%s'", rw->fifo_dir);
                return -1;
        }
        int first = 1;
        struct dirent *de;
        unsigned long long seq;
        while ((de = readdir(d)) != NULL) {
                if (!dl_layout_ticket_seq(de->d_name, &seq) || seq >= mine)
                        continue;
                dl_record rec;
                double age;
                if (dl_entry_readat(dirfd(d), de->d_name, &rec, &age) != 0)
                        continue;
                if (dl_entry_stale(&rec, age, h->opts.stale_age)) {
                        /* A dead waiter's ticket is skipped -- once it is
                         * gone: one we may not remove still holds its place. */
                        if (unlinkat(dirfd(d), de->d_name, 0) != 0 && (errno == EPERM || errno == EACCES)) {
                                int e = errno;
                                char what[DIRLOCK_NAME_MAX + 256 + 64];
                                snprintf(what, sizeof what, "queue ticket %s of lock '%s'", de->d_name,
                                         h->name);
                                dl_fail_unbreakable(err, what, &rec, e);
                                closedir(d);
                                return -1;
                        }
                        continue;
                }
                first = 0;
                if (seq > best) {
                        best = seq;
                        *ahead = rec;
                }
        }
        closedir(d);
        return first;
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
                dl_rw_entry_drop(rw->fifo_dir, rw->ticket);
        free(rw->ticket);
        rw->ticket = NULL;
}

void dl_fifo_touch(dirlock *h)
{
        if (dl_dir_of(h)->rw != NULL && dl_dir_of(h)->rw->ticket != NULL)
                utimensat(AT_FDCWD, dl_dir_of(h)->rw->ticket, NULL, AT_SYMLINK_NOFOLLOW);
}
