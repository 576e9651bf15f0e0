# bin/bin.mk - the dirlock command and its man page.
#   provides: DIRLOCK_BIN
#   uses:     BIN_DIR, BUILD, LIB_A, LIB_LIBS (lib/lib.mk)

DIRLOCK_BIN := $(BIN_DIR)/dirlock

all: $(DIRLOCK_BIN)

$(DIRLOCK_BIN): $(BUILD)/bin/dirlock.o $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)

install: install-bin
install-bin: $(DIRLOCK_BIN)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(DIRLOCK_BIN) $(DESTDIR)$(PREFIX)/bin/dirlock
	install -m 644 man/dirlock.1 $(DESTDIR)$(PREFIX)/share/man/man1/dirlock.1

.PHONY: install-bin
