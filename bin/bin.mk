# bin/bin.mk - the dirlock command (its manual page: man/man.mk).
#   provides: DIRLOCK_BIN
#   uses:     BIN_DIR, BUILD, LIB_A, LIB_LIBS (lib/lib.mk)

DIRLOCK_BIN := $(BIN_DIR)/dirlock

all: $(DIRLOCK_BIN)

$(DIRLOCK_BIN): $(BUILD)/bin/dirlock.o $(BUILD)/bin/run.o $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)

install: install-bin
install-bin: $(DIRLOCK_BIN)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(DIRLOCK_BIN) $(DESTDIR)$(PREFIX)/bin/dirlock

.PHONY: install-bin
