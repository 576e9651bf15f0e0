// test/lock.test.js - the Lock API on its own and against other
// processes (the dirlock command, a node child): taking and releasing,
// non-blocking and timeouts, waits that end when the holder lets go or
// dies, aborts that leave nothing behind, shared and intent modes and the
// upgrade, ranges, sets of names, fences, lost locks, and the errors: the
// library's codes as LockError, and bad input.
'use strict'
const test = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { Lock, LockError, inspect, spaceInfo, codes, libraryVersion } = require('..')
const { DIRLOCK, spaces, holdWithCommand, stop, forkChild, message, exited, sleep } = require('./helpers')

// Settled yet?  (Without waiting: a promise that has not settled after
// the loop went round is still waiting.)
async function settled (promise) {
  let done = false
  promise.then(() => { done = true }, () => { done = true })
  await sleep(20)
  return done
}

async function rejects (promise, code) {
  await assert.rejects(promise, e => {
    assert.ok(e instanceof LockError, `a LockError, not ${e}`)
    assert.strictEqual(e.code, code, e.message)
    assert.strictEqual(e.number, codes.indexOf(code))
    return true
  })
}

test('acquire, locked, release, and release once only', async t => {
  for (const { kind, space, options } of spaces(t)) {
    const lock = new Lock(space, 'a', options)
    assert.strictEqual(lock.locked, false, kind)
    const release = await lock.acquire()
    assert.strictEqual(lock.locked, true)
    assert.strictEqual(release.released, false)
    assert.strictEqual(release.name, 'a')
    assert.strictEqual(release.mode, 'exclusive')
    assert.match(release.token, /^[0-9a-f]{32}$/)
    assert.strictEqual(inspect(space, 'a').pid, process.pid)
    assert.strictEqual(release.check(), true)
    release.refresh()
    release()
    assert.strictEqual(lock.locked, false)
    assert.strictEqual(release.released, true)
    assert.strictEqual(inspect(space, 'a'), null)
    assert.throws(() => release(), e => e instanceof LockError && e.code === 'EBALANCE')
  }
})

test('held by another process: EBUSY at once, ETIMEDOUT after the timeout', async t => {
  for (const { kind, space, options } of spaces(t)) {
    const holder = await holdWithCommand(t, space, 'busy')
    const lock = new Lock(space, 'busy', options)
    await assert.rejects(lock.acquire({ blocking: false }), e => {
      assert.ok(e instanceof LockError && e instanceof Error)
      assert.strictEqual(e.name, 'LockError')
      assert.strictEqual(e.code, 'EBUSY', kind)
      assert.strictEqual(e.errno, 0)
      assert.match(e.message, new RegExp(`pid ${holder.pid}`))
      return true
    })
    const t0 = Date.now()
    await rejects(lock.acquire({ timeout: 200 }), 'ETIMEDOUT')
    assert.ok(Date.now() - t0 >= 190, 'waited for the timeout')
    // The constructor's options are every acquire's defaults.
    await rejects(new Lock(space, 'busy', { ...options, timeout: 50 }).acquire(), 'ETIMEDOUT')
    await rejects(new Lock(space, 'busy', { ...options, blocking: false }).acquire(), 'EBUSY')
    assert.strictEqual(lock.waiting, 0)
    stop(holder, 'SIGTERM')
    await exited(holder)
  }
})

test('a waiting acquire ends when the holder lets go, or dies', async t => {
  for (const { kind, space, options } of spaces(t)) {
    for (const signal of ['SIGTERM', 'SIGKILL']) {
      const holder = await holdWithCommand(t, space, 'w')
      const lock = new Lock(space, 'w', options)
      const waiting = lock.acquire()
      assert.strictEqual(lock.waiting, 1)
      assert.strictEqual(await settled(waiting), false, `${kind}: waits`)
      stop(holder, signal) // SIGTERM: it releases; SIGKILL: its lock is left, its owners dead
      const release = await waiting
      assert.strictEqual(lock.waiting, 0)
      assert.strictEqual(inspect(space, 'w').pid, process.pid, `${kind}, holder ${signal}`)
      release()
    }
  }
})

