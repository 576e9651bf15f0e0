# man/man.mk - the manual pages: dirlock(1) for the command and, in
# section 3, one page per group of the library's calls (lib/*/dirlock*.h);
# their installation, with a link for every other name a page's NAME
# section gives (man/links), and their lint (man/lint, mandoc).
#   provides: MAN1_PAGES, MAN3_PAGES, MANDIR (where pages are installed:
#             PREFIX/share/man unless given), install-man, lint-man
#   uses:     PREFIX, DESTDIR (Makefile)
# tests/man-pages.t lints every page and checks the pages against the
# header (names, codes, flags, examples that compile) and this install.

MAN1_PAGES := man/dirlock.1
MAN3_PAGES := $(sort $(wildcard man/*.3))
MANDIR ?= $(PREFIX)/share/man
MAN_DIR = $(DESTDIR)$(MANDIR)

install: install-man
install-man:
	install -d $(MAN_DIR)/man1 $(MAN_DIR)/man3
	install -m 644 $(MAN1_PAGES) $(MAN_DIR)/man1/
	install -m 644 $(MAN3_PAGES) $(MAN_DIR)/man3/
	man/links $(MAN3_PAGES) | while read -r name page; do ln -sf "$$page" "$(MAN_DIR)/man3/$$name" || exit 1; done

lint-man:
	man/lint $(MAN1_PAGES) $(MAN3_PAGES)

.PHONY: install-man lint-man
