/* msglist.h - an ordered list of messages (oldest first), owned records,
 * and the highest number the board has ever given (its high-water mark:
 * numbers are never given twice, even after the newest messages were
 * deleted or dropped by the cap). */
#ifndef BOARD_MSGLIST_H
#define BOARD_MSGLIST_H

#include "logrecord.h"

struct msglist {
        struct logrecord *items;
        size_t count;
        size_t cap;
        long long last_no; /* highest number ever given; >= every item's */
        /* The highest fence that wrote the log this list was read from (0:
         * none), and the one a write of it records (fence.h). */
        unsigned long long fence;
};

#define MSGLIST_INIT                                                                                         \
        {                                                                                                    \
                NULL, 0, 0, 0, 0                                                                             \
        }

/* Append *rec, taking ownership of its strings (rec is zeroed).  0 or -1
 * (out of memory: rec is left untouched). */
int msglist_push(struct msglist *l, struct logrecord *rec);
/* The highest number ever given: the highest item pushed, or the mark
 * read with the list (msglist_note_no), whichever is higher; removing
 * items does not lower it.  0 for a board that never had a message. */
long long msglist_max_no(const struct msglist *l);
/* Raise the high-water mark to `no` (never lowers it). */
void msglist_note_no(struct msglist *l, long long no);
/* Index of message `no`, or -1. */
long msglist_find(const struct msglist *l, long long no);
/* Remove and free item i. */
void msglist_remove(struct msglist *l, size_t i);
/* Drop the oldest so at most `cap` remain. */
void msglist_cap(struct msglist *l, size_t cap);
void msglist_free(struct msglist *l);

#endif
