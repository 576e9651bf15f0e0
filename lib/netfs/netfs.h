/* netfs.h - the network-filesystem module's table, for its tests. */
#ifndef DIRLOCK_NETFS_H
#define DIRLOCK_NETFS_H

#include "fs.h"

/* The row named `name` ("local", "glusterfs", ...), NULL when none is. */
const dl_fs *dl_fs_named(const char *name);

#endif
