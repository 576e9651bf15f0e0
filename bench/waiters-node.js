// bench/waiters-node.js - many acquires of one Node.js process waiting
// for one lock, served in turn (the Node half of bench/waiters-run).
//
//   node bench/waiters-node.js SPACE N
//
// First the loop's lag with nothing else to do (2 s: the baseline), then
// N acquires of lock "many" (timeout 600 s), the lock held by this process
// while they start; it lets go, and each lets go at once once it has the
// lock.  The lag is how much later than 2 ms a setTimeout(2) chain fires,
// while they are served.  Prints two lines:
//   idle LAG_P50_MS LAG_P99_MS LAG_MAX_MS
//   waiters SERVED FAILED START_MS SERVE_MS LAG_P50_MS LAG_P99_MS LAG_MAX_MS FDS KIB
// START_MS is the time to start the N acquires (the loop blocked
// meanwhile), SERVE_MS from the release to the last one served, FDS and
// KIB what the waiting acquires took over the process's before, once each
// is in the lock's queue.  Nothing is asserted.
// (environment: DIRLOCK_NODE, the package)
'use strict'
const fs = require('node:fs')
const path = require('node:path')
const { performance } = require('node:perf_hooks')

const TOP = path.resolve(__dirname, '..')
const { Lock } = require(process.env.DIRLOCK_NODE || path.join(TOP, 'bindings', 'node'))
const [space, nArg] = process.argv.slice(2)
const n = Number(nArg)
if (!space || !(n >= 1)) {
  process.stderr.write('usage: node bench/waiters-node.js SPACE N\n')
  process.exit(2)
}
const TICK = 2

const fds = () => fs.readdirSync('/proc/self/fd').length
const kib = () => process.memoryUsage.rss() / 1024
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))
const pct = (v, p) => {
  const s = [...v].sort((a, b) => a - b)
  return s.length ? s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))] : 0
}

// The lag of a setTimeout(TICK) chain until done() says so.
function lagsUntil (done) {
  return new Promise(resolve => {
    const out = []
    let last = performance.now()
    const tick = () => {
      const now = performance.now()
      out.push(Math.max(0, now - last - TICK))
      last = now
      if (done()) return resolve(out)
      setTimeout(tick, TICK)
    }
    setTimeout(tick, TICK)
  })
}

async function main () {
  const idleEnd = performance.now() + 2000
  const idle = await lagsUntil(() => performance.now() >= idleEnd)
  console.log(`idle ${pct(idle, 50).toFixed(3)} ${pct(idle, 99).toFixed(3)} ${pct(idle, 100).toFixed(3)}`)
  const release = await new Lock(space, 'many').acquire()
  const fds0 = fds()
  const kib0 = kib()
  let served = 0
  let failed = 0
  let t0 = performance.now()
  const waits = Array.from({ length: n }, () => new Lock(space, 'many').acquire({ timeout: 600000 }).then(
    rel => { served++; rel() }, () => { failed++ }))
  const startMs = performance.now() - t0
  const queue = path.join(space, 'many.fifo')
  const queued = () => { try { return fs.readdirSync(queue).filter(e => e.startsWith('t.')).length } catch { return 0 } }
  while (queued() < n) await sleep(50)
  const usedFds = fds() - fds0
  const usedKib = Math.round(kib() - kib0)
  t0 = performance.now()
  release()
  const lags = lagsUntil(() => served + failed >= n)
  await Promise.all(waits)
  const serveMs = performance.now() - t0
  const l = await lags
  console.log(`waiters ${served} ${failed} ${startMs.toFixed(1)} ${serveMs.toFixed(1)} ${pct(l, 50).toFixed(3)} ` +
    `${pct(l, 99).toFixed(3)} ${pct(l, 100).toFixed(3)} ${usedFds} ${usedKib}`)
}

main().catch(e => {
  console.error(e)
  process.exit(1)
})
