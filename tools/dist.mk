# tools/dist.mk - the packages people install: Debian's and npm's.
#   make deb       the Debian binary packages into build/deb/
#                  (tools/make-deb, debian/): apt install ./build/deb/*.deb
#   make npm-pack  the Node.js package, build/npm/dirlock-VERSION.tgz
#                  (tools/npm-pack): npm install build/npm/dirlock-*.tgz

deb:
	tools/make-deb

npm-pack:
	tools/npm-pack

.PHONY: deb npm-pack
