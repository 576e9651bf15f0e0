/* config.c - configuration file parser (see config.h). */
#include "config.h"

#include "dirlock.h"
#include "dirlock_netfs.h"
#include "dirlock_permit.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "validate.h"

/* The names of the write methods, by value. */
static const char *const write_methods[] = {
    [BOARD_WRITE_RENAME] = "rename",
    [BOARD_WRITE_INPLACE] = "inplace",
};

_Static_assert(sizeof write_methods / sizeof write_methods[0] == BOARD_WRITE_METHODS,
               "one name per enum board_write_method value");

void config_free(struct board_config *cfg)
{
        free(cfg->title);
        free(cfg->base_path);
        free(cfg->data_dir);
        free(cfg->lock_space);
        free(cfg->error_log);
        memset(cfg, 0, sizeof *cfg);
}

static char *dup_n(const char *s, size_t n)
{
        char *d = malloc(n + 1);
        if (!d)
                return NULL;
        memcpy(d, s, n);
        d[n] = '\0';
        return d;
}

static int set_string(char **slot, const char *v, size_t n)
{
        char *d = dup_n(v, n);
        if (!d)
                return -1;
        free(*slot);
        *slot = d;
        return 0;
}

/* Whole-string decimal integer in [min, max]. */
static int parse_long(const char *v, long min, long max, long *out)
{
        if (!*v)
                return -1;
        char *end;
        errno = 0;
        long x = strtol(v, &end, 10);
        if (errno || *end || x < min || x > max)
                return -1;
        *out = x;
        return 0;
}

static int parse_double(const char *v, double min, double max, double *out)
{
        if (!*v)
                return -1;
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        if (errno || *end || !isfinite(x) || x < min || x > max)
                return -1;
        *out = x;
        return 0;
}

static int parse_enum(const char *v, const char *const *names, int n, int *out)
{
        for (int i = 0; i < n; i++)
                if (strcmp(v, names[i]) == 0) {
                        *out = i;
                        return 0;
                }
        return -1;
}

/* "must be A, B or C" into why[size], from the names of values 0..n-1:
 * the list of a key's choices is the list its values are parsed by. */
static const char *must_be(char *why, size_t size, const char *(*name_of)(int), int n)
{
        size_t used = (size_t)snprintf(why, size, "must be");
        for (int i = 0; i < n && used < size; i++)
                used += (size_t)snprintf(why + used, size - used, "%s %s",
                                         i == 0       ? ""
                                         : i == n - 1 ? " or"
                                                      : ",",
                                         name_of(i));
        return why;
}

static const char *lock_mode_name(int mode)
{
        return board_lock_mode_name((enum board_lock_mode)mode);
}

static const char *store_name(int kind)
{
        return store_of((enum board_store_kind)kind)->name;
}

static const char *write_method_name(int method)
{
        return write_methods[method];
}

enum {
        K_TITLE,
        K_BASE_PATH,
        K_DATA_DIR,
        K_LOCK_MODE,
        K_STORE,
        K_LOCK_TIMEOUT,
        K_STALE_AGE,
        K_DELAY_MS,
        K_WRITE_METHOD,
        K_MAX_MESSAGES,
        K_PAGE_SIZE,
        K_MIN_POST_INTERVAL,
        K_MAX_BODY,
        K_GROUP_COMMIT,
        K_ERROR_LOG,
        K_DELETE_MAX_FAILURES,
        K_DELETE_FAILURE_WINDOW,
        K_LOCK_SPACE,
        K_SINGLE_HOST,
        K_MAX_WAITING_POSTS,
        K_COUNT
};

static const char *const key_names[K_COUNT] = {
    "title",
    "base_path",
    "data_dir",
    "lock_mode",
    "store",
    "lock_timeout",
    "stale_age",
    "delay_ms",
    "write_method",
    "max_messages",
    "page_size",
    "min_post_interval",
    "max_body",
    "group_commit",
    "error_log",
    "delete_max_failures",
    "delete_failure_window",
    "lock_space",
    "single_host",
    "max_waiting_posts",
};

