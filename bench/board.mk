# bench/board.mk - the board benchmark (make bench-board) and its
# hello-world FastCGI program, the upper limit through the same nginx.
#   make bench-board [BENCH_DURATION=5s] [BENCH_CONNECTIONS=16]

HELLO_BIN := $(BUILD)/bench/hello
BENCH_DURATION ?= 5s
BENCH_CONNECTIONS ?= 16

$(HELLO_BIN): $(BUILD)/bench/hello.o
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lfcgi

bench-board: all $(HELLO_BIN)
	HELLO=$(HELLO_BIN) DURATION=$(BENCH_DURATION) CONNECTIONS=$(BENCH_CONNECTIONS) bench/board-bench

.PHONY: bench-board
