/* test_redis.c - unit tests of lock spaces on a Redis server
 * (lib/redis/), against a private redis-server this program starts on
 * a unix socket in a temporary directory and kills at the end: the error
 * mapping (a server that is not there, one that refuses the password or
 * the database, a key of the wrong type under the prefix, a script error,
 * a server that forgot its scripts), and the API as the directory backend
 * offers it (fences, owner records, upgrade and downgrade, reentrant
 * handles, cancel, a second handle of one's own lock (DIRLOCK_EDEADLK),
 * list and cleanup, a forked child's own connection, a
 * release that gets no answer, a lock the server lost in a FLUSHALL or a
 * restart, pending acquires of one thread each on a connection of its
 * own), and the board's kept view handle on such a space.
 * Skipped when redis-server is not installed or the library was built
 * without Redis support. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../cgi-bin/config.h"
#include "../../cgi-bin/locking.h"
#include "dirlock.h"
#include "dirlock_async.h"
#include "dirlock_fence.h"
#include "dirlock_range.h"
#include "dirlock_rw.h"
#include "redis_server.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[256], sock[300], space[400];
static pid_t server = -1;
static const char *skip_why;

static void sleep_ms(double ms)
{
        struct timespec ts = {(time_t)(ms / 1e3), (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
}

/* Run redis-cli on our socket with the given arguments; its output in
 * out (may be NULL).  0 on success. */
static int cli(char *out, size_t size, const char *args)
{
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "redis-cli -s '%s' %s 2>&1", sock, args);
        FILE *p = popen(cmd, "r");
        if (p == NULL)
                return -1;
        size_t n = out ? fread(out, 1, size - 1, p) : 0;
        if (out)
                out[n] = '\0';
        char sink[256];
        while (out == NULL && fread(sink, 1, sizeof sink, p) > 0)
                ;
        return pclose(p) == 0 ? 0 : -1;
}

static int start_server(void)
{
        return redis_server_start(sock, dir, &server);
}

static void stop_server(void)
{
        if (server > 0) {
                kill(server, SIGCONT);
                kill(server, SIGKILL);
                waitpid(server, NULL, 0);
        }
        server = -1;
}