/* Apply one key; returns NULL or a description of what is wrong (which
 * may be written in why[why_size]). */
static const char *apply(struct board_config *cfg, int key, const char *v, size_t vlen, char *why,
                         size_t why_size)
{
        static const char *const yes_no[] = {"no", "yes"};
        int choice;
        switch (key) {
        case K_TITLE:
                return set_string(&cfg->title, v, vlen) ? "out of memory" : NULL;
        case K_BASE_PATH:
                if (vlen == 0 || v[0] != '/' || v[vlen - 1] != '/')
                        return "must start and end with '/'";
                for (size_t i = 0; i < vlen; i++)
                        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7F)
                                return "must not contain control characters";
                if (strpbrk(v, " \t\"'<>\\?#%"))
                        return "must not contain spaces, quotes, '<', '>', '\\', '?', '#' or '%'";
                return set_string(&cfg->base_path, v, vlen) ? "out of memory" : NULL;
        case K_DATA_DIR:
                if (vlen == 0)
                        return "must not be empty";
                return set_string(&cfg->data_dir, v, vlen) ? "out of memory" : NULL;
        case K_LOCK_MODE:
                return board_lock_mode_parse(v, &cfg->lock_mode)
                           ? must_be(why, why_size, lock_mode_name, BOARD_LOCK_MODES)
                           : NULL;
        case K_STORE:
                return store_parse(v, &cfg->store) ? must_be(why, why_size, store_name, BOARD_STORES) : NULL;
        case K_LOCK_TIMEOUT:
                return parse_double(v, 0, 3600, &cfg->lock_timeout) ? "must be a number of seconds, 0 to 3600"
                                                                    : NULL;
        case K_STALE_AGE:
                return parse_double(v, 0.001, 86400, &cfg->stale_age)
                           ? "must be a number of seconds above 0, at most 86400"
                           : NULL;
        case K_DELAY_MS:
                return parse_long(v, 0, 600000, &cfg->delay_ms) ? "must be an integer, 0 to 600000" : NULL;
        case K_WRITE_METHOD:
                if (parse_enum(v, write_methods, BOARD_WRITE_METHODS, &choice))
                        return must_be(why, why_size, write_method_name, BOARD_WRITE_METHODS);
                cfg->write_method = (enum board_write_method)choice;
                return NULL;
        case K_MAX_MESSAGES:
                return parse_long(v, 1, 10000000, &cfg->max_messages) ? "must be an integer, 1 to 10000000"
                                                                      : NULL;
        case K_PAGE_SIZE:
                return parse_long(v, 1, 1000, &cfg->page_size) ? "must be an integer, 1 to 1000" : NULL;
        case K_MIN_POST_INTERVAL:
                return parse_long(v, 0, 86400, &cfg->min_post_interval) ? "must be an integer, 0 to 86400"
                                                                        : NULL;
        case K_MAX_BODY:
                return parse_long(v, 1, 16L * 1024 * 1024, &cfg->max_body)
                           ? "must be an integer, 1 to 16777216"
                           : NULL;
        case K_GROUP_COMMIT:
                return parse_enum(v, yes_no, 2, &cfg->group_commit) ? "must be yes or no" : NULL;
        case K_SINGLE_HOST:
                return parse_enum(v, yes_no, 2, &cfg->single_host) ? "must be yes or no" : NULL;
        case K_ERROR_LOG:
                if (vlen == 0 || v[0] != '/')
                        return "must be an absolute path";
                return set_string(&cfg->error_log, v, vlen) ? "out of memory" : NULL;
        case K_DELETE_MAX_FAILURES:
                return parse_long(v, 0, 1000000, &cfg->delete_max_failures)
                           ? "must be an integer, 0 (no limit) to 1000000"
                           : NULL;
        case K_DELETE_FAILURE_WINDOW:
                return parse_long(v, 0, 86400, &cfg->delete_failure_window)
                           ? "must be an integer, 0 (no limit) to 86400"
                           : NULL;
        case K_MAX_WAITING_POSTS:
                return parse_long(v, 0, DIRLOCK_PERMITS_MAX, &cfg->max_waiting_posts)
                           ? "must be an integer, 0 (no cap) to 65535"
                           : NULL;
        case K_LOCK_SPACE:
                /* Handed to the library as it is: the library picks the
                 * backend from it and reports what it cannot use. */
                if (vlen == 0)
                        return "must not be empty";
                for (size_t i = 0; i < vlen; i++)
                        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7F)
                                return "must not contain control characters";
                return set_string(&cfg->lock_space, v, vlen) ? "out of memory" : NULL;
        }
        return "unknown key";
}

