/* path.c - lock names and the paths built from them: name validation,
 * joining, and preparing (making absolute, creating) the lock directory. */
#include "core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dirlock_name_valid(const char *name)
{
        if (name == NULL || name[0] == '\0' || name[0] == '.')
                return 0;
        size_t n = 0;
        for (const char *p = name; *p != '\0'; p++, n++) {
                char c = *p;
                bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                          c == '.' || c == '_' || c == '-';
                if (!ok || n >= DIRLOCK_NAME_MAX)
                        return 0;
        }
        return 1;
}

char *dl_join(const char *a, const char *b, const char *suffix)
{
        size_t la = strlen(a), lb = strlen(b), ls = suffix ? strlen(suffix) : 0;
        char *s = malloc(la + 1 + lb + ls + 1);
        if (s == NULL)
                return NULL;
        memcpy(s, a, la);
        s[la] = '/';
        memcpy(s + la + 1, b, lb);
        if (ls)
                memcpy(s + la + 1 + lb, suffix, ls);
        s[la + 1 + lb + ls] = '\0';
        return s;
}

/* mkdir -p for the lock directory; each component may be created
 * concurrently by another process, so EEXIST is success. */
int dl_make_dirs(char *path)
{
        for (char *p = path + 1; *p != '\0'; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                int rc = mkdir(path, 0777);
                *p = '/';
                if (rc != 0 && errno != EEXIST)
                        return -1;
        }
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
                return -1;
        return 0;
}

int dl_mkdir_in(const char *path, unsigned lockdir_mode)
{
        if (mkdir(path, 0777) != 0)
                return -1;
        /* A shared lock directory (writable by group or others): the new
         * directory gets its permissions whatever our umask, so that the
         * other users can add and break entries in it (or, in a sticky
         * directory, are kept from breaking each other's: docs/sharing.md).
         * A failed chmod leaves the umask's permissions: not an error. */
        if (lockdir_mode & (S_IWGRP | S_IWOTH))
                chmod(path, (mode_t)(lockdir_mode & 07777));
        return 0;
}

int dl_lockdir_prepare(const char *lockdir, bool create, char **abs_out, unsigned *mode_out,
                       dirlock_error *err)
{
        *abs_out = NULL;
        if (lockdir == NULL || lockdir[0] == '\0')
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no lock directory given");
        char *abs;
        if (lockdir[0] == '/') {
                abs = strdup(lockdir);
        } else {
                char *cwd = getcwd(NULL, 0);
                if (cwd == NULL)
                        return dl_fail(err, DIRLOCK_EIO, errno,
                                       "cannot resolve lock directory '%s' (current directory unknown)",
                                       lockdir);
                abs = dl_join(cwd, lockdir, NULL);
                free(cwd);
        }
        if (abs == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        size_t n = strlen(abs);
        while (n > 1 && abs[n - 1] == '/')
                abs[--n] = '\0';

        /* The last directory this thread found in place is not looked at
         * again on every acquire; if it disappears later, the prepared
         * directory's mkdir fails with ENOENT and the lock code creates it
         * again (dir/exclusive.c). */
        static _Thread_local char verified[512];
        static _Thread_local unsigned verified_mode;
        if (strcmp(verified, abs) == 0) {
                *abs_out = abs;
                if (mode_out != NULL)
                        *mode_out = verified_mode;
                return DIRLOCK_OK;
        }
        struct stat st;
        if (stat(abs, &st) == 0) {
                if (!S_ISDIR(st.st_mode)) {
                        dl_fail(err, DIRLOCK_EIO, ENOTDIR, "lock directory '%s' is not a directory", abs);
                        free(abs);
                        return DIRLOCK_EIO;
                }
        } else if (errno != ENOENT || !create) {
                dl_fail(err, DIRLOCK_EIO, errno, "cannot use lock directory '%s'", abs);
                free(abs);
                return DIRLOCK_EIO;
        } else if (dl_make_dirs(abs) != 0 || stat(abs, &st) != 0) {
                dl_fail(err, DIRLOCK_EIO, errno, "cannot create lock directory '%s'", abs);
                free(abs);
                return DIRLOCK_EIO;
        }
        if (strlen(abs) < sizeof verified) {
                strcpy(verified, abs);
                verified_mode = (unsigned)st.st_mode;
        }
        if (mode_out != NULL)
                *mode_out = (unsigned)st.st_mode;
        *abs_out = abs;
        return DIRLOCK_OK;
}