test('abort: a waiting acquire gives up with ECANCELED and leaves nothing behind', async t => {
  for (const { kind, space, options } of spaces(t)) {
    const holder = new Lock(space, 'c', { ...options, fifo: true })
    const held = await holder.acquire()
    const lock = new Lock(space, 'c', { ...options, fifo: true })
    const ac = new AbortController()
    const waiting = lock.acquire({ signal: ac.signal })
    assert.strictEqual(await settled(waiting), false)
    ac.abort(new Error('enough'))
    await assert.rejects(waiting, e => {
      assert.strictEqual(e.code, 'ECANCELED', kind)
      assert.strictEqual(e.cause.message, 'enough')
      return true
    })
    // Its place in the FIFO queue went with it: the next comer is served
    // as soon as the holder lets go.
    const next = new Lock(space, 'c', { ...options, fifo: true }).acquire()
    held()
    ;(await next)()
    // An aborted signal before the start: nothing is started.
    await rejects(lock.acquire({ signal: AbortSignal.abort() }), 'ECANCELED')
    assert.strictEqual(lock.waiting, 0)
    // The wait register stays, empty (lib/dir/waits.c).
    assert.deepStrictEqual(fs.readdirSync(space).filter(f => !f.endsWith('.fence') && f !== '.waits'), [])
    assert.deepStrictEqual(fs.readdirSync(path.join(space, '.waits')), [])
  }
})

test('runExclusive: the callback under the lock, released whatever it does', async t => {
  const [{ space }] = spaces(t)
  const lock = new Lock(space, 'r')
  const result = await lock.runExclusive(async release => {
    assert.strictEqual(lock.locked, true)
    assert.strictEqual(inspect(space, 'r').token, release.token)
    return 42
  })
  assert.strictEqual(result, 42)
  assert.strictEqual(lock.locked, false)
  await assert.rejects(lock.runExclusive(async () => { throw new Error('boom') }), /boom/)
  assert.strictEqual(lock.locked, false)
  assert.strictEqual(inspect(space, 'r'), null)
  // Released inside the callback: not again.
  await lock.runExclusive(release => release())
  await assert.rejects(lock.runExclusive('not a function'), TypeError)
})

test('a lock broken while held: check, release and runExclusive say ELOST', async t => {
  const [{ space }] = spaces(t)
  const lock = new Lock(space, 'lost')
  const release = await lock.acquire()
  execFileSync(DIRLOCK, ['break', '-d', space, '--force', 'lost'], { stdio: 'ignore' })
  assert.throws(() => release.check(), e => e.code === 'ELOST')
  assert.throws(() => release(), e => e.code === 'ELOST')
  assert.strictEqual(release.released, true)
  assert.strictEqual(lock.locked, false)
  await assert.rejects(lock.runExclusive(() => {
    execFileSync(DIRLOCK, ['break', '-d', space, '--force', 'lost'], { stdio: 'ignore' })
  }), e => e.code === 'ELOST')
  const thrown = new Error('the callback failed')
  await assert.rejects(lock.runExclusive(() => {
    execFileSync(DIRLOCK, ['break', '-d', space, '--force', 'lost'], { stdio: 'ignore' })
    throw thrown
  }), e => e === thrown && e.releaseError.code === 'ELOST')
})

test('shared locks hold together; an exclusive one waits for them all', async t => {
  for (const { kind, space, options } of spaces(t)) {
    const r1 = await new Lock(space, 's', { ...options, mode: 'shared' }).acquire()
    const r2 = await new Lock(space, 's', { ...options, mode: 'shared' }).acquire()
    assert.strictEqual(r1.mode, 'shared')
    const writer = new Lock(space, 's', options).acquire()
    assert.strictEqual(await settled(writer), false, kind)
    r1()
    assert.strictEqual(await settled(writer), false)
    r2()
    const w = await writer
    assert.strictEqual(w.mode, 'exclusive')
    await rejects(new Lock(space, 's', { ...options, mode: 'shared' }).acquire({ blocking: false }), 'EBUSY')
    w()
  }
})

