/* netfs.c - the network-filesystem module: which filesystem a lock
 * directory is on (the table below: the one place that says what each
 * offers), and the judge's memory of entries it has seen on a network
 * filesystem.  It sets the core's filesystem calls (lib/core/fs.h) at
 * load; without it the core knows local filesystems alone.
 *
 * TELLING.  A directory whose statfs(2) magic number is one of the local
 * filesystems the core knows (lib/core/fs.c) is local.  Else the
 * filesystem type is the one /proc/self/mountinfo gives for the
 * directory's device ("nfs4", "fuse.glusterfs"), so that FUSE filesystems
 * are told apart by their subtype; where mountinfo cannot be read, the
 * magic number says at least NFS, SMB and FUSE.  A type that is not in
 * the table is a local filesystem.
 *
 * WHAT HOLDS ON A NETWORK FILESYSTEM (docs/netfs.md has the
 * measurements).  Each client caches names and attributes: on GlusterFS
 * (FUSE, default volume options) a name another client removed is still
 * found for up to a second (entry-timeout), an entry's times are up to a
 * second old (attribute-timeout, and the client's metadata cache,
 * performance.md-cache-timeout), and a path through a directory that was
 * removed or replaced answers ESTALE (lib/core/dir_fsops.c).  Names another client
 * made are seen at once (no negative lookups are cached: negative-timeout
 * 0, performance.nl-cache off), a listing is never served from a cache,
 * rename(2), mkdir(2) and symlink(2) are atomic at the server, and
 * flock(2) is the server's.  So:
 *   - the exclusive lock (and its FIFO queue) needs the atomic rename,
 *     a rename onto a held lock that fails as such (ENOTEMPTY, EEXIST),
 *     a symbolic link's own times set by its refresh, listings that ask
 *     the server (its check, dir/), and times late by no more than the
 *     row's cache_lag: measured on GlusterFS, NFS and SMB documented so,
 *     so safe across their clients;
 *   - shared and intent locks and range locks need, besides, that a look
 *     sees an entry another client has just made (rwlock.c's handshake,
 *     range.c's scans): true of GlusterFS as above (measured with the
 *     stress programs across clients); on NFS and SMB a client may cache
 *     that a name does not exist, so there they are refused
 *     (DIRLOCK_ENETFS) unless the caller says every process using the
 *     lock directory runs on one client (DIRLOCK_ONE_CLIENT);
 *   - sshfs has none of the exclusive lock's needs but the rename
 *     (measured, two mounts of one directory, default options): SFTP
 *     sets a symbolic link's times through the link (its target is no
 *     file, so a holder's refresh fails with ENOENT and its lock's time
 *     never moves), answers a rename onto a held lock with a bare
 *     failure (EPERM), and each client keeps names, listings and times
 *     for its cache_timeout (20 s: a name another client made was listed
 *     after 22 s).  No lock is safe there, DIRLOCK_ONE_CLIENT or not:
 *     refused;
 *   - of another FUSE filesystem nothing is known (sshfs is one): every
 *     lock is refused unless the caller says that every process using the
 *     lock directory runs on this one client (DIRLOCK_ONE_CLIENT);
 *   - no filesystem here lets inotify hear other clients: waiters poll.
 *
 * KEPT DIRECTORIES.  A client may also make an entry in a directory that
 * another client has just removed, through its cached name of it, and
 * succeed: measured on GlusterFS, a reader made r.<T> in NAME.readers 0.2
 * s after another client removed that directory and made it again, the
 * writer that then listed and removed the new one never saw it, and the
 * reader's entry was gone when it released (a reader nobody could see:
 * a writer may write while it reads).  So on a network filesystem the
 * directories others make entries in -- NAME.readers, NAME.wq, NAME.fifo,
 * NAME.ranges -- are never removed once made (on a local filesystem the
 * last one out removes them, rwlock.c); a lock directory NAME.lock is
 * only ever made whole by a rename, and entries in it are named by
 * tokens that are never reused, so it comes and goes as everywhere.
 *
 * CLOCKS.  A lock's age is the judge's wall clock minus the entry's last
 * change time, which another host wrote (GlusterFS stamps the client's
 * clock, NFS the server's), read through a cache that may be cache_lag
 * seconds late.  A judge whose clock runs ahead, or whose cache is late,
 * would see a live holder's lock too old.  So on a network filesystem age
 * alone never breaks a lock: the judge must also have seen the entry
 * unchanged, by its own monotonic clock, for a third of the stale age
 * plus cache_lag -- a holder that refreshes every third of the stale age
 * (dirlock.h) changes it within that window whatever the clocks say.
 * Besides, an entry seen unchanged for the stale age plus cache_lag is
 * stale whatever the judge's clock says (a clock running behind would
 * otherwise hold a dead holder's lock for as long as it lags).  A judge
 * remembers what it saw per thread (SIGHTINGS below), so a waiter's
 * window opens with its first look; a one-shot caller (dirlock break)
 * looks again until the window has passed.
 *
 * SIGHTINGS.  Per thread, the last SIGHTINGS entries judged: token,
 * change time, and when this thread first saw that change time.  The
 * oldest is forgotten for a new one, which only ever postpones a break. */
