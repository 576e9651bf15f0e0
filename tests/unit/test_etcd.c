/* test_etcd.c - unit tests of lock spaces on an etcd cluster (lib/etcd/):
 * the address grammar (etcds:// and its parameters too), the text of a
 * queue entry, the rules of who may
 * hold (etcd_queue.c: modes, policies, ranges, the entry a waiter
 * watches, the grant pass), and the API against a live cluster -- the
 * shared one of tests/run-all ($DIRLOCK_TEST_ETCD), or a private one this
 * program starts with tools/etcd-cluster and stops at the end: stale ages
 * refused, owner records and status, fences, timeout 0, cancel,
 * reentrant handles, upgrade and downgrade, sets, ranges, a lease lost
 * under a holder, a dead owner's lease revoked at once, members passed
 * over when they cannot be reached, the connections a thread keeps
 * (reused from lock to lock, closed when the thread exits, and a forked
 * child's own, its parent's left working).
 * The live part is skipped when etcd is not installed; the whole program
 * in a build without etcd support. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dirlock.h"
#include "dirlock_async.h"
#include "dirlock_fence.h"
#include "dirlock_range.h"
#include "dirlock_rw.h"

#ifdef DIRLOCK_WITH_ETCD
#include "etcd.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char cluster[600], space[700], run_dir[256];
static const char *skip_why;

/* ---- the address ----------------------------------------------------------- */

static int parse(const char *s, dl_etcd_url *u, char *why)
{
        return dl_etcd_url_parse(s, strlen(s), u, why, 200);
}

static void test_url(void **state)
{
        (void)state;
        dl_etcd_url u;
        char why[200], buf[600];
        assert_int_equal(parse("etcd://10.0.0.1:2379,10.0.0.2:2380,[::1]:22001/board", &u, why), 0);
        assert_int_equal(u.n, 3);
        assert_string_equal(u.ep[0].host, "10.0.0.1");
        assert_int_equal(u.ep[1].port, 2380);
        assert_true(u.ep[2].ipv6);
        assert_string_equal(u.ep[2].host, "::1");
        assert_string_equal(u.prefix, "board");
        assert_true(dl_etcd_url_format(&u, buf, sizeof buf) > 0);
        assert_string_equal(buf, "etcd://10.0.0.1:2379,10.0.0.2:2380,[::1]:22001/board");
        assert_int_equal(dl_etcd_url_cluster(&u, buf, sizeof buf), 46);
        assert_string_equal(buf, "etcd://10.0.0.1:2379,10.0.0.2:2380,[::1]:22001"); /* no prefix */
        assert_int_equal(dl_etcd_url_cluster(&u, buf, 46), -1);
        dl_etcd_url_base(&u, 2, buf, sizeof buf);
        assert_string_equal(buf, "http://[::1]:22001");
        assert_int_equal(parse("etcd://db.example.org", &u, why), 0);
        assert_int_equal(u.ep[0].port, DL_ETCD_DEFAULT_PORT);
        assert_string_equal(u.prefix, DL_ETCD_DEFAULT_PREFIX);
        const char *bad[] = {
            "etcd://",     "etcd:///p",     "etcd://h:0", "etcd://h:65536",         "etcd://h:x",
            "etcd://h,",   "etcd://,h",     "etcd://h/",  "etcd://h/a/b",           "etcd://h/a?b",
            "etcd://[::1", "etcd://[zz]:1", "etcd://h_h", "etcd://a,b,c,d,e,f,g,h", "redis://h",
            "etcd://h:1x"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                why[0] = '\0';
                if (parse(bad[i], &u, why) != -1)
                        fail_msg("'%s' was accepted", bad[i]);
                assert_true(why[0] != '\0');
        }
        /* Credentials: refused, saying what is wrong (not "a port is not a
         * number"). */
        const char *creds[] = {"etcd://user:pw@h:2379", "etcd://user@h", "etcd://h:1,u:p@h:2/p"};
        for (size_t i = 0; i < sizeof creds / sizeof creds[0]; i++) {
                why[0] = '\0';
                assert_int_equal(parse(creds[i], &u, why), -1);
                if (strstr(why, "user name or password") == NULL)
                        fail_msg("'%s': %s", creds[i], why);
        }
        char long_prefix[100] = "etcd://h/";
        memset(long_prefix + 9, 'p', DL_ETCD_PREFIX_MAX + 1);
        assert_int_equal(parse(long_prefix, &u, why), -1);
        long_prefix[9 + DL_ETCD_PREFIX_MAX] = '\0';
        assert_int_equal(parse(long_prefix, &u, why), 0);
}

/* etcds://, the log-in and the files: parsed, printed in the grammar's
 * order, the cluster's key with them and without the prefix, and each
 * wrong combination refused with its reason. */
