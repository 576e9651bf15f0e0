// test/worker-exit.test.js - a process whose worker threads used locks
// ends cleanly, however they end (issue 39: every such process died with
// SIGSEGV at the worker's exit).  The main thread of each run never loads
// the addon, so it is unloaded with the last worker that loaded it, and
// the library's thread-exit destructors (its inotify instance, spare
// acquire shells) then still had to run: the library keeps itself loaded
// once it has registered one (lib/thread_key.c).  One worker and eight at
// once; the worker returns, is terminated (one while its acquire waits),
// or the main thread exits under it; and a worker started after the
// others ended loads the addon again.
'use strict'
const test = require('node:test')
const assert = require('node:assert')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { tmpdir } = require('./helpers')

const FIXTURE = path.join(__dirname, 'fixtures', 'workers.js')

for (const mode of ['return', 'terminate', 'exit', 'reload']) {
  for (const n of [1, 8]) {
    test(`${n} worker${n > 1 ? 's' : ''} that used locks, ${mode}: the process exits cleanly`, t => {
      const space = path.join(tmpdir(t), 'locks')
      const r = spawnSync(process.execPath, [FIXTURE, space, mode, String(n)],
        { encoding: 'utf8', timeout: 60000 })
      assert.strictEqual(r.signal, null, `the process died of ${r.signal} (stderr: ${r.stderr})`)
      assert.strictEqual(r.status, 0, `exit status ${r.status} (stderr: ${r.stderr})`)
      assert.strictEqual(r.stdout, 'ok\n')
    })
  }
}
