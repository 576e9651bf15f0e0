# bin/bin.mk - the dirlock command (its manual page: man/man.mk).
#   provides: DIRLOCK_BIN, DIRLOCK_SRCS (what it is made of: it links
#             the library and the C library only)
#   uses:     BIN_DIR, BUILD, LIB_SO, LIB_SHARED, install_rpath (lib/lib.mk)
#
# The command links the shared library (which loads a server backend the
# first time a space of its scheme is named); installed, it is linked
# again with the installed LIBDIR as its runpath (none where the dynamic
# linker looks by itself).

DIRLOCK_BIN := $(BIN_DIR)/dirlock

all: $(DIRLOCK_BIN)

DIRLOCK_SRCS := bin/dirlock.c bin/hold.c bin/json_c.c bin/keeper.c bin/run.c bin/say.c bin/status.c

# `dirlock status --json` opens json-c when it runs (bin/json_c.c): the
# soname of the json-c compiled against, read once from its development
# library, and Debian's package of it (libjson-c.so.5: libjson-c5).
OBJDUMP ?= objdump
JSON_C_SONAME := $(shell $(OBJDUMP) -p "$$($(CC) -print-file-name=libjson-c.so)" 2>/dev/null | \
                   sed -n 's/^ *SONAME *//p')
$(BUILD)/bin/json_c.o $(BUILD)/hooks/bin/json_c.o: ALL_CFLAGS += -DJSON_C_SONAME='"$(JSON_C_SONAME)"' \
        -DJSON_C_PACKAGE='"$(subst .so.,,$(JSON_C_SONAME))"'

$(DIRLOCK_BIN): $(DIRLOCK_SRCS:%.c=$(BUILD)/%.o) $(LIB_SO)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $(DIRLOCK_SRCS:%.c=$(BUILD)/%.o) $(LIB_SHARED)
# Linked at every install: its runpath is the PREFIX of this one.
$(BUILD)/install/dirlock: $(DIRLOCK_SRCS:%.c=$(BUILD)/%.o) $(LIB_SO) FORCE
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $(DIRLOCK_SRCS:%.c=$(BUILD)/%.o) $(LIB_SO) $(install_rpath)

install: install-bin
install-bin: $(BUILD)/install/dirlock
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BUILD)/install/dirlock $(DESTDIR)$(PREFIX)/bin/dirlock

.PHONY: install-bin
