# bin/bin.mk - the dirlock command (its manual page: man/man.mk).
#   provides: DIRLOCK_BIN, DIRLOCK_SRCS and DIRLOCK_LIBS (what it is
#             made of, and links besides the library's)
#   uses:     BIN_DIR, BUILD, LIB_SO, LIB_SHARED, install_rpath (lib/lib.mk)
#
# The command links the shared library (which loads a server backend the
# first time a space of its scheme is named); installed, it is linked
# again with the installed LIBDIR as its runpath (none where the dynamic
# linker looks by itself).

DIRLOCK_BIN := $(BIN_DIR)/dirlock

all: $(DIRLOCK_BIN)

DIRLOCK_SRCS := bin/dirlock.c bin/hold.c bin/keeper.c bin/run.c bin/status.c
DIRLOCK_LIBS := -ljson-c # `dirlock status --json` (bin/status.c)

$(DIRLOCK_BIN): $(DIRLOCK_SRCS:%.c=$(BUILD)/%.o) $(LIB_SO)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $(DIRLOCK_SRCS:%.c=$(BUILD)/%.o) $(LIB_SHARED) $(DIRLOCK_LIBS)
# Linked at every install: its runpath is the PREFIX of this one.
$(BUILD)/install/dirlock: $(DIRLOCK_SRCS:%.c=$(BUILD)/%.o) $(LIB_SO) FORCE
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $(DIRLOCK_SRCS:%.c=$(BUILD)/%.o) $(LIB_SO) $(install_rpath) $(DIRLOCK_LIBS)

install: install-bin
install-bin: $(BUILD)/install/dirlock
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BUILD)/install/dirlock $(DESTDIR)$(PREFIX)/bin/dirlock

.PHONY: install-bin
