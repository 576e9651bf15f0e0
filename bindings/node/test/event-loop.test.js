// test/event-loop.test.js - waiting never blocks the event loop: while 64
// acquires of one process wait for a lock another process holds, timers
// fire and the thread pool's work (file reads) gets done; then each gets
// the lock in turn.  Its twin: a wait made in the loop itself (the
// dirlock command run synchronously) holds every timer up.  And a program
// that acquires and releases in a loop of its own, never waiting, still
// gives the event loop a turn between two acquires.  And a thousand
// acquires of one lock in one process are all served, one at a time,
// while the loop turns (issue 39).
'use strict'
const test = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const { execFileSync } = require('node:child_process')
const { performance } = require('node:perf_hooks')
const { Lock, inspect } = require('..')
const { DIRLOCK, spaces, holdWithCommand, stop, sleep } = require('./helpers')

const WAITERS = 64

// Ticks of a 5 ms interval timer while `during` runs.
async function ticksDuring (during) {
  let ticks = 0
  const timer = setInterval(() => ticks++, 5)
  try {
    await during()
  } finally {
    clearInterval(timer)
  }
  return ticks
}

test(`${WAITERS} waiting acquires: timers and file reads go on`, async t => {
  for (const { kind, space, options } of spaces(t)) {
    const holder = await holdWithCommand(t, space, 'busy')
    const locks = Array.from({ length: WAITERS }, () => new Lock(space, 'busy', options))
    const waiting = locks.map(lock => lock.acquire())
    const ticks = await ticksDuring(async () => {
      // libuv's thread pool has 4 threads: had the waits taken them,
      // these reads would wait for the lock too.
      const reads = Array.from({ length: 8 }, () => fs.promises.readFile(__filename, 'utf8'))
      assert.ok((await Promise.all(reads)).every(text => text.includes('ticksDuring')))
      await sleep(300)
    })
    assert.ok(ticks >= 20, `${kind}: the timer fired ${ticks} times in 300 ms`)
    assert.ok(locks.every(lock => lock.waiting === 1 && !lock.locked), 'all still waiting')
    stop(holder, 'SIGTERM')
    // Each in turn: whoever has it lets go at once.
    let served = 0
    await Promise.all(waiting.map(async p => {
      const release = await p
      assert.strictEqual(locks.filter(lock => lock.locked).length, 1, 'one holder at a time')
      served++
      release()
    }))
    assert.strictEqual(served, WAITERS)
    assert.strictEqual(inspect(space, 'busy'), null)
  }
})

test('twin: a wait inside the loop holds every timer up', async t => {
  const [{ space }] = spaces(t)
  const holder = await holdWithCommand(t, space, 'busy')
  const ticks = await ticksDuring(async () => {
    await sleep(0)
    try {
      execFileSync(DIRLOCK, ['-d', space, '-w', '0.3', 'busy', '--', 'true'], { stdio: 'ignore' })
    } catch (e) {
      assert.strictEqual(e.status, 1, 'it timed out waiting')
    }
  })
  assert.ok(ticks <= 1, `the timer fired ${ticks} times`)
  stop(holder, 'SIGTERM')
})

test('acquire and release in a tight loop: the event loop still turns', async t => {
  const [{ space }] = spaces(t)
  const lock = new Lock(space, 'tight')
  let turns = 0
  let running = true
  const turn = () => {
    turns++
    if (running) setImmediate(turn)
  }
  setImmediate(turn)
  for (let i = 0; i < 100; i++) {
    const release = await lock.acquire()
    release()
  }
  running = false
  assert.ok(turns >= 50, `the loop turned ${turns} times in 100 acquires`)
})

// n acquires of one process waiting for a lock it holds (`spread`: each
// for a lock of its own, the twin), with a generous timeout; then it lets
// go.  What they saw: errors, how many were served, the most inside at
// once, the ticks of a 5 ms timer while they were served and the longest
// gap between two.
async function manyWaiters (space, n, spread) {
  const name = i => `many${spread ? i : ''}`
  const held = await Promise.all(Array.from({ length: spread ? n : 1 }, (_, i) => new Lock(space, name(i)).acquire()))
  let inside = 0
  let most = 0
  let served = 0
  const waits = Array.from({ length: n }, (_, i) => new Lock(space, name(i)).acquire({ timeout: 30000 }).then(async release => {
    most = Math.max(most, ++inside)
    await sleep(0)
    inside--
    served++
    release()
  }))
  await sleep(50)
  held.forEach(release => release())
  let ticks = 0
  let longest = 0
  let last = performance.now()
  const timer = setInterval(() => {
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
    ticks++
  }, 5)
  const results = await Promise.allSettled(waits)
  clearInterval(timer)
  const errors = results.filter(r => r.status === 'rejected').map(r => r.reason)
  return { errors, served, most, ticks, longest }
}

test('a thousand acquires of one lock in one process: all served, one at a time, the loop turning', async t => {
  const [{ space }] = spaces(t)
  const t0 = performance.now()
  const { errors, served, most, ticks, longest } = await manyWaiters(space, 1000, false)
  const took = (performance.now() - t0) / 1000
  assert.strictEqual(errors.length, 0, `${errors.length} of 1000 failed after ${took.toFixed(1)} s, e.g. ${errors[0]}`)
  assert.strictEqual(served, 1000)
  assert.strictEqual(most, 1, 'one holder at a time')
  assert.ok(ticks >= 5 && longest < 2000, `the 5 ms timer fired ${ticks} times, at most ${longest.toFixed(0)} ms apart`)
})

test('twin: a lock each lets many in at once', async t => {
  const [{ space }] = spaces(t)
  const { errors, served, most } = await manyWaiters(space, 100, true)
  assert.strictEqual(errors.length, 0)
  assert.strictEqual(served, 100)
  assert.ok(most > 1, 'the count above can see two inside at once')
})
