/* store_log.c - flat message log (see store_log.h). */
#include "store_log.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "config.h"

int store_log_parse(const char *text, size_t len, const char *path, struct msglist *out, struct berr *err)
{
        size_t pos = 0;
        long lineno = 0;
        long long last = 0;
        while (pos < len) {
                lineno++;
                const char *nl = memchr(text + pos, '\n', len - pos);
                if (!nl)
                        return berr_set(err, 500, "%s: line %ld does not parse: %s", path, lineno,
                                        "incomplete last line (no line feed)");
                size_t end = (size_t)(nl - text);
                struct logrecord rec;
                int rc = logrecord_parse(text + pos, end - pos, &rec);
                if (rc != LOGRECORD_OK)
                        return berr_set(err, 500, "%s: line %ld does not parse: %s", path, lineno,
                                        logrecord_strerror(rc));
                if (rec.no <= last) {
                        logrecord_free(&rec);
                        return berr_set(err, 500,
                                        "%s: line %ld does not parse: message number %lld after %lld", path,
                                        lineno, rec.no, last);
                }
                last = rec.no;
                if (msglist_push(out, &rec) < 0) {
                        logrecord_free(&rec);
                        return berr_set(err, 500, "out of memory reading '%s'", path);
                }
                pos = end + 1;
        }
        return 0;
}

int store_log_read(const char *path, struct msglist *out, struct berr *err)
{
        struct buf b = BUF_INIT;
        int rc = file_read_all(path, &b, err);
        if (rc == 0)
                rc = store_log_parse(b.data ? b.data : "", b.len, path, out, err);
        else if (rc == 1)
                rc = 0;
        buf_free(&b);
        return rc;
}

int store_log_write(const char *path, const struct msglist *l, size_t cap, int method, long delay_ms,
                    file_commit_check check, void *ctx, struct berr *err)
{
        struct buf out = BUF_INIT;
        size_t first = l->count > cap ? l->count - cap : 0;
        for (size_t i = first; i < l->count; i++) {
                char *line;
                size_t n;
                int rc = logrecord_serialize(&l->items[i], &line, &n);
                if (rc != LOGRECORD_OK) {
                        buf_free(&out);
                        return berr_set(err, 500, "cannot write message %lld: %s", l->items[i].no,
                                        logrecord_strerror(rc));
                }
                buf_append(&out, line, n);
                free(line);
        }
        if (out.oom) {
                buf_free(&out);
                return berr_set(err, 500, "out of memory writing '%s'", path);
        }
        const char *data = out.data ? out.data : "";
        int rc;
        if (method == WRITE_INPLACE) {
                rc = check ? check(ctx, err) : 0;
                if (rc == 0)
                        rc = file_overwrite_inplace(path, data, out.len, 4, delay_ms, err);
        } else {
                rc = file_replace(path, data, out.len, 0644, check, ctx, err);
        }
        buf_free(&out);
        return rc;
}