/* data_dir/locks, when lock_space is not given. */
static int default_lock_space(struct board_config *cfg)
{
        size_t n = strlen(cfg->data_dir);
        char *s = malloc(n + sizeof "/locks");
        if (!s)
                return -1;
        memcpy(s, cfg->data_dir, n);
        memcpy(s + n, "/locks", sizeof "/locks");
        cfg->lock_space = s;
        return 0;
}

/* The directory of a lock space on this host's filesystem (a directory,
 * or flock:DIR; the library's query, dirlock_space_query), pointing into
 * `space`; NULL for a lock server's space, shared by several hosts, and
 * for a space the library cannot use (it says why at the first lock). */
static const char *local_dir_of(const char *space)
{
        dirlock_space_info info;
        return dirlock_space_query(space, &info, NULL) == DIRLOCK_OK ? info.dir : NULL;
}

/* The space where the posts' gate counts them: a space that has counting
 * locks, which flock:DIR has not -- its directory DIR has. */
static int gate_space_of(struct board_config *cfg, const char *filename, struct board_error *err)
{
        dirlock_space_info info;
        cfg->gate_space = cfg->lock_space;
        if (dirlock_space_query(cfg->lock_space, &info, NULL) == DIRLOCK_OK && !info.permits && info.dir)
                cfg->gate_space = info.dir;
        if (cfg->max_waiting_posts == 0 ||
            (dirlock_space_query(cfg->gate_space, &info, NULL) == DIRLOCK_OK && info.permits))
                return 0;
        return board_fail(err, 500,
                          "%s: key 'max_waiting_posts': the cap counts waiting posts with a counting lock, "
                          "which lock space '%.100s' does not have (set max_waiting_posts = 0)",
                          filename, cfg->lock_space);
}

/* Whether the lock space has intent locks that upgrade (flock:DIR has
 * not); a space the library cannot use says why at the first lock. */
static bool space_upgrades(const struct board_config *cfg)
{
        dirlock_space_info info;
        return dirlock_space_query(cfg->lock_space, &info, NULL) != DIRLOCK_OK || info.upgrade;
}

static int is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\r';
}

static void set_defaults(struct board_config *cfg)
{
        memset(cfg, 0, sizeof *cfg);
        cfg->lock_mode = BOARD_LOCK_MKDIR;
        cfg->store = BOARD_STORE_LOG;
        cfg->lock_timeout = 10;
        cfg->stale_age = 30;
        cfg->delay_ms = 0;
        cfg->write_method = BOARD_WRITE_RENAME;
        cfg->max_messages = 1000;
        cfg->page_size = 20;
        cfg->min_post_interval = 0;
        cfg->max_body = validate_post_form_max_bytes(); /* what the form may send */
        cfg->group_commit = 1;
        cfg->delete_max_failures = 5;
        cfg->delete_failure_window = 60;
}

/* One "key = value" line, text[s..e) (trimmed, not empty, not a comment),
 * applied to cfg; `seen` marks the keys given so far.  0, or -1 with err
 * set ("FILE:LINE: ..."). */