static int setup(void **state)
{
        (void)state;
        snprintf(dir, sizeof dir, "%s/dirlock-redis.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (mkdtemp(dir) == NULL)
                return -1;
        snprintf(sock, sizeof sock, "%s/redis.sock", dir);
        snprintf(space, sizeof space, "redis+unix://%s", sock);
        dirlock_error e;
        dirlock_owner o;
        if (system("command -v redis-server >/dev/null 2>&1") != 0)
                skip_why = "redis-server is not installed";
        else if (dirlock_inspect("redis+unix:///nonexistent", "x", 0, &o, &e) == DIRLOCK_EINVAL &&
                 strstr(e.message, "no Redis support") != NULL)
                skip_why = "the library was built without Redis support";
        else if (start_server() != 0)
                return -1;
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        stop_server();
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

#define NEED_REDIS()                                                                                         \
        do {                                                                                                 \
                if (skip_why != NULL) {                                                                      \
                        print_message("skipped: %s\n", skip_why);                                            \
                        skip();                                                                              \
                }                                                                                            \
        } while (0)

static dirlock *take_in(const char *sp, const char *name, int mode, double timeout, dirlock_error *e)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = timeout;
        o.mode = mode;
        dirlock *h = NULL;
        int rc = dirlock_acquire(sp, name, &o, &h, e);
        return rc == DIRLOCK_OK ? h : NULL;
}

static unsigned long long fence_of(dirlock *h)
{
        unsigned long long f = 0;
        dirlock_error e;
        assert_int_equal(dirlock_fence(h, &f, &e), DIRLOCK_OK);
        return f;
}

/* ---- errors -------------------------------------------------------------- */

static void test_no_server(void **state)
{
        (void)state;
        NEED_REDIS();
        char other[400];
        snprintf(other, sizeof other, "redis+unix://%s/none.sock", dir);
        dirlock_error e;
        assert_null(take_in(other, "x", DIRLOCK_EXCLUSIVE, 0, &e));
        assert_int_equal(e.code, DIRLOCK_ESERVER);
        assert_non_null(strstr(e.message, "cannot connect"));
        assert_non_null(strstr(e.message, "none.sock"));
        assert_string_equal(dirlock_strerror(DIRLOCK_ESERVER), "lock server unreachable or not answering");
        /* TCP, a port nobody listens on: refused, and the password never shown. */
        assert_null(take_in("redis://:hunter2@127.0.0.1:1/0", "x", DIRLOCK_EXCLUSIVE, 0, &e));
        assert_int_equal(e.code, DIRLOCK_ESERVER);
        assert_null(strstr(e.message, "hunter2"));
        assert_non_null(strstr(e.message, "redis://:***@127.0.0.1:1/0"));
}

/* The server paused for `ms` (SIGSTOP, then SIGCONT from a child). */
static pid_t pause_server(double ms)
{
        kill(server, SIGSTOP);
        pid_t waker = fork();
        if (waker == 0) {
                sleep_ms(ms);
                kill(server, SIGCONT);
                _exit(0);
        }
        return waker;
}

/* A paused server: a reply slower than a read's receive timeout (100 ms)
 * is still waited for while the call has time, and a call whose time is
 * up (timeout 0: one round trip's grace) fails even though the reply
 * would come later.  (Over TCP, where replies are read with blocking
 * reads, in core-redis.t.) */
static void test_slow_reply(void **state)
{
        (void)state;
        NEED_REDIS();
        dirlock_error e;
        dirlock *warm = take_in(space, "slow", DIRLOCK_EXCLUSIVE, 0, &e); /* connected, scripts loaded */
        assert_non_null(warm);
        assert_int_equal(dirlock_release(warm, &e), DIRLOCK_OK);
        pid_t waker = pause_server(400);
        dirlock *h = take_in(space, "slow", DIRLOCK_EXCLUSIVE, 5, &e);
        waitpid(waker, NULL, 0);
        assert_non_null(h);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        waker = pause_server(1500);
        assert_null(take_in(space, "slow", DIRLOCK_EXCLUSIVE, 0, &e));
        int code = e.code;
        waitpid(waker, NULL, 0);
        assert_int_equal(code, DIRLOCK_ESERVER);
        assert_non_null(strstr(e.message, "no answer"));
        /* The next call works (not on "slow": the server ran the abandoned
         * request when it went on, and that token holds it now). */
        h = take_in(space, "slow2", DIRLOCK_EXCLUSIVE, 0, &e);
        assert_non_null(h);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
}

static void test_auth_and_db_refused(void **state)
{
        (void)state;
        NEED_REDIS();
        dirlock_error e;
        char sp[500];
        /* No password configured: AUTH is refused. */
        snprintf(sp, sizeof sp, "redis+unix://:wrong@%s", sock);
        assert_null(take_in(sp, "x", DIRLOCK_EXCLUSIVE, 0, &e));
        assert_int_equal(e.code, DIRLOCK_EAUTH);
        assert_null(strstr(e.message, "wrong@"));
        /* A database the server does not have. */
        snprintf(sp, sizeof sp, "redis+unix://%s?db=999", sock);
        assert_null(take_in(sp, "x", DIRLOCK_EXCLUSIVE, 0, &e));
        assert_int_equal(e.code, DIRLOCK_EAUTH);
        assert_non_null(strstr(e.message, "database 999"));
        /* A server that wants a password: none given, a wrong one, the right one. */
        assert_int_equal(cli(NULL, 0, "config set requirepass s3cret"), 0);
        assert_null(take_in(space, "x", DIRLOCK_EXCLUSIVE, 0, &e));
        assert_int_equal(e.code, DIRLOCK_EAUTH);
        snprintf(sp, sizeof sp, "redis+unix://:nope@%s", sock);
        assert_null(take_in(sp, "x", DIRLOCK_EXCLUSIVE, 0, &e));
        assert_int_equal(e.code, DIRLOCK_EAUTH);
        assert_non_null(strstr(e.message, "refused the credentials"));
        snprintf(sp, sizeof sp, "redis+unix://:s3cret@%s", sock);
        dirlock *h = take_in(sp, "x", DIRLOCK_EXCLUSIVE, 0, &e);
        assert_non_null(h);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        assert_int_equal(cli(NULL, 0, "-a s3cret --no-auth-warning config set requirepass ''"), 0);
}

static void test_wrong_type_and_script_error(void **state)
{
        (void)state;
        NEED_REDIS();
        dirlock_error e;
        /* A key dirlock did not write: a list where the reader set goes. */
        assert_int_equal(cli(NULL, 0, "rpush '{dirlock}:planted:r' x"), 0);
        assert_null(take_in(space, "planted", DIRLOCK_EXCLUSIVE, 0, &e));
        assert_int_equal(e.code, DIRLOCK_EDATA);
        assert_non_null(strstr(e.message, "wrong type"));
        assert_non_null(strstr(e.message, "planted"));
        dirlock_owner o;
        assert_int_equal(dirlock_inspect(space, "planted", 0, &o, &e), DIRLOCK_EDATA);
        /* A fence counter that holds no number: the script fails, nothing is taken. */
        assert_int_equal(cli(NULL, 0, "set '{dirlock}:badfence:f' abc"), 0);
        assert_null(take_in(space, "badfence", DIRLOCK_EXCLUSIVE, 0, &e));
        assert_int_equal(e.code, DIRLOCK_EDATA);
        assert_non_null(strstr(e.message, "no number"));
        char out[64];
        assert_int_equal(cli(out, sizeof out, "exists '{dirlock}:badfence:w'"), 0);
        assert_int_equal(atoi(out), 0); /* the script's error undid nothing it had not done */
        assert_int_equal(cli(NULL, 0, "del '{dirlock}:planted:r' '{dirlock}:badfence:f'"), 0);
}

/* SCRIPT FLUSH (or a restart) forgets the scripts: they are sent again. */
static void test_noscript(void **state)
{
        (void)state;
        NEED_REDIS();
        dirlock_error e;
        dirlock *h = take_in(space, "ns", DIRLOCK_EXCLUSIVE, 0, &e);
        assert_non_null(h);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        assert_int_equal(cli(NULL, 0, "script flush"), 0);
        h = take_in(space, "ns", DIRLOCK_EXCLUSIVE, 0, &e);
        assert_non_null(h);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
}

/* ---- the API ---------------------------------------------------------------- */

static void test_fences(void **state)
{
        (void)state;
        NEED_REDIS();
        dirlock_error e;
        unsigned long long prev = 0;
        for (int i = 0; i < 10; i++) {
                dirlock *h = take_in(space, "fen", DIRLOCK_EXCLUSIVE, 0, &e);
                assert_non_null(h);
                unsigned long long f = fence_of(h);
                assert_true(f > prev);
                assert_int_equal(fence_of(h), f);
                prev = f;
                assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        }
        /* Readers at once: distinct fences. */
        dirlock *a = take_in(space, "fen", DIRLOCK_SHARED, 0, &e),
                *b = take_in(space, "fen", DIRLOCK_SHARED, 0, &e);
        assert_non_null(a);
        assert_non_null(b);
        assert_true(fence_of(a) != fence_of(b));
        assert_true(fence_of(a) > prev && fence_of(b) > prev);
        dirlock_release(a, NULL);
        dirlock_release(b, NULL);
        /* The counter lost (a server that lost its data): still growing. */
        assert_int_equal(cli(NULL, 0, "flushall"), 0);
        dirlock *h = take_in(space, "fen", DIRLOCK_EXCLUSIVE, 0, &e);
        assert_true(fence_of(h) > prev);
        dirlock_release(h, NULL);
}

/* Fences stop at DIRLOCK_FENCE_MAX (2^53 - 1, where a Lua number stops
 * counting by one): the last is handed out once; a counter at or past it
 * fails the acquire with DIRLOCK_EDATA, takes nothing and stays as it
 * was -- where it used to hand out 2^53 again and again.  A release that
 * would grant the lock to a waiter still succeeds; the waiter hears why. */
static void test_fence_limit(void **state)
{
        (void)state;
        NEED_REDIS();
        dirlock_error e;
        char out[64];
        assert_int_equal(cli(NULL, 0, "set '{dirlock}:lim:f' 9007199254740990"), 0);
        dirlock *h = take_in(space, "lim", DIRLOCK_EXCLUSIVE, 0, &e);
        assert_non_null(h);
        assert_true(fence_of(h) == DIRLOCK_FENCE_MAX);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        static const char *const corrupt[] = {"9007199254740991",
                                              "9007199254740992",
                                              "9007199254740993",
                                              "18446744073709551616",
                                              "1e300",
                                              "-5"};
        for (size_t i = 0; i < sizeof corrupt / sizeof corrupt[0]; i++) {
                char cmd[96];
                snprintf(cmd, sizeof cmd, "set '{dirlock}:lim:f' '%s'", corrupt[i]);
                assert_int_equal(cli(NULL, 0, cmd), 0);
                for (int round = 0; round < 2; round++) { /* never twice the same fence */
                        h = take_in(space, "lim", DIRLOCK_EXCLUSIVE, 0, &e);
                        if (h != NULL)
                                fail_msg("counter %s: taken with fence %llu", corrupt[i], fence_of(h));
                        assert_int_equal(e.code, DIRLOCK_EDATA);
                        assert_non_null(strstr(e.message, "fence counter"));
                }
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.timeout = 0;
                assert_int_equal(dirlock_acquire_range(space, "lim", 0, 1, &o, &h, &e), DIRLOCK_EDATA);
                assert_int_equal(cli(out, sizeof out, "get '{dirlock}:lim:f'"), 0);
                out[strcspn(out, "\n")] = '\0';
                assert_string_equal(out, corrupt[i]); /* left as it was */
                assert_int_equal(cli(out, sizeof out, "exists '{dirlock}:lim:w'"), 0);
                assert_int_equal(atoi(out), 0);
        }
        /* A waiter the release would grant the lock to. */
        assert_int_equal(cli(NULL, 0, "del '{dirlock}:lim:f'"), 0);
        h = take_in(space, "lim", DIRLOCK_EXCLUSIVE, 0, &e);
        assert_non_null(h);
        pid_t child = fork();
        if (child == 0) {
                dirlock *w = take_in(space, "lim", DIRLOCK_EXCLUSIVE, 10, &e);
                _exit(w != NULL ? 1 : e.code == DIRLOCK_EDATA ? 0 : 2);
        }
        for (int i = 0; i < 500; i++) { /* until it is queued */
                assert_int_equal(cli(out, sizeof out, "zcard '{dirlock}:lim:q'"), 0);
                if (atoi(out) == 1)
                        break;
                sleep_ms(10);
        }
        assert_int_equal(atoi(out), 1);
        assert_int_equal(cli(NULL, 0, "set '{dirlock}:lim:f' 9007199254740991"), 0);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        int st;
        assert_int_equal(waitpid(child, &st, 0), child);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0); /* the waiter: DIRLOCK_EDATA */
        assert_int_equal(cli(NULL, 0, "del '{dirlock}:lim:f'"), 0);
}

