/* netfs.h - what the network-filesystem module's files share, and its
 * tests use. */
#ifndef DIRLOCK_NETFS_H
#define DIRLOCK_NETFS_H

#include "fs.h"

#include <limits.h>
#include <time.h>

/* The row named `name` ("local", "glusterfs", ...), NULL when none is. */
const dl_fs *dl_fs_named(const char *name);

/* dl_fs_refresh and dl_fs_forget on a network filesystem (netfs_fsops.c). */
void dl_netfs_refresh(const char *path);
void dl_netfs_forget(const char *path);

/* After a holder's unlink answered ENOENT on a network filesystem (at
 * `done`): 1 when its entry was removed by it all the same, 0 when a judge
 * may have broken the lock first, -1 with errno (netfs_release.c). */
struct dirlock;
int dl_netfs_released(const struct dirlock *h, const struct timespec *done);

/* The last name of the first brick path in `info`, a GlusterFS client's
 * glusterfs.pathinfo attribute ("<POSIX(BRICK):HOST:/BRICK/DIR/NAME>",
 * within "(<DISTRIBUTE:...> ...)" on a volume of several bricks): the
 * name the brick resolves the entry to (STALE NAMES in netfs_fsops.c).  1
 * and `name`, or 0 when `info` names none. */
int dl_fs_pathinfo_name(const char *info, char name[NAME_MAX + 1]);

#endif
