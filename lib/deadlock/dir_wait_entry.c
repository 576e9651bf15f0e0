/* dir_wait_entry.c - a wait's entry in the wait register of a directory
 * space (dir_register.c has the register, and INVARIANT W): its names in
 * D/.waits (the table: dir_layout.h), its writing -- atomic, by rename --
 * and the mark `told` that the wait's own deadlock check puts on it
 * (dir_deadlock.c, ONE VICTIM). */
#include "deadlock.h"
#include "dir_fsops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ------------------------------------------------------------------ */

char *dl_layout_wait_thread(const char *lockdir, const char *boot_id, unsigned long long pidns, pid_t pid,
                            pid_t tid)
{
        char leaf[2 + 36 + 1 + 20 + 1 + 10 + 1 + 10 + 1];
        snprintf(leaf, sizeof leaf, "%c.%.36s.%llu.%ld.%ld", DL_WAIT_THREAD, boot_id, pidns, (long)pid,
                 (long)tid);
        return dl_join(lockdir, DL_WAITS_DIR "/", leaf);
}

char *dl_layout_wait_other(const char *lockdir, const char *token)
{
        char leaf[2 + DIRLOCK_TOKEN_LEN + 1];
        snprintf(leaf, sizeof leaf, "%c.%s", DL_WAIT_OTHER, token);
        return dl_join(lockdir, DL_WAITS_DIR "/", leaf);
}

char *dl_layout_verdicts(const char *lockdir)
{
        return dl_join(lockdir, DL_WAITS_DIR "/", DL_WAITS_VERDICTS);
}

char *dl_layout_verdicts_prep(const char *lockdir, const char *token)
{
        char leaf[sizeof DL_WAITS_PREP + DIRLOCK_TOKEN_LEN];
        snprintf(leaf, sizeof leaf, DL_WAITS_PREP "%s", token);
        return dl_join(lockdir, DL_WAITS_DIR "/", leaf);
}

/* ---- the entry ---------------------------------------------------------------- */

int dl_wait_entry_write(const char *path, const char *text, const char *token, unsigned lockdir_mode)
{
        size_t n = strlen(path);
        char *tmp = malloc(n + 2 + DIRLOCK_TOKEN_LEN + 1);
        if (tmp == NULL)
                return -1;
        /* D/.waits/.n.<T>: a name no lister reads */
        const char *slash = strrchr(path, '/');
        size_t dir_len = (size_t)(slash - path);
        snprintf(tmp, n + 2 + DIRLOCK_TOKEN_LEN + 1, "%.*s/.n%s", (int)dir_len, path, token);
        int rc = -1;
        for (int round = 0; round < 2 && rc != 0; round++) {
                dl_fs_unlink(tmp);
                if (dl_fs_symlink(text, tmp) == 0) {
                        rc = dl_fs_rename(tmp, path);
                        if (rc != 0)
                                dl_fs_unlink(tmp);
                } else if (errno == ENOENT && round == 0) {
                        char *dir = strndup(path, dir_len);
                        if (dir != NULL && dl_fs_mkdir_in(dir, lockdir_mode) != 0 && errno != EEXIST) {
                                free(dir);
                                break;
                        }
                        free(dir);
                } else {
                        break;
                }
        }
        free(tmp);
        return rc;
}

int dl_wait_told(dirlock *h, bool told)
{
        struct dl_wreg *w = dl_dir_of(h)->wait_state;
        if (w == NULL || w->path == NULL || w->unwritten || !w->node)
                return -1;
        char text[DL_WAIT_RECORD_MAX];
        w->rec.told = told;
        if (dl_wait_record_format(&w->rec, text, sizeof text) < 0 ||
            dl_wait_entry_write(w->path, text, h->token, dl_dir_of(h)->lockdir_mode) != 0) {
                w->rec.told = false;
                return -1;
        }
        w->renewed = dl_now();
        return 0;
}
