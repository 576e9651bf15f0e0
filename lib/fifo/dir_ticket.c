/* dir_ticket.c - the names of a queue's tickets, t.<SEQ> (the table:
 * lib/core/dir_layout.h): what the queue (dir_fifo.c) and the thread's
 * view of it (dir_fifo_view.c) build and parse. */
#include "fifo.h"

#include <stdio.h>
#include <string.h>

char *dl_layout_ticket(const char *fifo_dir, unsigned long long seq)
{
        char leaf[2 + DL_TICKET_DIGITS + 1];
        snprintf(leaf, sizeof leaf, "%c.%0*llu", (char)DL_ENTRY_TICKET, DL_TICKET_DIGITS, seq);
        return dl_join(fifo_dir, leaf, NULL);
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