static void test_owner_and_status(void **state)
{
        (void)state;
        NEED_REDIS();
        dirlock_error e;
        dirlock *x = take_in(space, "own", DIRLOCK_EXCLUSIVE, 0, &e);
        assert_non_null(x);
        dirlock_owner o;
        assert_int_equal(dirlock_inspect(space, "own", 0, &o, &e), DIRLOCK_OK);
        assert_int_equal(o.pid, getpid());
        assert_true(o.start_time > 0);
        assert_string_equal(o.token, dirlock_token(x));
        assert_int_equal(o.same_host, 1);
        assert_int_equal(o.owner_alive, 1);
        assert_int_equal(o.mode, DIRLOCK_EXCLUSIVE);
        assert_true(o.age >= 0 && o.age < 5);
        assert_true(o.acquired > 1e9);
        /* A live owner's lock is not broken without force. */
        assert_int_equal(dirlock_break(space, "own", 0, 0, &e), DIRLOCK_ELIVE);
        dirlock *r = take_in(space, "rd", DIRLOCK_SHARED, 0, &e);
        dirlock_owner *list;
        size_t n;
        assert_int_equal(dirlock_list(space, 0, &list, &n, &e), DIRLOCK_OK);
        assert_int_equal(n, 2);
        assert_string_equal(list[0].name, "own");
        assert_string_equal(list[1].name, "rd");
        assert_int_equal(list[1].readers, 1);
        free(list);
        /* Forced: the holder learns it. */
        assert_int_equal(dirlock_break(space, "own", 0, 1, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_check(x, &e), DIRLOCK_ELOST);
        assert_int_equal(dirlock_release(x, &e), DIRLOCK_ELOST);
        assert_int_equal(dirlock_release(r, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_inspect(space, "own", 0, &o, &e), DIRLOCK_ENOLOCK);
        assert_int_equal(dirlock_list(space, 0, &list, &n, &e), DIRLOCK_OK);
        assert_int_equal(n, 0);
        free(list);
}

/* A lock the server no longer has -- FLUSHALL, or a restart without
 * persistence -- is lost, and the message says the server lost it, not
 * that it was broken as stale (which a lock broken by another still
 * says): for check, refresh, release, whole locks and ranges. */
static void test_lost_by_the_server(void **state)
{
        (void)state;
        NEED_REDIS();
        dirlock_error e;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        for (int how = 0; how < 2; how++) {
                dirlock *h = take_in(space, "gone", DIRLOCK_EXCLUSIVE, 0, &e);
                dirlock *s = take_in(space, "gone-s", DIRLOCK_SHARED, 0, &e), *r = NULL;
                assert_non_null(h);
                assert_non_null(s);
                assert_int_equal(dirlock_acquire_range(space, "gone-r", 0, 1, &o, &r, &e), DIRLOCK_OK);
                if (how == 0) {
                        assert_int_equal(cli(NULL, 0, "flushall"), 0);
                } else {
                        stop_server();
                        assert_int_equal(start_server(), 0);
                }
                dirlock *all[3] = {h, s, r};
                for (int i = 0; i < 3; i++) {
                        assert_int_equal(dirlock_check(all[i], &e), DIRLOCK_ELOST);
                        if (strstr(e.message, "the Redis server no longer has it") == NULL)
                                fail_msg("%s, check %d: %s", how ? "restart" : "flushall", i, e.message);
                        assert_int_equal(dirlock_refresh(all[i], &e), DIRLOCK_ELOST);
                        assert_non_null(strstr(e.message, "no longer has it"));
                        assert_int_equal(dirlock_release(all[i], &e), DIRLOCK_ELOST);
                        assert_non_null(strstr(e.message, "no longer has it"));
                        assert_null(strstr(e.message, "stale"));
                }
        }
        /* Broken by another: still said so. */
        dirlock *h = take_in(space, "gone", DIRLOCK_EXCLUSIVE, 0, &e);
        assert_non_null(h);
        assert_int_equal(dirlock_break(space, "gone", 0, 1, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_check(h, &e), DIRLOCK_ELOST);
        assert_non_null(strstr(e.message, "broken as stale"));
        assert_null(strstr(e.message, "no longer has"));
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_ELOST);
        assert_non_null(strstr(e.message, "broken as stale"));
}

/* A dead owner on this host: broken at once by the next taker, by break
 * without force, and by cleanup. */
static void test_dead_owner(void **state)
{
        (void)state;
        NEED_REDIS();
        for (int round = 0; round < 3; round++) {
                int p[2];
                assert_int_equal(pipe(p), 0);
                pid_t child = fork();
                if (child == 0) {
                        dirlock_error e;
                        dirlock_options o = DIRLOCK_OPTIONS_INIT;
                        o.timeout = 0;
                        dirlock *h;
                        if (dirlock_acquire(space, "dead", &o, &h, &e) != DIRLOCK_OK) {
                                fprintf(stderr, "child: %s\n", e.message);
                                _exit(1);
                        }
                        _exit(write(p[1], "x", 1) == 1 ? 0 : 1);
                }
                close(p[1]);
                char c;
                assert_int_equal(read(p[0], &c, 1), 1);
                int st;
                waitpid(child, &st, 0); /* exits holding it */
                close(p[0]);
                dirlock_error e;
                if (round == 0) {
                        dirlock *h = take_in(space, "dead", DIRLOCK_EXCLUSIVE, 2, &e);
                        assert_non_null(h);
                        dirlock_release(h, NULL);
                } else if (round == 1) {
                        assert_int_equal(dirlock_break(space, "dead", 0, 0, &e), DIRLOCK_OK);
                } else {
                        assert_int_equal(dirlock_cleanup(space, &e), DIRLOCK_OK);
                        dirlock_owner o;
                        assert_int_equal(dirlock_inspect(space, "dead", 0, &o, &e), DIRLOCK_ENOLOCK);
                }
        }
}

static void test_upgrade_downgrade(void **state)
{
        (void)state;
        NEED_REDIS();
        dirlock_error e;
        dirlock *i = take_in(space, "ud", DIRLOCK_INTENT, 0, &e);
        assert_non_null(i);
        dirlock *r = take_in(space, "ud", DIRLOCK_SHARED, 0, &e);
        assert_non_null(r);
        assert_int_equal(dirlock_upgrade(r, NULL, &e), DIRLOCK_EUPGRADE);
        dirlock_options quick = DIRLOCK_OPTIONS_INIT;
        quick.timeout = 0.2;
        assert_int_equal(dirlock_upgrade(i, &quick, &e), DIRLOCK_ETIMEDOUT); /* a reader is in */
        assert_int_equal(dirlock_mode_of(i), DIRLOCK_INTENT);                /* kept its intent */
        dirlock *r2 = take_in(space, "ud", DIRLOCK_SHARED, 0, &e);           /* readers still enter */
        assert_non_null(r2);
        dirlock_release(r2, NULL);
        dirlock_release(r, NULL);
        assert_int_equal(dirlock_upgrade(i, &quick, &e), DIRLOCK_OK);
        assert_null(take_in(space, "ud", DIRLOCK_SHARED, 0, &e));
        assert_int_equal(e.code, DIRLOCK_EBUSY);
        assert_int_equal(dirlock_downgrade(i, &e), DIRLOCK_OK);
        r = take_in(space, "ud", DIRLOCK_SHARED, 0, &e);
        assert_non_null(r);
        assert_null(take_in(space, "ud", DIRLOCK_EXCLUSIVE, 0, &e));
        assert_int_equal(dirlock_downgrade(i, &e), DIRLOCK_EINVAL);
        dirlock_release(r, NULL);
        assert_int_equal(dirlock_release(i, &e), DIRLOCK_OK);
        /* upgraded intent -> intent: readers enter, writers and intents wait */
        i = take_in(space, "ud", DIRLOCK_INTENT, 0, &e);
        assert_non_null(i);
        assert_int_equal(dirlock_upgrade(i, &quick, &e), DIRLOCK_OK);
        assert_null(take_in(space, "ud", DIRLOCK_SHARED, 0, &e));
        assert_int_equal(dirlock_downgrade_intent(i, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_mode_of(i), DIRLOCK_INTENT);
        r = take_in(space, "ud", DIRLOCK_SHARED, 0, &e);
        assert_non_null(r);
        assert_null(take_in(space, "ud", DIRLOCK_EXCLUSIVE, 0, &e));
        assert_int_equal(e.code, DIRLOCK_EBUSY);
        assert_null(take_in(space, "ud", DIRLOCK_INTENT, 0, &e));
        dirlock_release(r, NULL);
        assert_int_equal(dirlock_upgrade(i, &quick, &e), DIRLOCK_OK); /* and up again */
        assert_null(take_in(space, "ud", DIRLOCK_SHARED, 0, &e));
        assert_int_equal(dirlock_release(i, &e), DIRLOCK_OK);
        dirlock *x = take_in(space, "ud", DIRLOCK_EXCLUSIVE, 0, &e);
        assert_non_null(x);
        assert_int_equal(dirlock_downgrade_intent(x, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_release(x, &e), DIRLOCK_OK);
}

/* The upgrade waits for the reader that is in, and is woken when it goes. */
static void test_upgrade_wakes(void **state)
{
        (void)state;
        NEED_REDIS();
        dirlock_error e;
        dirlock *i = take_in(space, "uw", DIRLOCK_INTENT, 0, &e);
        pid_t child = fork();
        if (child == 0) {
                dirlock *r = take_in(space, "uw", DIRLOCK_SHARED, 0, &e);
                sleep_ms(300);
                _exit(r != NULL && dirlock_release(r, NULL) == DIRLOCK_OK ? 0 : 1);
        }
        sleep_ms(100);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 5;
        assert_int_equal(dirlock_upgrade(i, &o, &e), DIRLOCK_OK);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        int st;
        waitpid(child, &st, 0);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        assert_true(ms >= 100); /* it did wait for the reader */
        dirlock_release(i, NULL);
}

static void test_reentrant_and_cancel(void **state)
{
        (void)state;
        NEED_REDIS();
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_REENTRANT | DIRLOCK_NO_DEADLOCK; /* stands for another process's hold */
        o.timeout = 0;
        dirlock *h;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(space, "re", &o, &h, &e), DIRLOCK_OK);
        char first[DIRLOCK_TOKEN_LEN + 1];
        strcpy(first, dirlock_token(h));
        unsigned long long f1 = fence_of(h);
        assert_int_equal(dirlock_reacquire(h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_check(h, &e), DIRLOCK_OK); /* one hold left */
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_EBALANCE);
        assert_int_equal(dirlock_reacquire(h, &e), DIRLOCK_OK); /* a new acquisition */
        assert_string_not_equal(dirlock_token(h), first);
        assert_true(fence_of(h) > f1);
        /* Cancel: another handle waits; the eventfd ends the wait. */
        int efd = eventfd(0, EFD_CLOEXEC);
        pid_t child = fork();
        if (child == 0) {
                sleep_ms(200);
                uint64_t one = 1;
                _exit(write(efd, &one, sizeof one) == sizeof one ? 0 : 1);
        }
        dirlock_options c = DIRLOCK_OPTIONS_INIT;
        c.timeout = 10;
        c.flags = DIRLOCK_CANCEL_FD;
        c.cancel_fd = efd;
        dirlock *w = NULL;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        assert_int_equal(dirlock_acquire(space, "re", &c, &w, &e), DIRLOCK_ECANCELED);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        assert_true(t1.tv_sec - t0.tv_sec < 5);
        waitpid(child, NULL, 0);
        close(efd);
        assert_int_equal(dirlock_free(h, &e), DIRLOCK_OK);
        /* The canceled waiter left the queue: the lock is free at once. */
        dirlock *again = take_in(space, "re", DIRLOCK_EXCLUSIVE, 0, &e);
        assert_non_null(again);
        dirlock_release(again, NULL);
}

/* A second handle of this thread's own lock: DIRLOCK_EDEADLK at once
 * (the space key: server, database, prefix), a try still busy; the same
 * name in another prefix is another lock. */
static void test_self_deadlock(void **state)
{
        (void)state;
        NEED_REDIS();
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        dirlock *a = NULL, *b = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(space, "self", &o, &a, &e), DIRLOCK_OK);
        o.timeout = 5;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        assert_int_equal(dirlock_acquire(space, "self", &o, &b, &e), DIRLOCK_EDEADLK);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        assert_true((t1.tv_sec - t0.tv_sec) * 1000.0 + (t1.tv_nsec - t0.tv_nsec) / 1e6 < 500);
        assert_non_null(strstr(e.message, "already holds lock 'self'"));
        o.timeout = 0;
        assert_int_equal(dirlock_acquire(space, "self", &o, &b, &e), DIRLOCK_EBUSY);
        char other[sizeof space + 16];
        snprintf(other, sizeof other, "%s?prefix=other", space);
        o.timeout = 5;
        assert_int_equal(dirlock_acquire(other, "self", &o, &b, &e), DIRLOCK_OK);
        dirlock_release(b, NULL);
        dirlock_release(a, NULL);
}

/* Cut the library off the server: its socket moved away from the path
 * the lock space names (no new connection can be made) and every client
 * connection killed.  Put back by reconnect(). */
static void cut_off(const char *moved)
{
        assert_int_equal(rename(sock, moved), 0);
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "redis-cli -s '%s' CLIENT KILL TYPE normal >/dev/null 2>&1", moved);
        assert_int_equal(system(cmd), 0);
}

static void reconnect(const char *moved)
{
        assert_int_equal(rename(moved, sock), 0);
}

/* A plain handle's release that gets no answer leaves the hold on the
 * server, named this thread's, and frees the handle.  The thread's next
 * acquire of that name waits for the hold to expire -- not DIRLOCK_EDEADLK
 * at once, as if it waited for a hold of its own for ever: no handle of
 * the thread holds it. */
static void test_release_lost_then_again(void **state)
{
        (void)state;
        NEED_REDIS();
        char moved[320];
        snprintf(moved, sizeof moved, "%s/moved.sock", dir);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.stale_age = 2;
        dirlock *a = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(space, "left", &o, &a, &e), DIRLOCK_OK);
        cut_off(moved);
        assert_int_equal(dirlock_release(a, &e), DIRLOCK_ESERVER);
        reconnect(moved);
        o.timeout = 30;
        dirlock *b = NULL;
        int rc = dirlock_acquire(space, "left", &o, &b, &e);
        if (rc != DIRLOCK_OK)
                print_message("acquire: %s\n", e.message);
        assert_int_equal(rc, DIRLOCK_OK);
        assert_int_equal(dirlock_release(b, NULL), DIRLOCK_OK);
}

