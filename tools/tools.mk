# tools/tools.mk - the reader-writer demonstration program, the Debian
# packages, and the local deployment.
#   make deps                      install missing Debian packages
#   make start [PORT=8080] [DELAY_MS=0] [SERVER=nginx|fcgiwrap|lighttpd|apache]
#   make stop                      stop everything make start started
#   make demo [PORT=8080]          deps + start with DELAY_MS=20 from empty
#                                  boards + the lost-update and torn-read
#                                  demonstration, then the same for seed
#                                  001's Perl boards (DEMO_PERL_POSTS per
#                                  client, DEMO_PERL_DELAY_MS); the boards
#                                  stay up
#   make demo-rw                   bin/dirlock-demo: torn reads, read and
#                                  write attacks per policy (5 s a run), and
#                                  the trace htdocs/rw-timeline.html draws
#   make start-cluster [CLUSTER_PORT=8090] [DELAY_MS=0] [LOCKS=etcd]
#                                  the boards on two hosts (network
#                                  namespaces, root only) sharing one data
#                                  directory, locks on a Redis server in a
#                                  namespace of its own, or with LOCKS=etcd
#                                  on a three-member etcd cluster
#                                  (tools/cluster, docs/cluster.md); make
#                                  stop-cluster
#   make demo-cluster [LOCKS=etcd] start-cluster with DELAY_MS=20 from empty
#                                  boards + the lost-update demonstration
#                                  posting to both hosts at once
#   ... CLUSTER_TLS=0              both cluster targets run the lock
#                                  servers with TLS, client certificates
#                                  and users (tools/cluster TLS=1,
#                                  docs/cluster.md); 0: plain, open to all
#   make start-cluster FS=glusterfs / make demo-cluster FS=glusterfs
#                                  the same with the boards' data (and the
#                                  lock directories) on a GlusterFS volume
#                                  each host mounts (tools/glusterfs,
#                                  docs/netfs.md)
#   make demo-range [DEMO_SPACE=redis://...]
#                                  bin/dirlock-tree-demo: a nested-interval
#                                  tree edited at once by 8 processes, with
#                                  no lock, range locks and a whole lock
#                                  (locks in DEMO_SPACE when given)
# Generated configuration, sockets and pid files live in run/, board data
# in data/<board>/ (tools/deploy --help).
#   provides: DEMO_BIN, TREE_DEMO_BIN
#   uses:     BIN_DIR, BUILD, LIB_SO, LIB_SHARED (lib/lib.mk), bindings-perl
#             (bindings/bindings.mk: the Perl boards load the Dirlock module)

DEMO_BIN := $(BIN_DIR)/dirlock-demo
TREE_DEMO_BIN := $(BIN_DIR)/dirlock-tree-demo

all: $(DEMO_BIN) $(TREE_DEMO_BIN)

$(DEMO_BIN): $(BUILD)/tools/dirlock-demo.o $(LIB_SO)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB_SHARED)

$(TREE_DEMO_BIN): $(BUILD)/tools/dirlock-tree-demo.o $(LIB_SO)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB_SHARED)

demo-range: $(TREE_DEMO_BIN)
	@d=$$(mktemp -d) && $(TREE_DEMO_BIN) -d $$d $(if $(DEMO_SPACE),-s '$(DEMO_SPACE)'); rc=$$?; rm -rf $$d; exit $$rc

RW_TRACE ?= htdocs/rw-trace.json

demo-rw: $(DEMO_BIN)
	$(DEMO_BIN) -s 5 --trace $(RW_TRACE)

PORT ?= 8080
DELAY_MS ?= 0
SERVER ?= nginx
WORKERS ?= 8
DEMO_DELAY_MS ?= 20
DEMO_CLIENTS ?= 16
DEMO_POSTS ?= 50
# The Perl boards start a process per request, and the seed's lock sleeps
# 1 s between tries: fewer posts keep their run near a minute, and a wider
# window (100 ms) puts their lock under the load that shows what it does.
DEMO_PERL_POSTS ?= 20
DEMO_PERL_DELAY_MS ?= 100
DEMO_PERL_MODES := perl-none perl-seed perl-dirlock

