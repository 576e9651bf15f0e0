/* range_entries.c - the entries of D/NAME.ranges (the protocol is at the
 * top of range.c): their names, the meta-lock under which they change, a
 * scan of the directory and the judging (and breaking) of the entries in
 * it; and the views from outside the holders: the list of a name's range
 * holders and waiters, and the number of held ranges. */
#include "dir_fsops.h"
#include "dir_range.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The backoff of a busy meta-lock: its first and its longest step. */
#define META_RETRY_FIRST_MS 0.05
#define META_RETRY_MAX_MS   2.0

/* ---- names ---------------------------------------------------------------- */

static unsigned long long bits_of(double v)
{
        unsigned long long u;
        memcpy(&u, &v, sizeof u);
        return u;
}

static double double_of(unsigned long long u)
{
        double v;
        memcpy(&v, &u, sizeof v);
        return v;
}

void dl_range_leaf(char out[DL_RANGE_LEAF_SIZE], char state, char mode, unsigned long long seq, double lo,
                   double hi, const char *token)
{
        snprintf(out, DL_RANGE_LEAF_SIZE, "%c%c.%0*llu.%016llx.%016llx.%s", state, mode, DL_RANGE_SEQ_DIGITS,
                 seq, bits_of(lo), bits_of(hi), token);
}

static bool hex_field(const char **p, int digits, unsigned long long *out)
{
        unsigned long long v = 0;
        for (int i = 0; i < digits; i++) {
                char c = (*p)[i];
                int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
                if (d < 0)
                        return false;
                v = v << 4 | (unsigned)d;
        }
        *p += digits;
        *out = v;
        return true;
}

bool dl_range_parse_leaf(const char *leaf, struct dl_range_entry *e)
{
        if (strlen(leaf) != DL_RANGE_LEAF_SIZE - 1 ||
            (leaf[0] != DL_RANGE_HELD && leaf[0] != DL_RANGE_WAITING) || strchr("sixu", leaf[1]) == NULL ||
            leaf[1] == '\0' || leaf[2] != '.')
                return false;
        e->state = leaf[0];
        e->mode = leaf[1];
        const char *p = leaf + 3;
        unsigned long long v = 0;
        for (int i = 0; i < DL_RANGE_SEQ_DIGITS; i++, p++) {
                if (*p < '0' || *p > '9')
                        return false;
                v = v * 10 + (unsigned)(*p - '0');
        }
        e->seq = v;
        unsigned long long lo, hi;
        if (*p++ != '.' || !hex_field(&p, 16, &lo) || *p++ != '.' || !hex_field(&p, 16, &hi) || *p++ != '.' ||
            !dl_layout_is_token(p, true))
                return false;
        e->lo = double_of(lo);
        e->hi = double_of(hi);
        memcpy(e->token, p, DIRLOCK_TOKEN_LEN + 1);
        return isfinite(e->lo) && isfinite(e->hi) && e->lo < e->hi;
}

char dl_range_mode_letter(int mode)
{
        return mode == DIRLOCK_SHARED   ? DL_RANGE_SHARED
               : mode == DIRLOCK_INTENT ? DL_RANGE_INTENT
                                        : DL_RANGE_EXCL;
}

int dl_range_mode_of_letter(char m)
{
        return m == DL_RANGE_SHARED ? DIRLOCK_SHARED
               : m == DL_RANGE_EXCL ? DIRLOCK_EXCLUSIVE
                                    : DIRLOCK_INTENT;
}

bool dl_range_overlap(double lo1, double hi1, double lo2, double hi2)
{
        return lo1 < hi2 && lo2 < hi1;
}

/* ---- the meta-lock ------------------------------------------------------------- */

int dl_range_meta_init(struct dl_range_meta *m, const char *lockdir, unsigned lockdir_mode, const char *name,
                       const char *seed, dirlock_error *err)
{
        memset(m, 0, sizeof *m);
        m->fd = -1;
        m->lockdir_mode = lockdir_mode;
        dl_backoff_init(&m->backoff, META_RETRY_FIRST_MS, META_RETRY_MAX_MS, seed);
        m->name = name;
        m->fs = dl_fs_of(lockdir, NULL);
        m->ranges_dir = dl_layout_path(lockdir, name, DL_SUFFIX_RANGES);
        char leaf[1 + DIRLOCK_NAME_MAX + sizeof DL_SUFFIX_RMETA];
        snprintf(leaf, sizeof leaf, ".%s" DL_SUFFIX_RMETA, name);
        m->meta_path = dl_join(lockdir, leaf, NULL);
        if (m->ranges_dir != NULL && m->meta_path != NULL)
                return DIRLOCK_OK;
        dl_range_meta_free(m);
        return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
}

