// test/seed004.test.js - seed 004's demonstrations, across processes:
// ten pushers (test/fixtures/pusher.js), each a process of its own, push
// their numbers 0..9 to one file after random delays.
//   - With the lock and the FIFO option they arrive as [0..9]; without
//     the lock, out of order.
//   - Non-blocking: the first holds while the others try, and only [0]
//     is kept; without the lock all ten are.
//   - A 200 ms timeout: those served within 200 ms of the start push, in
//     order, the rest time out -- a prefix; without the lock all ten push,
//     out of order.
'use strict'
const test = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const path = require('node:path')
const { performance } = require('node:perf_hooks')
const { tmpdir, forkChild, message, exited } = require('./helpers')

const N = 10
const seq = [...Array(N).keys()]

// The seed's random delays, 0-100 ms; here 30-100 ms, so that one push
// outlasts the moments the other processes take to arrive (the seed's
// arrive in one synchronous loop, ours are processes a message away).
const randomDelays = () => seq.map(() => 30 + Math.random() * 70)

// Delays for the timeout demonstration: the seed's acquires time out in
// one tick of one loop, all at once; ours are ten processes, whose timers
// fire a few milliseconds apart.  When a holder lets go within those few
// milliseconds of the deadline, whether the next in line or a later one
// gets in is a race between processes, not the lock's behaviour, so no
// hand-off is drawn within 30 ms of the deadline.
function delaysAwayFrom (deadline) {
  for (;;) {
    const d = randomDelays()
    let handOff = 0
    if (d.every(x => Math.abs((handOff += x) - deadline) >= 30)) return d
  }
}

// Run the ten pushers.  `start`: 'queue' starts them one after the other,
// each once the one before has its acquire under way (so that arrival
// order is 0..9); 'first' starts 0, then the nine others at once, and 0
// holds until they have all made their try (as the seed's, made in one
// synchronous loop while the first holds).
async function pushAll (t, { how, start, lock = {}, acquire = {}, timeoutMs }) {
  const dir = tmpdir(t)
  const file = path.join(dir, 'pushed')
  fs.writeFileSync(file, '')
  const space = path.join(dir, 'locks')
  const children = []
  const started = []
  for (const i of seq) {
    const child = forkChild(t, 'pusher.js', [space, 'seed004', how, String(i), file, JSON.stringify({ lock, acquire })])
    started.push(message(child, m => m.ready))
    children.push(child)
  }
  await Promise.all(started)
  const delays = timeoutMs === undefined ? randomDelays() : delaysAwayFrom(timeoutMs)
  // The seed's acquires all start in one synchronous loop, so they share
  // one moment to count their timeouts from: here, the moment the first
  // is started, and each acquire is given what is left of `timeoutMs`.
  const deadline = timeoutMs === undefined ? undefined : performance.timeOrigin + performance.now() + timeoutMs
  const done = children.map(c => message(c, m => m.done))
  const go = (c, i) => {
    const queued = message(c, m => m.queued)
    c.send({ go: true, delay: delays[i], deadline, waitFor: start === 'first' && i === 0 })
    return queued
  }
  if (start === 'queue') {
    for (const i of seq) await go(children[i], i)
  } else {
    await go(children[0], 0)
    await Promise.all(children.slice(1).map((c, i) => go(c, i + 1)))
    children[0].send({ tried: true })
  }
  const codes = (await Promise.all(done)).map(m => m.code)
  await Promise.all(children.map(exited))
  const pushed = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number)
  return { pushed, codes }
}

test('FIFO: ten processes push in the order they arrived', async t => {
  const { pushed, codes } = await pushAll(t, { how: 'lock', start: 'queue', lock: { fifo: true } })
  assert.deepStrictEqual(codes, seq.map(() => null))
  assert.deepStrictEqual(pushed, seq)
})

test('twin: without the lock the same pushes arrive out of order', async t => {
  const { pushed } = await pushAll(t, { how: 'none', start: 'queue' })
  assert.deepStrictEqual([...pushed].sort((a, b) => a - b), seq, 'all ten pushed')
  assert.notDeepStrictEqual(pushed, seq, 'in the order the random delays made')
})

test('non-blocking: only the first push is kept', async t => {
  const { pushed, codes } = await pushAll(t, { how: 'lock', start: 'first', acquire: { blocking: false } })
  assert.deepStrictEqual(pushed, [0])
  assert.deepStrictEqual(codes, [null, ...seq.slice(1).map(() => 'EBUSY')])
})

test('twin: without the lock every push is kept', async t => {
  const { pushed } = await pushAll(t, { how: 'none', start: 'first' })
  assert.strictEqual(pushed.length, N)
})

test('a 200 ms timeout keeps a prefix', async t => {
  const { pushed, codes } = await pushAll(t, {
    how: 'lock', start: 'queue', lock: { fifo: true }, timeoutMs: 200
  })
  const k = pushed.length
  assert.ok(k >= 1 && k < N, `some pushed in time, not all (pushed ${pushed})`)
  assert.deepStrictEqual(pushed, seq.slice(0, k), 'a prefix of 0..9')
  assert.deepStrictEqual(codes, seq.map(i => (i < k ? null : 'ETIMEDOUT')))
})

test('twin: without the lock nothing waits, and all ten push out of order', async t => {
  const { pushed } = await pushAll(t, { how: 'none', start: 'queue' })
  const isShortPrefix = pushed.length < N && pushed.every((x, i) => x === i)
  assert.ok(!isShortPrefix, `not a prefix: ${pushed}`)
})
