# tools/dist.mk - the packages people install: Debian's and npm's.
#   make deb       the Debian binary packages into build/deb/
#                  (tools/make-deb, debian/): apt install ./build/deb/*.deb
#   make npm-pack  the Node.js package, build/npm/dirlock-VERSION.tgz
#                  (tools/npm-pack): npm install build/npm/dirlock-*.tgz
#   make test-deb  builds the packages, installs them with apt, uses them
#                  from outside the tree and purges them (tests/deb.t; as
#                  root: it changes this machine's packages, so make test
#                  leaves it out; CI runs it)

deb:
	tools/make-deb

npm-pack:
	tools/npm-pack

test-deb: all
	tools/install-deps
	DIRLOCK_TEST_DEB=1 BUILD_DIR=$(BUILD) tests/run-all tests/deb.t

.PHONY: deb npm-pack test-deb
