// bench/async-lag.js - event-loop lag in Node while acquires wait: the
// drift of a 1 ms timer (how much later than 1 ms each firing of a
// setTimeout(1) chain comes), in three phases of SECONDS each:
//   idle     nothing else in the loop (the baseline of the same run);
//   waiting  WAITERS acquires of one lock wait while another process (the
//            dirlock command) holds it;
//   handoff  the same acquires take the lock in turn (FIFO), each letting
//            go as soon as it has it and asking again, as fast as they can.
// Prints one line per phase: NAME P50_MS P99_MS MAX_MS SAMPLES HANDOFFS
// CPU (the process's CPU time over the phase, % of one core).
// Usage: node bench/async-lag.js SPACE [SECONDS [WAITERS]]
//   (environment: DIRLOCK, the dirlock command; DIRLOCK_NODE, the package)
'use strict'
const path = require('node:path')
const { spawn } = require('node:child_process')
const { performance } = require('node:perf_hooks')

const TOP = path.resolve(__dirname, '..')
const { Lock } = require(process.env.DIRLOCK_NODE || path.join(TOP, 'bindings', 'node'))
const DIRLOCK = process.env.DIRLOCK || path.join(TOP, 'bin', 'dirlock')
const [space, secondsArg = '3', waitersArg = '64'] = process.argv.slice(2)
const seconds = Number(secondsArg)
const waiters = Number(waitersArg)
if (!space || !(seconds > 0) || !(waiters > 0)) {
  process.stderr.write('usage: node bench/async-lag.js SPACE [SECONDS [WAITERS]]\n')
  process.exit(2)
}

// The drifts of a 1 ms timer chain over `ms`, in ms, sorted; out.cpu is
// the process's CPU time meanwhile, in % of one core.
function drifts (ms) {
  return new Promise(resolve => {
    const out = []
    const cpu = process.cpuUsage()
    const end = performance.now() + ms
    let last = performance.now()
    const tick = () => {
      const now = performance.now()
      out.push(now - last - 1)
      last = now
      if (now < end) return setTimeout(tick, 1)
      const used = process.cpuUsage(cpu)
      out.sort((a, b) => a - b)
      out.cpu = ((used.user + used.system) / 1e3 / ms) * 100
      resolve(out)
    }
    setTimeout(tick, 1)
  })
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]

function report (name, sorted, handoffs) {
  const f = x => Math.max(0, x).toFixed(3)
  console.log(`${name} ${f(pct(sorted, 50))} ${f(pct(sorted, 99))} ${f(sorted[sorted.length - 1])} ${sorted.length} ` +
    `${handoffs} ${sorted.cpu.toFixed(0)}`)
}

function holdWithCommand (name) {
  return new Promise((resolve, reject) => {
    const child = spawn(DIRLOCK, ['-d', space, name, '--', 'sh', '-c', 'echo held; exec cat'],
      { stdio: ['pipe', 'pipe', 'inherit'] })
    child.stdout.once('data', () => resolve(child))
    child.once('error', reject)
    child.once('exit', code => reject(new Error(`dirlock exited ${code} before holding ${name}`)))
  })
}

async function main () {
  report('idle', await drifts(seconds * 1000), 0)

  const holder = await holdWithCommand('lag')
  const locks = Array.from({ length: waiters }, () => new Lock(space, 'lag', { fifo: true }))
  let handoffs = 0
  let running = true
  const loops = locks.map(async lock => {
    while (running) {
      const release = await lock.acquire()
      handoffs++
      release()
    }
  })
  report('waiting', await drifts(seconds * 1000), handoffs)

  const gone = new Promise(resolve => holder.once('exit', resolve))
  holder.stdin.end() // cat ends, the command releases
  await gone
  const before = handoffs
  const sorted = await drifts(seconds * 1000)
  report('handoff', sorted, handoffs - before)
  running = false
  await Promise.all(loops)
}

main().catch(e => {
  console.error(e)
  process.exit(1)
})