/* The last release of a reentrant handle that gets no answer leaves the
 * hold on the server, found by the old token alone.  The handle holds
 * nothing; its next reacquire, or its free, releases that hold first
 * (failing while the server cannot be reached), rather than draw a new
 * token and wait on its own hold until it expires (60 s here: the 1 s
 * timeout would run out). */
static void test_release_without_answer(void **state)
{
        (void)state;
        NEED_REDIS();
        char moved[320];
        snprintf(moved, sizeof moved, "%s/moved.sock", dir);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_REENTRANT;
        o.timeout = 1;
        o.stale_age = 60;
        for (int by_free = 0; by_free <= 1; by_free++) {
                dirlock *h;
                dirlock_error e;
                assert_int_equal(dirlock_acquire(space, "unanswered", &o, &h, &e), DIRLOCK_OK);
                cut_off(moved);
                assert_int_equal(dirlock_release(h, &e), DIRLOCK_ESERVER);
                assert_int_equal(dirlock_check(h, &e), DIRLOCK_ELOST); /* holds nothing */
                assert_int_equal(dirlock_reacquire(h, &e), DIRLOCK_ESERVER);
                reconnect(moved);
                if (by_free) {
                        assert_int_equal(dirlock_free(h, &e), DIRLOCK_OK);
                } else {
                        assert_int_equal(dirlock_reacquire(h, &e), DIRLOCK_OK);
                        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
                        assert_int_equal(dirlock_free(h, &e), DIRLOCK_OK);
                }
                dirlock *other = take_in(space, "unanswered", DIRLOCK_EXCLUSIVE, 0, &e);
                assert_non_null(other); /* nothing was left behind */
                assert_int_equal(dirlock_release(other, &e), DIRLOCK_OK);
        }
}

