/* layout.c - building and parsing the directory backend's names on disk
 * (the table is in layout.h). */
#include "dir_layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

char *dl_layout_path(const char *lockdir, const char *name, const char *suffix)
{
        return dl_join(lockdir, name, suffix);
}

char *dl_layout_entry(const char *dir, enum dl_entry_kind kind, const char *token)
{
        char leaf[DL_ENTRY_LEAF_SIZE];
        snprintf(leaf, sizeof leaf, "%c.%s", (char)kind, token);
        return dl_join(dir, leaf, NULL);
}

char *dl_layout_owner_entry(const char *lock_path, const char *token)
{
        return dl_join(lock_path, DL_OWNER_PREFIX, token);
}

char *dl_layout_prep(const char *lockdir, const char *name, const char *token)
{
        char leaf[1 + DIRLOCK_NAME_MAX + 1 + DIRLOCK_TOKEN_LEN + sizeof ".new"];
        snprintf(leaf, sizeof leaf, ".%s.%s.new", name, token);
        return dl_join(lockdir, leaf, NULL);
}

char *dl_layout_aside(const char *lockdir, const char *token)
{
        return dl_join(lockdir, DL_ASIDE_PREFIX, token);
}

void dl_layout_retoken(char *path, const char *token)
{
        memcpy(path + strlen(path) - DIRLOCK_TOKEN_LEN, token, DIRLOCK_TOKEN_LEN);
}

bool dl_layout_is_token(const char *s, bool whole)
{
        for (int i = 0; i < DIRLOCK_TOKEN_LEN; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return !whole || s[DIRLOCK_TOKEN_LEN] == '\0';
}

const char *dl_layout_owner_token(const char *leaf)
{
        size_t n = sizeof DL_OWNER_PREFIX - 1;
        if (strncmp(leaf, DL_OWNER_PREFIX, n) != 0 || !dl_layout_is_token(leaf + n, true))
                return NULL;
        return leaf + n;
}

int dl_layout_entry_kind(const char *leaf)
{
        if (leaf[0] == '\0' || leaf[1] != '.' || !dl_layout_is_token(leaf + 2, true))
                return 0;
        return (unsigned char)leaf[0];
}

const char *dl_layout_prep_token(const char *leaf, const char *name)
{
        size_t n = strlen(leaf);
        if (n < 1 + 1 + 1 + DIRLOCK_TOKEN_LEN + 4 || leaf[0] != '.' || strcmp(leaf + n - 4, ".new") != 0)
                return NULL;
        const char *token = leaf + n - 4 - DIRLOCK_TOKEN_LEN;
        if (token[-1] != '.' || !dl_layout_is_token(token, false))
                return NULL;
        if (name != NULL) {
                size_t k = strlen(name);
                if ((size_t)(token - 1 - (leaf + 1)) != k || strncmp(leaf + 1, name, k) != 0)
                        return NULL;
        }
        return token;
}

int dl_layout_has_suffix(const char *leaf, const char *suffix)
{
        size_t n = strlen(leaf), m = strlen(suffix);
        return n > m && strcmp(leaf + n - m, suffix) == 0;
}

int dl_layout_lock_name(const char *leaf, char name[DIRLOCK_NAME_MAX + 1])
{
        static const char *const suffixes[] = {DL_SUFFIX_LOCK, DL_SUFFIX_READERS, DL_SUFFIX_WQ,
                                               DL_SUFFIX_FIFO, DL_SUFFIX_RANGES,  DL_SUFFIX_PERMITS};
        for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
                if (!dl_layout_has_suffix(leaf, suffixes[i]))
                        continue;
                size_t base = strlen(leaf) - strlen(suffixes[i]);
                if (base > DIRLOCK_NAME_MAX)
                        return 0;
                memcpy(name, leaf, base);
                name[base] = '\0';
                return dirlock_name_valid(name);
        }
        return 0;
}