#include "netfs.h"
#include "core.h"
#include "dirlock_netfs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

/* ---- the table --------------------------------------------------------- */

enum { FS_LOCAL, FS_GLUSTER, FS_NFS, FS_SMB, FS_SSHFS, FS_FUSE, FS_CLUSTER, FS_COUNT };

/* Why a row refuses what it refuses (WHAT HOLDS above). */
#define WHY_NEGATIVE "a client may not see an entry another one has just made"
#define WHY_SSHFS                                                                                            \
        "SFTP sets a symbolic link's times through the link, so a holder cannot refresh its lock, it "       \
        "answers a rename onto a held lock with a bare failure, and each client keeps names and times "      \
        "for 20 s"
#define WHY_FUSE                                                                                             \
        "the library does not know how its clients keep names and times (sshfs's keep them for 20 s, "       \
        "which breaks live holders)"

/* Cache lags: GlusterFS's metadata cache keeps attributes for its
 * md-cache-timeout (1 s by default) even when the kernel's cache is
 * bypassed (AT_STATX_FORCE_SYNC); NFS and SMB answer such a statx from
 * the server, but an attribute reply may be in flight; the others are not
 * measured here and get GlusterFS's figure (one client's FUSE process
 * sees its own changes at once). */
static const dl_fs rows[FS_COUNT] = {
    /*              name          network notify usable excl   shared ranges lag  why */
    [FS_LOCAL] = {"local", false, true, true, true, true, true, 0.0, NULL},
    [FS_GLUSTER] = {"glusterfs", true, false, true, true, true, true, 2.0, NULL},
    [FS_NFS] = {"nfs", true, false, true, true, false, false, 2.0, WHY_NEGATIVE},
    [FS_SMB] = {"smb", true, false, true, true, false, false, 2.0, WHY_NEGATIVE},
    [FS_SSHFS] = {"sshfs", true, false, false, false, false, false, 20.0, WHY_SSHFS},
    [FS_FUSE] = {"fuse", true, false, true, false, false, false, 2.0, WHY_FUSE},
    [FS_CLUSTER] = {"cluster filesystem", true, false, true, true, false, false, 2.0, WHY_NEGATIVE},
};

/* mountinfo's type -> row; a type starting with "fuse" (fuse, fuseblk,
 * fuse.sshfs, ...) and not listed is FS_FUSE; any other, FS_LOCAL. */
static const struct {
        const char *type;
        int row;
} types[] = {
    {"fuse.glusterfs", FS_GLUSTER},
    {"fuse.sshfs", FS_SSHFS},
    {"nfs", FS_NFS},
    {"nfs4", FS_NFS},
    {"cifs", FS_SMB},
    {"smb3", FS_SMB},
    {"smbfs", FS_SMB},
    {"ceph", FS_CLUSTER},
    {"9p", FS_CLUSTER},
    {"afs", FS_CLUSTER},
    {"lustre", FS_CLUSTER},
    {"gfs2", FS_CLUSTER},
    {"ocfs2", FS_CLUSTER},
    {"beegfs", FS_CLUSTER},
    {"orangefs", FS_CLUSTER},
    {"gpfs", FS_CLUSTER},
    {"coda", FS_CLUSTER},
};

