/* json.h - JSON output of the API (GET api/messages). */
#ifndef BOARD_JSON_H
#define BOARD_JSON_H

#include <stddef.h>

#include "buf.h"
#include "msglist.h"

/* Append s[0..len) as a JSON string with quotes.  Control characters
 * become \n, \r, \t or \u00XX; invalid UTF-8 bytes become U+FFFD, so the
 * output is always valid JSON. */
void json_string(struct buf *out, const char *s, size_t len);

/* UTC ISO 8601 ("2026-11-22T10:00:00Z") into out[32]. */
void format_time_iso(long long t, char out[32]);

/* Which messages an API answer holds (GET api/messages). */
struct json_page {
        long long since;  /* only numbers above it; with has_since, the oldest `limit` of them */
        long long before; /* only numbers below it (0: no bound) */
        int has_since;    /* ?since= was given: walk forward from it */
        size_t limit;     /* at most this many */
};

#define JSON_PAGE_DEFAULT_LIMIT 100
#define JSON_PAGE_MAX_LIMIT     1000

/* {"messages":[...]}, oldest first, with the messages `page` selects: with
 * since (has_since), the OLDEST `limit` numbered above since (and below
 * before, when set), so a poller walking forward with since=<last seen>
 * sees every message in order and [] once it has caught up; otherwise the
 * NEWEST `limit` numbered below before (every one when before is 0).  `l`
 * is sorted by number.  Password hashes are never included. */
void json_messages(struct buf *out, const struct msglist *l, const struct json_page *page);

#endif
