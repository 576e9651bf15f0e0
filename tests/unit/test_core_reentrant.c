/* test_core_reentrant.c - unit tests of reentrant lock objects and of
 * multi-locks. */
#include "core_fixture.h"
#include "dirlock_rw.h"

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
        char old_token[DIRLOCK_TOKEN_LEN + 1];
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

/* A reentrant shared handle taken again announces itself under each new
 * token (its reader entry's path is rewritten in place, dir_backend.c),
 * holds writers off while held and leaves nothing behind when released. */
static void test_reentrant_shared_reacquire(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.mode = DIRLOCK_SHARED;
        o.flags = DIRLOCK_REENTRANT;
        dirlock *h;
        assert_int_equal(dirlock_acquire(lockdir, "reread", &o, &h, NULL), DIRLOCK_OK);
        char old_token[DIRLOCK_TOKEN_LEN + 1] = "";
        char entry[4200];
        struct stat st;
        for (int round = 0; round < 3; round++) {
                if (round > 0)
                        assert_int_equal(dirlock_reacquire(h, NULL), DIRLOCK_OK);
                assert_string_not_equal(old_token, dirlock_token(h));
                snprintf(entry, sizeof entry, "%s/reread.readers/r.%s", lockdir, dirlock_token(h));
                assert_int_equal(lstat(entry, &st), 0);
                assert_null(take("reread", 0)); /* a writer waits */
                assert_int_equal(dirlock_release(h, NULL), DIRLOCK_OK);
                assert_int_equal(lstat(entry, &st), -1);
                dirlock *w = take("reread", 0);
                assert_non_null(w);
                dirlock_release(w, NULL);
                strcpy(old_token, dirlock_token(h));
        }
        assert_int_equal(dirlock_free(h, NULL), DIRLOCK_OK);
}

/* Make lock entry `entry` unremovable: a directory in its place, which
 * unlink() refuses (EISDIR), even for root.  unjam() makes it an entry
 * that unlink() removes again. */
static void jam(const char *entry)
{
        assert_int_equal(unlink(entry), 0);
        assert_int_equal(mkdir(entry, 0700), 0);
}

static void unjam(const char *entry)
{
        assert_int_equal(rmdir(entry), 0);
        assert_int_equal(symlink("x", entry), 0);
}

/* A reentrant handle whose last release cannot remove its entry holds
 * nothing, and its next reacquire tries that release again first: it
 * fails while the entry cannot be removed (not taking the lock anew under
 * a new token, which would wait on its own entry until that went stale),
 * and once it can, the lock is taken again under a new token with the old
 * entry gone. */
static void test_reacquire_after_failed_release(void **state)
{
        (void)state;
        const struct {
                int mode;
                bool upgrade;
                const char *name, *entry_fmt;
        } cases[] = {
            {DIRLOCK_EXCLUSIVE, false, "stuckx", "%s/stuckx.lock/owner.%s"},
            {DIRLOCK_SHARED, false, "stucks", "%s/stucks.readers/r.%s"},
            {DIRLOCK_INTENT, true, "stucku", "%s/stucku.lock/owner.%s"},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.timeout = 0;
                o.mode = cases[i].mode;
                o.flags = DIRLOCK_REENTRANT;
                dirlock *h;
                dirlock_error e;
                assert_int_equal(dirlock_acquire(lockdir, cases[i].name, &o, &h, NULL), DIRLOCK_OK);
                if (cases[i].upgrade)
                        assert_int_equal(dirlock_upgrade(h, NULL, NULL), DIRLOCK_OK);
                char token[DIRLOCK_TOKEN_LEN + 1], entry[4200], new_entry[4200];
                strcpy(token, dirlock_token(h));
                snprintf(entry, sizeof entry, cases[i].entry_fmt, lockdir, token);
                jam(entry);
                assert_int_equal(dirlock_release(h, &e), DIRLOCK_EIO);
                assert_non_null(strstr(e.message, "cannot release"));
                assert_int_equal(dirlock_release(h, &e), DIRLOCK_EBALANCE); /* it holds nothing */
                assert_int_equal(dirlock_check(h, NULL), DIRLOCK_ELOST);
                assert_int_equal(dirlock_refresh(h, NULL), DIRLOCK_ELOST);
                assert_int_equal(dirlock_upgrade(h, NULL, NULL), DIRLOCK_ELOST);
                for (int tries = 0; tries < 2; tries++) {
                        assert_int_equal(dirlock_reacquire(h, &e), DIRLOCK_EIO);
                        assert_non_null(strstr(e.message, "cannot release"));
                        assert_string_equal(dirlock_token(h), token); /* nothing changed */
                }
                unjam(entry);
                assert_int_equal(dirlock_reacquire(h, &e), DIRLOCK_OK);
                assert_int_equal(e.code, DIRLOCK_OK);
                assert_string_not_equal(token, dirlock_token(h));
                struct stat st;
                assert_int_equal(lstat(entry, &st), -1);
                snprintf(new_entry, sizeof new_entry, cases[i].entry_fmt, lockdir, dirlock_token(h));
                assert_int_equal(lstat(new_entry, &st), 0);
                assert_null(take(cases[i].name, 0)); /* a writer waits */
                if (cases[i].upgrade)
                        assert_int_equal(dirlock_upgrade(h, NULL, NULL), DIRLOCK_OK);
                assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
                dirlock *w = take(cases[i].name, 0);
                assert_non_null(w);
                dirlock_release(w, NULL);
                assert_int_equal(dirlock_free(h, NULL), DIRLOCK_OK);
        }
}