static int parse_line(struct board_config *cfg, const char *text, size_t s, size_t e, const char *filename,
                      long lineno, int seen[K_COUNT], struct board_error *err)
{
        if (memchr(text + s, '\0', e - s))
                return board_fail(err, 500, "%s:%ld: NUL byte in line", filename, lineno);
        const char *eq = memchr(text + s, '=', e - s);
        if (!eq)
                return board_fail(err, 500, "%s:%ld: expected 'key = value'", filename, lineno);
        size_t ke = (size_t)(eq - text), vs = ke + 1;
        while (ke > s && is_space(text[ke - 1]))
                ke--;
        while (vs < e && is_space(text[vs]))
                vs++;
        char key[32];
        size_t klen = ke - s;
        int k = -1;
        if (klen < sizeof key) {
                memcpy(key, text + s, klen);
                key[klen] = '\0';
                for (int i = 0; i < K_COUNT; i++)
                        if (strcmp(key, key_names[i]) == 0)
                                k = i;
        }
        if (k < 0)
                return board_fail(err, 500, "%s:%ld: unknown key '%.*s'", filename, lineno,
                                  (int)(klen > 64 ? 64 : klen), text + s);
        if (seen[k])
                return board_fail(err, 500, "%s:%ld: key '%s' given twice", filename, lineno, key);
        seen[k] = 1;
        char *v = dup_n(text + vs, e - vs);
        if (!v)
                return board_fail(err, 500, "%s: out of memory", filename);
        char why_text[128];
        const char *why = apply(cfg, k, v, e - vs, why_text, sizeof why_text);
        int rc = 0;
        if (why)
                rc = board_fail(err, 500, "%s:%ld: key '%s': bad value '%.100s': %s", filename, lineno, key,
                                v, why);
        free(v);
        return rc;
}

int config_parse(const char *text, size_t len, const char *filename, struct board_config *cfg,
                 struct board_error *err)
{
        set_defaults(cfg);
        int rc = 0;
        if (set_string(&cfg->title, "dirlock board", 13) || set_string(&cfg->base_path, "/", 1))
                rc = board_fail(err, 500, "%s: out of memory", filename);
        int seen[K_COUNT] = {0};
        size_t pos = 0;
        long lineno = 0;
        while (rc == 0 && pos < len) {
                lineno++;
                const char *nl = memchr(text + pos, '\n', len - pos);
                size_t end = nl ? (size_t)(nl - text) : len;
                size_t s = pos, e = end;
                pos = end + 1;
                while (s < e && is_space(text[s]))
                        s++;
                while (e > s && is_space(text[e - 1]))
                        e--;
                if (s < e && text[s] != '#')
                        rc = parse_line(cfg, text, s, e, filename, lineno, seen, err);
        }
        if (rc == 0 && !cfg->data_dir)
                rc = board_fail(err, 500, "%s: key 'data_dir' is required", filename);
        if (rc == 0 && !cfg->lock_space && default_lock_space(cfg) < 0)
                rc = board_fail(err, 500, "%s: out of memory", filename);
        if (rc == 0)
                cfg->lock_dir = local_dir_of(cfg->lock_space);
        if (rc == 0)
                rc = gate_space_of(cfg, filename, err);
        if (rc == 0 && board_lock_mode_row(cfg->lock_mode)->flock && !cfg->lock_dir)
                rc = board_fail(err, 500,
                                "%s: key 'lock_space': lock_mode %s takes flock(2) locks on files in a "
                                "directory; '%.100s' is not one (give a directory or flock:DIR)",
                                filename, board_lock_mode_name(cfg->lock_mode), cfg->lock_space);
        if (rc == 0 && board_lock_mode_row(cfg->lock_mode)->write == DIRLOCK_INTENT && !space_upgrades(cfg))
                rc = board_fail(err, 500,
                                "%s: key 'lock_space': lock_mode %s writes under an intent lock, which lock "
                                "space '%.100s' does not have (give a directory, or a Redis or etcd space)",
                                filename, board_lock_mode_name(cfg->lock_mode), cfg->lock_space);
        /* A lock server's space is shared by several hosts, and group
         * commit judges the claims of its queue by process id, which only
         * means something on one host (postqueue.c): off by default there,
         * and refused when asked for. */
        if (rc == 0)
                cfg->group_commit_given = seen[K_GROUP_COMMIT];
        if (rc == 0 && !cfg->lock_dir) {
                if (seen[K_GROUP_COMMIT] && cfg->group_commit)
                        rc = board_fail(err, 500,
                                        "%s: key 'group_commit': group commit judges queued posts by process "
                                        "id, on one host; a lock server's space ('%.100s') is shared by "
                                        "several hosts (set group_commit = no)",
                                        filename, cfg->lock_space);
                cfg->group_commit = 0;
        }
        if (rc < 0)
                config_free(cfg); /* the one way out of a failed parse */
        return rc;
}

