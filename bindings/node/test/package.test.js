// test/package.test.js - the package as npm makes and installs it: `npm
// pack` takes exactly the files a build needs, and the tarball installs
// into a project -- node-gyp building the addon against the installed
// Node.js headers (--nodedir), with no network when this user may make a
// network namespace of its own (unshare -n) -- and takes a lock there.
'use strict'
const test = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const path = require('node:path')
const { execFileSync, spawnSync } = require('node:child_process')
const { TOP, tmpdir } = require('./helpers')

const PKG = path.resolve(__dirname, '..')
const NODE_DIR = path.resolve(process.execPath, '..', '..')

function npm (args, options) {
  return execFileSync('npm', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...options })
}

const haveNpm = spawnSync('npm', ['--version'], { stdio: 'ignore' }).status === 0
const offline = spawnSync('unshare', ['-n', 'true'], { stdio: 'ignore' }).status === 0

test('npm pack takes the sources, not the build', { skip: !haveNpm && 'npm is not installed' }, t => {
  const cache = tmpdir(t)
  const [report] = JSON.parse(npm(['pack', '--dry-run', '--json', '--cache', cache], { cwd: PKG }))
  assert.strictEqual(report.name, 'dirlock')
  assert.deepStrictEqual(report.files.map(f => f.path).sort(), [
    'README.md', 'binding.gyp', 'index.d.ts', 'index.js', 'package.json', 'process-lock.js', 'src/dirlock_node.c',
    'tools/dirlock-config.js', 'tools/install.js', 'tools/source-tree.js'
  ])
})

test(`the tarball installs and works${offline ? ', without network' : ''}`,
  { skip: !haveNpm && 'npm is not installed' }, t => {
    const dir = tmpdir(t)
    const cache = path.join(dir, 'cache')
    const [packed] = JSON.parse(npm(['pack', '--json', '--pack-destination', dir, '--cache', cache], { cwd: PKG }))
    const app = path.join(dir, 'app')
    fs.mkdirSync(app)
    fs.writeFileSync(path.join(app, 'package.json'), '{"name": "app", "version": "1.0.0", "private": true}\n')
    const install = ['npm', 'install', '--offline', '--no-audit', '--no-fund', '--cache', cache,
      `--nodedir=${NODE_DIR}`, path.join(dir, packed.filename)]
    execFileSync(offline ? 'unshare' : install[0], offline ? ['-n', ...install] : install.slice(1), {
      cwd: app,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PKG_CONFIG_PATH: path.join(TOP, 'build', 'pkgconfig') }
    })
    const out = execFileSync(process.execPath, ['-e', `
      const { Lock, inspect } = require('dirlock')
      new Lock(process.argv[1], 'x').runExclusive(r => console.log(inspect(process.argv[1], 'x').token === r.token))
    `, path.join(dir, 'locks')], { cwd: app, encoding: 'utf8' })
    assert.strictEqual(out.trim(), 'true')
  })
