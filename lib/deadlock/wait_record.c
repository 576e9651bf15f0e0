/* wait_record.c - a waiter's record: what a process waiting for a lock
 * writes where others can see it (a directory space's wait register,
 * lib/dir/waits.c), so that the waiters can be listed (dirlock_waiters)
 * and a wait followed to what it waits for (deadlock detection,
 * lib/dir/deadlock.c).
 *
 * Text (one line, fields separated by single spaces):
 *   dirlock-wait1 lock=<name> kind=<0-3> mode=<0-2> for=<letter> id=<32 hex>
 *                 [range=<lo>:<hi>] [permits=<N>] [pending] [told] | <owner record>
 * kind is a dirlock_wait_kind, mode the dirlock_mode asked; `for` is the
 * backend's letter for what blocks the wait; id is drawn for this one wait
 * and never used again (a renewed entry keeps it); lo and hi are the IEEE
 * 754 bits of a range's ends in hex (exact); `pending` marks a pending
 * acquire (dirlock_acquire_start), which blocks no thread; `told` a wait
 * whose deadlock check found it the victim of a knot of waits (ONE VICTIM
 * in lib/dir/deadlock.c): it is leaving, and is followed no more.  The
 * owner record (owner.c) is the waiter's own: pid, thread, host, the
 * token of the handle that waits, and as `acquired` the moment the wait
 * began. */
#include "deadlock.h"

#include <stdio.h>
#include <string.h>

#define WAIT_MAGIC "dirlock-wait1 "

int dl_wait_record_format(const dl_wait_record *w, char *buf, size_t size)
{
        char owner[DL_RECORD_MAX];
        if (dl_record_format(&w->who, owner, sizeof owner) < 0)
                return -1;
        char extra[96] = "";
        size_t used = 0;
        if (w->kind == DIRLOCK_WAIT_RANGE) {
                unsigned long long lo, hi;
                memcpy(&lo, &w->lo, sizeof lo);
                memcpy(&hi, &w->hi, sizeof hi);
                used += (size_t)snprintf(extra + used, sizeof extra - used, " range=%016llx:%016llx", lo, hi);
        }
        if (w->permits > 0)
                used += (size_t)snprintf(extra + used, sizeof extra - used, " permits=%u", w->permits);
        if (w->pending)
                used += (size_t)snprintf(extra + used, sizeof extra - used, " pending");
        if (w->told)
                snprintf(extra + used, sizeof extra - used, " told");
        int n = snprintf(buf, size, WAIT_MAGIC "lock=%s kind=%d mode=%d for=%c id=%s%s | %s", w->name,
                         w->kind, w->mode, w->target, w->id, extra, owner);
        if (n < 0 || (size_t)n >= size) {
                if (size > 0)
                        buf[0] = '\0';
                return -1;
        }
        return n;
}

/* The next space-separated word of [*p, end) into out (at most max-1
 * characters), *p moved past it and one space. */
static bool word(const char **p, const char *end, char *out, size_t max)
{
        const char *s = *p;
        size_t n = 0;
        while (s < end && *s != ' ') {
                if (n + 1 >= max)
                        return false;
                out[n++] = *s++;
        }
        out[n] = '\0';
        if (n == 0)
                return false;
        *p = s < end ? s + 1 : s;
        return true;
}

static bool hex64(const char *s, unsigned long long *v)
{
        if (strlen(s) != 16)
                return false;
        *v = 0;
        for (; *s; s++) {
                int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
                if (d < 0)
                        return false;
                *v = *v << 4 | (unsigned)d;
        }
        return true;
}

int dl_wait_record_parse(const char *buf, size_t len, dl_wait_record *w)
{
        memset(w, 0, sizeof *w);
        const char *p = buf, *end = buf + len;
        size_t m = sizeof WAIT_MAGIC - 1;
        if (len < m || memcmp(p, WAIT_MAGIC, m) != 0)
                return -1;
        p += m;
        char field[DIRLOCK_NAME_MAX + 16];
        unsigned long long v;
        char c;
        int kind, mode;
        if (!word(&p, end, field, sizeof field) || strncmp(field, "lock=", 5) != 0 ||
            !dirlock_name_valid(field + 5))
                return -1;
        strcpy(w->name, field + 5);
        if (!word(&p, end, field, sizeof field) || sscanf(field, "kind=%d%c", &kind, &c) != 1 || kind < 0 ||
            kind > DIRLOCK_WAIT_UPGRADE)
                return -1;
        if (!word(&p, end, field, sizeof field) || sscanf(field, "mode=%d%c", &mode, &c) != 1 || mode < 0 ||
            mode > DIRLOCK_INTENT)
                return -1;
        w->kind = kind;
        w->mode = mode;
        if (!word(&p, end, field, sizeof field) || strncmp(field, "for=", 4) != 0 || strlen(field) != 5)
                return -1;
        w->target = field[4];
        if (!word(&p, end, field, sizeof field) || strncmp(field, "id=", 3) != 0 ||
            strlen(field + 3) != DIRLOCK_TOKEN_LEN)
                return -1;
        strcpy(w->id, field + 3);
        for (;;) {
                if (!word(&p, end, field, sizeof field))
                        return -1;
                if (strcmp(field, "|") == 0)
                        break;
                if (strncmp(field, "range=", 6) == 0 && strlen(field) == 6 + 16 + 1 + 16 &&
                    field[22] == ':') {
                        field[22] = '\0';
                        unsigned long long lo, hi;
                        if (!hex64(field + 6, &lo) || !hex64(field + 23, &hi))
                                return -1;
                        memcpy(&w->lo, &lo, sizeof w->lo);
                        memcpy(&w->hi, &hi, sizeof w->hi);
                } else if (sscanf(field, "permits=%llu%c", &v, &c) == 1 && v >= 1 &&
                           v <= DIRLOCK_PERMITS_MAX) {
                        w->permits = (unsigned)v;
                } else if (strcmp(field, "pending") == 0) {
                        w->pending = true;
                } else if (strcmp(field, "told") == 0) {
                        w->told = true;
                } else {
                        return -1;
                }
        }
        return dl_record_parse(p, (size_t)(end - p), &w->who);
}
