/* msglist.h - an ordered list of messages (oldest first), owned records. */
#ifndef BOARD_MSGLIST_H
#define BOARD_MSGLIST_H

#include "logrecord.h"

struct msglist {
        struct logrecord *items;
        size_t count;
        size_t cap;
};

#define MSGLIST_INIT                                                                                         \
        {                                                                                                    \
                NULL, 0, 0                                                                                   \
        }

/* Append *rec, taking ownership of its strings (rec is zeroed).  0 or -1
 * (out of memory: rec is left untouched). */
int msglist_push(struct msglist *l, struct logrecord *rec);
/* Highest message number, 0 when empty. */
long long msglist_max_no(const struct msglist *l);
/* Index of message `no`, or -1. */
long msglist_find(const struct msglist *l, long long no);
/* Remove and free item i. */
void msglist_remove(struct msglist *l, size_t i);
/* Drop the oldest so at most `cap` remain. */
void msglist_cap(struct msglist *l, size_t cap);
void msglist_free(struct msglist *l);

#endif