void dl_range_meta_free(struct dl_range_meta *m)
{
        if (m->fd >= 0)
                close(m->fd);
        m->fd = -1;
        free(m->meta_path);
        free(m->ranges_dir);
        m->meta_path = m->ranges_dir = NULL;
}

int dl_range_meta_take(struct dl_range_meta *m, const dl_time *deadline, dirlock_error *err)
{
        if (m->fd < 0) {
                m->fd = open(m->meta_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
                if (m->fd < 0)
                        return dl_fail(err, errno == EACCES || errno == EPERM ? DIRLOCK_EPERM : DIRLOCK_EIO,
                                       errno, "cannot open '%s'", m->meta_path);
                if (m->lockdir_mode & (S_IWGRP | S_IWOTH))
                        fchmod(m->fd, (mode_t)(m->lockdir_mode & 0666));
        }
        dl_backoff_reset(&m->backoff);
        for (;;) {
                if (flock(m->fd, LOCK_EX | LOCK_NB) == 0)
                        return DIRLOCK_OK;
                if (errno != EWOULDBLOCK && errno != EINTR)
                        return dl_fail(err, DIRLOCK_EIO, errno, "cannot lock '%s'", m->meta_path);
                if (dl_deadline_passed(deadline))
                        return dl_fail(
                            err, DIRLOCK_ETIMEDOUT, 0,
                            "timed out: the ranges of lock '%s' are being changed by a process that "
                            "does not let go (stopped?)",
                            m->name);
                double nap = dl_backoff_next(&m->backoff), left = dl_remaining(deadline);
                struct timespec ts = {0, (long)((nap < left ? nap : left) * 1e6)};
                dl_poll(NULL, 0, &ts);
        }
}

void dl_range_meta_give(struct dl_range_meta *m)
{
        flock(m->fd, LOCK_UN);
}

/* ---- scanning ---------------------------------------------------------------- */

void dl_range_scan_free(struct dl_range_scan *s)
{
        free(s->e);
        memset(s, 0, sizeof *s);
}

/* An entry's record is read, and the entry broken if it is stale, only
 * when it matters (dl_range_judge), so that ranges that never meet never
 * look at each other. */
/* One scan (dl_range_scan_dir); -2 with errno ESTALE when the directory
 * was replaced as we read it. */
static int scan_dir_once(const char *dir, const dl_fs *fs, struct dl_range_scan *s, dirlock_error *err)
{
        s->n = 0;
        s->max_seq = 0;
        s->dir = dir;
        s->fs = fs;
        int fd = dl_fs_open_dir_sure(dir, fs->network);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (d == NULL) {
                if (fd >= 0)
                        close(fd);
                if (errno == ENOENT)
                        return 0;
                if (errno == ESTALE)
                        return -2;
                dl_fail(err, DIRLOCK_EIO, errno, "cannot read '%s'", dir);
                return -1;
        }
        struct dirent *de;
        int rc = 0, more;
        while ((more = dl_fs_next(d, &de)) > 0) {
                struct dl_range_entry e;
                if (!dl_range_parse_leaf(de->d_name, &e))
                        continue;
                e.judged = false;
                memcpy(e.leaf, de->d_name, DL_RANGE_LEAF_SIZE);
                if (e.seq > s->max_seq)
                        s->max_seq = e.seq;
                if (s->n == s->cap) {
                        size_t cap = s->cap ? s->cap * 2 : 16;
                        struct dl_range_entry *grown = realloc(s->e, cap * sizeof *grown);
                        if (grown == NULL) {
                                dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                                rc = -1;
                                break;
                        }
                        s->e = grown;
                        s->cap = cap;
                }
                s->e[s->n++] = e;
        }
        if (rc == 0 && more < 0) {
                /* A listing cut short never passes for a whole one. */
                rc = errno == ESTALE ? -2 : -1;
                if (rc == -1)
                        dl_fail(err, DIRLOCK_EIO, errno, "cannot read '%s'", dir);
        }
        closedir(d);
        return rc;
}

int dl_range_scan_dir(const struct dl_range_meta *m, struct dl_range_scan *s, dirlock_error *err)
{
        const char *dir = m->ranges_dir;
        for (int try = 0;; try++) {
                int rc = scan_dir_once(dir, m->fs, s, err);
                if (rc != -2)
                        return rc;
                if (try == DL_ESTALE_TRIES) {
                        dl_fail(err, DIRLOCK_EIO, ESTALE, "'%s' keeps changing as it is read", dir);
                        return -1;
                }
                dl_fs_refresh(dir); /* fsops.c */
        }
}

int dl_range_judge(const struct dl_range_scan *s, struct dl_range_entry *e, double stale_age,
                   dirlock_error *err)
{
        if (e->judged)
                return e->live;
        e->judged = true;
        e->live = 0;
        char *path = dl_join(s->dir, e->leaf, NULL);
        if (path == NULL) {
                dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                return -1;
        }
        double age;
        int rc = 0;
        if (dl_entry_read(path, &e->rec, &age) != 0) {
                if (errno != ENOENT && errno != EINVAL) { /* one we cannot read is never counted as gone */
                        dl_fail(err, DIRLOCK_EIO, errno, "cannot read range entry '%s'", path);
                        rc = -1;
                }
                /* else left meanwhile */
        } else if (!dl_entry_stale(&e->rec, age, stale_age, s->fs)) {
                e->live = true;
                rc = 1;
        } else if (dl_fs_unlink(path) != 0 && (errno == EPERM || errno == EACCES)) {
                char what[64];
                snprintf(what, sizeof what, "a range entry of %.16s...", e->leaf);
                dl_fail_unbreakable(err, what, &e->rec, errno);
                rc = -1;
        }
        free(path);
        return rc;
}

int dl_range_held(struct dl_range_meta *m, double stale_age, dl_record *one, const dl_time *deadline,
                  dirlock_error *err)
{
        if (dl_range_meta_take(m, deadline, err) != DIRLOCK_OK)
                return -1;
        int n = -1;
        struct dl_range_scan s = {0};
        if (dl_range_scan_dir(m, &s, err) == 0) {
                n = 0;
                for (size_t i = 0; i < s.n && n >= 0; i++) {
                        if (s.e[i].state != DL_RANGE_HELD)
                                continue;
                        int live = dl_range_judge(&s, &s.e[i], stale_age, err);
                        if (live < 0)
                                n = -1;
                        else if (live && n++ == 0)
                                *one = s.e[i].rec;
                }
        }
        dl_range_scan_free(&s);
        dl_range_meta_give(m);
        return n;
}

/* ---- from outside the holders ---------------------------------------------------- */

int dl_range_list(const char *lockdir, const char *name, double stale_age, dirlock_range_info **out,
                  size_t *count, dirlock_error *err)
{
        *out = NULL;
        *count = 0;
        if (stale_age <= 0)
                stale_age = DIRLOCK_DEFAULT_STALE_AGE;
        char *abs;
        unsigned lockdir_mode;
        int rc = dl_lockdir_prepare(lockdir, false, &abs, &lockdir_mode, err);
        if (rc != DIRLOCK_OK)
                return rc;
        char seed[DIRLOCK_TOKEN_LEN + 1];
        struct dl_range_meta m;
        rc = dl_random_token(seed, err);
        if (rc == DIRLOCK_OK)
                rc = dl_range_meta_init(&m, abs, lockdir_mode, name, seed, err);
        free(abs);
        if (rc != DIRLOCK_OK)
                return rc;
        struct stat st;
        if (dl_fs_stat(m.ranges_dir, &st) != 0 && errno == ENOENT) { /* no ranges */
                dl_range_meta_free(&m);
                *out = calloc(1, sizeof **out);
                return *out ? DIRLOCK_OK : dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        dl_time soon = dl_deadline(5);
        rc = dl_range_meta_take(&m, &soon, err);
        if (rc != DIRLOCK_OK) {
                dl_range_meta_free(&m);
                return rc;
        }
        struct dl_range_scan s = {0};
        long long now = dl_wall_ns();
        if (dl_range_scan_dir(&m, &s, err) != 0) {
                rc = err->code;
        } else if ((*out = calloc(s.n ? s.n : 1, sizeof **out)) == NULL) {
                rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        } else {
                size_t got = 0;
                for (size_t i = 0; i < s.n; i++) {
                        struct dl_range_entry *e = &s.e[i];
                        if (dl_range_judge(&s, e, stale_age, NULL) != 1)
                                continue; /* stale (broken now) or gone */
                        dirlock_range_info *r = &(*out)[got++];
                        r->lo = e->lo;
                        r->hi = e->hi;
                        r->mode = dl_range_mode_of_letter(e->mode);
                        r->waiting = e->state == DL_RANGE_WAITING;
                        r->upgrading = e->mode == DL_RANGE_UPGRADING;
                        dl_record_to_range(&e->rec, now, r);
                }
                *count = got;
        }
        dl_range_meta_give(&m);
        dl_range_scan_free(&s);
        dl_range_meta_free(&m);
        return rc;
}

unsigned dl_range_count_held(const char *lockdir, const char *name)
{
        dirlock_range_info *list;
        size_t n;
        if (dl_range_list(lockdir, name, DIRLOCK_DEFAULT_STALE_AGE, &list, &n, NULL) != DIRLOCK_OK)
                return 0;
        unsigned held = 0;
        for (size_t i = 0; i < n; i++)
                held += !list[i].waiting;
        free(list);
        return held;
}
