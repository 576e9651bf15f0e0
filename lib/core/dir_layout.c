/* layout.c - building and parsing the directory backend's names on disk
 * (the table is in layout.h). */
#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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

char *dl_layout_up(const char *lockdir, const char *name, const char *token)
{
        char leaf[DIRLOCK_NAME_MAX + sizeof DL_INFIX_UP + DIRLOCK_TOKEN_LEN];
        snprintf(leaf, sizeof leaf, "%s" DL_INFIX_UP "%s", name, token);
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

char *dl_layout_ticket(const char *fifo_dir, unsigned long long seq)
{
        char leaf[2 + DL_TICKET_DIGITS + 1];
        snprintf(leaf, sizeof leaf, "%c.%0*llu", (char)DL_ENTRY_TICKET, DL_TICKET_DIGITS, seq);
        return dl_join(fifo_dir, leaf, NULL);
}

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

char *dl_layout_permit_group(const char *permits_dir, unsigned n)
{
        char leaf[sizeof DL_PERMITS_GROUP + 10];
        snprintf(leaf, sizeof leaf, DL_PERMITS_GROUP "%u", n);
        return dl_join(permits_dir, leaf, NULL);
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

const char *dl_layout_up_token(const char *leaf, size_t *name_len)
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

int dl_layout_ticket_seq(const char *leaf, unsigned long long *seq)
{
        if (leaf[0] != DL_ENTRY_TICKET || leaf[1] != '.' || strlen(leaf) != 2 + DL_TICKET_DIGITS)
                return 0;
        unsigned long long v = 0;
        for (const char *p = leaf + 2; *p; p++) {
                if (*p < '0' || *p > '9' || v > (~0ULL - 9) / 10)
                        return 0;
                v = v * 10 + (unsigned)(*p - '0');
        }
        *seq = v;
        return 1;
}

/* 1..DIRLOCK_PERMITS_MAX decimal digits without a leading zero (or "0"
 * when `zero`): 1 and *v, else 0. */
static int small_number(const char *s, bool zero, unsigned *v)
{
        unsigned long x = 0;
        size_t n = strlen(s);
        if (n == 0 || n > 5 || (s[0] == '0' && (n > 1 || !zero)))
                return 0;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return 0;
                x = x * 10 + (unsigned)(*s - '0');
        }
        if (x > DIRLOCK_PERMITS_MAX)
                return 0;
        *v = (unsigned)x;
        return 1;
}

int dl_layout_permit_group_n(const char *leaf, unsigned *n)
{
        size_t p = sizeof DL_PERMITS_GROUP - 1;
        return strncmp(leaf, DL_PERMITS_GROUP, p) == 0 && small_number(leaf + p, false, n);
}

int dl_layout_permit_k(const char *leaf, unsigned *k)
{
        return small_number(leaf, true, k) && *k < DIRLOCK_PERMITS_MAX;
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