/* The board's page views on a Redis lock space (lock_mode rw): a view's
 * kept handle whose release got no answer is kept through the views that
 * fail while the server is out of reach, and releases that hold when it
 * answers again.  Freed instead, it left the hold until its stale age
 * (60 s), and a writer timed out on it. */
static void test_board_view_without_answer(void **state)
{
        (void)state;
        NEED_REDIS();
        char moved[320], text[1024];
        snprintf(moved, sizeof moved, "%s/moved.sock", dir);
        int n = snprintf(text, sizeof text,
                         "data_dir = %s\nlock_mode = rw\nlock_space = %s\nstale_age = 60\nlock_timeout = 1\n",
                         dir, space);
        struct board_config cfg;
        struct board_error be = BOARD_ERROR_INIT;
        assert_int_equal(config_parse(text, (size_t)n, "test.conf", &cfg, &be), 0);
        struct board_lock lk;
        assert_int_equal(board_lock_read(&cfg, &lk, &be), 0);
        cut_off(moved);
        (void)board_lock_release(&lk, &be); /* no answer: the hold stays */
        be = (struct board_error)BOARD_ERROR_INIT;
        assert_int_equal(board_lock_read(&cfg, &lk, &be), -1);
        assert_int_equal(be.status, 503);
        reconnect(moved);
        be = (struct board_error)BOARD_ERROR_INIT;
        assert_int_equal(board_lock_read(&cfg, &lk, &be), 0);
        assert_int_equal(board_lock_release(&lk, &be), 0);
        dirlock_error e;
        dirlock *writer = take_in(space, BOARD_LOCK_NAME, DIRLOCK_EXCLUSIVE, 1, &e);
        assert_non_null(writer); /* no reader left behind */
        assert_int_equal(dirlock_release(writer, &e), DIRLOCK_OK);
        config_free(&cfg);
}

