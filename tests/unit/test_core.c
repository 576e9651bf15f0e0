/* test_core.c - unit tests of the exclusive lock in one process: names,
 * options, errors, try/timeout, release by a non-owner (fork), lost locks,
 * refresh, inspect, break, reentrancy, multi-locks, the owner record's
 * text form, two handles in two threads, and waits ended by a cancel
 * descriptor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dir.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char lockdir[256];

static int setup(void **state)
{
        (void)state;
        snprintf(lockdir, sizeof lockdir, "%s/dirlock-unit.XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (mkdtemp(lockdir) == NULL)
                return -1;
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", lockdir);
        return system(cmd) == 0 ? 0 : -1;
}

static double now_ms(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static dirlock *take(const char *name, double timeout)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = timeout;
        dirlock *h = NULL;
        dirlock_error e;
        int rc = dirlock_acquire(lockdir, name, &o, &h, &e);
        if (rc != DIRLOCK_OK)
                return NULL;
        return h;
}

static void test_names(void **state)
{
        (void)state;
        assert_true(dirlock_name_valid("a"));
        assert_true(dirlock_name_valid("board-1.messages_x"));
        char max[DIRLOCK_NAME_MAX + 2];
        memset(max, 'a', DIRLOCK_NAME_MAX);
        max[DIRLOCK_NAME_MAX] = '\0';
        assert_true(dirlock_name_valid(max));
        max[DIRLOCK_NAME_MAX] = 'a';
        max[DIRLOCK_NAME_MAX + 1] = '\0';
        assert_false(dirlock_name_valid(max));
        const char *bad[] = {"", ".", "..", ".hidden", "../x", "a/b", "a b", "a\nb", "ä", "a*", NULL};
        for (int i = 0; bad[i]; i++) {
                assert_false(dirlock_name_valid(bad[i]));
                dirlock *h = NULL;
                dirlock_error e;
                assert_int_equal(dirlock_acquire(lockdir, bad[i], NULL, &h, &e), DIRLOCK_ENAME);
                assert_int_equal(e.code, DIRLOCK_ENAME);
                assert_non_null(strstr(e.message, "invalid lock name"));
                assert_null(h);
        }
        assert_false(dirlock_name_valid(NULL));
        /* Nothing escaped the lock directory. */
        struct stat st;
        char path[512];
        snprintf(path, sizeof path, "%s/../x.lock", lockdir);
        assert_int_not_equal(stat(path, &st), 0);
}

struct cancel_later {
        int fd;
        int ms;
};

static void *cancel_later_fn(void *arg)
{
        const struct cancel_later *c = arg;
        usleep((useconds_t)c->ms * 1000);
        uint64_t one = 1;
        if (write(c->fd, &one, sizeof one) != (ssize_t)sizeof one)
                abort();
        return NULL;
}

/* Wait for `name` in `mode` (flock: the kernel lock) with a 5 s timeout
 * and an eventfd written after 100 ms: DIRLOCK_ECANCELED, long before the
 * timeout; and the handle, once acquired, does not keep the descriptor. */
static void cancel_case(const char *name, int mode, int policy, int use_flock)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.mode = DIRLOCK_EXCLUSIVE;
        o.timeout = 0;
        dirlock *holder = NULL, *b = NULL;
        dirlock_error e;
        int rc = use_flock ? dirlock_flock_acquire(lockdir, name, &o, &holder, &e)
                           : dirlock_acquire(lockdir, name, &o, &holder, &e);
        assert_int_equal(rc, DIRLOCK_OK);
        int efd = eventfd(0, EFD_CLOEXEC);
        assert_true(efd >= 0);
        struct cancel_later c = {efd, 100};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, cancel_later_fn, &c), 0);
        o.mode = mode;
        o.policy = policy;
        o.timeout = 5;
        o.flags = DIRLOCK_CANCEL_FD;
        o.cancel_fd = efd;
        double t0 = now_ms();
        rc = use_flock ? dirlock_flock_acquire(lockdir, name, &o, &b, &e)
                       : dirlock_acquire(lockdir, name, &o, &b, &e);
        double took = now_ms() - t0;
        pthread_join(th, NULL);
        assert_int_equal(rc, DIRLOCK_ECANCELED);
        assert_null(b);
        assert_non_null(strstr(e.message, "cancel"));
        assert_true(took >= 99 && took < 2000);
        /* Already readable: given up at once, still after one try... */
        t0 = now_ms();
        rc = use_flock ? dirlock_flock_acquire(lockdir, name, &o, &b, &e)
                       : dirlock_acquire(lockdir, name, &o, &b, &e);
        assert_int_equal(rc, DIRLOCK_ECANCELED);
        assert_true(now_ms() - t0 < 1000);
        /* ...which wins when the lock is free. */
        assert_int_equal(dirlock_release(holder, &e), DIRLOCK_OK);
        rc = use_flock ? dirlock_flock_acquire(lockdir, name, &o, &b, &e)
                       : dirlock_acquire(lockdir, name, &o, &b, &e);
        assert_int_equal(rc, DIRLOCK_OK);
        assert_int_equal(dirlock_release(b, &e), DIRLOCK_OK);
        close(efd);
}

