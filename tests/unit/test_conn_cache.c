/* test_conn_cache.c - unit tests of the per-thread connection cache
 * (lib/conn_cache.c) with connections that only record how they were
 * closed: a connection checked out is handed to nobody else until it is
 * given back, keys keep servers apart, the most recently used comes out
 * first, at most max_idle are kept (the least recently used closed),
 * another thread has its own and closes them when it exits, and a forked
 * child never gets its parent's (it frees its copies as forked ones). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct fake {
        char key[32];
        int closed; /* times close was called */
        bool forked;
};

static void fake_close(void *p, bool forked)
{
        struct fake *f = p;
        f->closed++;
        f->forked = forked;
}

static const dl_conn_cache four = {4, fake_close};
static const dl_conn_cache two = {2, fake_close};
static const dl_conn_cache other = {2, fake_close};

static struct fake *fake(const char *key)
{
        struct fake *f = calloc(1, sizeof *f);
        assert_non_null(f);
        snprintf(f->key, sizeof f->key, "%s", key);
        return f;
}

/* Take out what this thread keeps idle, so that a test starts empty
 * (bounded: a cache that hands one out again must fail, not hang). */
static void drain(const dl_conn_cache *c, const char *key)
{
        for (int i = 0; i < 64 && dl_conn_get(c, key) != NULL; i++)
                ;
}

static void test_checkout(void **state)
{
        (void)state;
        struct fake *a = fake("srv1"), *b = fake("srv1"), *x = fake("srv2");
        assert_null(dl_conn_get(&four, "srv1"));
        dl_conn_put(&four, a, a->key);
        dl_conn_put(&four, x, x->key);
        assert_ptr_equal(dl_conn_get(&four, "srv1"), a);
        assert_null(dl_conn_get(&four, "srv1"));  /* a is out: not handed twice */
        assert_null(dl_conn_get(&other, "srv2")); /* another cache's keys are its own */
        dl_conn_put(&four, b, b->key);
        dl_conn_put(&four, a, a->key);
        assert_ptr_equal(dl_conn_get(&four, "srv1"), a); /* the most recently used first */
        assert_ptr_equal(dl_conn_get(&four, "srv1"), b);
        assert_ptr_equal(dl_conn_get(&four, "srv2"), x);
        assert_int_equal(a->closed + b->closed + x->closed, 0);
        free(a);
        free(b);
        free(x);
}

static void test_max_idle(void **state)
{
        (void)state;
        struct fake *a = fake("s"), *b = fake("s"), *c = fake("t");
        dl_conn_put(&two, a, a->key);
        dl_conn_put(&two, b, b->key);
        dl_conn_put(&other, c, c->key); /* another cache: does not count */
        struct fake *d = fake("s");
        dl_conn_put(&two, d, d->key); /* a third: the oldest goes */
        assert_int_equal(a->closed, 1);
        assert_false(a->forked);
        assert_int_equal(b->closed + c->closed + d->closed, 0);
        assert_ptr_equal(dl_conn_get(&two, "s"), d);
        assert_ptr_equal(dl_conn_get(&two, "s"), b);
        assert_null(dl_conn_get(&two, "s"));
        assert_ptr_equal(dl_conn_get(&other, "t"), c);
        free(a);
        free(b);
        free(c);
        free(d);
}

static struct fake *in_thread;

static void *thread_main(void *arg)
{
        (void)arg;
        assert_null(dl_conn_get(&two, "s")); /* not the main thread's */
        dl_conn_put(&two, in_thread, in_thread->key);
        return NULL;
}

static void test_thread_exit(void **state)
{
        (void)state;
        struct fake *mine = fake("s");
        dl_conn_put(&two, mine, mine->key);
        in_thread = fake("s");
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, thread_main, NULL), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(in_thread->closed, 1); /* at its exit */
        assert_false(in_thread->forked);
        assert_ptr_equal(dl_conn_get(&two, "s"), mine);
        assert_int_equal(mine->closed, 0);
        free(in_thread);
        free(mine);
}

static void test_fork(void **state)
{
        (void)state;
        drain(&two, "s");
        struct fake *mine = fake("s");
        dl_conn_put(&two, mine, mine->key);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                /* The parent's is not ours, and is freed as a forked copy. */
                bool ok = dl_conn_get(&two, "s") == NULL && mine->closed == 1 && mine->forked;
                _exit(ok ? 0 : 1);
        }
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        assert_ptr_equal(dl_conn_get(&two, "s"), mine); /* still the parent's */
        assert_int_equal(mine->closed, 0);
        free(mine);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_checkout),
            cmocka_unit_test(test_max_idle),
            cmocka_unit_test(test_thread_exit),
            cmocka_unit_test(test_fork),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