static void test_url_tls(void **state)
{
        (void)state;
        dl_etcd_url u, back;
        char why[200], buf[2000];
        assert_int_equal(parse("etcds://e1:2379,e2/board?key=/k%20y&user=locker&cert=/c&cacert=/ca.pem"
                               "&password_file=/etc/dl/pw",
                               &u, why),
                         0);
        assert_true(u.tls);
        assert_string_equal(u.user, "locker");
        assert_string_equal(u.password_file, "/etc/dl/pw");
        assert_string_equal(u.key, "/k y");
        int n = dl_etcd_url_format(&u, buf, sizeof buf);
        assert_int_equal(n, (int)strlen(buf));
        assert_string_equal(buf, "etcds://e1:2379,e2:2379/board?user=locker&password_file=/etc/dl/pw"
                                 "&cacert=/ca.pem&cert=/c&key=/k%20y");
        assert_int_equal(parse(buf, &back, why), 0);
        assert_memory_equal(&u, &back, sizeof u);
        dl_etcd_url_cluster(&u, buf, sizeof buf);
        assert_string_equal(buf, "etcds://e1:2379,e2:2379?user=locker&password_file=/etc/dl/pw"
                                 "&cacert=/ca.pem&cert=/c&key=/k%20y");
        dl_etcd_url_base(&u, 1, buf, sizeof buf);
        assert_string_equal(buf, "https://e2:2379");
        assert_int_equal(parse("etcd://h?user=a%26b&password_env=ETCD_PW", &u, why), 0);
        assert_false(u.tls);
        assert_string_equal(u.user, "a&b");
        assert_string_equal(u.prefix, DL_ETCD_DEFAULT_PREFIX);
        dl_etcd_url_format(&u, buf, sizeof buf);
        assert_string_equal(buf, "etcd://h:2379/dirlock?user=a%26b&password_env=ETCD_PW");
        struct {
                const char *in, *words;
        } bad[] = {
            {"etcd://h?cacert=/ca", "etcds://"},
            {"etcds://h?cert=/c", "both cert=FILE and key=FILE"},
            {"etcds://h?user=u", "a user needs a password"},
            {"etcds://h?password_file=/p", "a password needs a user"},
            {"etcds://h?user=u&password_file=/p&password_env=P", "given twice"},
            {"etcds://h?user=u&user=v&password_env=P", "given twice"},
            {"etcds://h?user=&password_env=P", "1-255 bytes"},
            {"etcds://h?user=u&password_env=9P", "environment variable"},
            {"etcds://h?cacert=/a b", "1-255 bytes"},
            {"etcds://h?cacert=/a%00", "1-255 bytes"},
            {"etcds://h?color=red", "unknown query parameter"},
            {"etcds://h?cacert=/a&", "ends with '&'"},
            {"etcds://h/p/q?cacert=/a", "prefix"},
            {"etcds://u:pw@h", "user=NAME&password_file=FILE"},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                why[0] = '\0';
                if (parse(bad[i].in, &u, why) != -1)
                        fail_msg("'%s' was accepted", bad[i].in);
                if (strstr(why, bad[i].words) == NULL)
                        fail_msg("'%s': '%s' does not say '%s'", bad[i].in, why, bad[i].words);
        }
}

/* ---- entries and rules ------------------------------------------------------- */

