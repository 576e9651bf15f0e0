/* test_fsops.c - the directory backend's reading of a GlusterFS client's
 * glusterfs.pathinfo attribute (dl_fs_pathinfo_name, STALE NAMES in
 * lib/netfs/netfs_fsops.c): the name the brick resolves an entry to, taken from
 * the answers a client gives, and nothing from what is not one.  And what
 * lib/netfs/netfs.c's table allows on each filesystem (dl_fs_allows). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dir_fsops.h"
#include "netfs.h"

#include <string.h>

static void one_brick(void **state)
{
        (void)state;
        char name[NAME_MAX + 1];
        /* what the stuck lock of docs/netfs.md answered */
        assert_int_equal(dl_fs_pathinfo_name("<POSIX(/srv/brick/dlvol):vm:/srv/brick/dlvol/cli/locks/"
                                             ".c.4067551bc4c98e6c579b77664381758f.new>",
                                             name),
                         1);
        assert_string_equal(name, ".c.4067551bc4c98e6c579b77664381758f.new");
        assert_int_equal(dl_fs_pathinfo_name("<POSIX(/b):h:/b/locks/c.lock>", name), 1);
        assert_string_equal(name, "c.lock");
}

static void several_bricks(void **state)
{
        (void)state;
        char name[NAME_MAX + 1];
        assert_int_equal(dl_fs_pathinfo_name("((<DISTRIBUTE:v-dht> <POSIX(/b1):h1:/b1/d/x.lock> "
                                             "<POSIX(/b2):h2:/b2/d/y.lock>) (v-dht-layout (v-client-0 0 1)))",
                                             name),
                         1);
        assert_string_equal(name, "x.lock"); /* the first brick's */
}

static void not_a_path(void **state)
{
        (void)state;
        char name[NAME_MAX + 1];
        strcpy(name, "unchanged");
        assert_int_equal(dl_fs_pathinfo_name("", name), 0);
        assert_int_equal(dl_fs_pathinfo_name("(<DISTRIBUTE:v-dht>)", name), 0);
        assert_int_equal(dl_fs_pathinfo_name("<POSIX(/b):h:/b/d/x", name), 0); /* cut short */
        assert_int_equal(dl_fs_pathinfo_name("<POSIX(/b):h:/b/d/>", name), 0); /* no name */
        assert_int_equal(dl_fs_pathinfo_name("<POSIX(x>", name), 0);           /* no slash */
        char longer[NAME_MAX + 64] = "<POSIX(/b):h:/b/";
        memset(longer + strlen(longer), 'n', NAME_MAX + 1);
        strcpy(longer + strlen("<POSIX(/b):h:/b/") + NAME_MAX + 1, ">");
        assert_int_equal(dl_fs_pathinfo_name(longer, name), 0); /* longer than a name can be */
        assert_string_equal(name, "unchanged");
}

/* The code dl_fs_allows gives row `fs` for one lock. */
static int allows(const char *fs, int mode, bool ranged, unsigned flags)
{
        dirlock_error err;
        const dl_fs *row = dl_fs_named(fs);
        assert_non_null(row);
        return dl_fs_allows(row, "/d", mode, DIRLOCK_POLICY_FAIR, ranged, flags, &err);
}

static void allowed_where(void **state)
{
        (void)state;
        const char *everything[] = {"local", "glusterfs"};
        for (size_t i = 0; i < 2; i++) {
                assert_int_equal(allows(everything[i], DIRLOCK_EXCLUSIVE, false, 0), DIRLOCK_OK);
                assert_int_equal(allows(everything[i], DIRLOCK_SHARED, false, 0), DIRLOCK_OK);
                assert_int_equal(allows(everything[i], DIRLOCK_EXCLUSIVE, true, 0), DIRLOCK_OK);
        }
        /* Exclusive across clients; the others on one client only. */
        assert_int_equal(allows("nfs", DIRLOCK_EXCLUSIVE, false, 0), DIRLOCK_OK);
        assert_int_equal(allows("nfs", DIRLOCK_SHARED, false, 0), DIRLOCK_ENETFS);
        assert_int_equal(allows("nfs", DIRLOCK_INTENT, true, 0), DIRLOCK_ENETFS);
        assert_int_equal(allows("nfs", DIRLOCK_SHARED, false, DIRLOCK_ONE_CLIENT), DIRLOCK_OK);
        /* Another FUSE filesystem: nothing across clients. */
        assert_int_equal(allows("fuse", DIRLOCK_EXCLUSIVE, false, 0), DIRLOCK_ENETFS);
        assert_int_equal(allows("fuse", DIRLOCK_EXCLUSIVE, false, DIRLOCK_ONE_CLIENT), DIRLOCK_OK);
        assert_int_equal(allows("fuse", DIRLOCK_SHARED, true, DIRLOCK_ONE_CLIENT), DIRLOCK_OK);
        /* sshfs: nothing at all. */
        assert_int_equal(allows("sshfs", DIRLOCK_EXCLUSIVE, false, 0), DIRLOCK_ENETFS);
        assert_int_equal(allows("sshfs", DIRLOCK_EXCLUSIVE, false, DIRLOCK_ONE_CLIENT), DIRLOCK_ENETFS);
        assert_int_equal(allows("sshfs", DIRLOCK_SHARED, true, DIRLOCK_ONE_CLIENT), DIRLOCK_ENETFS);
        dirlock_error err;
        dl_fs_allows(dl_fs_named("sshfs"), "/d", DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, false, 0, &err);
        assert_non_null(strstr(err.message, "'/d' is on sshfs, where no lock is safe"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(one_brick),
            cmocka_unit_test(several_bricks),
            cmocka_unit_test(not_a_path),
            cmocka_unit_test(allowed_where),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
