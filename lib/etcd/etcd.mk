# lib/etcd/etcd.mk - the etcd backend: lock spaces on an etcd cluster
# shared by several hosts (etcd://, etcds:// over TLS; etcd.h), reached
# through its v3 JSON gateway: a shared object of its own, dirlock/etcd.so,
# which the library loads on the first use of an etcd:// space (and
# libdirlock-etcd.a for static programs).
#   provides: ETCD (1 when built), ETCD_SRCS
#
# Built when pkg-config finds libcurl, json-c and libcrypto (Debian:
# libcurl4-openssl-dev, libjson-c-dev, libssl-dev), or never with ETCD=0;
# without them dirlock/etcd.absent says what to install, and etcd://
# spaces are refused with that.

ETCD_SRCS := lib/etcd/etcd_access.c lib/etcd/etcd_admin.c lib/etcd/etcd_auth.c lib/etcd/etcd_backend.c \
	lib/etcd/etcd_http.c lib/etcd/etcd_kv.c \
	lib/etcd/etcd_queue.c lib/etcd/etcd_url.c
ETCD_PKGS := libcurl json-c libcrypto
ETCD ?= $(shell pkg-config --exists $(ETCD_PKGS) 2>/dev/null && echo 1 || echo 0)
ifeq ($(ETCD),1)
$(eval $(call backend,etcd,$(ETCD_SRCS),$(shell pkg-config --libs $(ETCD_PKGS))))
ALL_CFLAGS += -DDIRLOCK_WITH_ETCD $(shell pkg-config --cflags $(ETCD_PKGS))
else
$(eval $(call backend_absent,etcd,this build of dirlock has no etcd support (install libcurl4-openssl-dev and libjson-c-dev and rebuild)))
endif
