/* fs.c - the filesystems the core knows by itself: local ones, told by
 * statfs(2)'s magic number, where every lock is safe and inotify hears
 * every change.  Any other filesystem is the network-filesystem module's
 * (lib/netfs): without it, no lock is taken there on a guess -- every
 * acquire is refused (DIRLOCK_ENETFS, naming the module), and no entry
 * there is ever broken for its age alone. */
#include "fs.h"
#include "core.h"
#include "dir.h"
#include "dir_fsops.h"

#include <linux/magic.h>
#include <sys/vfs.h>

static const dl_fs local = {"local", false, true, true, true, true, true, 0.0, NULL};
static const dl_fs unknown = {"unknown", true, false, false, false, false, false, 0.0, NULL};

static const unsigned long local_magics[] = {
    EXT4_SUPER_MAGIC /* ext2, ext3, ext4 */,
    XFS_SUPER_MAGIC,
    BTRFS_SUPER_MAGIC,
    F2FS_SUPER_MAGIC,
    REISERFS_SUPER_MAGIC,
    TMPFS_MAGIC,
    RAMFS_MAGIC,
    OVERLAYFS_SUPER_MAGIC,
};

static const dl_netfs *netfs;

void dl_netfs_set(const dl_netfs *module)
{
        netfs = module;
}

/* statfs(2)'s magic number of `dir`'s filesystem, 0 when it cannot be had. */
static unsigned long fs_magic(const char *dir)
{
        struct statfs s;
        return statfs(dir, &s) == 0 ? (unsigned long)s.f_type : 0;
}

bool dl_fs_magic_local(unsigned long magic)
{
        for (size_t i = 0; i < sizeof local_magics / sizeof local_magics[0]; i++)
                if (magic == local_magics[i])
                        return true;
        return false;
}

const dl_fs *dl_fs_of(const char *dir, char type[32])
{
        if (netfs != NULL)
                return netfs->of(dir, type);
        if (type != NULL)
                type[0] = '\0';
        unsigned long magic = fs_magic(dir);
        if (magic == 0)
                return &local; /* cannot tell: what uses the directory fails as it would */
        return dl_fs_magic_local(magic) ? &local : &unknown;
}

int dl_fs_allows(const dl_fs *fs, const char *dir, int mode, int policy, bool ranged, unsigned flags,
                 dirlock_error *err)
{
        if (netfs != NULL)
                return netfs->allows(fs, dir, mode, policy, ranged, flags, err);
        if (fs->usable)
                return DIRLOCK_OK;
        return dl_fail(err, DIRLOCK_ENETFS, 0,
                       "'%s' is not on a local filesystem (statfs type 0x%lx): locks there need the "
                       "network-filesystem module (lib/netfs), which this build of dirlock does not have",
                       dir, fs_magic(dir));
}

bool dl_fs_aged_out(const dl_fs *fs, const char *token, long long changed_ns, double age, double limit)
{
        if (!fs->network)
                return age > limit;
        return netfs != NULL && netfs->aged_out(fs, token, changed_ns, age, limit);
}

double dl_fs_watch(const dl_fs *fs, double limit)
{
        return limit / 3 + fs->cache_lag;
}

void dl_fs_refresh(const char *path)
{
        if (netfs != NULL)
                netfs->refresh(path);
}

void dl_fs_forget(const char *path)
{
        if (netfs != NULL)
                netfs->forget(path);
}

int dl_fs_released(const dirlock *h, const struct timespec *done)
{
        return netfs != NULL && dl_dir_of(h)->fs->network ? netfs->released(h, done) : 0;
}
