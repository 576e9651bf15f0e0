// test/process-lock.test.js - seed 004's `new Lock()`, with no space and
// no name: a lock within this process.  The seed's three demonstrations
// as it wrote them, in one event loop -- ten pushes after delays of their
// own, in order under the lock (out of order without it); a try while the
// first holds keeps only [0]; a 200 ms timeout keeps a prefix -- each
// beside its twin without the lock; then the queue's promises: a release
// hands the lock to the first waiter (a try cannot pass it), a waiter
// that timed out or was aborted is never granted, two Locks are two
// locks, and what the release function carries.  And require('dirlock')
// loads this queue only when a `new Lock()` needs it.
'use strict'
const test = require('node:test')
const assert = require('node:assert')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { Lock, LockError } = require('..')

const N = 10
const seq = [...Array(N).keys()]
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// The seed's push(): a random delay of 0-100 ms, then the push.
async function push (a, x, delay = Math.random() * 100) {
  await sleep(delay)
  a.push(x)
}

// Each push under `lock` with `options`; the codes of those that failed.
async function pushAll (lock, options, delays) {
  const a = []
  const codes = await Promise.all(seq.map(x => {
    const pushIt = () => push(a, x, delays?.[x])
    return (lock ? lock.runExclusive(pushIt, options) : pushIt()).then(() => null, e => {
      assert.ok(e instanceof LockError, `a LockError, not ${e}`)
      return e.code
    })
  }))
  return { pushed: a, codes }
}

test('seed 004: under new Lock() the pushes are made in the order they were called', async () => {
  const { pushed, codes } = await pushAll(new Lock())
  assert.deepStrictEqual(pushed, seq)
  assert.deepStrictEqual(codes, seq.map(() => null))
})

test('twin: without it the same pushes are made out of order', async () => {
  const { pushed } = await pushAll(null)
  assert.deepStrictEqual([...pushed].sort((a, b) => a - b), seq, 'all ten pushed')
  assert.notDeepStrictEqual(pushed, seq, 'in the order the random delays made')
})

test('seed 004: { blocking: false } while the first holds keeps only [0]', async () => {
  const { pushed, codes } = await pushAll(new Lock(), { blocking: false })
  assert.deepStrictEqual(pushed, [0])
  assert.deepStrictEqual(codes, [null, ...seq.slice(1).map(() => 'EBUSY')])
})

test('twin: without it every push is kept', async () => {
  const { pushed } = await pushAll(null)
  assert.strictEqual(pushed.length, N)
})

// Holds of 70 ms: the grants come at 0, 70, 140 and 210 ms at the
// earliest (later on a busy machine), so at most three are made within
// 200 ms -- and at least the first, granted at once.
test('seed 004: { timeout: 200 } keeps a prefix; the rest time out', async () => {
  const { pushed, codes } = await pushAll(new Lock(), { timeout: 200 }, seq.map(() => 70))
  const k = pushed.length
  assert.ok(k >= 1 && k <= 3, `one to three pushed in 200 ms of 70 ms holds (pushed ${pushed})`)
  assert.deepStrictEqual(pushed, seq.slice(0, k), 'a prefix of 0..9')
  assert.deepStrictEqual(codes, seq.map(i => (i < k ? null : 'ETIMEDOUT')))
})

test('twin: without it nothing waits and all ten push', async () => {
  const { pushed } = await pushAll(null, undefined, seq.map(() => 70))
  assert.strictEqual(pushed.length, N)
})

test('a release hands the lock to the first waiter: a try made then cannot pass it', async () => {
  const lock = new Lock()
  const release = await lock.acquire()
  assert.strictEqual(lock.locked, true)
  const order = []
  const waiter = lock.acquire().then(r => {
    order.push('waiter')
    return r
  })
  assert.strictEqual(lock.waiting, 1)
  release()
  assert.strictEqual(lock.locked, true, 'held on behalf of the waiter')
  await assert.rejects(lock.acquire({ blocking: false }), e => e.code === 'EBUSY')
  const second = await waiter
  assert.deepStrictEqual(order, ['waiter'])
  second()
  assert.strictEqual(lock.locked, false)
  assert.strictEqual(lock.waiting, 0)
})

test('a waiter that timed out or was aborted leaves the queue and is never granted', async () => {
  const lock = new Lock({ timeout: 30 })
  const release = await lock.acquire()
  await assert.rejects(lock.acquire(), e => e.code === 'ETIMEDOUT' && /30 ms/.test(e.message))
  const ac = new AbortController()
  const aborted = lock.acquire({ signal: ac.signal, timeout: -1 })
  assert.strictEqual(lock.waiting, 1)
  ac.abort(new Error('gone'))
  await assert.rejects(aborted, e => e.code === 'ECANCELED' && e.cause.message === 'gone')
  assert.strictEqual(lock.waiting, 0)
  release()
  assert.strictEqual(lock.locked, false, 'free: nobody left to hand it to')
  await assert.rejects(lock.acquire({ signal: AbortSignal.abort() }), e => e.code === 'ECANCELED')
  assert.strictEqual(lock.locked, false)
})

test('two new Lock() are two locks', async () => {
  const a = new Lock()
  const b = new Lock()
  const ra = await a.acquire()
  const rb = await b.acquire({ blocking: false })
  assert.strictEqual(a.locked && b.locked, true)
  ra()
  rb()
})

test('the release function of a lock within this process', async () => {
  const lock = new Lock()
  assert.strictEqual(lock.space, null)
  assert.strictEqual(lock.name, null)
  const release = await lock.acquire()
  assert.strictEqual(release.check(), true)
  assert.strictEqual(release.mode, 'exclusive')
  assert.strictEqual(release.token, null)
  assert.throws(() => release.fence(), e => e.code === 'EINVAL' && /new Lock\(space, name\)/.test(e.message))
  await assert.rejects(release.upgrade(), e => e.code === 'EINVAL')
  release()
  assert.strictEqual(release.released, true)
  assert.strictEqual(release.mode, null)
  assert.throws(() => release(), e => e.code === 'EBALANCE')
  assert.throws(() => release.check(), e => e.code === 'EBALANCE')
  assert.strictEqual(await lock.runExclusive(() => 42, { blocking: true, timeout: 500 }), 42)
})

test('new Lock(options) takes only the acquire defaults; a space without a name is still an error', () => {
  assert.throws(() => new Lock({ fifo: true }), { name: 'TypeError', message: /unknown option 'fifo'/ })
  assert.throws(() => new Lock({ timeout: 'x' }), TypeError)
  assert.throws(() => new Lock('/tmp/locks'), { name: 'TypeError', message: /name must be a string/ })
  assert.throws(() => new Lock(undefined, 'x'), { name: 'TypeError', message: /new Lock\(\) with no space and no name/ })
})

test('require("dirlock") loads the in-process queue only when a new Lock() needs it', () => {
  const code = `
    const loaded = () => Object.keys(require.cache).some(f => f.endsWith('process-lock.js'))
    const { Lock } = require(process.argv[1])
    const before = loaded()
    new Lock() // eslint-disable-line no-new
    console.log(before, loaded())`
  const out = execFileSync(process.execPath, ['-e', code, path.resolve(__dirname, '..')], { encoding: 'utf8' })
  assert.strictEqual(out.trim(), 'false true')
})
