#!/usr/bin/env node
// tools/install.js - what `npm install` runs for this package (its
// "install" script).
//
// A copy of the package -- npm pack's tarball, or `npm install
// --install-links /path/to/bindings/node` -- builds its addon in the
// copy with node-gyp, against the library pkg-config names
// (tools/dirlock-config.js): an installed one, whose dirlock.pc gives the
// runpath that finds it, or a source tree's static archive.
//
// The package directory of a source tree is not copied: `npm install
// /path/to/bindings/node` links the project's node_modules/dirlock to it
// and runs this script there.  Nothing is built then: the project uses
// the addon `make bindings-node` built in the tree (linked with the
// tree's static library, it loads with no search path), and the tree is
// left as it was.  A build there would replace the tree's own addon --
// under the tree and every project linked to it -- with one made against
// whatever library pkg-config found first.
'use strict'
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const { sourceTree } = require('./source-tree')

const pkg = path.resolve(__dirname, '..')
const top = sourceTree()
if (top !== null) {
  const addon = path.join(pkg, 'build', 'Release', 'dirlock.node')
  if (fs.existsSync(addon)) {
    process.stdout.write(`dirlock: using the addon of the source tree ${top} (${addon}); nothing built\n`)
    process.exit(0)
  }
  process.stderr.write(
    `dirlock: ${pkg} is the package in the dirlock source tree ${top},\n` +
      'which npm links into the project rather than copying, and its addon is not built.\n' +
      `Build it there first (make bindings-node in ${top}) and install again,\n` +
      `or install a copy, which builds its own: npm install --install-links ${pkg}\n`
  )
  process.exit(1)
}

// npm puts its node-gyp on PATH for the scripts it runs.
const r = spawnSync('node-gyp', ['rebuild'], { cwd: pkg, stdio: 'inherit' })
if (r.error) {
  process.stderr.write(`dirlock: cannot run node-gyp: ${r.error.message}\n`)
  process.exit(1)
}
process.exit(r.status ?? 1)