#define NFS_SUPER_MAGIC  0x6969
#define SMB_SUPER_MAGIC  0x517B
#define CIFS_SUPER_MAGIC 0xFF534D42
#define SMB2_SUPER_MAGIC 0xFE534D42
#define FUSE_SUPER_MAGIC 0x65735546

static int row_of_type(const char *type)
{
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
                if (strcmp(type, types[i].type) == 0)
                        return types[i].row;
        return strncmp(type, "fuse", 4) == 0 ? FS_FUSE : FS_LOCAL;
}

/* The type of the filesystem of device `dev` from mountinfo, into type[32];
 * 0, or -1 when it is not found. */
static int mountinfo_type(dev_t dev, char type[32])
{
        FILE *f = fopen("/proc/self/mountinfo", "re");
        if (f == NULL)
                return -1;
        char line[4096];
        int found = -1;
        while (found < 0 && fgets(line, sizeof line, f) != NULL) {
                unsigned maj, min;
                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER */
                if (sscanf(line, "%*u %*u %u:%u", &maj, &min) != 2 || makedev(maj, min) != dev)
                        continue;
                const char *sep = strstr(line, " - ");
                if (sep != NULL && sscanf(sep + 3, "%31s", type) == 1)
                        found = 0;
        }
        fclose(f);
        return found;
}

static int row_of_magic(unsigned long magic)
{
        switch (magic) {
        case NFS_SUPER_MAGIC:
                return FS_NFS;
        case SMB_SUPER_MAGIC:
        case CIFS_SUPER_MAGIC:
        case SMB2_SUPER_MAGIC:
                return FS_SMB;
        case FUSE_SUPER_MAGIC:
                return FS_FUSE;
        default:
                return FS_LOCAL;
        }
}

static const dl_fs *netfs_of(const char *dir, char type[32])
{
        static _Thread_local char last_dir[512];
        static _Thread_local char last_type[32];
        static _Thread_local bool last_typed; /* last_type was read */
        static _Thread_local int last_row = -1;
        if (last_row >= 0 && strcmp(last_dir, dir) == 0 && (type == NULL || last_typed)) {
                if (type != NULL)
                        memcpy(type, last_type, sizeof last_type);
                return &rows[last_row];
        }
        char t[32] = "";
        int row = FS_LOCAL;
        bool typed = false;
        struct stat st;
        struct statfs sfs;
        bool magic = statfs(dir, &sfs) == 0;
        /* A local filesystem's magic number says all a lock needs; the
         * mount table is read only for the others (and for its type's
         * name, when asked). */
        if (type == NULL && magic && dl_fs_magic_local((unsigned long)sfs.f_type)) {
                row = FS_LOCAL;
        } else if (stat(dir, &st) == 0 && mountinfo_type(st.st_dev, t) == 0) {
                row = row_of_type(t);
                typed = true;
        } else if (magic) {
                row = row_of_magic((unsigned long)sfs.f_type);
                typed = true;
        } else {
                return &rows[FS_LOCAL]; /* cannot tell now: not remembered */
        }
        if (strlen(dir) < sizeof last_dir) {
                strcpy(last_dir, dir);
                memcpy(last_type, t, sizeof last_type);
                last_typed = typed;
                last_row = row;
        }
        if (type != NULL)
                memcpy(type, t, 32);
        return &rows[row];
}

const dl_fs *dl_fs_named(const char *name)
{
        for (int i = 0; i < FS_COUNT; i++)
                if (strcmp(rows[i].name, name) == 0)
                        return &rows[i];
        return NULL;
}

