/* msglist.c - ordered list of messages (see msglist.h). */
#include "msglist.h"

#include <stdlib.h>
#include <string.h>

int msglist_push(struct msglist *l, struct logrecord *rec)
{
        if (l->count == l->cap) {
                size_t ncap = l->cap ? l->cap * 2 : 16;
                struct logrecord *n = realloc(l->items, ncap * sizeof *n);
                if (!n)
                        return -1;
                l->items = n;
                l->cap = ncap;
        }
        if (rec->no > l->last_no)
                l->last_no = rec->no;
        l->items[l->count++] = *rec;
        memset(rec, 0, sizeof *rec);
        return 0;
}

long long msglist_max_no(const struct msglist *l)
{
        long long m = l->last_no;
        for (size_t i = 0; i < l->count; i++) /* items whose number was set after the push */
                if (l->items[i].no > m)
                        m = l->items[i].no;
        return m;
}

void msglist_note_no(struct msglist *l, long long no)
{
        if (no > l->last_no)
                l->last_no = no;
}

long msglist_find(const struct msglist *l, long long no)
{
        for (size_t i = 0; i < l->count; i++)
                if (l->items[i].no == no)
                        return (long)i;
        return -1;
}

void msglist_remove(struct msglist *l, size_t i)
{
        if (i >= l->count)
                return;
        logrecord_free(&l->items[i]);
        memmove(&l->items[i], &l->items[i + 1], (l->count - i - 1) * sizeof l->items[0]);
        l->count--;
}

void msglist_cap(struct msglist *l, size_t cap)
{
        if (l->count <= cap)
                return;
        size_t drop = l->count - cap;
        for (size_t i = 0; i < drop; i++)
                logrecord_free(&l->items[i]);
        memmove(l->items, l->items + drop, cap * sizeof l->items[0]);
        l->count = cap;
}

void msglist_free(struct msglist *l)
{
        for (size_t i = 0; i < l->count; i++)
                logrecord_free(&l->items[i]);
        free(l->items);
        l->items = NULL;
        l->count = l->cap = 0;
        l->last_no = 0;
        l->fence = 0;
}
