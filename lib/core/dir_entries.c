/* dir_entries.c - directories of entries in a lock directory: creating
 * and dropping one process's entry, scanning a directory of entries (the
 * readers of a name, its waiting writers, a queue's tickets) to count the
 * live ones and break the stale ones, and listing
 * a directory whole.  The protocols that give these steps their meaning
 * are their modules' (lib/rw/dir_rw.c, lib/fifo/dir_fifo.c); the core
 * scans a name's readers itself (NEIGHBOURS in dir_backend.c). */
#include "dir.h"
#include "dir_fsops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dl_entry_make_in(const char *dir, const char *path, const dirlock *h, int mode)
{
        /* The directory usually exists while there are readers: try the
         * entry first, make the directory only when it is missing.  It may
         * be removed again between our mkdir and the entry (by a writer, or
         * the last one out of a queue): retry. */
        for (int round = 0; round < 100; round++) {
                if (dl_entry_create(path, h, mode) == 0)
                        return 0;
                /* ESTALE after its tries (dir_fsops.c): the directory was
                 * replaced as we made the entry; as for ENOENT, make it
                 * (EEXIST when it is there) and try again. */
                if (errno != ENOENT && errno != ESTALE)
                        return -1;
                if (dl_fs_mkdir_in(dir, dl_dir_of(h)->lockdir_mode) != 0 && errno != EEXIST &&
                    errno != ESTALE)
                        return -1;
        }
        errno = EAGAIN;
        return -1;
}

int dl_entry_drop(const dirlock *h, const char *dir, const char *path)
{
        int rc = dl_fs_unlink(path);
        int e = errno;
        if (!dl_dir_of(h)->fs->network)
                dl_fs_rmdir(dir); /* ENOTEMPTY: others are still there */
        errno = e;
        return rc;
}

static void count_live(dl_scan *s, const dl_record *rec)
{
        s->live++;
        if (!s->have_one) {
                s->one = *rec;
                s->have_one = true;
        }
}

/* One entry `leaf` of the directory open as dfd (`dir` for messages). */
static int scan_entry(int dfd, const char *dir, const char *leaf, double stale_age, const dl_fs *fs,
                      dl_scan *s, dirlock_error *err)
{
        int kind = dl_layout_entry_kind(leaf);
        if (kind == 0)
                return 0;
        dl_record rec;
        double age;
        if (dl_entry_readat(dfd, leaf, &rec, &age) != 0) {
                if (errno == ENOENT || errno == EINVAL)
                        return 0; /* gone meanwhile, or not an entry (not a symlink) */
                /* ESTALE: the directory was replaced as we read it; the
                 * caller scans again (dl_scan_dir).  Anything else (the
                 * storage out of reach): an entry we cannot read is never
                 * counted as gone. */
                int e = errno;
                if (e != ESTALE)
                        dl_fail(err, DIRLOCK_EIO, e, "cannot read entry '%s' in '%s'", leaf, dir);
                errno = e;
                return -1;
        }
        if (dl_entry_stale(&rec, age, stale_age, fs)) {
                /* Exactly the judged entry.  One we may not remove (another
                 * user's, in a sticky directory) is still there: never count
                 * it as gone. */
                if (unlinkat(dfd, leaf, 0) != 0 && (errno == EPERM || errno == EACCES)) {
                        int e = errno;
                        char *path = dl_join(dir, leaf, NULL);
                        char what[DL_ENTRY_LEAF_SIZE + 4200];
                        snprintf(what, sizeof what, "entry '%s'", path ? path : leaf);
                        free(path);
                        dl_fail_unbreakable(err, what, &rec, e);
                        return -1;
                }
                return 0;
        }
        int told = s->live_entry != NULL ? s->live_entry(s, dfd, leaf, kind, err) : DL_SCAN_DEFAULT;
        if (told < 0)
                return -1;
        if (told == DL_SCAN_LIVE || (told == DL_SCAN_DEFAULT && s->active != NULL && strchr(s->active, kind)))
                count_live(s, &rec);
        return 0;
}

/* One scan (dl_scan_dir): 0, -1 with err, or -1 with errno ESTALE and err
 * untouched when the directory was replaced as we read it. */
