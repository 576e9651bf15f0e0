/* dirlock_netfs.h - the network-filesystem module (lib/netfs): locks on
 * GlusterFS, NFS, SMB and the like, what is safe there among the
 * processes of several clients (docs/netfs.md), and the query below.
 * Without the module, the core takes locks on local filesystems only. */
#ifndef DIRLOCK_NETFS_PUBLIC_H
#define DIRLOCK_NETFS_PUBLIC_H

#include "dirlock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the library knows of the filesystem a lock directory is on, and
 * what it allows there among processes of several clients (lib/netfs/netfs.c,
 * docs/netfs.md).  What is not ok is refused with DIRLOCK_ENETFS unless
 * the caller passes DIRLOCK_ONE_CLIENT; where `usable` is 0 (sshfs)
 * every lock is refused. */
typedef struct dirlock_fs_info {
        char type[32];    /* as the mount table names it: "ext4", "tmpfs",
                             "fuse.glusterfs", "nfs4", ... ("" unknown)        */
        char kind[32];    /* "local", "glusterfs", "nfs", "smb", "sshfs",
                             "fuse" (another FUSE filesystem), ...             */
        int network;      /* a network filesystem: its clients may be hosts  */
        int notify;       /* waiters are woken by inotify (else they poll)   */
        int shared_ok;    /* shared and intent locks are safe across clients */
        int ranges_ok;    /* range locks are safe across clients             */
        double cache_lag; /* seconds a client may show an entry's times late;
                             judging a lock stale takes that much longer     */
        int exclusive_ok; /* exclusive locks (FIFO or not) are safe across
                             clients                                         */
        int usable;       /* some lock is safe here, on one client at least  */
} dirlock_fs_info;

/* Look at directory `dir` (it must exist): DIRLOCK_OK and *info, or
 * DIRLOCK_EIO. */
int dirlock_fs_query(const char *dir, dirlock_fs_info *info, dirlock_error *err);

#ifdef __cplusplus
}
#endif
#endif
