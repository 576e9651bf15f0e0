/* logrecord.c - message log line serialization (see logrecord.h). */
#include "logrecord.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lr_text_set(struct lr_text *t, const char *s, size_t len)
{
        char *p = malloc(len + 1);
        if (!p)
                return LOGRECORD_ENOMEM;
        if (len)
                memcpy(p, s, len);
        p[len] = '\0';
        free(t->ptr);
        t->ptr = p;
        t->len = len;
        return LOGRECORD_OK;
}

void logrecord_free(struct logrecord *rec)
{
        if (!rec)
                return;
        free(rec->name.ptr);
        free(rec->subject.ptr);
        free(rec->body.ptr);
        free(rec->pwhash.ptr);
        memset(rec, 0, sizeof *rec);
}

/* Decimal without sign or leading zeros (except "0"), no overflow. */
static int parse_number(const char *s, size_t len, long long *out)
{
        if (len == 0 || len > 19)
                return -1;
        if (len > 1 && s[0] == '0')
                return -1;
        long long v = 0;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                if (v > (LLONG_MAX - (s[i] - '0')) / 10)
                        return -1;
                v = v * 10 + (s[i] - '0');
        }
        *out = v;
        return 0;
}

static int unescape(const char *s, size_t len, struct lr_text *out)
{
        char *d = malloc(len + 1);
        if (!d)
                return LOGRECORD_ENOMEM;
        size_t j = 0;
        for (size_t i = 0; i < len; i++) {
                if (s[i] != '\\') {
                        d[j++] = s[i];
                        continue;
                }
                if (++i == len) {
                        free(d);
                        return LOGRECORD_EESCAPE;
                }
                switch (s[i]) {
                case '\\':
                        d[j++] = '\\';
                        break;
                case 't':
                        d[j++] = '\t';
                        break;
                case 'n':
                        d[j++] = '\n';
                        break;
                case 'r':
                        d[j++] = '\r';
                        break;
                default:
                        free(d);
                        return LOGRECORD_EESCAPE;
                }
        }
        d[j] = '\0';
        out->ptr = d;
        out->len = j;
        return LOGRECORD_OK;
}

int logrecord_parse(const char *line, size_t len, struct logrecord *out)
{
        memset(out, 0, sizeof *out);
        if (len > 0 && line[len - 1] == '\n')
                len--;
        if (memchr(line, '\n', len))
                return LOGRECORD_ELINE;
        const char *start[7];
        size_t flen[7];
        size_t nf = 0, i = 0;
        for (;;) {
                const char *tab = memchr(line + i, '\t', len - i);
                size_t end = tab ? (size_t)(tab - line) : len;
                if (nf == 7)
                        return LOGRECORD_EFIELDS;
                start[nf] = line + i;
                flen[nf] = end - i;
                nf++;
                if (!tab)
                        break;
                i = end + 1;
        }
        if (nf < 6)
                return LOGRECORD_EFIELDS;
        if (nf == 7 && !logrecord_valid_id(start[6], flen[6]))
                return LOGRECORD_EID;
        if (parse_number(start[0], flen[0], &out->no) < 0 || out->no < 1)
                return LOGRECORD_ENUMBER;
        if (parse_number(start[1], flen[1], &out->time) < 0) {
                out->no = 0; /* on error *out is zeroed */
                return LOGRECORD_ETIME;
        }
        struct lr_text *t[4] = {&out->name, &out->subject, &out->body, &out->pwhash};
        for (int k = 0; k < 4; k++) {
                int rc = unescape(start[2 + k], flen[2 + k], t[k]);
                if (rc != LOGRECORD_OK) {
                        logrecord_free(out);
                        return rc;
                }
        }
        if (nf == 7)
                memcpy(out->id, start[6], LOGRECORD_ID_LEN);
        return LOGRECORD_OK;
}

