# lib/lib.mk - the dirlock library (static and shared), the dirlock
# command, its man page and pkg-config file.

LIB_SRCS := $(filter-out lib/%_test.c,$(wildcard lib/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
LIB_A := $(BUILD)/libdirlock.a
LIB_SO := $(BUILD)/libdirlock.so.1
DIRLOCK_BIN := $(BIN_DIR)/dirlock

all: $(LIB_A) $(LIB_SO) $(DIRLOCK_BIN)

$(LIB_A): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIB_SO): $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,libdirlock.so.1 $(ALL_LDFLAGS) -o $@ $^
	ln -sf libdirlock.so.1 $(BUILD)/libdirlock.so

$(DIRLOCK_BIN): $(BUILD)/bin/dirlock.o $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 $(LIB_A) $(DESTDIR)$(PREFIX)/lib/libdirlock.a
	install -m 755 $(LIB_SO) $(DESTDIR)$(PREFIX)/lib/libdirlock.so.1
	ln -sf libdirlock.so.1 $(DESTDIR)$(PREFIX)/lib/libdirlock.so
	install -m 644 lib/dirlock.h $(DESTDIR)$(PREFIX)/include/dirlock.h
	install -m 755 $(DIRLOCK_BIN) $(DESTDIR)$(PREFIX)/bin/dirlock
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|1.0.0|g' lib/dirlock.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/dirlock.pc
	install -m 644 man/dirlock.1 $(DESTDIR)$(PREFIX)/share/man/man1/dirlock.1
