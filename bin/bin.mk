# bin/bin.mk - the dirlock command (its manual page: man/man.mk).
#   provides: DIRLOCK_BIN, DIRLOCK_SRCS and DIRLOCK_LIBS (what it is
#             made of, and links besides the library's)
#   uses:     BIN_DIR, BUILD, LIB_A, LIB_LIBS (lib/lib.mk)

DIRLOCK_BIN := $(BIN_DIR)/dirlock

all: $(DIRLOCK_BIN)

DIRLOCK_SRCS := bin/dirlock.c bin/hold.c bin/keeper.c bin/run.c bin/status.c
DIRLOCK_LIBS := -ljson-c # `dirlock status --json` (bin/status.c)

$(DIRLOCK_BIN): $(DIRLOCK_SRCS:%.c=$(BUILD)/%.o) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(DIRLOCK_LIBS)

install: install-bin
install-bin: $(DIRLOCK_BIN)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(DIRLOCK_BIN) $(DESTDIR)$(PREFIX)/bin/dirlock

.PHONY: install-bin
