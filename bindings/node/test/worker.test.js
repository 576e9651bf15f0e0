// test/worker.test.js - worker threads: each has its own instance of the
// addon (its own loop, the library's per-thread state); a worker that ends
// -- or is terminated -- while an acquire of it waits and a lock of it is
// held leaves nothing behind: the lock is released, and the waiter's
// place in a FIFO queue is gone, so the next comer is served at once.
'use strict'
const test = require('node:test')
const assert = require('node:assert')
const { Worker } = require('node:worker_threads')
const { Lock, inspect } = require('..')
const { spaces, sleep } = require('./helpers')

function startWorker (t, space, script) {
  const worker = new Worker(`
    const { parentPort, workerData } = require('node:worker_threads')
    const { Lock } = require(workerData.pkg)
    const space = workerData.space
    ;(async () => { ${script} })().catch(e => parentPort.postMessage({ error: e.code || String(e) }))
  `, { eval: true, workerData: { pkg: require.resolve('..'), space } })
  t.after(() => worker.terminate())
  return worker
}

const nextMessage = worker => new Promise((resolve, reject) => {
  worker.once('message', resolve)
  worker.once('error', reject)
})

test('a worker waits for the main thread\'s lock, then holds it', async t => {
  const [{ space }] = spaces(t)
  const release = await new Lock(space, 'shared').acquire()
  const worker = startWorker(t, space, `
    const lock = new Lock(space, 'shared')
    const p = lock.acquire()
    parentPort.postMessage({ waiting: true })
    const release = await p
    parentPort.postMessage({ held: true })
    parentPort.once('message', () => { release(); parentPort.postMessage({ released: true }) })
  `)
  assert.deepStrictEqual(await nextMessage(worker), { waiting: true })
  await sleep(50)
  release()
  assert.deepStrictEqual(await nextMessage(worker), { held: true })
  assert.strictEqual(inspect(space, 'shared').pid, process.pid)
  worker.postMessage('go')
  assert.deepStrictEqual(await nextMessage(worker), { released: true })
  assert.strictEqual(inspect(space, 'shared'), null)
})

test('a worker terminated while it holds one lock and waits for another', async t => {
  const [{ space }] = spaces(t)
  const mine = await new Lock(space, 'q', { fifo: true }).acquire()
  const worker = startWorker(t, space, `
    await new Lock(space, 'held').acquire()
    new Lock(space, 'q', { fifo: true }).acquire()
    parentPort.postMessage({ ready: true })
  `)
  assert.deepStrictEqual(await nextMessage(worker), { ready: true })
  assert.strictEqual(inspect(space, 'held').pid, process.pid)
  await worker.terminate()
  assert.strictEqual(inspect(space, 'held'), null, 'its lock was released')
  // The worker's queued acquire is gone: the next one is served when the
  // holder lets go, not after a dead waiter's turn.
  const next = new Lock(space, 'q', { fifo: true }).acquire({ timeout: 2000 })
  mine()
  ;(await next)()
})
