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

/* {"messages":[...]} with the messages numbered above `since`, oldest
 * first.  Password hashes are never included. */
void json_messages(struct buf *out, const struct msglist *l, long long since);

#endif
