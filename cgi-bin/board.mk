# cgi-bin/board.mk - the bulletin board (cgi-bin/board), FastCGI and CGI.
#   provides: BOARD_SRCS, BOARD_LIB_OBJS (every board object but main(), for
#             tests and fuzzers), BOARD_LIBS
#   uses:     BUILD, BOARD_BIN (Makefile), LIB_SO, LIB_SHARED (lib/lib.mk)

BOARD_SRCS := cgi-bin/app.c cgi-bin/board.c cgi-bin/board_error.c cgi-bin/buf.c cgi-bin/cgi.c \
	cgi-bin/config.c cgi-bin/cookie.c cgi-bin/csrf.c cgi-bin/csrf_memo.c cgi-bin/delay.c cgi-bin/deletelimit.c \
	cgi-bin/errlog.c cgi-bin/fence.c cgi-bin/fileio.c cgi-bin/form.c cgi-bin/groupcommit.c cgi-bin/hex.c cgi-bin/json.c cgi-bin/locking.c \
	cgi-bin/lockmode.c cgi-bin/logfile.c cgi-bin/logrecord.c cgi-bin/main.c cgi-bin/msglist.c cgi-bin/pagecache.c cgi-bin/password.c \
	cgi-bin/postqueue.c cgi-bin/process.c cgi-bin/random.c cgi-bin/ratelimit.c cgi-bin/render.c \
	cgi-bin/request.c cgi-bin/store.c cgi-bin/store_log.c cgi-bin/store_sqlite.c cgi-bin/tempname.c \
	cgi-bin/utf8.c cgi-bin/validate.c
BOARD_OBJS := $(BOARD_SRCS:%.c=$(BUILD)/%.o)
BOARD_MAIN_OBJ := $(BUILD)/cgi-bin/main.o
BOARD_LIB_OBJS := $(filter-out $(BOARD_MAIN_OBJ),$(BOARD_OBJS))
BOARD_LIBS := -lfcgi -lsqlite3 -lcrypt -lcrypto

# A switch on an enum names every value of it, default or not: a new lock
# mode, store or write method fails to build where a switch forgets it
# (the default, where there is one, aborts on values no enum has).
$(BUILD)/cgi-bin/%.o $(BUILD)/hooks/cgi-bin/%.o: WARN += -Wswitch-enum

all: $(BOARD_BIN)

$(BOARD_BIN): $(BOARD_OBJS) $(LIB_SO)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $(BOARD_OBJS) $(LIB_SHARED) $(BOARD_LIBS)

.PHONY: board
board: $(BOARD_BIN)
