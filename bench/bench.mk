# bench/bench.mk - the benchmarks (bench/README.md).  Each prints a table
# with its targets and whether they are met, and writes it to
# bench/results/; figures are ratios to a baseline measured in the same
# run.  They assert nothing.
#   make bench         every benchmark, one after the other
#   make bench-core    the exclusive lock, counting locks and what deadlock
#                      detection costs (bench/core-run)
#   make bench-deadlock  deadlock detection's 60 s soak, 8 processes x 3
#                      names, truth in shared memory [DEADLOCK_SECONDS=60]
#   make bench-rw      the reader-writer lock (bench/rw-run)
#   make bench-range   range locks against no lock, a whole lock and
#                      fcntl byte ranges (bench/range-run)
#   make bench-peers   dirlock beside py-filelock, proper-lockfile,
#                      dotlockfile, lockfile-progs, mkdir and flock(2)
#                      (bench/peers-run; PEERS_SECONDS, PEERS_REPS, ...)
#   make bench-overload  the board at 4x its capacity, with and without
#                      max_waiting_posts [OVERLOAD_SECONDS=10]
#   make bench-board   the board under nginx, against a hello-world
#                      FastCGI program [BENCH_DURATION=5s] [BENCH_CONNECTIONS=16]
#   make bench-view-profile  where a page view's CPU time goes in the mkdir
#                      and rw boards' processes (bench/view-profile; perf)
#   make bench-wait-profile  how long rw page views wait for the writers
#                      while posts come in (bench/wait-profile; perf uprobes)
#   make bench-redis   lock spaces on a private redis-server, against bare
#                      SET NX PX + DEL and the seed article's INCRBY lock
#                      (bench/redis-run)
#   make bench-redis-deadlock  what deadlock detection costs a contended
#                      Redis lock (bench/redis-run deadlock) [DEADLOCK_ROUNDS=9]
#   make bench-netfs   every locker on a private GlusterFS volume across two
#                      clients: updates lost, failures, ops/s, waits, a
#                      holder's host dying, hand-off (bench/netfs-run;
#                      NETFS_SECONDS, NETFS_N, ...; root and /dev/fuse)
#   make bench-async   pending acquires (an event loop's way) against the
#                      blocking call; many pending in one loop; Node's event
#                      loop while acquires wait (bench/async-run, async-lag.js)
#   make bench-waiters 1,000 and 10,000 waiters of one lock in one event
#                      loop (C, asyncio, Node), served in turn, beside as
#                      many blocking threads (bench/waiters-run; WAITERS,
#                      THREAD_WAITERS, THREAD_LIMIT_S)
#   make bench-bindings  a lock from Perl and Python against C, and against
#                      the dirlock command wrapping a no-op (bench/bindings-run)
#   make bench-startup what a program pays at start-up for dirlock: the
#                      command, a locked loop of commands, perl -MDirlock,
#                      import dirlock, beside flock(1), perl and python
#                      (bench/startup-run, bench/pair_time.c)
#   make bench-etcd    lock spaces on a private three-member etcd cluster,
#                      against a bare put + delete and beside etcdctl lock
#                      (bench/etcd-run)
#   uses: BUILD, LIB_A, LIB_LIBS (lib/lib.mk), DEMO_BIN (tools/tools.mk),
#         bindings, bindings-node, PYTHON, NODE (bindings/bindings.mk),
#         PROG_BINS (tests/tests.mk)

CORE_BENCH := $(BUILD)/bench/core_bench
PEER_WORKER := $(BUILD)/bench/peer_worker
RW_BENCH := $(BUILD)/bench/rw_bench
RANGE_BENCH := $(BUILD)/bench/range_bench
REDIS_BENCH := $(BUILD)/bench/redis_bench
ASYNC_BENCH := $(BUILD)/bench/async_bench
WAITERS_BENCH := $(BUILD)/bench/waiters_bench
BINDINGS_BENCH := $(BUILD)/bench/bindings_bench
ETCD_BENCH := $(BUILD)/bench/etcd_bench
PAIR_TIME := $(BUILD)/bench/pair_time
HELLO_BIN := $(BUILD)/bench/hello
BENCH_DURATION ?= 5s
BENCH_CONNECTIONS ?= 16

$(CORE_BENCH): $(BUILD)/bench/core_bench.o $(LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)

$(PEER_WORKER): $(BUILD)/bench/peer_worker.o $(LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)