int logrecord_valid_id(const char *s, size_t len)
{
        if (len != LOGRECORD_ID_LEN)
                return 0;
        for (size_t i = 0; i < len; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return 0;
        return 1;
}

static size_t escaped_len(const struct lr_text *t)
{
        size_t n = 0;
        for (size_t i = 0; i < t->len; i++) {
                char c = t->ptr[i];
                n += (c == '\\' || c == '\t' || c == '\n' || c == '\r') ? 2 : 1;
        }
        return n;
}

static char *put_escaped(char *d, const struct lr_text *t)
{
        for (size_t i = 0; i < t->len; i++) {
                char c = t->ptr[i];
                switch (c) {
                case '\\':
                        *d++ = '\\';
                        *d++ = '\\';
                        break;
                case '\t':
                        *d++ = '\\';
                        *d++ = 't';
                        break;
                case '\n':
                        *d++ = '\\';
                        *d++ = 'n';
                        break;
                case '\r':
                        *d++ = '\\';
                        *d++ = 'r';
                        break;
                default:
                        *d++ = c;
                }
        }
        return d;
}

int logrecord_serialize(const struct logrecord *rec, char **out, size_t *out_len)
{
        *out = NULL;
        *out_len = 0;
        if (rec->no < 1)
                return LOGRECORD_ENUMBER;
        if (rec->time < 0)
                return LOGRECORD_ETIME;
        size_t idlen = strnlen(rec->id, sizeof rec->id);
        if (idlen != 0 && !logrecord_valid_id(rec->id, idlen))
                return LOGRECORD_EID;
        char nums[64];
        int n = snprintf(nums, sizeof nums, "%lld\t%lld\t", rec->no, rec->time);
        if (n < 0 || (size_t)n >= sizeof nums)
                return LOGRECORD_ENUMBER;
        const struct lr_text *t[4] = {&rec->name, &rec->subject, &rec->body, &rec->pwhash};
        size_t total = (size_t)n + 3 + 1 + (idlen ? 1 + idlen : 0); /* TABs, LF */
        for (int k = 0; k < 4; k++)
                total += escaped_len(t[k]);
        char *s = malloc(total + 1);
        if (!s)
                return LOGRECORD_ENOMEM;
        memcpy(s, nums, (size_t)n);
        char *d = s + n;
        for (int k = 0; k < 4; k++) {
                d = put_escaped(d, t[k]);
                if (k < 3)
                        *d++ = '\t';
        }
        if (idlen) {
                *d++ = '\t';
                memcpy(d, rec->id, idlen);
                d += idlen;
        }
        *d++ = '\n';
        *d = '\0';
        *out = s;
        *out_len = (size_t)(d - s);
        return LOGRECORD_OK;
}

static int text_equal(const struct lr_text *a, const struct lr_text *b)
{
        return a->len == b->len && (a->len == 0 || memcmp(a->ptr, b->ptr, a->len) == 0);
}

int logrecord_equal(const struct logrecord *a, const struct logrecord *b)
{
        return a->no == b->no && a->time == b->time && text_equal(&a->name, &b->name) &&
               text_equal(&a->subject, &b->subject) && text_equal(&a->body, &b->body) &&
               text_equal(&a->pwhash, &b->pwhash) && strcmp(a->id, b->id) == 0;
}

const char *logrecord_strerror(int code)
{
        switch (code) {
        case LOGRECORD_OK:
                return "no error";
        case LOGRECORD_EFIELDS:
                return "expected six or seven TAB-separated fields";
        case LOGRECORD_ENUMBER:
                return "bad message number";
        case LOGRECORD_ETIME:
                return "bad time";
        case LOGRECORD_EESCAPE:
                return "bad backslash escape";
        case LOGRECORD_ELINE:
                return "line feed inside a record";
        case LOGRECORD_ENOMEM:
                return "out of memory";
        case LOGRECORD_EID:
                return "bad post id (seventh field)";
        }
        return "unknown log record error";
}