static void test_entry_text(void **state)
{
        (void)state;
        dl_etcd_entry e = {.state = 'h',
                           .mode = 'u',
                           .policy = 2,
                           .names = 3,
                           .seq = 77,
                           .ranged = true,
                           .lo = 0.1,
                           .hi = 1.0 / 3,
                           .fence = 1234567890123ULL};
        snprintf(e.record, sizeof e.record, "dirlock1 pid=1 host=a b");
        char text[800];
        assert_true(dl_etcd_entry_format(&e, text, sizeof text) > 0);
        dl_etcd_entry back;
        assert_int_equal(dl_etcd_entry_parse(text, &back), 0);
        assert_int_equal(back.state, 'h');
        assert_int_equal(back.mode, 'u');
        assert_int_equal(back.policy, 2);
        assert_int_equal(back.names, 3);
        assert_int_equal(back.seq, 77);
        assert_true(back.ranged && back.lo == 0.1 && back.hi == 1.0 / 3); /* exact: hex floats */
        assert_true(back.fence == 1234567890123ULL);
        assert_string_equal(back.record, "dirlock1 pid=1 host=a b");
        const char *bad[] = {"",
                             "dl1",
                             "dl1 hz 0 1 - - 0 r",
                             "dl1 qx 0 1 - - 0 r",
                             "dl1 hx 7 1 - - 0 r",
                             "dl1 hx 0 0 - - 0 r",
                             "dl1 hx 0 1 0x1p+0 0x1p-1 0 r",
                             "dl2 hx 0 1 - - 0 r"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                if (dl_etcd_entry_parse(bad[i], &back) == 0)
                        fail_msg("'%s' was parsed", bad[i]);
}

/* A queue made by hand: entries "T<i>" in arrival order. */
static dl_etcd_entry ent(int i, char state, char mode, int policy)
{
        dl_etcd_entry e = {.rev = 10 + i, .state = state, .mode = mode, .policy = policy, .names = 1};
        snprintf(e.token, sizeof e.token, "%032d", i);
        return e;
}

static dl_etcd_queue queue_of(dl_etcd_entry *e, size_t n)
{
        return (dl_etcd_queue){.e = e, .n = n, .cap = n};
}

/* May entry i of q hold?  *blocker (when not) its blocker's index. */
static bool may(dl_etcd_queue *q, size_t i, long *blocker)
{
        size_t b = 0;
        bool yes = dl_etcd_may_hold(q, &q->e[i], &b);
        *blocker = yes ? -1 : (long)b;
        return yes;
}

static void test_rules_modes(void **state)
{
        (void)state;
        long b;
        /* x held, x x waiting: each waiter watches the one just ahead. */
        dl_etcd_entry chain[] = {ent(0, 'h', 'x', 0), ent(1, 'w', 'x', 0), ent(2, 'w', 'x', 0)};
        dl_etcd_queue q = queue_of(chain, 3);
        assert_false(may(&q, 1, &b));
        assert_int_equal(b, 0);
        assert_false(may(&q, 2, &b));
        assert_int_equal(b, 1);
        /* readers share; intent goes with readers; two intents do not. */
        dl_etcd_entry rs[] = {ent(0, 'h', 's', 0), ent(1, 'h', 'i', 0), ent(2, 'w', 's', 0),
                              ent(3, 'w', 'i', 0), ent(4, 'w', 'x', 0)};
        q = queue_of(rs, 5);
        assert_true(may(&q, 2, &b));
        assert_false(may(&q, 3, &b));
        assert_int_equal(b, 1);
        assert_false(may(&q, 4, &b));
        assert_int_equal(b, 3); /* the nearest in the way ahead */
        /* an upgrading intent holder lets no new reader in */
        rs[1].mode = 'u';
        assert_false(may(&q, 2, &b));
        assert_int_equal(b, 1);
        assert_int_equal(dl_etcd_reader_in_way(&q, &rs[1]), 0);
        /* a newcomer (not in the queue) is behind everyone */
        dl_etcd_entry s_new = ent(9, 'w', 's', 0);
        s_new.rev = 0;
        rs[1].mode = 'i';
        assert_false(dl_etcd_may_hold(&q, &s_new, NULL)); /* fair: the waiting writer goes first */
        /* simple: a reader is a writer to everyone */
        dl_etcd_entry simple[] = {ent(0, 'h', 's', 3), ent(1, 'w', 's', 0)};
        q = queue_of(simple, 2);
        assert_false(may(&q, 1, &b));
}

static void test_rules_policies(void **state)
{
        (void)state;
        long b;
        /* reader held, writer waiting, a reader arrives */
        dl_etcd_entry e[] = {ent(0, 'h', 's', 0), ent(1, 'w', 'x', 0), ent(2, 'w', 's', 0)};
        dl_etcd_queue q = queue_of(e, 3);
        assert_false(may(&q, 2, &b)); /* fair: behind the writer */
        assert_int_equal(b, 1);
        e[2].policy = DIRLOCK_POLICY_READER; /* a `reader` reader passes waiting writers */
        assert_true(may(&q, 2, &b));
        e[2].policy = 0;
        e[1].policy = DIRLOCK_POLICY_READER; /* a `reader` writer gives way to everyone */
        assert_true(may(&q, 2, &b));
        /* ... and waits for every queued reader, even behind it */
        e[0].state = 'w';
        e[0].mode = 'x';
        e[0].policy = 0;
        assert_false(may(&q, 1, &b));
        /* writer: a `writer` reader waits for every queued writer, ahead or behind */
        dl_etcd_entry w[] = {ent(0, 'h', 's', 0), ent(1, 'w', 's', DIRLOCK_POLICY_WRITER),
                             ent(2, 'w', 'x', 0)};
        q = queue_of(w, 3);
        assert_false(may(&q, 1, &b));
        assert_int_equal(b, 2); /* nobody ahead in its way: the first behind */
        /* a `writer` writer passes waiting readers */
        dl_etcd_entry ww[] = {ent(0, 'h', 'i', 0), ent(1, 'w', 's', 0),
                              ent(2, 'w', 'x', DIRLOCK_POLICY_WRITER)};
        q = queue_of(ww, 3);
        assert_false(may(&q, 2, &b));
        assert_int_equal(b, 0); /* only the holder */
}

static void test_rules_ranges_and_grant(void **state)
{
        (void)state;
        long b;
        dl_etcd_entry e[] = {ent(0, 'h', 'x', 0), ent(1, 'w', 'x', 0), ent(2, 'w', 'x', 0),
                             ent(3, 'w', 'x', 0)};
        e[0].ranged = e[1].ranged = e[2].ranged = true;
        e[0].lo = 0, e[0].hi = 0.5;
        e[1].lo = 0.5, e[1].hi = 1; /* touches, does not overlap */
        e[2].lo = 0.25, e[2].hi = 0.75;
        dl_etcd_queue q = queue_of(e, 3);
        assert_true(may(&q, 1, &b));
        assert_false(may(&q, 2, &b));
        assert_int_equal(b, 1);
        q.n = 4;
        assert_false(may(&q, 3, &b)); /* a whole lock meets every held range */
        assert_int_equal(b, 0);       /* (waiting ranges keep it out of nothing) */
        assert_false(may(&q, 1, &b)); /* and a waiting one goes before them */
        assert_int_equal(b, 3);
        /* ... whatever the modes: a whole reader waits for a range reader */
        dl_etcd_entry wr[] = {ent(0, 'h', 's', 0), ent(1, 'w', 's', 0), ent(2, 'w', 's', 0)};
        wr[0].ranged = true, wr[0].lo = 0, wr[0].hi = 1;
        wr[2].ranged = true, wr[2].lo = 2, wr[2].hi = 3;
        q = queue_of(wr, 3);
        assert_false(may(&q, 1, &b));
        assert_int_equal(b, 0);
        assert_false(may(&q, 2, &b)); /* and a range behind a waiting whole lock waits */
        assert_int_equal(b, 1);
        wr[1].rev = 20; /* ... or ahead of it: whole locks go first */
        q.e = (dl_etcd_entry[]){wr[0], wr[2], wr[1]};
        assert_false(may(&q, 1, &b));
        assert_int_equal(b, 2);
        assert_false(may(&q, 2, &b)); /* while a waiting range holds no whole lock back */
        assert_int_equal(b, 0);
        /* the grant pass: readers behind a leaving writer go in together */
        dl_etcd_entry g[] = {ent(0, 'w', 's', 0), ent(1, 'w', 's', 0), ent(2, 'w', 'x', 0),
                             ent(3, 'w', 's', 0), ent(4, 'w', 's', DIRLOCK_POLICY_READER)};
        q = queue_of(g, 5);
        g[1].names = 2; /* a set is only ever taken whole, by itself */
        size_t idx[5], n;
        dl_etcd_grant_pass(&q, 0, idx, &n);
        assert_int_equal(n, 1);
        assert_int_equal(idx[0], 4); /* the `reader` reader passes the writer; the fair one does not */
        assert_int_equal(g[0].state, 'h');
        assert_int_equal(g[1].state, 'w');
        assert_int_equal(g[2].state, 'w');
}

/* ---- against a live cluster ---------------------------------------------------- */

static const char *top(void)
{
        const char *t = getenv("TOP");
        return t != NULL ? t : ".";
}

static int setup(void **state)
{
        (void)state;
        const char *shared = getenv("DIRLOCK_TEST_ETCD");
        if (shared != NULL && shared[0] != '\0') {
                snprintf(cluster, sizeof cluster, "%s", shared);
        } else {
                if (system("command -v etcd >/dev/null 2>&1") != 0) {
                        skip_why = "etcd is not installed";
                        return 0;
                }
                snprintf(run_dir, sizeof run_dir, "/tmp/dirlock-etcd-unit.XXXXXX");
                if (mkdtemp(run_dir) == NULL)
                        return -1;
                char cmd[1200];
                snprintf(
                    cmd, sizeof cmd,
                    "RUN_DIR=%s PORT_RANGE=${PORT_RANGE:-22000-22499} WATCH_PID=%ld ETCD_NS= "
                    "%s/tools/etcd-cluster start >/dev/null 2>&1 && RUN_DIR=%s %s/tools/etcd-cluster space",
                    run_dir, (long)getpid(), top(), run_dir, top());
                FILE *p = popen(cmd, "r");
                if (p == NULL || fgets(cluster, sizeof cluster, p) == NULL) {
                        if (p != NULL)
                                pclose(p);
                        skip_why = "the private etcd cluster did not start";
                        return 0;
                }
                pclose(p);
                cluster[strcspn(cluster, "\n")] = '\0';
        }
        snprintf(space, sizeof space, "%s/unit%ld", cluster, (long)getpid());
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        if (run_dir[0] != '\0') {
                char cmd[600];
                snprintf(cmd, sizeof cmd, "RUN_DIR=%s %s/tools/etcd-cluster stop >/dev/null 2>&1; rm -rf %s",
                         run_dir, top(), run_dir);
                if (system(cmd) != 0)
                        return -1;
        }
        return 0;
}

#define NEED_CLUSTER()                                                                                       \
        do {                                                                                                 \
                if (skip_why != NULL) {                                                                      \
                        print_message("skipped: %s\n", skip_why);                                            \
                        skip();                                                                              \
                }                                                                                            \
        } while (0)

static dirlock *take(const char *name, int mode, int policy, double timeout, dirlock_error *e)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.mode = mode;
        o.policy = policy;
        o.timeout = timeout;
        o.stale_age = 5;
        dirlock *h = NULL;
        return dirlock_acquire(space, name, &o, &h, e) == DIRLOCK_OK ? h : NULL;
}

