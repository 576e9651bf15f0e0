/* test_core_dead_try.c - a lock whose owner is provably dead on this host
 * (a process that took it and exited without letting go) is broken by a
 * try (timeout 0) and by the last attempt of a timed wait exactly as a
 * waiting acquire breaks it: the caller gets the lock, not DIRLOCK_EBUSY
 * or DIRLOCK_ETIMEDOUT for the whole stale age.  In every mode -- whole
 * locks exclusive, shared and intent, ranges, several names at once, an
 * intent upgrade held up by a dead reader -- and run twice (space_fixture.h):
 * in a directory space and on a private redis-server.  A "last attempt" is
 * made here with a timeout of 1 ns, which has passed when the first
 * attempt is made, so that attempt is the last.  Each case first shows
 * the same attempt kept out while the owner lives. */
#include "dirlock_range.h"
#include "dirlock_rw.h"
#include "space_fixture.h"

#define TRY  0.0
#define LAST 1e-9

/* What a process holds: `mode` of `name`, a range [lo, hi) when lo < hi. */
struct hold {
        const char *name;
        int mode;
        double lo, hi;
};

static int take_hold(const struct hold *w, double timeout, dirlock **h, dirlock_error *e)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = timeout;
        o.mode = w->mode;
        if (w->lo < w->hi)
                return dirlock_acquire_range(space, w->name, w->lo, w->hi, &o, h, e);
        return dirlock_acquire(space, w->name, &o, h, e);
}

/* A child takes `w` and holds it until leave() lets it exit, holding it
 * still: its owner is then provably dead (reaped, its pid gone). */
struct holder {
        pid_t pid;
        int gun; /* closing it lets the child exit */
};

static struct holder hold_in_child(const struct hold *w)
{
        int ready[2], gun[2];
        assert_int_equal(pipe(ready), 0);
        assert_int_equal(pipe(gun), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(gun[1]);
                dirlock *h;
                dirlock_error e;
                char c = take_hold(w, 5, &h, &e) == DIRLOCK_OK ? 'y' : 'n';
                if (c == 'n')
                        fprintf(stderr, "child: %s\n", e.message);
                if (write(ready[1], &c, 1) != 1)
                        _exit(1);
                while (read(gun[0], &c, 1) > 0)
                        ;
                _exit(0); /* without a release */
        }
        close(ready[1]);
        close(gun[0]);
        char c = 'n';
        assert_int_equal(read(ready[0], &c, 1), 1);
        close(ready[0]);
        assert_int_equal(c, 'y');
        return (struct holder){pid, gun[1]};
}