test('intent: upgrade waits for the readers present, keeps intent on timeout', async t => {
  for (const { kind, space, options } of spaces(t)) {
    const reader = await new Lock(space, 'i', { ...options, mode: 'shared' }).acquire()
    const intent = await new Lock(space, 'i', { ...options, mode: 'intent' }).acquire()
    assert.strictEqual(intent.mode, 'intent')
    await rejects(intent.upgrade({ timeout: 100 }), 'ETIMEDOUT')
    assert.strictEqual(intent.mode, 'intent', `${kind}: still intent`)
    const upgrading = intent.upgrade()
    assert.strictEqual(await settled(upgrading), false)
    // The handle is the upgrade's while it waits.
    assert.throws(() => intent.fence(), e => e.code === 'EINVAL' && /upgrade/.test(e.message))
    assert.throws(() => intent(), e => e.code === 'EINVAL')
    reader()
    await upgrading
    assert.strictEqual(intent.mode, 'exclusive')
    intent.downgradeIntent()
    assert.strictEqual(intent.mode, 'intent')
    await intent.upgrade()
    intent.downgrade()
    assert.strictEqual(intent.mode, 'shared')
    await rejects(intent.upgrade(), 'EUPGRADE')
    intent()
  }
})

test('an upgrade aborted gives up and keeps the intent lock', async t => {
  const [{ space }] = spaces(t)
  const reader = await new Lock(space, 'u', { mode: 'shared' }).acquire()
  const intent = await new Lock(space, 'u', { mode: 'intent' }).acquire()
  const ac = new AbortController()
  const upgrading = intent.upgrade({ signal: ac.signal })
  await sleep(20)
  ac.abort()
  await rejects(upgrading, 'ECANCELED')
  assert.strictEqual(intent.mode, 'intent')
  intent()
  reader()
})

test('ranges: apart they hold together, overlapping they wait', async t => {
  for (const { kind, space, options } of spaces(t)) {
    const a = await new Lock(space, 'tree', { ...options, range: [0, 10] }).acquire()
    const b = await new Lock(space, 'tree', { ...options, range: '10:20' }).acquire()
    assert.deepStrictEqual(a.range, [0, 10])
    assert.deepStrictEqual(b.range, [10, 20])
    const c = new Lock(space, 'tree', { ...options, range: [5, 15] }).acquire()
    assert.strictEqual(await settled(c), false, kind)
    a.shrink(0, 4)
    assert.deepStrictEqual(a.range, [0, 4])
    assert.strictEqual(await settled(c), false)
    b()
    const held = await c
    assert.deepStrictEqual(held.range, [5, 15])
    held()
    a()
  }
})

test('a set of names: all or none', async t => {
  for (const { kind, space, options } of spaces(t)) {
    const holder = await holdWithCommand(t, space, 'b')
    const set = new Lock(space, ['c', 'a', 'b'], options)
    assert.deepStrictEqual(set.name, ['c', 'a', 'b'])
    await rejects(set.acquire({ blocking: false }), 'EBUSY')
    assert.strictEqual(inspect(space, 'a'), null, `${kind}: none taken`)
    const waiting = set.acquire()
    assert.strictEqual(await settled(waiting), false)
    stop(holder, 'SIGTERM')
    const release = await waiting
    assert.deepStrictEqual(release.name, ['a', 'b', 'c'])
    for (const n of ['a', 'b', 'c']) assert.strictEqual(inspect(space, n).pid, process.pid)
    assert.strictEqual(release.check(), true)
    assert.throws(() => release.fence(), e => e.code === 'EINVAL' && /set/.test(e.message))
    release()
    for (const n of ['a', 'b', 'c']) assert.strictEqual(inspect(space, n), null)
  }
})