static int scan_once(const char *dir, double stale_age, const dl_fs *fs, dl_scan *s, dirlock_error *err)
{
        s->live = 0;
        s->have_one = false;
        int dfd = dl_fs_open_dir_sure(dir, fs->network);
        if (dfd < 0) {
                if (errno == ENOENT)
                        return 0;
                if (errno != ESTALE)
                        dl_fail(err, DIRLOCK_EIO, errno, "cannot read '%s'", dir);
                return -1;
        }
        DIR *d = fdopendir(dfd);
        if (d == NULL) {
                dl_fail(err, DIRLOCK_EIO, errno, "cannot read '%s'", dir);
                close(dfd);
                errno = 0;
                return -1;
        }
        int rc = 0, more;
        struct dirent *de;
        while (rc == 0 && (more = dl_fs_next(d, &de)) > 0)
                rc = scan_entry(dfd, dir, de->d_name, stale_age, fs, s, err);
        int e = errno;
        if (rc == 0 && more < 0) {
                /* A listing cut short never passes for a whole one. */
                if (e != ESTALE)
                        dl_fail(err, DIRLOCK_EIO, e, "cannot read '%s'", dir);
                rc = -1;
        }
        closedir(d);
        errno = rc == 0 ? 0 : e;
        return rc;
}

int dl_scan_dir(const char *dir, double stale_age, const dl_fs *fs, dl_scan *s, dirlock_error *err)
{
        for (int try = 0;; try++) {
                int rc = scan_once(dir, stale_age, fs, s, err);
                if (rc == 0 || errno != ESTALE)
                        return rc;
                if (try == DL_ESTALE_TRIES) {
                        dl_fail(err, DIRLOCK_EIO, ESTALE, "'%s' keeps changing as it is read", dir);
                        return -1;
                }
                dl_fs_refresh(dir); /* replaced while we read it: read it again (dir_fsops.c) */
        }
}

/* ---- listings ------------------------------------------------------------- */

void dl_dir_names_free(char **names, size_t n)
{
        while (n > 0)
                free(names[--n]);
        free(names);
}

/* One listing: DIRLOCK_OK, an error, or -1 with errno ESTALE (replaced
 * while we read it: read it again). */
static int names_once(const char *dir, const dl_fs *fs, char ***out, size_t *count, dirlock_error *err)
{
        int dfd = dl_fs_open_dir_sure(dir, fs->network);
        if (dfd < 0) {
                if (errno == ENOENT)
                        return DIRLOCK_OK;
                return errno == ESTALE ? -1 : dl_fail(err, DIRLOCK_EIO, errno, "cannot read '%s'", dir);
        }
        DIR *d = fdopendir(dfd);
        if (d == NULL) {
                int e = errno;
                close(dfd);
                return dl_fail(err, DIRLOCK_EIO, e, "cannot read '%s'", dir);
        }
        char **v = NULL;
        size_t n = 0, cap = 0;
        int rc = DIRLOCK_OK, more = 0;
        struct dirent *de;
        while (rc == DIRLOCK_OK && (more = dl_fs_next(d, &de)) > 0) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (n == cap) {
                        size_t grown_cap = cap ? cap * 2 : 16;
                        char **grown = realloc(v, grown_cap * sizeof *grown);
                        if (grown == NULL) {
                                rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                                break;
                        }
                        v = grown;
                        cap = grown_cap;
                }
                if ((v[n] = strdup(de->d_name)) == NULL)
                        rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                else
                        n++;
        }
        int e = errno;
        closedir(d);
        if (rc == DIRLOCK_OK && more < 0) /* a listing cut short is no listing */
                rc = e == ESTALE ? -1 : dl_fail(err, DIRLOCK_EIO, e, "cannot read '%s'", dir);
        if (rc != DIRLOCK_OK) {
                dl_dir_names_free(v, n);
                errno = e;
                return rc;
        }
        *out = v;
        *count = n;
        return DIRLOCK_OK;
}

int dl_dir_names(const char *dir, const dl_fs *fs, char ***out, size_t *count, dirlock_error *err)
{
        *out = NULL;
        *count = 0;
        for (int try = 0;; try++) {
                int rc = names_once(dir, fs, out, count, err);
                if (rc != -1)
                        return rc;
                if (try == DL_ESTALE_TRIES)
                        return dl_fail(err, DIRLOCK_EIO, ESTALE, "'%s' keeps changing as it is read", dir);
                dl_fs_refresh(dir); /* replaced while we read it: read it again (fsops.c) */
        }
}

bool dl_dir_names_of(const char *lockdir, const char *name, const char *suffix, const dl_fs *fs, char **dir,
                     char ***names, size_t *count)
{
        *dir = dl_layout_path(lockdir, name, suffix);
        if (*dir != NULL && dl_dir_names(*dir, fs, names, count, NULL) == DIRLOCK_OK)
                return true;
        free(*dir);
        *dir = NULL;
        return false;
}