/* The data directory on a network filesystem that several hosts may
 * share (the library's dirlock_fs_query says): group commit judges the
 * claims of its queue by process id, which means something on one host
 * only (postqueue.c), and SQLite's WAL keeps its index in shared memory,
 * which is per host (SQLite says WAL does not work over a network
 * filesystem).  Both are for one host: group commit is off by default
 * there and refused when asked for, the SQLite store refused -- unless
 * single_host says every process using the data is on this host. */
int config_check_storage(const char *filename, struct board_config *cfg, struct board_error *err)
{
        dirlock_fs_info fs;
        dirlock_error de;
        if (cfg->single_host || dirlock_fs_query(cfg->data_dir, &fs, &de) != DIRLOCK_OK || !fs.network)
                return 0; /* a data_dir that cannot be looked at is reported by its first use */
        if (cfg->group_commit && cfg->group_commit_given)
                return board_fail(
                    err, 500,
                    "%s: key 'group_commit': group commit judges queued posts by process id, on "
                    "one host; data_dir '%.100s' is on a network filesystem (%s) that several "
                    "hosts may share (set group_commit = no, or single_host = yes if every "
                    "board process using it runs on this host)",
                    filename, cfg->data_dir, fs.kind);
        cfg->group_commit = 0;
        if (cfg->store == BOARD_STORE_SQLITE)
                return board_fail(
                    err, 500,
                    "%s: key 'store': SQLite keeps its write-ahead log's index in shared memory, "
                    "which the hosts of a network filesystem do not share; data_dir '%.100s' is "
                    "on one (%s): keep board.db on a local filesystem of one host, use store = "
                    "log, or set single_host = yes if every board process using it runs on this "
                    "host",
                    filename, cfg->data_dir, fs.kind);
        return 0;
}

int config_load(const char *path, struct board_config *cfg, struct board_error *err)
{
        memset(cfg, 0, sizeof *cfg);
        FILE *f = fopen(path, "rb");
        if (!f)
                return board_fail(err, 500, "cannot open configuration file '%s': %s", path, strerror(errno));
        char *text = NULL;
        size_t len = 0, cap = 0;
        for (;;) {
                if (len + 4096 > cap) {
                        if (cap >= 1024 * 1024) {
                                free(text);
                                fclose(f);
                                return board_fail(err, 500, "%s: configuration file larger than 1 MiB", path);
                        }
                        size_t ncap = cap ? cap * 2 : 8192;
                        char *n = realloc(text, ncap);
                        if (!n) {
                                free(text);
                                fclose(f);
                                return board_fail(err, 500, "%s: out of memory", path);
                        }
                        text = n;
                        cap = ncap;
                }
                size_t got = fread(text + len, 1, cap - len, f);
                len += got;
                if (got == 0)
                        break;
        }
        int bad = ferror(f);
        fclose(f);
        if (bad) {
                free(text);
                return board_fail(err, 500, "cannot read configuration file '%s'", path);
        }
        int rc = config_parse(text ? text : "", len, path, cfg, err);
        free(text);
        return rc;
}
