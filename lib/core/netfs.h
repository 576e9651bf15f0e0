/* netfs.h - which filesystem a lock directory is on, what the library may
 * rely on there, and the judge's memory of what it has seen of entries on
 * a network filesystem (netfs.c has the table and the reasons). */
#ifndef DIRLOCK_NETFS_H
#define DIRLOCK_NETFS_H

#include "dirlock.h"

#include <stdbool.h>

/* What a filesystem offers; one row of netfs.c's table. */
typedef struct dl_fs {
        const char *name; /* the row: "local", "glusterfs", "nfs", ...          */
        bool network;     /* its clients may be other hosts                    */
        bool notify;      /* inotify hears other processes' changes           */
        bool usable;      /* some lock is safe here (with DIRLOCK_ONE_CLIENT) */
        bool excl_ok;     /* the exclusive lock is safe across clients        */
        bool shared_ok;   /* shared and intent locks are safe across clients  */
        bool ranges_ok;   /* range locks are safe across clients              */
        double cache_lag; /* seconds a client may show an entry's times late  */
        const char *why;  /* what makes the modes refused here unsafe        */
} dl_fs;

/* The row of the filesystem `dir` is on (cached per thread for the last
 * directory asked about); the local row when it cannot be told, with
 * *type (may be NULL) set to the type mountinfo names ("ext4",
 * "fuse.glusterfs", ...; "" when unknown). */
const dl_fs *dl_fs_of(const char *dir, char type[32]);

/* The row named `name` ("local", "glusterfs", ...), NULL when none is. */
const dl_fs *dl_fs_named(const char *name);

/* DIRLOCK_ENETFS (and err) when no lock is safe on `fs` (sshfs), or when
 * lock mode `mode` under `policy` (a range lock when `ranged`) is not safe
 * across the clients of `fs` and `flags` lacks DIRLOCK_ONE_CLIENT; else
 * DIRLOCK_OK. */
int dl_fs_allows(const dl_fs *fs, const char *dir, int mode, int policy, bool ranged, unsigned flags,
                 dirlock_error *err);

/* SIGHTINGS (netfs.c): how long this thread has seen the entry of
 * `token` (may be "" for an unreadable record) with change time
 * `changed_ns`, in seconds by the monotonic clock; 0 when this is the
 * first sighting (it is remembered from now). */
double dl_fs_unchanged_for(const char *token, long long changed_ns);

/* An entry judged by age on filesystem `fs`: stale when its age by the
 * judge's clock exceeds `limit` -- and, on a network filesystem, only
 * once this thread has also seen it unchanged for limit / 3 plus the
 * filesystem's cache lag (or, whatever the clocks say, for limit plus
 * that lag).  See CLOCKS in netfs.c. */
bool dl_fs_aged_out(const dl_fs *fs, const char *token, long long changed_ns, double age, double limit);

/* The watch of dl_fs_aged_out on a network filesystem: how long a judge
 * must have seen an entry unchanged before its age may break it, limit /
 * 3 plus the cache lag (CLOCKS in netfs.c). */
double dl_fs_watch(const dl_fs *fs, double limit);

#endif