static void test_cancel_fd(void **state)
{
        (void)state;
        cancel_case("cancel-x", DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 0);
        cancel_case("cancel-i", DIRLOCK_INTENT, DIRLOCK_POLICY_FAIR, 0);
        cancel_case("cancel-s", DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 0);
        cancel_case("cancel-r", DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_READER, 0);
        cancel_case("cancel-f", DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 1);
        /* The flag without a descriptor is refused. */
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_CANCEL_FD;
        o.cancel_fd = -1;
        dirlock *h = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(lockdir, "cancel-bad", &o, &h, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "cancel_fd"));
        /* So is a descriptor that is not open: an argument error at once,
         * not a wait that ends as if canceled. */
        int fd = eventfd(0, EFD_CLOEXEC);
        assert_true(fd >= 0);
        close(fd);
        o.cancel_fd = fd;
        o.timeout = 5;
        dirlock *holder = take("cancel-closed", 0);
        assert_non_null(holder);
        assert_int_equal(dirlock_acquire(lockdir, "cancel-closed", &o, &h, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "not an open descriptor"));
        dirlock_release(holder, NULL);
}

static void *release_later_fn(void *arg)
{
        usleep(150 * 1000);
        dirlock_release(arg, NULL);
        return NULL;
}

/* A cancel descriptor is for the acquire call only: the upgrade of an
 * intent lock taken with one waits for the readers even though the
 * descriptor is readable all along. */
static void test_cancel_fd_not_kept(void **state)
{
        (void)state;
        int efd = eventfd(1, EFD_CLOEXEC); /* readable from the start */
        assert_true(efd >= 0);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.mode = DIRLOCK_INTENT;
        o.timeout = 5;
        o.flags = DIRLOCK_CANCEL_FD;
        o.cancel_fd = efd;
        dirlock *h = NULL, *r = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(lockdir, "keep", &o, &h, &e), DIRLOCK_OK);
        dirlock_options ro = DIRLOCK_OPTIONS_INIT;
        ro.mode = DIRLOCK_SHARED;
        ro.timeout = 0;
        assert_int_equal(dirlock_acquire(lockdir, "keep", &ro, &r, &e), DIRLOCK_OK);
        pthread_t th;
        double t0 = now_ms();
        assert_int_equal(pthread_create(&th, NULL, release_later_fn, r), 0);
        assert_int_equal(dirlock_upgrade(h, NULL, &e), DIRLOCK_OK);
        assert_true(now_ms() - t0 >= 100);
        pthread_join(th, NULL);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        close(efd);
}

static void test_errors_have_text(void **state)
{
        (void)state;
        for (int c = 0; c < DIRLOCK_CODE_COUNT; c++) {
                assert_non_null(dirlock_strerror(c));
                assert_string_not_equal(dirlock_strerror(c), "unknown dirlock error");
        }
        assert_string_equal(dirlock_strerror(-1), "unknown dirlock error");
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.mode = 7;
        dirlock *h;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(lockdir, "x", &o, &h, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "mode"));
        o = (dirlock_options)DIRLOCK_OPTIONS_INIT;
        o.flags = 1u << 20;
        assert_int_equal(dirlock_acquire(lockdir, "x", &o, &h, &e), DIRLOCK_EINVAL);
}

