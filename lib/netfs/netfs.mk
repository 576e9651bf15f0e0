# lib/netfs/netfs.mk - the network-filesystem module: which filesystem a
# lock directory is on, what is safe among the clients of GlusterFS, NFS,
# SMB, ... (dirlock_netfs.h).  Needs the core; without it the core takes
# locks on local filesystems only.
#   adds to: LIB_SRCS, LIB_HEADERS (lib/lib.mk)

LIB_SRCS += lib/netfs/netfs.c lib/netfs/netfs_fsops.c lib/netfs/netfs_release.c
LIB_HEADERS += lib/netfs/dirlock_netfs.h