static int netfs_allows(const dl_fs *fs, const char *dir, int mode, int policy, bool ranged, unsigned flags,
                        dirlock_error *err)
{
        if (!fs->usable)
                return dl_fail(err, DIRLOCK_ENETFS, 0,
                               "'%s' is on %s, where no lock is safe: %s; keep the lock directory on a "
                               "filesystem of the host that runs the processes, see docs/netfs.md",
                               dir, fs->name, fs->why);
        if (!fs->network || (flags & DIRLOCK_ONE_CLIENT))
                return DIRLOCK_OK;
        /* A `simple` whole lock is the exclusive lock in every mode. */
        bool reads = mode != DIRLOCK_EXCLUSIVE && policy != DIRLOCK_POLICY_SIMPLE;
        const char *what = ranged ? "range locks" : reads ? "shared and intent locks" : "exclusive locks";
        if (ranged ? fs->ranges_ok : reads ? fs->shared_ok : fs->excl_ok)
                return DIRLOCK_OK;
        return dl_fail(err, DIRLOCK_ENETFS, 0,
                       "'%s' is on a network filesystem (%s) where %s are not safe among processes of "
                       "several clients: %s; %ssay that every process using this lock directory runs on "
                       "this one client (DIRLOCK_ONE_CLIENT, dirlock --one-client), see docs/netfs.md",
                       dir, fs->name, what, fs->why, fs->excl_ok ? "use exclusive locks, or " : "");
}

/* ---- sightings --------------------------------------------------------- */

#define SIGHTINGS 64

struct sighting {
        char token[DIRLOCK_TOKEN_LEN + 1];
        long long changed_ns;
        dl_time first; /* when this thread first saw this change time */
        dl_time last;  /* when it last looked: the oldest goes first  */
        bool used;
};

static double seconds_between(const dl_time *a, const dl_time *b)
{
        return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* How long this thread has seen the entry of `token` ("" for an
 * unreadable record) with change time `changed_ns`, in seconds by the
 * monotonic clock; 0 at the first sighting (remembered from now). */
static double unchanged_for(const char *token, long long changed_ns)
{
        static _Thread_local struct sighting seen[SIGHTINGS];
        char key[DIRLOCK_TOKEN_LEN + 1];
        if (token[0] == '\0') { /* an unreadable record: its change time names it */
                snprintf(key, sizeof key, "@%lld", changed_ns);
                token = key;
        }
        dl_time now = dl_now();
        struct sighting *slot = NULL, *oldest = &seen[0];
        for (int i = 0; i < SIGHTINGS; i++) {
                struct sighting *s = &seen[i];
                if (s->used && strcmp(s->token, token) == 0) {
                        slot = s;
                        break;
                }
                if (!s->used || (oldest->used && seconds_between(&s->last, &oldest->last) < 0))
                        oldest = s;
        }
        if (slot != NULL && slot->changed_ns == changed_ns) {
                slot->last = now;
                return seconds_between(&slot->first, &now);
        }
        if (slot == NULL)
                slot = oldest;
        snprintf(slot->token, sizeof slot->token, "%s", token);
        slot->changed_ns = changed_ns;
        slot->first = slot->last = now;
        slot->used = true;
        return 0;
}

static bool netfs_aged_out(const dl_fs *fs, const char *token, long long changed_ns, double age, double limit)
{
        if (!fs->network)
                return age > limit;
        double seen = unchanged_for(token, changed_ns);
        if (seen < dl_fs_watch(fs, limit))
                return false;
        return age > limit || seen >= limit + fs->cache_lag;
}

/* ---- the public query -------------------------------------------------- */

int dirlock_fs_query(const char *dir, dirlock_fs_info *info, dirlock_error *err)
{
        memset(info, 0, sizeof *info);
        if (dir == NULL || dir[0] == '\0')
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no directory given");
        struct stat st;
        if (stat(dir, &st) != 0)
                return dl_fail(err, DIRLOCK_EIO, errno, "cannot look at '%s'", dir);
        const dl_fs *fs = netfs_of(dir, info->type);
        snprintf(info->kind, sizeof info->kind, "%s", fs->name);
        info->network = fs->network;
        info->notify = fs->notify;
        info->usable = fs->usable;
        info->exclusive_ok = fs->excl_ok;
        info->shared_ok = fs->shared_ok;
        info->ranges_ok = fs->ranges_ok;
        info->cache_lag = fs->cache_lag;
        dl_ok(err);
        return DIRLOCK_OK;
}

static const dl_netfs module = {netfs_of,         netfs_allows,    netfs_aged_out,
                                dl_netfs_refresh, dl_netfs_forget, dl_netfs_released};

DL_ON_LOAD(netfs_register)
{
        dl_netfs_set(&module);
}
