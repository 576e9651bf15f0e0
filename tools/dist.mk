# tools/dist.mk - the packages people install.
#   make npm-pack  the Node.js package, build/npm/dirlock-VERSION.tgz
#                  (tools/npm-pack): npm install build/npm/dirlock-*.tgz

npm-pack:
	tools/npm-pack

.PHONY: npm-pack
