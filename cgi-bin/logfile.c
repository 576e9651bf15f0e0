/* logfile.c - the message log file (see logfile.h). */
#include "logfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "fileio.h"

/* The high-water mark line (see logfile.h). */
#define MARK_PREFIX     "#last_no\t"
#define MARK_PREFIX_LEN (sizeof MARK_PREFIX - 1)
/* The fence line (see logfile.h). */
#define FENCE_PREFIX     "#fence\t"
#define FENCE_PREFIX_LEN (sizeof FENCE_PREFIX - 1)

size_t logfile_fence_line(const char *text, size_t len, unsigned long long *fence)
{
        if (len <= FENCE_PREFIX_LEN || memcmp(text, FENCE_PREFIX, FENCE_PREFIX_LEN) != 0)
                return 0;
        unsigned long long v = 0;
        size_t i = FENCE_PREFIX_LEN;
        for (; i < len && i < FENCE_PREFIX_LEN + 20 && text[i] >= '0' && text[i] <= '9'; i++)
                v = v * 10 + (unsigned long long)(text[i] - '0');
        if (i == FENCE_PREFIX_LEN || i >= len || text[i] != '\n')
                return 0;
        *fence = v;
        return i + 1;
}

int logfile_read_fence(const char *path, unsigned long long *fence, struct board_error *err)
{
        *fence = 0;
        char head[64];
        ssize_t n = -1;
        for (int try = 0; n < 0 && try < 4; try++) {
                int fd = file_open_read(path); /* ESTALE: fileio.c */
                if (fd < 0) {
                        if (errno == ENOENT)
                                return 0;
                        return board_fail_storage(err, errno, "cannot read the message log's fence");
                }
                n = pread(fd, head, sizeof head, 0);
                int saved = errno;
                close(fd);
                if (n < 0 && !replaced_under_read(saved))
                        return board_fail_storage(err, saved, "cannot read the message log's fence");
                if (n < 0)
                        file_refresh(path, try); /* replaced as we read it */
                errno = saved;
        }
        if (n < 0)
                return board_fail_storage(err, errno, "cannot read the message log's fence");
        (void)logfile_fence_line(head, (size_t)n, fence);
        return 0;
}

/* "#last_no TAB N": 1 and *no set, or 0 when `line` is not a mark. */
static int parse_mark(const char *line, size_t len, long long *no)
{
        if (len <= MARK_PREFIX_LEN || len > MARK_PREFIX_LEN + 18 ||
            memcmp(line, MARK_PREFIX, MARK_PREFIX_LEN) != 0 || line[MARK_PREFIX_LEN] == '0')
                return 0;
        long long v = 0;
        for (size_t i = MARK_PREFIX_LEN; i < len; i++) {
                if (line[i] < '0' || line[i] > '9')
                        return 0;
                v = v * 10 + (line[i] - '0');
        }
        *no = v;
        return 1;
}

int logfile_parse(const char *text, size_t len, const char *path, struct msglist *out,
                  struct board_error *err)
{
        size_t pos = 0;
        long lineno = 0;
        long long last = 0;
        unsigned long long fence = 0;
        pos = logfile_fence_line(text, len, &fence);
        if (pos > 0) {
                out->fence = fence;
                lineno++;
        }
        while (pos < len) {
                lineno++;
                const char *nl = memchr(text + pos, '\n', len - pos);
                if (!nl)
                        return board_fail(err, 500, "%s: line %ld does not parse: %s", path, lineno,
                                          "incomplete last line (no line feed)");
                size_t end = (size_t)(nl - text);
                if (text[pos] == '#') {
                        long long mark = 0;
                        if (!parse_mark(text + pos, end - pos, &mark))
                                return board_fail(err, 500, "%s: line %ld does not parse: %s", path, lineno,
                                                  "bad high-water mark (expected '#last_no TAB number')");
                        if (end + 1 < len || mark <= last)
                                return board_fail(err, 500, "%s: line %ld does not parse: %s", path, lineno,
                                                  "the high-water mark must be the last line and above every "
                                                  "message number");
                        msglist_note_no(out, mark);
                        pos = end + 1;
                        continue;
                }
                struct logrecord rec;
                int rc = logrecord_parse(text + pos, end - pos, &rec);
                if (rc != LOGRECORD_OK)
                        return board_fail(err, 500, "%s: line %ld does not parse: %s", path, lineno,
                                          logrecord_strerror(rc));
                if (rec.no <= last) {
                        logrecord_free(&rec);
                        return board_fail(err, 500,
                                          "%s: line %ld does not parse: message number %lld after %lld", path,
                                          lineno, rec.no, last);
                }
                last = rec.no;
                if (msglist_push(out, &rec) < 0) {
                        logrecord_free(&rec);
                        return board_fail(err, 500, "out of memory reading '%s'", path);
                }
                pos = end + 1;
        }
        return 0;
}

int logfile_read(const char *path, struct msglist *out, struct board_error *err)
{
        struct buf b = BUF_INIT;
        int rc = file_read_all(path, &b, err);
        if (rc == 0)
                rc = logfile_parse(b.data ? b.data : "", b.len, path, out, err);
        else if (rc == 1)
                rc = 0;
        buf_free(&b);
        return rc;
}

int logfile_write(const char *path, const struct msglist *l, size_t cap, enum board_write_method method,
                  long delay_ms, const struct file_commit *commit, struct board_error *err)
{
        struct buf out = BUF_INIT;
        if (l->fence > 0)
                buf_printf(&out, FENCE_PREFIX "%llu\n", l->fence);
        size_t first = l->count > cap ? l->count - cap : 0;
        for (size_t i = first; i < l->count; i++) {
                char *line;
                size_t n;
                int rc = logrecord_serialize(&l->items[i], &line, &n);
                if (rc != LOGRECORD_OK) {
                        buf_free(&out);
                        return board_fail(err, 500, "cannot write message %lld: %s", l->items[i].no,
                                          logrecord_strerror(rc));
                }
                buf_append(&out, line, n);
                free(line);
        }
        /* The mark, when the highest number given is no longer in the
         * file (the newest messages were deleted). */
        long long last_kept = l->count > first ? l->items[l->count - 1].no : 0;
        long long high = msglist_max_no(l);
        if (high > last_kept)
                buf_printf(&out, MARK_PREFIX "%lld\n", high);
        if (out.oom) {
                buf_free(&out);
                return board_fail(err, 500, "out of memory writing '%s'", path);
        }
        const char *data = out.data ? out.data : "";
        int rc;
        switch (method) {
        case BOARD_WRITE_INPLACE:
                rc = commit && commit->check ? commit->check(commit->ctx, err) : 0;
                if (rc == 0)
                        rc = file_overwrite_inplace(path, data, out.len, 4, delay_ms, err);
                if (rc == 0 && commit && commit->done)
                        commit->done(commit->ctx);
                break;
        case BOARD_WRITE_RENAME:
                rc = file_replace(path, data, out.len, 0644, commit, err);
                break;
        default:
                board_bug_unknown("write method", (int)method);
        }
        buf_free(&out);
        return rc;
}
