# lib/etcd/etcd.mk - the etcd backend (etcd://..., lib/etcd/etcd_backend.c),
# part of the library when pkg-config finds libcurl, json-c and libcrypto
# (Debian: libcurl4-openssl-dev, libjson-c-dev, libssl-dev), never with
# ETCD=0; without it etcd:// spaces say so.  Included by lib/lib.mk.
#   provides: ETCD_SRCS, ETCD; adds to LIB_SRCS, LIB_LIBS, PC_REQUIRES_LIST,
#             ALL_CFLAGS

ETCD_SRCS := lib/etcd/etcd_admin.c lib/etcd/etcd_backend.c lib/etcd/etcd_http.c lib/etcd/etcd_kv.c \
	lib/etcd/etcd_queue.c lib/etcd/etcd_url.c
ETCD_PKGS := libcurl json-c libcrypto
ETCD ?= $(shell pkg-config --exists $(ETCD_PKGS) 2>/dev/null && echo 1 || echo 0)
ifeq ($(ETCD),1)
LIB_SRCS += $(ETCD_SRCS)
LIB_LIBS += $(shell pkg-config --libs $(ETCD_PKGS))
PC_REQUIRES_LIST += $(ETCD_PKGS)
ALL_CFLAGS += -DDIRLOCK_WITH_ETCD $(shell pkg-config --cflags $(ETCD_PKGS))
endif
