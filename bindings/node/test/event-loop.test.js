// test/event-loop.test.js - waiting never blocks the event loop: while 64
// acquires of one process wait for a lock another process holds, timers
// fire and the thread pool's work (file reads) gets done; then each gets
// the lock in turn.  Its twin: a wait made in the loop itself (the
// dirlock command run synchronously) holds every timer up.  And a program
// that acquires and releases in a loop of its own, never waiting, still
// gives the event loop a turn between two acquires.
'use strict'
const test = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const { execFileSync } = require('node:child_process')
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
