// tools/source-tree.js - whether this package directory is the one in a
// dirlock source tree (bindings/node), rather than a copy of the package
// (npm pack's tarball, `npm install --install-links`): the top of that
// tree, or null.  The tree is the one that has the library's header and
// the bindings' make fragment two levels up.
'use strict'
const fs = require('node:fs')
const path = require('node:path')

function sourceTree () {
  const top = path.resolve(__dirname, '..', '..', '..')
  const mine = ['lib/core/dirlock.h', 'bindings/bindings.mk'].every(f => fs.existsSync(path.join(top, f)))
  return mine && fs.realpathSync(path.join(top, 'bindings', 'node')) === fs.realpathSync(path.resolve(__dirname, '..'))
    ? top
    : null
}

module.exports = { sourceTree }
