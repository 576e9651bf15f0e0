/* netfs_fsops.c - what the directory backend's system calls need on a
 * network filesystem: lib/core/dir_fsops.c's calls look again after
 * dl_fs_refresh, and forget a renamed name with dl_fs_forget, which this
 * module makes do what is below (netfs.c registers them).
 *
 * ESTALE.  A network filesystem's client answers ESTALE ("stale file
 * handle") when a path leads through a name it still maps to a directory
 * that another client removed or replaced on the server: NAME.lock
 * released and taken again, NAME.readers removed by a writer and made
 * again by a reader.  The kernel walks such a path once more itself, but
 * GlusterFS's client keeps answering from its own cache: measured, a
 * symlink(2) into a directory that another client had removed failed with
 * ESTALE thousands of times over 1.0 s.  Asking for the attributes of
 * the directory and of the path with AT_STATX_FORCE_SYNC ends it at once
 * (the next call sees ENOENT, or the directory made again): the client
 * takes the server's answer.  So each call here, on ESTALE, refreshes the
 * path's directory and the path that way and tries again, at most
 * DL_ESTALE_TRIES times.  An ESTALE is never a partial success: the
 * client could not name what the call was about, so nothing was done (the
 * kernel's own retry relies on the same).
 *
 * What is left after that is ESTALE, and every caller treats it as "it
 * changed under me": it looks again, as for an entry that vanished or was
 * replaced, within its bounds, and never reports a lock lost because of
 * it -- only ENOENT on the entry itself says that.
 *
 * LISTINGS.  readdir(3) returns NULL both at the end of a directory and
 * when reading it failed; on a local filesystem it never fails, on a
 * network one it does (ESTALE when the directory was removed meanwhile).
 * A listing that stopped early must not pass for a complete one (a writer
 * that missed a reader's entry would write while it reads): dl_fs_next
 * tells the two apart.  And since a client may answer a lookup of a name
 * another client has removed from its cache (GlusterFS: for up to a
 * second), an entry whose presence decides something -- a holder's check
 * that it still holds its lock -- is looked for in a listing of its
 * directory there (dl_fs_present): NFS revalidates a directory when it is
 * opened, GlusterFS's FUSE client reads every listing from the server.
 *
 * NEGATIVE LOOKUPS.  A client set to cache that a name does not exist
 * (a FUSE mount's negative-timeout, GlusterFS's performance.nl-cache)
 * answers ENOENT for a directory another client has just made: measured,
 * with either the reader-writer stress checker across two clients saw a
 * writer and a reader inside at once in 15 s (a writer that missed the
 * new NAME.readers).  A listing of the parent is served by the server and
 * makes the client drop such an entry (FUSE links every name a listing
 * returns).  So where "no such directory" decides something on a network
 * filesystem, it is asked of a listing of the parent (dl_fs_present,
 * dl_fs_open_dir_sure).
 *
 * STALE NAMES.  A GlusterFS brick (10.3) resolves a directory by the
 * path its own table of names gives it, and a directory renamed onto the
 * lock (D/.NAME.<T>.new -> D/NAME.lock) under contention at times keeps
 * its old name there: the brick's log shows it opening D/.NAME.<T>.new
 * for NAME.lock right after the rename.  From then on every client gets
 * ESTALE for NAME.lock and ENOENT for the entries in it, until the brick
 * forgets the directory: the holder can neither check nor release what
 * it holds (a false DIRLOCK_ELOST), and waiters cannot read it ("held by
 * pid 0 on an unknown host").  Measured with dirlock(1), 4 shells on two
 * clients: stuck in 5 of 6 runs, each time within 1,800 commands.  A
 * lookup of the old name repairs it: the brick finds nothing there and
 * drops the name from its table.  So whoever renamed a directory onto a
 * lock looks its old name up once after (dl_fs_forget), and a holder
 * whose own entry cannot be found or reached does so again before it
 * believes that (lib/core/dir_exclusive.c); with both, 0 failures in 9,000 commands.
 * Others do not know the old name, but the client tells it: its virtual
 * attribute glusterfs.pathinfo names the path the brick resolves to.
 * So every look again after ESTALE (dl_fs_refresh) also reads that of the
 * path and of its directory and looks up a name that differs
 * (repair_name): a taker killed between its rename and its lookup leaves
 * no lock that nobody can read. */
#include "dir_fsops.h"
#include "netfs.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

static void refresh_one(const char *path)
{
        struct statx sx;
        (void)statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW | AT_STATX_FORCE_SYNC, STATX_TYPE | STATX_INO, &sx);
}

void dl_netfs_forget(const char *path)
{
        refresh_one(path);
}

int dl_fs_pathinfo_name(const char *info, char name[NAME_MAX + 1])
{
        const char *posix = strstr(info, "<POSIX(");
        const char *end = posix != NULL ? strchr(posix, '>') : NULL;
        if (end == NULL)
                return 0;
        const char *last = end;
        while (last > posix && last[-1] != '/')
                last--;
        size_t n = (size_t)(end - last);
        if (last == posix || n == 0 || n > NAME_MAX)
                return 0;
        memcpy(name, last, n);
        name[n] = '\0';
        return 1;
}

/* STALE NAMES, for whoever does not know the old name: when the name the
 * brick resolves `path` to (dl_fs_pathinfo_name) is not path's own, the
 * brick kept an old name for it: look that name up in path's directory,
 * which makes the brick drop it.  Any other filesystem has no such
 * attribute (ENODATA, ENOTSUP): nothing. */
static void repair_name(const char *path)
{
        char info[PATH_MAX + 256], kept[NAME_MAX + 1], dir[PATH_MAX], old[PATH_MAX];
        ssize_t n = getxattr(path, "glusterfs.pathinfo", info, sizeof info - 1);
        if (n <= 0)
                return;
        info[n] = '\0';
        const char *name = dl_split_dir(path, dir);
        if (name == NULL || !dl_fs_pathinfo_name(info, kept) || strcmp(kept, name) == 0)
                return;
        if (snprintf(old, sizeof old, "%s/%s", dir, kept) < (int)sizeof old)
                refresh_one(old);
}

void dl_netfs_refresh(const char *path)
{
        char dir[PATH_MAX];
        if (dl_split_dir(path, dir) != NULL) {
                refresh_one(dir);
                repair_name(dir);
        }
        refresh_one(path);
        repair_name(path);
}