static unsigned long long fence_of(dirlock *h)
{
        unsigned long long f = 0;
        assert_int_equal(dirlock_fence(h, &f, NULL), DIRLOCK_OK);
        return f;
}

static void test_stale_age_refused(void **state)
{
        (void)state;
        NEED_CLUSTER();
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.stale_age = 0.5;
        dirlock *h;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(space, "short", &o, &h, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "whole seconds"));
        assert_int_equal(dirlock_acquire("etcd://127.0.0.1:x", "a", NULL, &h, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "port"));
}

static void test_basic_and_fences(void **state)
{
        (void)state;
        NEED_CLUSTER();
        dirlock_error e;
        dirlock *a = take("basic", DIRLOCK_EXCLUSIVE, 0, 1, &e);
        assert_non_null(a);
        unsigned long long f1 = fence_of(a);
        assert_int_equal(dirlock_refresh(a, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_check(a, &e), DIRLOCK_OK);
        assert_null(take("basic", DIRLOCK_EXCLUSIVE, 0, 0, &e));
        assert_int_equal(e.code, DIRLOCK_EBUSY);
        assert_non_null(strstr(e.message, "held by pid"));
        /* This thread asking again through a new handle would wait for
         * itself: told at once, as in every kind of space (the previous
         * build waited out the 0.3 s: no key for the same-thread check). */
        assert_null(take("basic", DIRLOCK_SHARED, 0, 0.3, &e));
        assert_int_equal(e.code, DIRLOCK_EDEADLK);
        assert_non_null(strstr(e.message, "already holds lock 'basic'"));
        dirlock_owner ow;
        assert_int_equal(dirlock_inspect(space, "basic", 0, &ow, &e), DIRLOCK_OK);
        assert_int_equal(ow.pid, getpid());
        assert_int_equal(ow.owner_alive, 1);
        assert_string_equal(ow.token, dirlock_token(a));
        dirlock_owner *all;
        size_t n;
        assert_int_equal(dirlock_list(space, 0, &all, &n, &e), DIRLOCK_OK);
        assert_int_equal(n, 1);
        assert_string_equal(all[0].name, "basic");
        free(all);
        assert_int_equal(dirlock_break(space, "basic", 0, 0, &e), DIRLOCK_ELIVE);
        assert_int_equal(dirlock_release(a, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_inspect(space, "basic", 0, &ow, &e), DIRLOCK_ENOLOCK);
        dirlock *b = take("basic", DIRLOCK_EXCLUSIVE, 0, 1, &e);
        assert_non_null(b);
        assert_true(fence_of(b) > f1);
        /* broken under its holder (forced): ELOST everywhere, no fence */
        assert_int_equal(dirlock_break(space, "basic", 0, 1, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_check(b, &e), DIRLOCK_ELOST);
        assert_int_equal(dirlock_refresh(b, &e), DIRLOCK_ELOST);
        assert_int_equal(dirlock_release(b, &e), DIRLOCK_ELOST);
}

static void test_reentrant_cancel(void **state)
{
        (void)state;
        NEED_CLUSTER();
        dirlock_error e;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_REENTRANT;
        o.stale_age = 5;
        dirlock *r;
        assert_int_equal(dirlock_acquire(space, "re", &o, &r, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_reacquire(r, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(r, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_check(r, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(r, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(r, &e), DIRLOCK_EBALANCE);
        assert_int_equal(dirlock_reacquire(r, &e), DIRLOCK_OK); /* a new token, a new lease */
        /* a waiter canceled by its descriptor */
        int fd = eventfd(0, EFD_CLOEXEC);
        pid_t child = fork();
        if (child == 0) {
                struct timespec ts = {0, 200 * 1000 * 1000};
                nanosleep(&ts, NULL);
                uint64_t one = 1;
                _exit(write(fd, &one, sizeof one) == sizeof one ? 0 : 1);
        }
        dirlock_options c = DIRLOCK_OPTIONS_INIT;
        c.flags = DIRLOCK_CANCEL_FD | DIRLOCK_NO_DEADLOCK; /* it waits on this thread's own hold */
        c.cancel_fd = fd;
        c.timeout = 10;
        c.stale_age = 5;
        dirlock *w;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        assert_int_equal(dirlock_acquire(space, "re", &c, &w, &e), DIRLOCK_ECANCELED);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        assert_true(t1.tv_sec - t0.tv_sec < 3);
        waitpid(child, NULL, 0);
        close(fd);
        assert_int_equal(dirlock_free(r, &e), DIRLOCK_OK);
        /* the canceled waiter left nothing in the queue */
        dirlock *again = take("re", DIRLOCK_EXCLUSIVE, 0, 0, &e);
        assert_non_null(again);
        dirlock_release(again, NULL);
}

static void test_upgrade_downgrade(void **state)
{
        (void)state;
        NEED_CLUSTER();
        dirlock_error e;
        dirlock *i = take("ud", DIRLOCK_INTENT, 0, 1, &e);
        assert_non_null(i);
        dirlock *r = take("ud", DIRLOCK_SHARED, 0, 1, &e);
        assert_non_null(r); /* readers go with intent */
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0.3;
        assert_int_equal(dirlock_upgrade(i, &o, &e), DIRLOCK_ETIMEDOUT); /* the reader is in */
        assert_int_equal(dirlock_mode_of(i), DIRLOCK_INTENT);
        dirlock *r2 = take("ud", DIRLOCK_SHARED, 0, 0, &e);
        assert_non_null(r2); /* a timed-out upgrade lets readers in again */
        dirlock_release(r2, NULL);
        assert_int_equal(dirlock_release(r, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_upgrade(i, &o, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_mode_of(i), DIRLOCK_EXCLUSIVE);
        assert_null(take("ud", DIRLOCK_SHARED, 0, 0, &e));
        assert_int_equal(dirlock_downgrade_intent(i, &e), DIRLOCK_OK);
        r = take("ud", DIRLOCK_SHARED, 0, 0, &e);
        assert_non_null(r);
        dirlock_release(r, NULL);
        assert_int_equal(dirlock_upgrade(i, &o, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_downgrade(i, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_mode_of(i), DIRLOCK_SHARED);
        r = take("ud", DIRLOCK_SHARED, 0, 0, &e);
        assert_non_null(r);
        assert_null(take("ud", DIRLOCK_EXCLUSIVE, 0, 0, &e));
        dirlock_release(r, NULL);
        assert_int_equal(dirlock_release(i, &e), DIRLOCK_OK);
        dirlock *s = take("ud", DIRLOCK_SHARED, 0, 1, &e);
        assert_int_equal(dirlock_upgrade(s, NULL, &e), DIRLOCK_EUPGRADE);
        dirlock_release(s, NULL);
}

static void test_sets_and_ranges(void **state)
{
        (void)state;
        NEED_CLUSTER();
        dirlock_error e;
        dirlock *b = take("sb", DIRLOCK_EXCLUSIVE, 0, 1, &e);
        const char *names[] = {"sc", "sa", "sb", "sa"};
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0.3;
        o.stale_age = 5;
        dirlock_set *set = NULL;
        assert_int_equal(dirlock_acquire_many(space, names, 4, &o, &set, &e), DIRLOCK_ETIMEDOUT);
        dirlock *a = take("sa", DIRLOCK_EXCLUSIVE, 0, 0, &e); /* nothing was left held */
        assert_non_null(a);
        dirlock_release(a, NULL);
        dirlock_release(b, NULL);
        assert_int_equal(dirlock_acquire_many(space, names, 4, &o, &set, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_set_count(set), 3);
        assert_true(fence_of(dirlock_set_lock(set, 0)) > 0);
        assert_int_equal(dirlock_refresh_many(set, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release_many(set, &e), DIRLOCK_OK);
        /* ranges: apart both go; overlapping wait (told at once when the
         * overlapping range is this thread's own); a whole lock meets
         * them all */
        dirlock *r1, *r2, *r3;
        assert_int_equal(dirlock_acquire_range(space, "rg", 0, 0.5, &o, &r1, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire_range(space, "rg", 0.5, 1, &o, &r2, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire_range(space, "rg", 0.4, 0.6, &o, &r3, &e), DIRLOCK_EDEADLK);
        dirlock_options other = o;
        other.flags |= DIRLOCK_NO_DEADLOCK; /* stands for another thread's wait */
        assert_int_equal(dirlock_acquire_range(space, "rg", 0.4, 0.6, &other, &r3, &e), DIRLOCK_ETIMEDOUT);
        assert_null(take("rg", DIRLOCK_SHARED, 0, 0, &e));
        dirlock_range_info *ri;
        size_t n;
        assert_int_equal(dirlock_ranges(space, "rg", &ri, &n, &e), DIRLOCK_OK);
        assert_int_equal(n, 2);
        assert_true(ri[0].lo == 0 && ri[1].lo == 0.5 && ri[0].pid == getpid());
        free(ri);
        assert_int_equal(dirlock_shrink(r1, 0, 0.3, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_shrink(r2, 0.7, 1, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire_range(space, "rg", 0.4, 0.6, &o, &r3, &e), DIRLOCK_OK);
        dirlock_release(r1, NULL);
        dirlock_release(r2, NULL);
        dirlock_release(r3, NULL);
}

/* A fence key that holds no fence dirlock could have drawn (past
 * DIRLOCK_FENCE_MAX, or not a number): the take is refused with
 * DIRLOCK_EDATA, never answered with a fence that could repeat one. */
static void test_bad_fence_key(void **state)
{
        (void)state;
        NEED_CLUSTER();
        dl_etcd_url u;
        char why[200], key[DL_ETCD_KEY_MAX];
        assert_int_equal(dl_etcd_url_parse(space, strlen(space), &u, why, sizeof why), 0);
        const char *bad[] = {"99999999999999999999", "09007199254740991", "twelve"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                char name[16];
                snprintf(name, sizeof name, "badf%zu", i);
                dl_etcd_fence_key(&u, name, key, sizeof key);
                dl_etcd_txn t;
                dl_etcd_txn_init(&t);
                dl_etcd_op_put(&t, true, key, bad[i], 0);
                dl_time never = dl_deadline(-1), io = dl_etcd_io_deadline(&never);
                dl_etcd_reply r;
                bool ok;
                long long rev;
                assert_int_equal(dl_etcd_txn_run(&u, &t, &io, &ok, &rev, &r, NULL), DIRLOCK_OK);
                dl_etcd_txn_free(&t);
                dl_etcd_reply_free(&r);
                dirlock_error e;
                assert_null(take(name, DIRLOCK_EXCLUSIVE, 0, 1, &e));
                assert_int_equal(e.code, DIRLOCK_EDATA);
                assert_non_null(strstr(e.message, "holds no fence"));
                assert_null(take(name, DIRLOCK_SHARED, 0, 0, &e)); /* nothing was left taken */
                assert_int_equal(e.code, DIRLOCK_EDATA);
        }
}

static void test_dead_owner(void **state)
{
        (void)state;
        NEED_CLUSTER();
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t child = fork();
        if (child == 0) {
                dirlock_options o = DIRLOCK_OPTIONS_INIT; /* stale 180 s: only death frees it soon */
                dirlock *h;
                if (dirlock_acquire(space, "dead", &o, &h, NULL) != DIRLOCK_OK)
                        _exit(1);
                _exit(write(p[1], "x", 1) == 1 ? 0 : 1); /* dies holding it */
        }
        char c;
        assert_int_equal(read(p[0], &c, 1), 1);
        int st;
        waitpid(child, &st, 0);
        dirlock_error e;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        dirlock *h = take("dead", DIRLOCK_EXCLUSIVE, 0, 10, &e);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        assert_non_null(h);
        assert_true(t1.tv_sec - t0.tv_sec < 3); /* its lease revoked at once */
        dirlock_release(h, NULL);
        close(p[0]);
        close(p[1]);
}

static void test_members_passed_over(void **state)
{
        (void)state;
        NEED_CLUSTER();
        /* Two endpoints where nothing listens come first: the lock is
         * taken through the third all the same. */
        const char *eps = strstr(cluster, "://") + 3;
        char sp[800];
        snprintf(sp, sizeof sp, "etcd://127.0.0.1:1,127.0.0.1:2,%s/unit%ld", eps, (long)getpid());
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 5;
        dirlock *h;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(sp, "over", &o, &h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        /* None at all: DIRLOCK_ESERVER by the timeout, naming a member. */
        o.timeout = 0.5;
        assert_int_equal(dirlock_acquire("etcd://127.0.0.1:1,127.0.0.1:2", "over", &o, &h, &e),
                         DIRLOCK_ESERVER);
        assert_non_null(strstr(e.message, "127.0.0.1"));
}

/* Pending acquires (dirlock_acquire_start) on an etcd space, eight in one
 * thread and one loop, each its own requests and watches: while a holder
 * keeps the lock none completes; released, each gets the lock in turn
 * and is released from the loop, and never two at once. */
static void test_pending_in_one_loop(void **state)
{
        (void)state;
        NEED_CLUSTER();
        dirlock_error e;
        dirlock *holder = take("pend", DIRLOCK_EXCLUSIVE, 0, 1, &e);
        assert_non_null(holder);
        enum { N = 8 };
        dirlock_pending *p[N];
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 20;
        o.stale_age = 5;
        for (int i = 0; i < N; i++) {
                int rc = dirlock_acquire_start(space, "pend", &o, &p[i], &e);
                if (rc != DIRLOCK_OK)
                        fail_msg("start %d: %d %s", i, rc, e.message);
        }
        int done = 0, held = 0, most = 0;
        bool released = false;
        struct timespec t0, now;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        while (done < N) {
                struct pollfd fds[N];
                int map[N], n = 0;
                for (int i = 0; i < N; i++)
                        if (p[i] != NULL) {
                                fds[n] = (struct pollfd){.fd = dirlock_pending_fd(p[i]), .events = POLLIN};
                                map[n++] = i;
                        }
                assert_true(poll(fds, (nfds_t)n, 100) >= 0);
                clock_gettime(CLOCK_MONOTONIC, &now);
                if (!released && now.tv_sec - t0.tv_sec >= 1) {
                        assert_int_equal(done, 0); /* nobody got in past the holder */
                        assert_int_equal(dirlock_release(holder, &e), DIRLOCK_OK);
                        released = true;
                }
                assert_true(now.tv_sec - t0.tv_sec < 30);
                for (int k = 0; k < n; k++) {
                        if (!(fds[k].revents & POLLIN))
                                continue;
                        int i = map[k];
                        int rc = dirlock_pending_step(p[i], &e);
                        if (rc == DIRLOCK_EAGAIN)
                                continue;
                        assert_int_equal(rc, DIRLOCK_OK);
                        dirlock *l = dirlock_pending_lock(p[i]);
                        dirlock_pending_free(p[i]);
                        p[i] = NULL;
                        held++;
                        most = held > most ? held : most;
                        assert_int_equal(dirlock_check(l, &e), DIRLOCK_OK);
                        assert_int_equal(dirlock_release(l, &e), DIRLOCK_OK);
                        held--;
                        done++;
                }
        }
        assert_int_equal(most, 1);
}

/* Many pending acquires of one loop at a busy lock: each request waits
 * its turn in the process, so a wait's last request (or, on a loaded
 * machine, its first) can outlast its deadline.  The cluster answers
 * the thread all along, and the leases are revoked at the end: a wait
 * that ends so timed out (DIRLOCK_ETIMEDOUT); it did not lose the
 * server (DIRLOCK_ESERVER, "state unknown", which the previous build
 * said to most of 300 waiters at a lock held 1 s). */
static void test_many_pending_time_out(void **state)
{
        (void)state;
        NEED_CLUSTER();
        if (getenv("UNDER_VALGRIND") != NULL) {
                /* 200 waiters there are too slow to get even a lease by
                 * the deadline: a case of its own (no answer ever). */
                print_message("skipped under valgrind\n");
                skip();
        }
        dirlock_error e;
        dirlock *holder = take("many", DIRLOCK_EXCLUSIVE, 0, 1, &e);
        assert_non_null(holder);
        enum { N = 200 };
        static dirlock_pending *p[N];
        static struct pollfd fds[N];
        static int map[N];
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 3; /* time for every waiter's first requests; the holder lets go at 2 s */
        o.stale_age = 5;
        for (int i = 0; i < N; i++)
                assert_int_equal(dirlock_acquire_start(space, "many", &o, &p[i], &e), DIRLOCK_OK);
        int done = 0, got = 0, timed_out = 0;
        char bad[sizeof e.message + 64] = ""; /* the first other answer: said once all are done */
        struct timespec t0, now;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        bool released = false;
        while (done < N) {
                int n = 0;
                for (int i = 0; i < N; i++)
                        if (p[i] != NULL) {
                                fds[n] = (struct pollfd){.fd = dirlock_pending_fd(p[i]), .events = POLLIN};
                                map[n++] = i;
                        }
                assert_true(poll(fds, (nfds_t)n, 100) >= 0);
                clock_gettime(CLOCK_MONOTONIC, &now);
                if (!released && now.tv_sec - t0.tv_sec >= 2) {
                        assert_int_equal(dirlock_release(holder, &e), DIRLOCK_OK);
                        released = true;
                }
                assert_true(now.tv_sec - t0.tv_sec < 60);
                for (int k = 0; k < n; k++) {
                        if (!(fds[k].revents & POLLIN))
                                continue;
                        int i = map[k], rc = dirlock_pending_step(p[i], &e);
                        if (rc == DIRLOCK_EAGAIN)
                                continue;
                        if (rc != DIRLOCK_OK && rc != DIRLOCK_ETIMEDOUT && bad[0] == '\0')
                                snprintf(bad, sizeof bad, "waiter %d: %s: %s", i, dirlock_code_name(rc),
                                         e.message);
                        if (rc == DIRLOCK_OK)
                                assert_int_equal(dirlock_release(dirlock_pending_lock(p[i]), &e), DIRLOCK_OK);
                        got += rc == DIRLOCK_OK;
                        timed_out += rc == DIRLOCK_ETIMEDOUT;
                        dirlock_pending_free(p[i]);
                        p[i] = NULL;
                        done++;
                }
        }
        print_message("%d of %d took the lock, %d timed out\n", got, N, timed_out);
        if (bad[0] != '\0')
                fail_msg("%s", bad);
        assert_int_equal(got + timed_out, N);
}

/* ---- connections ----------------------------------------------------------------- */

#define SOCKETS_MAX 256

/* The sockets this process has open now (their inode numbers, in the
 * order of their descriptors): the library's connections are the only
 * sockets of this program. */
static size_t sockets(unsigned long *out)
{
        size_t n = 0;
        DIR *d = opendir("/proc/self/fd");
        assert_non_null(d);
        struct dirent *de;
        while ((de = readdir(d)) != NULL && n < SOCKETS_MAX) {
                char path[300], target[64];
                snprintf(path, sizeof path, "/proc/self/fd/%s", de->d_name);
                ssize_t len = readlink(path, target, sizeof target - 1);
                if (len <= 0)
                        continue;
                target[len] = '\0';
                if (sscanf(target, "socket:[%lu]", &out[n]) == 1)
                        n++;
        }
        closedir(d);
        return n;
}

static bool among(unsigned long s, const unsigned long *set, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (set[i] == s)
                        return true;
        return false;
}

/* Whether the two sets of sockets are the same. */
static bool same_sockets(const unsigned long *a, size_t na, const unsigned long *b, size_t nb)
{
        if (na != nb)
                return false;
        for (size_t i = 0; i < na; i++)
                if (!among(a[i], b, nb))
                        return false;
        return true;
}

static bool take_and_release(const char *name)
{
        dirlock_error e;
        dirlock *h = take(name, DIRLOCK_EXCLUSIVE, 0, 5, &e);
        return h != NULL && dirlock_release(h, &e) == DIRLOCK_OK;
}

/* A thread keeps its connections to the cluster from lock to lock: a
 * second lock goes over the very sockets of the first (no new
 * connection, none closed). */
static void test_connections_kept(void **state)
{
        (void)state;
        NEED_CLUSTER();
        unsigned long before[SOCKETS_MAX], after[SOCKETS_MAX];
        assert_true(take_and_release("conn"));
        size_t nb = sockets(before);
        assert_true(nb > 0);
        for (int i = 0; i < 5; i++)
                assert_true(take_and_release("conn"));
        size_t na = sockets(after);
        assert_true(same_sockets(before, nb, after, na));
}

static void *thread_locks(void *arg)
{
        unsigned long *mine = arg, during[SOCKETS_MAX];
        if (!take_and_release("conn-thread"))
                return NULL;
        size_t n = sockets(during);
        for (size_t i = 0; i < n; i++)
                mine[i] = during[i];
        mine[n] = 0;
        return arg;
}

/* Another thread makes connections of its own (none of this thread's,
 * which may be in use here), and they are closed when it exits. */
static void test_connections_of_a_thread(void **state)
{
        (void)state;
        NEED_CLUSTER();
        unsigned long before[SOCKETS_MAX], during[SOCKETS_MAX + 1], after[SOCKETS_MAX];
        assert_true(take_and_release("conn"));
        size_t nb = sockets(before);
        pthread_t t;
        void *ok = NULL;
        assert_int_equal(pthread_create(&t, NULL, thread_locks, during), 0);
        assert_int_equal(pthread_join(t, &ok), 0);
        assert_non_null(ok);
        size_t nd = 0;
        while (during[nd] != 0)
                nd++;
        assert_true(nd > nb); /* its own */
        size_t na = sockets(after);
        assert_true(same_sockets(before, nb, after, na)); /* closed at its exit */
}

/* A forked child never uses its parent's connections: it closes its
 * copies (sending nothing on them) and makes its own; the parent's go
 * on working, the same sockets as before.  (The child's copy of the
 * parent's handle is not its own, and is freed.) */
static void test_connections_after_fork(void **state)
{
        (void)state;
        NEED_CLUSTER();
        dirlock_error e;
        dirlock *h = take("conn-fork", DIRLOCK_EXCLUSIVE, 0, 5, &e);
        assert_non_null(h);
        unsigned long parent[SOCKETS_MAX], now[SOCKETS_MAX];
        size_t np = sockets(parent);
        assert_true(np > 0);
        pid_t child = fork();
        if (child == 0) {
                bool ok = dirlock_check(h, NULL) == DIRLOCK_ENOTOWNER;
                dirlock_free(h, NULL);
                ok = ok && take_and_release("conn-child");
                size_t nc = sockets(now);
                for (size_t i = 0; i < nc; i++)
                        ok = ok && !among(now[i], parent, np);
                _exit(ok && nc > 0 ? 0 : 1);
        }
        int st;
        assert_int_equal(waitpid(child, &st, 0), child);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        assert_int_equal(dirlock_check(h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        size_t nn = sockets(now);
        assert_true(same_sockets(parent, np, now, nn));
}

int main(void)
{
        signal(SIGPIPE, SIG_DFL); /* the library must not need it ignored */
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_url),
            cmocka_unit_test(test_url_tls),
            cmocka_unit_test(test_entry_text),
            cmocka_unit_test(test_rules_modes),
            cmocka_unit_test(test_rules_policies),
            cmocka_unit_test(test_rules_ranges_and_grant),
            cmocka_unit_test(test_stale_age_refused),
            cmocka_unit_test(test_basic_and_fences),
            cmocka_unit_test(test_reentrant_cancel),
            cmocka_unit_test(test_upgrade_downgrade),
            cmocka_unit_test(test_sets_and_ranges),
            cmocka_unit_test(test_bad_fence_key),
            cmocka_unit_test(test_dead_owner),
            cmocka_unit_test(test_members_passed_over),
            cmocka_unit_test(test_pending_in_one_loop),
            cmocka_unit_test(test_many_pending_time_out),
            cmocka_unit_test(test_connections_kept),
            cmocka_unit_test(test_connections_of_a_thread),
            cmocka_unit_test(test_connections_after_fork),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}

#else

static void test_skipped(void **state)
{
        (void)state;
        print_message("skipped: this build has no etcd support\n");
        skip();
}

int main(void)
{
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_skipped)};
        return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