/* dirlock_free() of a handle whose last release failed releases the
 * entry left in place, once it can be removed. */
static void test_free_after_failed_release(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.flags = DIRLOCK_REENTRANT;
        dirlock *h;
        assert_int_equal(dirlock_acquire(lockdir, "stuckf", &o, &h, NULL), DIRLOCK_OK);
        char entry[4200];
        snprintf(entry, sizeof entry, "%s/stuckf.lock/owner.%s", lockdir, dirlock_token(h));
        jam(entry);
        assert_int_equal(dirlock_release(h, NULL), DIRLOCK_EIO);
        unjam(entry);
        assert_int_equal(dirlock_free(h, NULL), DIRLOCK_OK);
        struct stat st;
        assert_int_equal(lstat(entry, &st), -1);
        dirlock *w = take("stuckf", 0);
        assert_non_null(w);
        dirlock_release(w, NULL);
}

/* An upgraded intent lock whose downgrade cannot release W stays
 * exclusive: its U stays in place, and readers still wait. */
static void test_failed_downgrade_stays_exclusive(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.mode = DIRLOCK_INTENT;
        dirlock *h;
        assert_int_equal(dirlock_acquire(lockdir, "stuckd", &o, &h, NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_upgrade(h, NULL, NULL), DIRLOCK_OK);
        char entry[4200];
        snprintf(entry, sizeof entry, "%s/stuckd.lock/owner.%s", lockdir, dirlock_token(h));
        jam(entry);
        assert_int_equal(dirlock_downgrade(h, NULL), DIRLOCK_EIO);
        assert_int_equal(dirlock_mode_of(h), DIRLOCK_EXCLUSIVE);
        char up[4200];
        snprintf(up, sizeof up, "%s/stuckd.up.%s", lockdir, dirlock_token(h));
        struct stat st;
        assert_int_equal(lstat(up, &st), 0);
        dirlock_options r = DIRLOCK_OPTIONS_INIT;
        r.timeout = 0;
        r.mode = DIRLOCK_SHARED;
        dirlock *reader = NULL;
        assert_int_not_equal(dirlock_acquire(lockdir, "stuckd", &r, &reader, NULL), DIRLOCK_OK);
        unjam(entry);
        assert_int_equal(dirlock_release(h, NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire(lockdir, "stuckd", &r, &reader, NULL), DIRLOCK_OK);
        dirlock_release(reader, NULL);
}

static void test_multi(void **state)
{
        (void)state;
        const char *names[] = {"q", "p", "q", "r"};
        dirlock_set *s;
        dirlock_error e;
        dirlock_options held = DIRLOCK_OPTIONS_INIT;
        held.flags = DIRLOCK_NO_DEADLOCK; /* stands for another process's holds */
        assert_int_equal(dirlock_acquire_many(lockdir, names, 4, &held, &s, &e), DIRLOCK_OK);
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

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_reentrant),
            cmocka_unit_test(test_reentrant_intent_reacquire),
            cmocka_unit_test(test_reentrant_shared_reacquire),
            cmocka_unit_test(test_reacquire_after_failed_release),
            cmocka_unit_test(test_free_after_failed_release),
            cmocka_unit_test(test_failed_downgrade_stays_exclusive),
            cmocka_unit_test(test_multi),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
