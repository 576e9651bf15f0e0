/* fs.h - which filesystem a lock directory is on and what the library may
 * rely on there.  The core knows local filesystems by itself (fs.c); the
 * network-filesystem module (lib/netfs) knows the others, and a build
 * without it refuses every lock on them. */
#ifndef DIRLOCK_FS_H
#define DIRLOCK_FS_H

#include "dirlock.h"

#include <stdbool.h>
#include <time.h>

/* What a filesystem offers (lib/netfs/netfs.c has the table and why). */
typedef struct dl_fs {
        const char *name; /* "local", "glusterfs", "nfs", ...                  */
        bool network;     /* its clients may be other hosts                    */
        bool notify;      /* inotify hears other processes' changes           */
        bool usable;      /* some lock is safe here (with DIRLOCK_ONE_CLIENT) */
        bool excl_ok;     /* the exclusive lock is safe across clients        */
        bool shared_ok;   /* shared and intent locks are safe across clients  */
        bool ranges_ok;   /* range locks are safe across clients              */
        double cache_lag; /* seconds a client may show an entry's times late  */
        const char *why;  /* what makes the modes refused here unsafe        */
} dl_fs;

/* The filesystem `dir` is on; *type (may be NULL) gets the type the mount
 * table names ("ext4", "fuse.glusterfs"; "" when unknown). */
const dl_fs *dl_fs_of(const char *dir, char type[32]);

/* Whether statfs(2)'s magic number `magic` is one of the local
 * filesystems the core knows (fs.c): no network filesystem shares one. */
bool dl_fs_magic_local(unsigned long magic);

/* DIRLOCK_ENETFS when no lock is safe on `fs`, or when lock mode `mode`
 * under `policy` (a range lock when `ranged`) is not safe across its
 * clients and `flags` lacks DIRLOCK_ONE_CLIENT; else DIRLOCK_OK. */
int dl_fs_allows(const dl_fs *fs, const char *dir, int mode, int policy, bool ranged, unsigned flags,
                 dirlock_error *err);

/* An entry judged by age on `fs`: stale when its age exceeds `limit` --
 * and, on a network filesystem, once this thread has also watched it
 * unchanged long enough (CLOCKS in lib/netfs/netfs.c). */
bool dl_fs_aged_out(const dl_fs *fs, const char *token, long long changed_ns, double age, double limit);

/* How long a judge on `fs` must have seen an entry unchanged before its
 * age may break it: limit / 3 plus the filesystem's cache lag. */
double dl_fs_watch(const dl_fs *fs, double limit);

/* A holder's unlink of its entry answered ENOENT at `done`: 1 when it
 * removed the entry all the same, 0 when the lock was broken, -1 with
 * errno (RELEASE 1 in dir_exclusive.c).  0 but on a network filesystem. */
int dl_fs_released(const dirlock *h, const struct timespec *done);

/* What the network-filesystem module sets, at load: the calls above for
 * every filesystem. */
typedef struct dl_netfs {
        const dl_fs *(*of)(const char *dir, char type[32]);
        int (*allows)(const dl_fs *fs, const char *dir, int mode, int policy, bool ranged, unsigned flags,
                      dirlock_error *err);
        bool (*aged_out)(const dl_fs *fs, const char *token, long long changed_ns, double age, double limit);
        void (*refresh)(const char *path); /* dl_fs_refresh, dl_fs_forget (dir_fsops.h) */
        void (*forget)(const char *path);
        /* dl_fs_released on a network filesystem. */
        int (*released)(const dirlock *h, const struct timespec *done);
} dl_netfs;
void dl_netfs_set(const dl_netfs *netfs);

#endif
