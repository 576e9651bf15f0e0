# cgi-bin/board.mk - the bulletin board (cgi-bin/board), FastCGI and CGI.
# BOARD_LIB_OBJS: every board object except main(), for tests and fuzzers.

BOARD_SRCS := $(wildcard cgi-bin/*.c)
BOARD_OBJS := $(BOARD_SRCS:%.c=$(BUILD)/%.o)
BOARD_MAIN_OBJ := $(BUILD)/cgi-bin/main.o
BOARD_LIB_OBJS := $(filter-out $(BOARD_MAIN_OBJ),$(BOARD_OBJS))
BOARD_LIBS := -lfcgi -lsqlite3 -lcrypt -lcrypto

all: $(BOARD_BIN)

$(BOARD_BIN): $(BOARD_OBJS) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $(BOARD_OBJS) $(LIB_A) $(BOARD_LIBS)

.PHONY: board
board: $(BOARD_BIN)
