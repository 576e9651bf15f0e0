/* owner.c - who holds a lock: the owner record's text form (written as a
 * symlink's target, read back with readlink), this process's identity, and
 * whether a recorded owner is provably dead.
 *
 * Record text (one line, fields separated by single spaces, host last):
 *   dirlock1 pid=<pid> start=<ticks> token=<32 hex> acquired=<ns epoch>
 *            boot=<boot id> pidns=<inode> mode=<0|1|2> stale=<ms>
 *            [partner=<pid>:<ticks>] [tid=<tid>] host=<hostname>
 * `stale` is the holder's own stale age: a judge with a shorter one still
 * waits that long (dl_entry_stale), so callers with different settings
 * cannot break each other's fresh locks.  `partner` (only when there is
 * one) names a second process of the same host that holds the lock with
 * the recording one (dirlock_options.partner_pid): the command that
 * bin/dirlock runs.  `tid` (only when known) is the thread that took the
 * lock: deadlock detection counts a lock as held by that thread
 * (lib/dir/deadlock.c), and a record without it as held by no thread it
 * can prove waits.
 *
 * "Provably dead" needs the same host name, the same boot id and the same
 * pid namespace as ours; then the pid is looked up in /proc: gone, a
 * zombie, or a different start time (the pid was reused) all mean dead.
 * Anything we cannot see (another host, another container) is "cannot
 * tell", and only the stale age breaks such a lock. */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Identity of this machine and process.  Host, boot id and pid namespace do
 * not change while we run; the start time is per process and re-read after
 * fork (when the pid differs).  Guarded by a mutex: handles in separate
 * threads are independent. */
static struct {
        pthread_mutex_t mutex;
        bool have_static;
        char host[256];
        char boot_id[37];
        unsigned long long pidns;
        pid_t pid;
        unsigned long long start_time;
} self = {.mutex = PTHREAD_MUTEX_INITIALIZER};

static ssize_t read_small_file(const char *path, char *buf, size_t size)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t n;
        do
                n = read(fd, buf, size - 1);
        while (n < 0 && errno == EINTR);
        int saved = errno;
        close(fd);
        errno = saved;
        if (n >= 0)
                buf[n] = '\0';
        return n;
}

/* After fork() the child is a new process: forget the parent's pid (and
 * with it the start time and the token generator's seed) even if the child
 * later has a pid number the parent once had. */
