#!/usr/bin/env node
// tools/dirlock-config.js - what binding.gyp compiles and links the addon
// with: `pkg-config --cflags dirlock` or `--libs dirlock`, asked with
// PKG_CONFIG_PATH as given first, then, when this is the package directory
// of a dirlock source tree (tools/source-tree.js), the tree's uninstalled
// build/pkgconfig (made by the top-level `make bindings`), then the
// system's places (after the library's `make install`).
// Usage: node tools/dirlock-config.js --cflags | --libs
'use strict'
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const { sourceTree } = require('./source-tree')

const what = process.argv[2]
if (what !== '--cflags' && what !== '--libs') {
  process.stderr.write('usage: node tools/dirlock-config.js --cflags | --libs\n')
  process.exit(2)
}
const top = sourceTree()
const treePc = top === null ? null : path.join(top, 'build', 'pkgconfig')
const env = { ...process.env }
if (treePc !== null && fs.existsSync(path.join(treePc, 'dirlock.pc'))) {
  env.PKG_CONFIG_PATH = [env.PKG_CONFIG_PATH, treePc].filter(Boolean).join(path.delimiter)
}
try {
  process.stdout.write(execFileSync('pkg-config', [what, 'dirlock'], { env, encoding: 'utf8' }).trim() + '\n')
} catch (e) {
  process.stderr.write(
    `dirlock-config: pkg-config ${what} dirlock failed: ${(e.stderr || e.message || '').toString().trim()}\n` +
      'Build the library first (make at the top of the dirlock tree), or install it\n' +
      '(make install) and point PKG_CONFIG_PATH at its lib/pkgconfig.\n'
  )
  process.exit(1)
}