/* The board's lock lost by the server (FLUSHALL) between its read and
 * its write: 503 before the write, saying the server lost it -- not
 * "broken as stale" -- in mkdir mode (a check) and rw (an upgrade); and
 * 500 with the same reason when it is found lost only at the release. */
static void test_board_lock_lost_by_the_server(void **state)
{
        (void)state;
        NEED_REDIS();
        static const char *const modes[] = {"mkdir", "rw"};
        for (int m = 0; m < 2; m++) {
                char text[1024];
                int n = snprintf(
                    text, sizeof text,
                    "data_dir = %s\nlock_mode = %s\nlock_space = %s\nstale_age = 60\nlock_timeout = 1\n", dir,
                    modes[m], space);
                struct board_config cfg;
                struct board_error be = BOARD_ERROR_INIT;
                assert_int_equal(config_parse(text, (size_t)n, "test.conf", &cfg, &be), 0);
                struct board_lock lk;
                assert_int_equal(board_lock_write_begin(&cfg, &lk, &be), 0);
                assert_int_equal(cli(NULL, 0, "flushall"), 0);
                assert_int_equal(board_lock_make_exclusive(&lk, &be), -1);
                assert_int_equal(be.status, 503);
                if (strstr(be.msg, "the Redis server no longer has it") == NULL || strstr(be.msg, "stale"))
                        fail_msg("%s, before the write: %s", modes[m], be.msg);
                (void)board_lock_release(&lk, &be);
                be = (struct board_error)BOARD_ERROR_INIT;
                assert_int_equal(board_lock_write_begin(&cfg, &lk, &be), 0);
                assert_int_equal(cli(NULL, 0, "flushall"), 0);
                assert_int_equal(board_lock_release(&lk, &be), -1);
                assert_int_equal(be.status, 500);
                if (strstr(be.msg, "the Redis server no longer has it") == NULL)
                        fail_msg("%s, at the release: %s", modes[m], be.msg);
                config_free(&cfg);
        }
}