static void leave(struct holder *k)
{
        close(k->gun);
        int st;
        assert_int_equal(waitpid(k->pid, &st, 0), k->pid);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* `w` taken with `timeout`: its code, the lock released when taken; the
 * message said when the code is not the one `expected`. */
static int try_hold(const struct hold *w, double timeout, int expected)
{
        dirlock *h;
        dirlock_error e;
        int rc = take_hold(w, timeout, &h, &e);
        if (rc == DIRLOCK_OK)
                assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        if (rc != expected)
                print_message("%s: %s\n", dirlock_strerror(rc), e.message);
        return rc;
}

/* Each test runs twice: its state is the timeout, TRY or LAST. */
static double timeout_of(void **state)
{
        return *(const double *)*state;
}

/* What an attempt that finds a live owner in its way returns. */
static int kept_out(void **state)
{
        return timeout_of(state) == TRY ? DIRLOCK_EBUSY : DIRLOCK_ETIMEDOUT;
}

/* `want` is kept out while the owner of `held` lives, and taken at once
 * with the test's timeout when it died holding it; then again with a
 * try (nothing was left behind). */
static void dead_then(void **state, const struct hold *held, const struct hold *want)
{
        struct holder k = hold_in_child(held);
        assert_int_equal(try_hold(want, timeout_of(state), kept_out(state)), kept_out(state));
        leave(&k);
        assert_int_equal(try_hold(want, timeout_of(state), DIRLOCK_OK), DIRLOCK_OK);
        assert_int_equal(try_hold(want, TRY, DIRLOCK_OK), DIRLOCK_OK);
}

static const struct hold whole_x = {"w", DIRLOCK_EXCLUSIVE, 0, 0};
static const struct hold whole_s = {"w", DIRLOCK_SHARED, 0, 0};
static const struct hold whole_i = {"w", DIRLOCK_INTENT, 0, 0};

static void test_exclusive(void **state)
{
        NEED_SPACE();
        dead_then(state, &whole_x, &whole_x);
}

static void test_shared_after_writer(void **state)
{
        NEED_SPACE();
        dead_then(state, &whole_x, &whole_s);
}

static void test_intent_after_intent(void **state)
{
        NEED_SPACE();
        dead_then(state, &whole_i, &whole_i);
}

static void test_writer_after_reader(void **state)
{
        NEED_SPACE();
        dead_then(state, &whole_s, &whole_x);
}

static void test_ranges(void **state)
{
        NEED_SPACE();
        const struct hold range_x = {"w", DIRLOCK_EXCLUSIVE, 0.25, 0.5};
        const struct hold range_s = {"w", DIRLOCK_SHARED, 0.375, 1};
        dead_then(state, &range_x, &range_s); /* a range held up by a range */
        dead_then(state, &whole_x, &range_x); /* ... by a whole lock */
        dead_then(state, &range_s, &whole_x); /* a whole lock held up by a range */
        dead_then(state, &range_s, &range_x); /* a writer's range by a reader's */
}

/* Several names at once, one of them held by a dead owner. */
static void test_many(void **state)
{
        NEED_SPACE();
        const char *names[3] = {"a", "b", "c"};
        const struct hold b = {"b", DIRLOCK_EXCLUSIVE, 0, 0};
        struct holder k = hold_in_child(&b);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = timeout_of(state);
        dirlock_set *set = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire_many(space, names, 3, &o, &set, &e), kept_out(state));
        leave(&k);
        int rc = dirlock_acquire_many(space, names, 3, &o, &set, &e);
        if (rc != DIRLOCK_OK)
                print_message("%s: %s\n", dirlock_strerror(rc), e.message);
        assert_int_equal(rc, DIRLOCK_OK);
        assert_int_equal(dirlock_release_many(set, &e), DIRLOCK_OK);
}

/* An intent holder's upgrade held up by a reader that died. */
static void test_upgrade(void **state)
{
        NEED_SPACE();
        dirlock *h;
        dirlock_error e;
        assert_int_equal(take_hold(&whole_i, TRY, &h, &e), DIRLOCK_OK);
        struct holder k = hold_in_child(&whole_s);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = timeout_of(state);
        assert_int_equal(dirlock_upgrade(h, &o, &e), kept_out(state));
        leave(&k);
        int rc = dirlock_upgrade(h, &o, &e);
        if (rc != DIRLOCK_OK)
                print_message("%s: %s\n", dirlock_strerror(rc), e.message);
        assert_int_equal(rc, DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
}

static double try_timeout = TRY, last_timeout = LAST;

/* Each case as a try and as a last attempt. */
#define BOTH(f)                                                                                              \
        {#f " (try)", f, fresh, NULL, &try_timeout},                                                         \
        {                                                                                                    \
#f " (last attempt)", f, fresh, NULL, &last_timeout                                          \
        }

int main(void)
{
        const struct CMUnitTest tests[] = {
            BOTH(test_exclusive),
            BOTH(test_shared_after_writer),
            BOTH(test_intent_after_intent),
            BOTH(test_writer_after_reader),
            BOTH(test_ranges),
            BOTH(test_many),
            BOTH(test_upgrade),
        };
        int failed = cmocka_run_group_tests_name("directory space", tests, dir_setup, teardown);
        return failed + cmocka_run_group_tests_name("Redis space", tests, redis_setup, redis_teardown);
}