static void test_lockdir_errors(void **state)
{
        (void)state;
        char path[512];
        /* Created when missing, with parents. */
        snprintf(path, sizeof path, "%s/new/deeper", lockdir);
        dirlock *h;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(path, "x", NULL, &h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        /* Not created with DIRLOCK_NO_MKDIR; the message names it. */
        snprintf(path, sizeof path, "%s/absent", lockdir);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_NO_MKDIR;
        assert_int_equal(dirlock_acquire(path, "x", &o, &h, &e), DIRLOCK_EIO);
        assert_int_equal(e.sys_errno, ENOENT);
        assert_non_null(strstr(e.message, path));
        /* A file in the way. */
        snprintf(path, sizeof path, "%s/file", lockdir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fclose(f);
        assert_int_equal(dirlock_acquire(path, "x", NULL, &h, &e), DIRLOCK_EIO);
        assert_non_null(strstr(e.message, "not a directory"));
}

static void test_try_and_busy(void **state)
{
        (void)state;
        dirlock *a = take("busy", 0);
        assert_non_null(a);
        dirlock *b = NULL;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock_error e;
        double t0 = now_ms();
        assert_int_equal(dirlock_acquire(lockdir, "busy", &o, &b, &e), DIRLOCK_EBUSY);
        assert_true(now_ms() - t0 < 50);
        assert_non_null(strstr(e.message, "held by pid"));
        assert_null(b);
        assert_int_equal(dirlock_check(a, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(a, &e), DIRLOCK_OK);
        b = take("busy", 0);
        assert_non_null(b);
        assert_int_equal(dirlock_release(b, &e), DIRLOCK_OK);
}

/* The timeout is honoured within 10 ms (best of three, on a busy box). */
static void test_timeout_accuracy(void **state)
{
        (void)state;
        dirlock *a = take("slow", 0);
        assert_non_null(a);
        double best = 1e9;
        for (int i = 0; i < 3; i++) {
                dirlock *b = NULL;
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.timeout = 0.25;
                dirlock_error e;
                double t0 = now_ms();
                assert_int_equal(dirlock_acquire(lockdir, "slow", &o, &b, &e), DIRLOCK_ETIMEDOUT);
                double late = now_ms() - t0 - 250;
                assert_true(late >= -0.5); /* never early */
                if (late < best)
                        best = late;
        }
        print_message("timeout overshoot: %.2f ms\n", best);
        assert_true(best < 10);
        dirlock_release(a, NULL);
}

static void test_fork_child_cannot_release(void **state)
{
        (void)state;
        dirlock *a = take("forked", 0);
        assert_non_null(a);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                dirlock_error e;
                int rc = dirlock_release(a, &e);
                _exit(rc == DIRLOCK_ENOTOWNER && strstr(e.message, "after fork") ? 0 : 1);
        }
        int status;
        waitpid(pid, &status, 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(dirlock_check(a, NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_release(a, NULL), DIRLOCK_OK);
}

/* A child after fork() does not hold its parent's lock: check says so as
 * release and refresh do. */
static void test_fork_child_check(void **state)
{
        (void)state;
        dirlock *a = take("forked-check", 0);
        assert_non_null(a);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                dirlock_error e;
                int c = dirlock_check(a, &e), r = dirlock_refresh(a, NULL);
                _exit(c == DIRLOCK_ENOTOWNER && r == DIRLOCK_ENOTOWNER && strstr(e.message, "after fork")
                          ? 0
                          : 1);
        }
        int status;
        waitpid(pid, &status, 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(dirlock_check(a, NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_release(a, NULL), DIRLOCK_OK);
}

static void test_lost_lock_leaves_new_holder(void **state)
{
        (void)state;
        dirlock *a = take("lost", 0);
        assert_non_null(a);
        dirlock_error e;
        /* An administrator breaks it by force; someone else takes it. */
        assert_int_equal(dirlock_break(lockdir, "lost", 0, 0, &e), DIRLOCK_ELIVE);
        assert_int_equal(dirlock_break(lockdir, "lost", 0, 1, &e), DIRLOCK_OK);
        dirlock *b = take("lost", 0);
        assert_non_null(b);
        assert_int_equal(dirlock_check(a, &e), DIRLOCK_ELOST);
        assert_int_equal(dirlock_refresh(a, &e), DIRLOCK_ELOST);
        assert_int_equal(dirlock_release(a, &e), DIRLOCK_ELOST);
        assert_non_null(strstr(e.message, "left alone"));
        /* The new holder is untouched. */
        assert_int_equal(dirlock_check(b, &e), DIRLOCK_OK);
        dirlock_owner o;
        assert_int_equal(dirlock_inspect(lockdir, "lost", 0, &o, &e), DIRLOCK_OK);
        assert_string_equal(o.token, dirlock_token(b));
        assert_int_equal(dirlock_release(b, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_inspect(lockdir, "lost", 0, &o, &e), DIRLOCK_ENOLOCK);
        assert_int_equal(dirlock_break(lockdir, "lost", 0, 1, &e), DIRLOCK_ENOLOCK);
}

static void sleep_ms(long ms)
{
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
}

static void test_inspect_and_refresh(void **state)
{
        (void)state;
        dirlock_options opts = DIRLOCK_OPTIONS_INIT;
        opts.timeout = 0;
        opts.stale_age = 0.2;
        dirlock *a = NULL;
        assert_int_equal(dirlock_acquire(lockdir, "seen", &opts, &a, NULL), DIRLOCK_OK);
        dirlock_owner o;
        dirlock_error e;
        assert_int_equal(dirlock_inspect(lockdir, "seen", 0, &o, &e), DIRLOCK_OK);
        assert_int_equal(o.pid, getpid());
        assert_int_equal(o.start_time, dl_process_start_time(getpid()));
        assert_int_equal(o.owner_alive, 1);
        assert_int_equal(o.same_host, 1);
        assert_false(o.stale);
        assert_string_equal(o.token, dirlock_token(a));
        assert_true(o.age >= 0 && o.age < 0.1);
        assert_int_equal(o.mode, DIRLOCK_EXCLUSIVE);
        /* Unrefreshed, it ages; refresh renews it. */
        sleep_ms(300);
        assert_int_equal(dirlock_inspect(lockdir, "seen", 0.2, &o, &e), DIRLOCK_OK);
        assert_true(o.age > 0.25);
        assert_true(o.stale);
        assert_int_equal(dirlock_refresh(a, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_inspect(lockdir, "seen", 0.2, &o, &e), DIRLOCK_OK);
        assert_true(o.age < 0.1);
        assert_false(o.stale);
        /* An mtime set into the past does not age a lock: the age counts
         * from the entry's last change (its ctime), INVARIANT C. */
        char path[512];
        snprintf(path, sizeof path, "%s/seen.lock/owner.%s", lockdir, dirlock_token(a));
        struct timespec old[2] = {{time(NULL) - 1000, 0}, {time(NULL) - 1000, 0}};
        assert_int_equal(utimensat(AT_FDCWD, path, old, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(dirlock_inspect(lockdir, "seen", 0.2, &o, &e), DIRLOCK_OK);
        assert_true(o.age < 0.1);
        dirlock_release(a, NULL);
}

/* The smallest stale age: below it, a clear refusal. */
static void test_min_stale_age(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.stale_age = DIRLOCK_MIN_STALE_AGE / 2;
        dirlock *h = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(lockdir, "tiny", &o, &h, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "below the smallest accepted"));
        assert_null(h);
        o.stale_age = DIRLOCK_MIN_STALE_AGE;
        assert_int_equal(dirlock_acquire(lockdir, "tiny", &o, &h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
}

static void test_reentrant(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.flags = DIRLOCK_REENTRANT;
        dirlock *h;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(lockdir, "re", &o, &h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_reacquire(h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_reacquire(h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        assert_null(take("re", 0)); /* one hold left */
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        dirlock *other = take("re", 0); /* free now */
        assert_non_null(other);
        dirlock_release(other, NULL);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_EBALANCE);
        assert_non_null(strstr(e.message, "more often"));
        /* Taken again through the same object, with a new token. */
        char old_token[33];
        strcpy(old_token, dirlock_token(h));
        assert_int_equal(dirlock_reacquire(h, &e), DIRLOCK_OK);
        assert_string_not_equal(old_token, dirlock_token(h));
        assert_int_equal(dirlock_free(h, &e), DIRLOCK_OK);
        other = take("re", 0);
        assert_non_null(other);
        dirlock_release(other, NULL);
        /* A plain handle refuses a second hold. */
        h = take("plain", 0);
        assert_int_equal(dirlock_reacquire(h, &e), DIRLOCK_EINVAL);
        dirlock_release(h, NULL);
}

static void test_multi(void **state)
{
        (void)state;
        const char *names[] = {"q", "p", "q", "r"};
        dirlock_set *s;
        dirlock_error e;
        assert_int_equal(dirlock_acquire_many(lockdir, names, 4, NULL, &s, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_set_count(s), 3); /* duplicates collapse */
        /* All or nothing: r is held, so {a, r} fails and leaves a free. */
        const char *other[] = {"a", "r"};
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0.05;
        dirlock_set *t = NULL;
        assert_int_equal(dirlock_acquire_many(lockdir, other, 2, &o, &t, &e), DIRLOCK_ETIMEDOUT);
        assert_null(t);
        dirlock *a = take("a", 0);
        assert_non_null(a);
        dirlock_release(a, NULL);
        assert_int_equal(dirlock_refresh_many(s, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release_many(s, &e), DIRLOCK_OK);
        const char *badnames[] = {"ok", "../bad"};
        assert_int_equal(dirlock_acquire_many(lockdir, badnames, 2, NULL, &s, &e), DIRLOCK_ENAME);
        assert_int_equal(dirlock_acquire_many(lockdir, badnames, 0, NULL, &s, &e), DIRLOCK_EINVAL);
}

static int body_calls;
static int body(void *arg)
{
        body_calls++;
        return *(int *)arg * 2;
}

static void test_with(void **state)
{
        (void)state;
        int in = 21, out = 0;
        dirlock_error e;
        assert_int_equal(dirlock_with(lockdir, "with", NULL, body, &in, &out, &e), DIRLOCK_OK);
        assert_int_equal(out, 42);
        assert_int_equal(body_calls, 1);
        dirlock *h = take("with", 0); /* released afterwards */
        assert_non_null(h);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        assert_int_equal(dirlock_with(lockdir, "with", &o, body, &in, &out, &e), DIRLOCK_EBUSY);
        assert_int_equal(body_calls, 1); /* not run without the lock */
        dirlock_release(h, NULL);
}

static void test_record_round_trip(void **state)
{
        (void)state;
        dl_record r, back;
        dl_record_self(&r, "0123456789abcdef0123456789abcdef", DIRLOCK_INTENT, 42.5, 0, 0);
        char text[DL_RECORD_MAX];
        int n = dl_record_format(&r, text, sizeof text);
        assert_true(n > 0);
        assert_int_equal(dl_record_parse(text, (size_t)n, &back), 0);
        assert_int_equal(back.pid, r.pid);
        assert_int_equal(back.start_time, r.start_time);
        assert_string_equal(back.token, r.token);
        assert_int_equal(back.acquired_ns, r.acquired_ns);
        assert_string_equal(back.boot_id, r.boot_id);
        assert_int_equal(back.pidns, r.pidns);
        assert_int_equal(back.mode, DIRLOCK_INTENT);
        assert_int_equal(back.stale_ms, 42500);
        assert_int_equal(back.partner, 0);
        assert_string_equal(back.host, r.host);
        assert_int_equal(dl_record_owner_alive(&back), 1);
        /* With a partner: it round-trips, and it keeps a dead recorder's
         * lock alive (dl_record_partner_only). */
        dl_record_self(&r, "0123456789abcdef0123456789abcdef", DIRLOCK_EXCLUSIVE, 1, getpid(),
                       dl_process_start_time(getpid()));
        n = dl_record_format(&r, text, sizeof text);
        assert_true(n > 0 && strstr(text, " partner=") != NULL);
        assert_int_equal(dl_record_parse(text, (size_t)n, &back), 0);
        assert_int_equal(back.partner, getpid());
        assert_int_equal(back.partner_start, dl_process_start_time(getpid()));
        assert_int_equal(dl_record_partner_only(&back), 0);
        back.start_time += 12345; /* the recorder "died": only the partner lives */
        assert_int_equal(dl_record_owner_alive(&back), 1);
        assert_int_equal(dl_record_partner_only(&back), 1);
        assert_false(dl_entry_stale(&back, 1e6, 1)); /* held whatever its age */
        back.partner_start += 12345;
        assert_int_equal(dl_record_owner_alive(&back), 0);
        assert_true(dl_entry_stale(&back, 0, 1));
        dl_record_self(&r, "0123456789abcdef0123456789abcdef", DIRLOCK_INTENT, 42.5, 0, 0);
        n = dl_record_format(&r, text, sizeof text);
        /* Malformed records are refused. */
        const char *bad[] = {"",
                             "dirlock1",
                             "dirlock1 pid=0 start=1",
                             "dirlock2 pid=1 start=1",
                             "dirlock1 pid=99999999999999999999999 start=1",
                             NULL};
        for (int i = 0; bad[i]; i++)
                assert_int_equal(dl_record_parse(bad[i], strlen(bad[i]), &back), -1);
        /* Truncated anywhere: refused. */
        for (int cut = 0; cut < n - 1; cut++)
                if (cut < n - (int)strlen(r.host))
                        assert_int_equal(dl_record_parse(text, (size_t)cut, &back), -1);
        /* A dead pid on this host is provably dead; another host is unknown. */
        assert_int_equal(dl_record_parse(text, (size_t)n, &back), 0);
        back.start_time += 12345;
        assert_int_equal(dl_record_owner_alive(&back), 0);
        strcpy(back.host, "elsewhere.example");
        assert_int_equal(dl_record_owner_alive(&back), -1);
}

/* A judge with a shorter stale age still waits the holder's own. */
static void test_recorded_stale_age(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.stale_age = 0.8;
        dirlock *a;
        assert_int_equal(dirlock_acquire(lockdir, "long", &o, &a, NULL), DIRLOCK_OK);
        sleep_ms(400); /* older than the judge's 0.2 s, younger than its own 0.8 s */
        dirlock *b = NULL;
        o.stale_age = 0.2;
        assert_int_equal(dirlock_acquire(lockdir, "long", &o, &b, NULL), DIRLOCK_EBUSY);
        assert_int_equal(dirlock_check(a, NULL), DIRLOCK_OK);
        sleep_ms(500); /* older than the holder's own 0.8 s */
        assert_int_equal(dirlock_acquire(lockdir, "long", &o, &b, NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_release(a, NULL), DIRLOCK_ELOST);
        dirlock_release(b, NULL);
}

/* A lock directory holding files that are not an owner record: busy while
 * young; once stale, exactly those files go and the lock is taken. */
static void test_foreign_content(void **state)
{
        (void)state;
        char path[512];
        snprintf(path, sizeof path, "%s/foreign.lock", lockdir);
        assert_int_equal(mkdir(path, 0777), 0);
        snprintf(path, sizeof path, "%s/foreign.lock/junk", lockdir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fclose(f);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.stale_age = 0.2;
        dirlock *h = NULL;
        assert_int_equal(dirlock_acquire(lockdir, "foreign", &o, &h, NULL), DIRLOCK_EBUSY);
        dirlock_owner own;
        assert_int_equal(dirlock_inspect(lockdir, "foreign", 0.2, &own, NULL), DIRLOCK_OK);
        assert_int_equal(own.pid, 0);
        dirlock_error e;
        assert_int_equal(dirlock_break(lockdir, "foreign", 0.2, 0, &e), DIRLOCK_ELIVE);
        sleep_ms(300);
        assert_int_equal(dirlock_acquire(lockdir, "foreign", &o, &h, NULL), DIRLOCK_OK);
        snprintf(path, sizeof path, "%s/foreign.lock/junk", lockdir);
        struct stat st;
        assert_int_not_equal(lstat(path, &st), 0);
        assert_int_equal(dirlock_release(h, NULL), DIRLOCK_OK);
        /* An empty lock directory is free: break says so and tidies it. */
        snprintf(path, sizeof path, "%s/empty.lock", lockdir);
        assert_int_equal(mkdir(path, 0777), 0);
        assert_int_equal(dirlock_break(lockdir, "empty", 0, 1, &e), DIRLOCK_ENOLOCK);
        assert_int_not_equal(lstat(path, &st), 0);
}

/* A reentrant intent handle taken again after a full release gets a new
 * token; its upgrade must hold readers off as the first one did. */
static void test_reentrant_intent_reacquire(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.mode = DIRLOCK_INTENT;
        o.flags = DIRLOCK_REENTRANT;
        dirlock *h;
        assert_int_equal(dirlock_acquire(lockdir, "reup", &o, &h, NULL), DIRLOCK_OK);
        dirlock_options r = DIRLOCK_OPTIONS_INIT;
        r.timeout = 0;
        r.mode = DIRLOCK_SHARED;
        dirlock *reader = NULL;
        for (int round = 0; round < 2; round++) {
                assert_int_equal(dirlock_upgrade(h, NULL, NULL), DIRLOCK_OK);
                assert_int_equal(dirlock_acquire(lockdir, "reup", &r, &reader, NULL), DIRLOCK_EBUSY);
                assert_int_equal(dirlock_release(h, NULL), DIRLOCK_OK);
                assert_int_equal(dirlock_acquire(lockdir, "reup", &r, &reader, NULL), DIRLOCK_OK);
                dirlock_release(reader, NULL);
                assert_int_equal(dirlock_reacquire(h, NULL), DIRLOCK_OK);
                assert_int_equal(dirlock_mode_of(h), DIRLOCK_INTENT);
        }
        assert_int_equal(dirlock_free(h, NULL), DIRLOCK_OK);
}

static void *sleeper(void *arg)
{
        (void)arg;
        struct timespec ts = {0, 600000000L};
        nanosleep(&ts, NULL);
        return NULL;
}

/* A holder whose main thread has exited (pthread_exit) while another runs
 * is a zombie in /proc, but alive: its lock must not be broken. */
static void test_main_thread_exit_keeps_lock(void **state)
{
        (void)state;
        int pipefd[2];
        assert_int_equal(pipe(pipefd), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                dirlock *h;
                if (dirlock_acquire(lockdir, "threads", NULL, &h, NULL) != DIRLOCK_OK)
                        _exit(1);
                pthread_t t;
                pthread_create(&t, NULL, sleeper, NULL);
                if (write(pipefd[1], "x", 1) != 1)
                        _exit(1);
                pthread_exit(NULL);
        }
        char c;
        assert_int_equal(read(pipefd[0], &c, 1), 1);
        struct timespec ts = {0, 150000000L};
        nanosleep(&ts, NULL);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *h = NULL;
        assert_int_equal(dirlock_acquire(lockdir, "threads", &o, &h, NULL), DIRLOCK_EBUSY);
        int status;
        waitpid(pid, &status, 0);
        assert_int_equal(dirlock_acquire(lockdir, "threads", &o, &h, NULL), DIRLOCK_OK); /* dead now */
        dirlock_release(h, NULL);
        close(pipefd[0]);
        close(pipefd[1]);
}

struct thread_arg {
        const char *name;
        int iterations;
        int failures;
};

static void *thread_body(void *p)
{
        struct thread_arg *a = p;
        for (int i = 0; i < a->iterations; i++) {
                dirlock *h = NULL;
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.timeout = 10;
                if (dirlock_acquire(lockdir, a->name, &o, &h, NULL) != DIRLOCK_OK ||
                    dirlock_release(h, NULL) != DIRLOCK_OK)
                        a->failures++;
        }
        return NULL;
}

/* Separate handles in separate threads: independent names never interfere,
 * one shared name is handed over between the threads. */
static void test_threads(void **state)
{
        (void)state;
        struct thread_arg args[4] = {{"t1", 200, 0}, {"t2", 200, 0}, {"shared", 200, 0}, {"shared", 200, 0}};
        pthread_t th[4];
        for (int i = 0; i < 4; i++)
                pthread_create(&th[i], NULL, thread_body, &args[i]);
        for (int i = 0; i < 4; i++) {
                pthread_join(th[i], NULL);
                assert_int_equal(args[i].failures, 0);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_names),
            cmocka_unit_test(test_errors_have_text),
            cmocka_unit_test(test_lockdir_errors),
            cmocka_unit_test(test_try_and_busy),
            cmocka_unit_test(test_timeout_accuracy),
            cmocka_unit_test(test_fork_child_cannot_release),
            cmocka_unit_test(test_fork_child_check),
            cmocka_unit_test(test_min_stale_age),
            cmocka_unit_test(test_lost_lock_leaves_new_holder),
            cmocka_unit_test(test_inspect_and_refresh),
            cmocka_unit_test(test_reentrant),
            cmocka_unit_test(test_multi),
            cmocka_unit_test(test_with),
            cmocka_unit_test(test_record_round_trip),
            cmocka_unit_test(test_threads),
            cmocka_unit_test(test_recorded_stale_age),
            cmocka_unit_test(test_foreign_content),
            cmocka_unit_test(test_main_thread_exit_keeps_lock),
            cmocka_unit_test(test_reentrant_intent_reacquire),
            cmocka_unit_test(test_cancel_fd),
            cmocka_unit_test(test_cancel_fd_not_kept),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