# make demo keeps an explicit DELAY_MS=..., else uses DEMO_DELAY_MS.
demo_delay = $(if $(filter command line environment,$(origin DELAY_MS)),$(DELAY_MS),$(DEMO_DELAY_MS))

deps:
	tools/install-deps

start: all bindings-perl
	PORT=$(PORT) DELAY_MS=$(DELAY_MS) SERVER=$(SERVER) WORKERS=$(WORKERS) tools/deploy start

stop:
	tools/deploy stop

status:
	@tools/deploy status

# The demonstration starts from empty boards (FRESH=1 empties data/<board>/).
# perl-seed is the article's own lock: it may lose posts, as shown.
demo: deps
	$(MAKE) all bindings-perl
	PORT=$(PORT) DELAY_MS=$(demo_delay) PERL_DELAY_MS=$(DEMO_PERL_DELAY_MS) SERVER=nginx WORKERS=$(WORKERS) \
		FRESH=1 tools/deploy start
	@rc=0; tests/lost-update --expect-loss --torn -c $(DEMO_CLIENTS) -n $(DEMO_POSTS) \
		http://127.0.0.1:$(PORT)/board/ || rc=$$?; \
	echo; echo "Seed 001's board in Perl (cgi-bin/board.pl under fcgiwrap):"; \
	tests/lost-update --expect-loss --unlocked perl-seed -c $(DEMO_CLIENTS) -n $(DEMO_PERL_POSTS) \
		-m "$(DEMO_PERL_MODES)" http://127.0.0.1:$(PORT)/board/ || rc=$$?; \
	echo; \
	echo "The boards are up: http://127.0.0.1:$(PORT)/   (make stop to stop them)"; \
	echo "Watch the race in a browser: http://127.0.0.1:$(PORT)/race.html"; \
	exit $$rc

CLUSTER_PORT ?= 8090
FS ?= local
LOCKS ?= redis
CLUSTER_TLS ?= 1
# The boards the demonstration posts to, by where the data lives and
# which lock servers run (tools/cluster picks the board list the same way).
CLUSTER_MODES_local_redis := none mkdir redis redis-sqlite
CLUSTER_MODES_glusterfs_redis := none mkdir rw flock redis
CLUSTER_MODES_local_etcd := none mkdir etcd etcd-sqlite

# tools/cluster exits 77, after one line saying why, where network
# namespaces cannot be made: the target stops there.
start-cluster: all
	@FS=$(FS) LOCKS=$(LOCKS) TLS=$(CLUSTER_TLS) PORT=$(CLUSTER_PORT) DELAY_MS=$(DELAY_MS) tools/cluster start || { rc=$$?; [ $$rc -eq 77 ] || exit $$rc; }

stop-cluster:
	tools/cluster stop

demo-cluster: deps
	$(MAKE) all
	@FS=$(FS) LOCKS=$(LOCKS) TLS=$(CLUSTER_TLS) PORT=$(CLUSTER_PORT) DELAY_MS=$(demo_delay) FRESH=1 tools/cluster start || { rc=$$?; [ $$rc -eq 77 ] || exit $$rc; exit 0; }; \
	rc=0; tests/lost-update --expect-loss -c $(DEMO_CLIENTS) -n $(DEMO_POSTS) -m "$(CLUSTER_MODES_$(FS)_$(LOCKS))" \
		$$(tools/cluster urls | sed 's/^/--host /') || rc=$$?; \
	echo; \
	echo "The cluster is up: http://127.0.0.1:$(CLUSTER_PORT)/board/ (both hosts; make stop-cluster to stop it)"; \
	exit $$rc

.PHONY: deps start stop status demo demo-rw demo-range start-cluster stop-cluster demo-cluster