/* A forked child uses its own connection, and not its parent's handle. */
static void test_fork(void **state)
{
        (void)state;
        NEED_REDIS();
        dirlock_error e;
        dirlock *h = take_in(space, "fk", DIRLOCK_EXCLUSIVE, 0, &e);
        assert_non_null(h);
        pid_t child = fork();
        if (child == 0) {
                dirlock_error ce;
                int ok = dirlock_check(h, &ce) == DIRLOCK_ENOTOWNER;
                dirlock *x = take_in(space, "fk2", DIRLOCK_EXCLUSIVE, 0, &ce);
                ok = ok && x != NULL && dirlock_release(x, &ce) == DIRLOCK_OK;
                ok =
                    ok && take_in(space, "fk", DIRLOCK_EXCLUSIVE, 0, &ce) == NULL && ce.code == DIRLOCK_EBUSY;
                _exit(ok ? 0 : 1);
        }
        int st;
        waitpid(child, &st, 0);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        assert_int_equal(dirlock_check(h, &e), DIRLOCK_OK); /* our connection still works */
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
}

/* All or nothing: a set never holds part of its names while it waits. */
static void test_multi(void **state)
{
        (void)state;
        NEED_REDIS();
        dirlock_error e;
        dirlock *b = take_in(space, "mb", DIRLOCK_EXCLUSIVE, 0, &e);
        const char *names[] = {"mc", "ma", "mb", "ma"};
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0.2;
        dirlock_set *set = NULL;
        assert_int_equal(dirlock_acquire_many(space, names, 4, &o, &set, &e), DIRLOCK_ETIMEDOUT);
        dirlock *a = take_in(space, "ma", DIRLOCK_EXCLUSIVE, 0, &e); /* not left held */
        assert_non_null(a);
        dirlock_release(a, NULL);
        dirlock_release(b, NULL);
        assert_int_equal(dirlock_acquire_many(space, names, 4, &o, &set, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_set_count(set), 3);
        assert_string_equal(dirlock_name(dirlock_set_lock(set, 0)), "ma");
        unsigned long long f0 = fence_of(dirlock_set_lock(set, 0));
        assert_true(f0 > 0 && fence_of(dirlock_set_lock(set, 2)) > 0);
        assert_int_equal(dirlock_refresh_many(set, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release_many(set, &e), DIRLOCK_OK);
}

static double now_ms(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Pending acquires of one thread wait at once, each with its BLPOP in
 * flight on a connection of its own (a connection is one request's at a
 * time): released one after the other, the holder's lock goes to each in
 * turn, never to two at once, and every answer reaches the acquire that
 * asked. */
static void test_pending_in_one_thread(void **state)
{
        (void)state;
        NEED_REDIS();
        enum { N = 3 };
        dirlock_error e;
        dirlock *holder = take_in(space, "pend", DIRLOCK_EXCLUSIVE, 0, &e);
        assert_non_null(holder);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 20;
        dirlock_pending *p[N];
        for (int i = 0; i < N; i++) {
                assert_int_equal(dirlock_acquire_start(space, "pend", &o, &p[i], &e), DIRLOCK_OK);
                assert_int_equal(dirlock_pending_step(p[i], &e), DIRLOCK_EAGAIN);
        }
        dirlock *now = holder;
        bool done[N] = {false};
        for (int got = 0; got < N; got++) {
                assert_int_equal(dirlock_release(now, &e), DIRLOCK_OK);
                now = NULL;
                double until = now_ms() + 10000;
                while (now == NULL && now_ms() < until) {
                        struct pollfd fds[N];
                        for (int i = 0; i < N; i++)
                                fds[i] = (struct pollfd){.fd = done[i] ? -1 : dirlock_pending_fd(p[i]),
                                                         .events = POLLIN};
                        if (poll(fds, N, 100) <= 0)
                                continue;
                        for (int i = 0; i < N; i++) {
                                if (done[i] || fds[i].revents == 0)
                                        continue;
                                int rc = dirlock_pending_step(p[i], &e);
                                if (rc == DIRLOCK_EAGAIN)
                                        continue;
                                if (rc != DIRLOCK_OK)
                                        print_message("acquire %d: %s\n", i, e.message);
                                assert_int_equal(rc, DIRLOCK_OK);
                                assert_null(now); /* never two at once */
                                now = dirlock_pending_lock(p[i]);
                                done[i] = true;
                        }
                }
                assert_non_null(now);
                assert_int_equal(dirlock_check(now, &e), DIRLOCK_OK);
        }
        assert_int_equal(dirlock_release(now, &e), DIRLOCK_OK);
        for (int i = 0; i < N; i++)
                dirlock_pending_free(p[i]);
}

int main(void)
{
        signal(SIGPIPE, SIG_DFL); /* the library must not need it ignored */
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_no_server),
            cmocka_unit_test(test_auth_and_db_refused),
            cmocka_unit_test(test_wrong_type_and_script_error),
            cmocka_unit_test(test_noscript),
            cmocka_unit_test(test_fences),
            cmocka_unit_test(test_fence_limit),
            cmocka_unit_test(test_owner_and_status),
            cmocka_unit_test(test_lost_by_the_server),
            cmocka_unit_test(test_dead_owner),
            cmocka_unit_test(test_upgrade_downgrade),
            cmocka_unit_test(test_upgrade_wakes),
            cmocka_unit_test(test_reentrant_and_cancel),
            cmocka_unit_test(test_self_deadlock),
            cmocka_unit_test(test_release_lost_then_again),
            cmocka_unit_test(test_fork),
            cmocka_unit_test(test_multi),
            cmocka_unit_test(test_pending_in_one_thread),
            cmocka_unit_test(test_slow_reply),
            cmocka_unit_test(test_release_without_answer),
            cmocka_unit_test(test_board_view_without_answer),
            cmocka_unit_test(test_board_lock_lost_by_the_server),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
