/* dir_fsops.h - the directory backend's system calls on paths, made to
 * say what happened on a network filesystem (dir_fsops.c). */
#ifndef DIRLOCK_DIR_FSOPS_H
#define DIRLOCK_DIR_FSOPS_H

#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Each behaves as the system call of its name (0, or -1 with errno), on
 * absolute paths, except that ESTALE is answered only when it outlived
 * DL_ESTALE_TRIES refreshes of the path (ESTALE in lib/netfs/netfs_fsops.c). */
#define DL_ESTALE_TRIES 4
int dl_fs_unlink(const char *path);
int dl_fs_rmdir(const char *path);
int dl_fs_rename(const char *from, const char *to);
/* dl_mkdir_in (internal.h): a directory in the lock directory. */
int dl_fs_mkdir_in(const char *path, unsigned lockdir_mode);
int dl_fs_symlink(const char *target, const char *path);
int dl_fs_lstat(const char *path, struct stat *st);
/* readlink(2): the target's length (not NUL-terminated), or -1. */
ssize_t dl_fs_readlink(const char *path, char *buf, size_t size);
int dl_fs_stat(const char *path, struct stat *st);
/* utimensat(path, now, no follow): renew an entry's age. */
int dl_fs_touch(const char *path);
/* open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC). */
int dl_fs_open_dir(const char *path);
/* opendir(path), through dl_fs_open_dir. */
DIR *dl_fs_opendir(const char *path);

/* Whether entry `path` exists: 1, 0 (ENOENT), or -1 with errno.  With
 * `ask_server` (a network filesystem), by listing its directory, which
 * no client answers from a cache -- a client may still find by name an
 * entry another client has removed (LISTINGS there). */
int dl_fs_present(const char *path, bool ask_server);

/* dl_fs_present(..., true) of `path` and of `other`, another entry of the
 * same directory (*other_present: 1 or 0), with one listing: one round
 * trip set to the server for the two questions.  -1 with errno when
 * either cannot be told. */
int dl_fs_present2(const char *path, const char *other, int *other_present);

/* dl_fs_open_dir, where an ENOENT decides something (a scan that finds no
 * directory finds no entries): on a network filesystem (`network`) an
 * ENOENT is believed only when a listing of the parent agrees, since a
 * client may have cached that the name does not exist (NEGATIVE LOOKUPS
 * there); when the listing shows it but it still cannot be opened,
 * -1 with ESTALE ("changing": look again). */
int dl_fs_open_dir_sure(const char *path, bool network);

/* Ask the server about `path` and its directory again, so that the next
 * call sees what is there now (lib/netfs; nothing without it). */
void dl_fs_refresh(const char *path);

/* Look up `path`, a directory's name before it was renamed away, so that
 * a server that kept that name drops it (STALE NAMES, lib/netfs). */
void dl_fs_forget(const char *path);

/* The next entry of a listing: 1 and *de, 0 at its end, or -1 with errno
 * when the listing failed (ESTALE: the directory was removed or replaced
 * while we read it).  readdir(3) says both of the last with NULL. */
int dl_fs_next(DIR *d, struct dirent **de);

/* Path's directory into `dir`, and a pointer to path's last name; NULL
 * when path has no directory part (no '/', or only the root's). */
const char *dl_split_dir(const char *path, char dir[PATH_MAX]);

#endif
