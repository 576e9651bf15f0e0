/* rw_entries.c - entry directories of the reader-writer layer: creating and
 * dropping one process's entry, and scanning a directory of entries (the
 * readers of a name, its waiting writers) to count the live ones, break the
 * stale ones and admit waiting readers.  The protocol that gives these
 * steps their meaning is described at the top of rwlock.c. */
#include "rw_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dl_rw_entry_make(const char *dir, const char *path, const dirlock *h, int mode)
{
        /* The directory usually exists while there are readers: try the
         * entry first, make the directory only when it is missing.  A last
         * reader may rmdir it between our mkdir and symlink: retry. */
        for (int round = 0; round < 100; round++) {
                if (dl_entry_create(path, h, mode) == 0)
                        return 0;
                if (errno != ENOENT)
                        return -1;
                if (dl_mkdir_in(dir, h->lockdir_mode) != 0 && errno != EEXIST)
                        return -1;
        }
        errno = EAGAIN;
        return -1;
}

int dl_rw_entry_drop(const char *dir, const char *path)
{
        int rc = unlink(path);
        int e = errno;
        rmdir(dir); /* ENOTEMPTY: others are still there */
        errno = e;
        return rc;
}

/* "x.<32 hex>" */
static bool entry_name(const char *n)
{
        return n[0] != '\0' && n[1] == '.' && strlen(n) == 34;
}

static bool admissible(const dl_scan *s, const char *token)
{
        if (!s->admit_known)
                return true;
        for (unsigned i = 0; i < s->nknown; i++)
                if (strcmp(s->known[i], token) == 0)
                        return true;
        return false;
}

void dl_rw_scan_done(dl_scan *s)
{
        free(s->known);
        s->known = NULL;
        s->nknown = s->cap = 0;
}

int dl_rw_scan(const char *dir, double stale_age, dl_scan *s, dirlock_error *err)
{
        s->live = 0;
        s->admitted = 0;
        s->have_one = false;
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                if (errno == ENOENT)
                        return 0;
                dl_fail(err, DIRLOCK_EIO, errno, "cannot read '%s'", dir);
                return -1;
        }
        DIR *d = fdopendir(dfd);
        if (d == NULL) {
                dl_fail(err, DIRLOCK_EIO, errno, "cannot read '%s'", dir);
                close(dfd);
                return -1;
        }
        size_t dlen = strlen(dir);
        char path[4096];
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                const char *n = de->d_name;
                if (!entry_name(n) || dlen + 2 + strlen(n) > sizeof path)
                        continue;
                memcpy(path, dir, dlen);
                path[dlen] = '/';
                strcpy(path + dlen + 1, n);
                dl_record rec;
                double age;
                if (dl_entry_read(path, &rec, &age) != 0)
                        continue; /* gone meanwhile */
                if (dl_entry_stale(&rec, age, stale_age)) {
                        /* Exactly the judged entry.  One we may not remove
                         * (another user's, in a sticky directory) is still
                         * there: never count it as gone. */
                        if (unlink(path) != 0 && (errno == EPERM || errno == EACCES)) {
                                int e = errno;
                                char what[4200];
                                snprintf(what, sizeof what, "entry '%s'", path);
                                dl_fail_unbreakable(err, what, &rec, e);
                                closedir(d);
                                return -1;
                        }
                        continue;
                }
                if (s->remember && (n[0] == 'r' || n[0] == 'w') && s->nknown < 4096) {
                        if (s->nknown == s->cap) {
                                unsigned cap = s->cap ? s->cap * 2 : 16;
                                char(*k)[33] = realloc(s->known, cap * sizeof *k);
                                if (k != NULL) {
                                        s->known = k;
                                        s->cap = cap;
                                }
                        }
                        if (s->nknown < s->cap)
                                memcpy(s->known[s->nknown++], n + 2, 33);
                }
                if (s->admit && s->admit_from != NULL && n[0] == s->admit_from[0] && admissible(s, n + 2)) {
                        char to[4096];
                        strcpy(to, path);
                        to[dlen + 1] = 'a';
                        if (rename(path, to) == 0) {
                                s->admitted++;
                                s->live++;
                                if (!s->have_one) {
                                        s->one = rec;
                                        s->have_one = true;
                                }
                        }
                        continue;
                }
                if (s->active != NULL && strchr(s->active, n[0]) != NULL) {
                        s->live++;
                        if (!s->have_one) {
                                s->one = rec;
                                s->have_one = true;
                        }
                }
        }
        closedir(d);
        return 0;
}