$(RW_BENCH): $(BUILD)/bench/rw_bench.o $(LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) -lm

$(RANGE_BENCH): $(BUILD)/bench/range_bench.o $(LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)

$(REDIS_BENCH): $(BUILD)/bench/redis_bench.o $(LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)

$(ASYNC_BENCH): $(BUILD)/bench/async_bench.o $(LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)

$(WAITERS_BENCH): $(BUILD)/bench/waiters_bench.o $(LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) -lpthread

$(BINDINGS_BENCH): $(BUILD)/bench/bindings_bench.o $(LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)

$(ETCD_BENCH): $(BUILD)/bench/etcd_bench.o $(LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)

$(PAIR_TIME): $(BUILD)/bench/pair_time.o
	$(CC) $(ALL_LDFLAGS) -o $@ $^

$(HELLO_BIN): $(BUILD)/bench/hello.o
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lfcgi

bench-core: all $(CORE_BENCH)
	BUILD_DIR=$(BUILD) bench/core-run

bench-deadlock: all $(PROG_BINS)
	BUILD_DIR=$(BUILD) bench/deadlock-run

bench-peers: all $(PEER_WORKER) $(CORE_BENCH)
	BUILD_DIR=$(BUILD) bench/peers-run

bench-rw: $(RW_BENCH) $(DEMO_BIN)
	bench/rw-run $(RW_BENCH)

bench-range: $(RANGE_BENCH)
	BUILD_DIR=$(BUILD) bench/range-run
bench-redis: all $(REDIS_BENCH)
	BUILD_DIR=$(BUILD) bench/redis-run
bench-redis-deadlock: all $(REDIS_BENCH)
	BUILD_DIR=$(BUILD) bench/redis-run deadlock
bench-etcd: all $(ETCD_BENCH)
	BUILD_DIR=$(BUILD) bench/etcd-run

bench-netfs: all $(PEER_WORKER)
	BUILD_DIR=$(BUILD) bench/netfs-run

bench-async: all $(ASYNC_BENCH) $(if $(filter 1,$(SANITIZE)),,bindings-node)
	BUILD_DIR=$(BUILD) NODE=$(NODE) bench/async-run

bench-waiters: all $(WAITERS_BENCH) $(if $(filter 1,$(SANITIZE)),,bindings-python bindings-node)
	BUILD_DIR=$(BUILD) PYTHON=$(PYTHON) NODE=$(NODE) bench/waiters-run

bench-bindings: all bindings $(BINDINGS_BENCH)
	BUILD_DIR=$(BUILD) PYTHON=$(PYTHON) bench/bindings-run

bench-startup: all $(PAIR_TIME) $(if $(filter 1,$(SANITIZE)),,bindings bindings-node)
	BUILD_DIR=$(BUILD) PYTHON=$(PYTHON) NODE=$(NODE) bench/startup-run

bench-overload: all
	bench/overload-run

bench-board: all $(HELLO_BIN) $(RW_BENCH)
	HELLO=$(HELLO_BIN) RW_BENCH=$(RW_BENCH) DURATION=$(BENCH_DURATION) CONNECTIONS=$(BENCH_CONNECTIONS) bench/board-bench

bench-view-profile: all $(HELLO_BIN) $(RW_BENCH)
	HELLO=$(HELLO_BIN) RW_BENCH=$(RW_BENCH) bench/view-profile

bench-wait-profile: all
	bench/wait-profile

# One after the other: running them at once would measure each other.
bench:
	$(MAKE) bench-core
	$(MAKE) bench-deadlock
	$(MAKE) bench-rw
	$(MAKE) bench-range
	$(MAKE) bench-peers
	$(MAKE) bench-board
	$(MAKE) bench-overload
	$(MAKE) bench-redis
	$(MAKE) bench-bindings
	$(MAKE) bench-netfs
	$(MAKE) bench-etcd
	$(MAKE) bench-async
	$(MAKE) bench-waiters
	$(MAKE) bench-startup
	$(MAKE) bench-view-profile
	$(MAKE) bench-wait-profile

.PHONY: bench bench-async bench-waiters bench-core bench-deadlock bench-overload bench-rw bench-range bench-peers bench-board bench-view-profile \
	bench-wait-profile bench-redis bench-redis-deadlock bench-bindings bench-netfs bench-etcd bench-startup