static _Thread_local pid_t token_pid;
static _Thread_local pid_t cached_tid;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* This process's pid, asked once: getpid() is a system call, and a lock
 * asked for it five times a cycle.  0 until asked, and again in a forked
 * child (the pthread_atfork handler below runs there before fork()
 * returns, so the child never sees its parent's number).  A child made
 * without fork() -- vfork() or a raw clone -- must not use the library
 * before it execs, as for any library that keeps state. */
static _Atomic pid_t cached_pid;

static void forget_parent(void)
{
        pthread_mutex_init(&self.mutex, NULL); /* another thread may have held it */
        self.pid = 0;
        token_pid = 0;
        cached_pid = 0;
        cached_tid = 0; /* the forking thread is the child's only one */
}

static void register_atfork(void)
{
        pthread_atfork(NULL, NULL, forget_parent);
}

pid_t dl_self_pid(void)
{
        pid_t pid = cached_pid;
        if (pid != 0)
                return pid;
        /* The handler is in place before the pid is kept: a fork after this
         * point clears it. */
        pthread_once(&atfork_once, register_atfork);
        pid = getpid();
        cached_pid = pid;
        return pid;
}

pid_t dl_self_tid(void)
{
        if (cached_tid == 0) {
                pthread_once(&atfork_once, register_atfork);
                cached_tid = (pid_t)syscall(SYS_gettid);
        }
        return cached_tid;
}

/* Start time (field 22) and state (field 3) of /proc/<pid>/stat.  Returns
 * 0 with *start set, or -1 with errno (ENOENT when there is no such pid). */
static int read_proc_stat(pid_t pid, unsigned long long *start, char *state)
{
        char path[64], buf[1024];
        snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
        if (read_small_file(path, buf, sizeof buf) < 0)
                return -1;
        /* The command name may hold spaces and parentheses: skip to the last ')'. */
        char *p = strrchr(buf, ')');
        if (p == NULL || p[1] != ' ') {
                errno = EINVAL;
                return -1;
        }
        p += 2;
        *state = *p;
        for (int field = 3; field < 22; field++) {
                p = strchr(p, ' ');
                if (p == NULL) {
                        errno = EINVAL;
                        return -1;
                }
                p++;
        }
        *start = strtoull(p, NULL, 10);
        return 0;
}

unsigned long long dl_process_start_time(pid_t pid)
{
        unsigned long long start;
        char state;
        if (read_proc_stat(pid, &start, &state) != 0)
                return 0;
        return start;
}

static void load_identity_locked(void)
{
        pthread_once(&atfork_once, register_atfork);
        if (!self.have_static) {
                if (gethostname(self.host, sizeof self.host) != 0 || self.host[0] == '\0')
                        strcpy(self.host, "localhost");
                self.host[sizeof self.host - 1] = '\0';
                for (char *c = self.host; *c; c++)
                        if (*c == ' ' || *c == '\n')
                                *c = '_';
                char buf[64];
                if (read_small_file("/proc/sys/kernel/random/boot_id", buf, sizeof buf) >= 36) {
                        memcpy(self.boot_id, buf, 36);
                        self.boot_id[36] = '\0';
                } else {
                        strcpy(self.boot_id, "unknown");
                }
                struct stat st;
                self.pidns = stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
                self.have_static = true;
        }
        pid_t pid = dl_self_pid();
        if (self.pid != pid || self.start_time == 0) {
                /* Kept once known: a start time that could not be read
                 * (EMFILE) is asked again next time, and meanwhile
                 * recorded as 0, which no judge takes for a reused pid
                 * (dl_process_alive). */
                self.pid = pid;
                self.start_time = dl_process_start_time(pid);
        }
}

void dl_record_self(dl_record *rec, const char *token, int mode, double stale_age, pid_t partner,
                    unsigned long long partner_start)
{
        memset(rec, 0, sizeof *rec);
        pthread_mutex_lock(&self.mutex);
        load_identity_locked();
        rec->pid = self.pid;
        rec->start_time = self.start_time;
        memcpy(rec->boot_id, self.boot_id, sizeof rec->boot_id);
        rec->pidns = self.pidns;
        memcpy(rec->host, self.host, sizeof rec->host);
        pthread_mutex_unlock(&self.mutex);
        memcpy(rec->token, token, strnlen(token, sizeof rec->token - 1));
        rec->acquired_ns = dl_wall_ns();
        rec->mode = mode;
        rec->stale_ms = stale_age > 0 && stale_age < 1e12 ? (unsigned long long)(stale_age * 1e3) : 0;
        rec->partner = partner > 0 ? partner : 0;
        rec->partner_start = partner > 0 ? partner_start : 0;
        rec->tid = dl_self_tid();
}

/* The text form is written on every acquire (a view of the rw board
 * writes one per page), so it is built by hand: snprintf cost as much as
 * a failed lookup.  The output is what the format in this file's header
 * comment says, byte for byte. */
struct text_out {
        char *p, *end; /* end: the last byte, kept for the NUL */
};

static void put_str(struct text_out *o, const char *s)
{
        size_t n = strlen(s);
        if (o->p != NULL && n <= (size_t)(o->end - o->p)) {
                memcpy(o->p, s, n);
                o->p += n;
        } else {
                o->p = NULL;
        }
}

static void put_ull(struct text_out *o, unsigned long long v)
{
        char digits[24];
        char *d = digits + sizeof digits;
        *--d = '\0';
        do
                *--d = (char)('0' + v % 10);
        while ((v /= 10) != 0);
        put_str(o, d);
}

static void put_ll(struct text_out *o, long long v)
{
        if (v < 0) {
                put_str(o, "-");
                put_ull(o, 0ULL - (unsigned long long)v);
        } else {
                put_ull(o, (unsigned long long)v);
        }
}

int dl_record_format(const dl_record *rec, char *buf, size_t size)
{
        if (size == 0)
                return -1;
        struct text_out o = {buf, buf + size - 1};
        put_str(&o, "dirlock1 pid=");
        put_ll(&o, rec->pid);
        put_str(&o, " start=");
        put_ull(&o, rec->start_time);
        put_str(&o, " token=");
        put_str(&o, rec->token);
        put_str(&o, " acquired=");
        put_ll(&o, rec->acquired_ns);
        put_str(&o, " boot=");
        put_str(&o, rec->boot_id);
        put_str(&o, " pidns=");
        put_ull(&o, rec->pidns);
        put_str(&o, " mode=");
        put_ll(&o, rec->mode);
        put_str(&o, " stale=");
        put_ull(&o, rec->stale_ms);
        if (rec->partner > 0) {
                put_str(&o, " partner=");
                put_ll(&o, rec->partner);
                put_str(&o, ":");
                put_ull(&o, rec->partner_start);
        }
        if (rec->tid > 0) {
                put_str(&o, " tid=");
                put_ll(&o, rec->tid);
        }
        put_str(&o, " host=");
        put_str(&o, rec->host);
        if (o.p == NULL) {
                buf[0] = '\0';
                return -1;
        }
        *o.p = '\0';
        return (int)(o.p - buf);
}

/* Parsing: every field is required, in order, and must be well formed. */
static bool take_prefix(const char **p, const char *end, const char *prefix)
{
        size_t n = strlen(prefix);
        if ((size_t)(end - *p) < n || memcmp(*p, prefix, n) != 0)
                return false;
        *p += n;
        return true;
}

static bool take_ull(const char **p, const char *end, unsigned long long max, unsigned long long *out)
{
        unsigned long long v = 0;
        const char *s = *p;
        while (s < end && *s >= '0' && *s <= '9') {
                unsigned d = (unsigned)(*s - '0');
                if (d > max || v > (max - d) / 10)
                        return false;
                v = v * 10 + d;
                s++;
        }
        if (s == *p || s - *p > 20)
                return false;
        *p = s;
        *out = v;
        return true;
}

/* A token-like word: up to `max` characters of [0-9a-f-] (hex, boot ids). */
static bool take_word(const char **p, const char *end, char *out, size_t max, bool allow_unknown)
{
        const char *s = *p;
        size_t n = 0;
        while (s < end && *s != ' ') {
                char c = *s;
                bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-' ||
                          (allow_unknown && c >= 'a' && c <= 'z');
                if (!ok || n >= max)
                        return false;
                out[n++] = c;
                s++;
        }
        if (n == 0)
                return false;
        out[n] = '\0';
        *p = s;
        return true;
}

int dl_record_parse(const char *buf, size_t len, dl_record *rec)
{
        const char *p = buf, *end = buf + len;
        unsigned long long v;
        memset(rec, 0, sizeof *rec);
        if (!take_prefix(&p, end, "dirlock1 pid=") || !take_ull(&p, end, 0x7fffffff, &v) || v == 0)
                return -1;
        rec->pid = (pid_t)v;
        if (!take_prefix(&p, end, " start=") || !take_ull(&p, end, ~0ULL, &rec->start_time))
                return -1;
        if (!take_prefix(&p, end, " token=") || !take_word(&p, end, rec->token, 32, false) ||
            strlen(rec->token) != 32)
                return -1;
        if (!take_prefix(&p, end, " acquired=") || !take_ull(&p, end, 0x7fffffffffffffffULL, &v))
                return -1;
        rec->acquired_ns = (long long)v;
        if (!take_prefix(&p, end, " boot=") || !take_word(&p, end, rec->boot_id, 36, true))
                return -1;
        if (!take_prefix(&p, end, " pidns=") || !take_ull(&p, end, ~0ULL, &rec->pidns))
                return -1;
        if (!take_prefix(&p, end, " mode=") || !take_ull(&p, end, 2, &v))
                return -1;
        rec->mode = (int)v;
        if (!take_prefix(&p, end, " stale=") || !take_ull(&p, end, 1000000000000000ULL, &rec->stale_ms))
                return -1;
        if (take_prefix(&p, end, " partner=")) {
                if (!take_ull(&p, end, 0x7fffffff, &v) || v == 0 || !take_prefix(&p, end, ":") ||
                    !take_ull(&p, end, ~0ULL, &rec->partner_start))
                        return -1;
                rec->partner = (pid_t)v;
        }
        if (take_prefix(&p, end, " tid=")) {
                if (!take_ull(&p, end, 0x7fffffff, &v) || v == 0)
                        return -1;
                rec->tid = (pid_t)v;
        }
        if (!take_prefix(&p, end, " host="))
                return -1;
        size_t hl = (size_t)(end - p);
        if (hl == 0 || hl >= sizeof rec->host || memchr(p, '\0', hl) != NULL)
                return -1;
        memcpy(rec->host, p, hl);
        rec->host[hl] = '\0';
        return 0;
}

/* Threads of a process (the "Threads:" line of /proc/<pid>/status). */
static long thread_count(pid_t pid)
{
        char path[64], buf[2048];
        snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
        if (read_small_file(path, buf, sizeof buf) < 0)
                return 0;
        const char *t = strstr(buf, "\nThreads:");
        return t ? strtol(t + 10, NULL, 10) : 0;
}

int dl_record_same_host(const dl_record *rec)
{
        pthread_mutex_lock(&self.mutex);
        load_identity_locked();
        int same = strcmp(rec->host, self.host) == 0 && strcmp(rec->boot_id, self.boot_id) == 0 &&
                   strcmp(self.boot_id, "unknown") != 0 && rec->pidns == self.pidns && self.pidns != 0;
        pthread_mutex_unlock(&self.mutex);
        return same;
}

int dl_process_alive(pid_t pid, unsigned long long start_time)
{
        unsigned long long start;
        char state;
        if (read_proc_stat(pid, &start, &state) != 0) {
                if (errno != ENOENT)
                        return -1;
                /* /proc may hide other users' processes (hidepid): ask the kernel. */
                if (kill(pid, 0) == 0 || errno == EPERM)
                        return -1;
                return 0;
        }
        if (start_time == 0)
                return -1; /* recorded without its start time: the pid alone proves nothing */
        if (start != start_time)
                return 0; /* the pid was reused */
        if (state == 'Z' || state == 'X') {
                /* Exited and not yet reaped -- unless only the main thread
                 * exited (pthread_exit) and the others run on. */
                return thread_count(pid) > 1 ? 1 : 0;
        }
        return 1;
}

int dl_record_owner_alive(const dl_record *rec)
{
        if (!dl_record_same_host(rec))
                return -1;
        int alive = dl_process_alive(rec->pid, rec->start_time);
        if (alive != 0 || rec->partner <= 0)
                return alive;
        return dl_process_alive(rec->partner, rec->partner_start);
}

void dl_record_describe(const dl_record *rec, const char *role, char *out, size_t size)
{
        if (rec == NULL)
                snprintf(out, size, "%san owner without a readable record", role);
        else
                snprintf(out, size, "%spid %ld on %s", role, (long)rec->pid,
                         rec->host[0] != '\0' ? rec->host : "an unknown host");
}

void dl_record_to_owner(const dl_record *rec, dirlock_owner *owner)
{
        owner->pid = rec->pid;
        owner->start_time = rec->start_time;
        snprintf(owner->host, sizeof owner->host, "%s", rec->host);
        owner->acquired = (double)rec->acquired_ns / 1e9;
        owner->same_host = dl_record_same_host(rec);
        owner->owner_alive = rec->pid > 0 ? dl_record_owner_alive(rec) : -1;
        owner->partner = rec->partner;
}

int dl_record_partner_only(const dl_record *rec)
{
        return rec->partner > 0 && dl_record_same_host(rec) &&
               dl_process_alive(rec->pid, rec->start_time) == 0 &&
               dl_process_alive(rec->partner, rec->partner_start) == 1;
}

/* Tokens only need to be unique, never secret (they are visible in the
 * lock directory), so they come from a per-thread xoshiro256** generator
 * seeded with 256 bits from getrandom(): one system call per thread (and
 * again in a forked child, which must not repeat its parent's tokens)
 * instead of one per lock. */
static _Thread_local unsigned long long token_state[4];

static unsigned long long rotl(unsigned long long x, int k)
{
        return (x << k) | (x >> (64 - k));
}

static unsigned long long token_next(void)
{
        unsigned long long *s = token_state;
        unsigned long long result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = rotl(s[3], 45);
        return result;
}

int dl_random_token(char out[DIRLOCK_TOKEN_LEN + 1], dirlock_error *err)
{
        pid_t pid = dl_self_pid();
        if (token_pid != pid) {
                size_t got = 0;
                unsigned char *seed = (unsigned char *)token_state;
                while (got < sizeof token_state) {
                        ssize_t n = getrandom(seed + got, sizeof token_state - got, 0);
                        if (n < 0) {
                                if (errno == EINTR)
                                        continue;
                                return dl_fail(err, DIRLOCK_EIO, errno,
                                               "cannot get random bytes for a lock token");
                        }
                        got += (size_t)n;
                }
                if ((token_state[0] | token_state[1] | token_state[2] | token_state[3]) == 0)
                        token_state[0] = 1;
                token_pid = pid;
        }
        unsigned long long words[2] = {token_next(), token_next()};
        static const char hex[] = "0123456789abcdef";
        for (int i = 0; i < 32; i++)
                out[i] = hex[(words[i / 16] >> (4 * (i % 16))) & 15];
        out[32] = '\0';
        return DIRLOCK_OK;
}

unsigned long long dirlock_process_start(pid_t pid)
{
        if (pid <= 0) {
                errno = ESRCH;
                return 0;
        }
        unsigned long long start = dl_process_start_time(pid);
        if (start == 0 && (errno == ENOENT || errno == ESRCH))
                errno = ESRCH; /* no /proc entry, or one going as its process is reaped */
        return start;
}

int dirlock_process_alive(pid_t pid, unsigned long long start_time)
{
        return pid > 0 ? dl_process_alive(pid, start_time) : 0;
}
