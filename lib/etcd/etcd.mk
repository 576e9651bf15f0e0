# lib/etcd/etcd.mk - the etcd backend: lock spaces on an etcd cluster
# shared by several hosts (etcd://; etcd.h), reached through its v3 JSON
# gateway.
#   adds to: LIB_SRCS, LIB_LIBS, PC_REQUIRES, ALL_CFLAGS (lib/lib.mk)
#   provides: ETCD (1 when built), ETCD_SRCS
#
# Built when pkg-config finds libcurl, json-c and libcrypto (Debian:
# libcurl4-openssl-dev, libjson-c-dev, libssl-dev), or never with ETCD=0;
# without them only the placeholder is (etcd_absent.c), and etcd:// spaces
# say that this build has none.

ETCD_SRCS := lib/etcd/etcd_admin.c lib/etcd/etcd_backend.c lib/etcd/etcd_http.c lib/etcd/etcd_kv.c \
	lib/etcd/etcd_queue.c lib/etcd/etcd_url.c
ETCD_PKGS := libcurl json-c libcrypto
ETCD ?= $(shell pkg-config --exists $(ETCD_PKGS) 2>/dev/null && echo 1 || echo 0)
ifeq ($(ETCD),1)
LIB_SRCS += $(ETCD_SRCS)
LIB_LIBS += $(shell pkg-config --libs $(ETCD_PKGS))
# One Requires.private line for every backend that adds one.
PC_REQUIRES += $(if $(findstring Requires.private:,$(PC_REQUIRES)),,Requires.private:) $(ETCD_PKGS)
ALL_CFLAGS += -DDIRLOCK_WITH_ETCD $(shell pkg-config --cflags $(ETCD_PKGS))
else
LIB_SRCS += lib/etcd/etcd_absent.c
endif