test('fences grow with every acquisition, in this process and others', async t => {
  const [{ space }] = spaces(t)
  const lock = new Lock(space, 'f')
  const seen = []
  for (let i = 0; i < 3; i++) {
    const release = await lock.acquire()
    seen.push(release.fence())
    assert.strictEqual(release.fence(), seen[seen.length - 1], 'the same for one acquisition')
    release()
  }
  const child = forkChild(t, 'fence.js', [space, 'f'])
  seen.push((await message(child, m => m.fence)).fence)
  const release = await lock.acquire()
  seen.push(release.fence())
  release()
  await exited(child)
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i] > seen[i - 1], `${seen}`)
  assert.ok(seen.every(Number.isSafeInteger))
})

test('errors: the library\'s codes, and bad input', async t => {
  const [{ space }] = spaces(t)
  assert.strictEqual(codes[0], 'OK')
  assert.ok(codes.includes('EBUSY') && codes.includes('ETIMEDOUT') && codes.includes('ECANCELED'))
  assert.match(libraryVersion, /^\d+\.\d+\.\d+$/)
  await rejects(new Lock(space, 'bad/name').acquire(), 'ENAME')
  await rejects(new Lock(space, '.dot').acquire(), 'ENAME')
  await rejects(new Lock(space, 'a', { range: [10, 0] }).acquire(), 'EINVAL')
  await rejects(new Lock('nosuch://x', 'a').acquire(), 'EINVAL')
  assert.throws(() => new Lock(space, 'a', { mode: 'write' }), e => e.code === 'EINVAL' && /exclusive/.test(e.message))
  assert.throws(() => new Lock(space, 'a', { policy: 'lifo' }), e => e.code === 'EINVAL')
  assert.throws(() => new Lock(space, 'a', { range: '1-2' }), e => e.code === 'EINVAL')
  assert.throws(() => new Lock(space, ['a', 'b'], { range: [0, 1] }), e => e.code === 'EINVAL')
  assert.throws(() => new Lock(space, 'a', { staleAge: 0 }), e => e.code === 'EINVAL')
  await rejects(new Lock(space, 'a', { staleAge: 50 }).acquire(), 'EINVAL') // under the library's least
  assert.throws(() => new Lock(space, 'a', { timeout: NaN }), e => e.code === 'EINVAL')
  assert.throws(() => new Lock(space, 'a', { fifo: 'yes' }), TypeError)
  assert.throws(() => new Lock(space, 'a', { tiemout: 5 }), e => e instanceof TypeError && /tiemout/.test(e.message))
  assert.throws(() => new Lock(space, 'a', { range: [0] }), TypeError)
  assert.throws(() => new Lock('', 'a'), TypeError)
  assert.throws(() => new Lock(space, 42), TypeError)
  assert.throws(() => new Lock(space, []), TypeError)
  await assert.rejects(new Lock(space, 'a').acquire({ timeout: '5' }), TypeError)
  await assert.rejects(new Lock(space, 'a').acquire({ signal: {} }), TypeError)
  await assert.rejects(new Lock(space, 'a').acquire({ wait: true }), TypeError)
  await assert.rejects(new Lock(space, 'a\0b').acquire(), TypeError)
  assert.strictEqual(fs.existsSync(path.join(space, 'a.lock')), false, 'bad input took nothing')
})

test('inspect and spaceInfo', async t => {
  const [{ space }] = spaces(t)
  assert.throws(() => inspect(space, 'x'), e => e.code === 'EIO' && /No such file/.test(e.message))
  ;(await new Lock(space, 'x').acquire())()
  assert.strictEqual(inspect(space, 'x'), null)
  const release = await new Lock(space, 'x', { mode: 'intent' }).acquire()
  const o = inspect(space, 'x')
  assert.strictEqual(o.pid, process.pid)
  assert.strictEqual(o.mode, 'intent')
  assert.strictEqual(o.ownerAlive, true)
  assert.ok(Math.abs(o.acquired - Date.now()) < 60000, 'acquired: ms since the epoch')
  release()
  const info = spaceInfo(space)
  assert.strictEqual(info.backend, 'directory')
  assert.strictEqual(info.dir, space)
  assert.strictEqual(info.ranges, true)
  assert.throws(() => spaceInfo('nosuch://x'), e => e.code === 'EINVAL')
})
