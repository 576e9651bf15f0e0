#!/usr/bin/env node
// counter.js - a CGI hit counter in Node.js, with the dirlock addon.
//
// Each visit reads the count, adds one and writes it back (a temporary
// file renamed over the count): a read-modify-write, which the lock
// makes one visit at a time.  The wait for the lock never blocks the
// event loop.
//
// COUNTER_DIR: where the count and its lock live (default
// /var/lib/counter), writable by the web server's user.
// COUNTER_DELAY_MS: a pause inside the read-modify-write (default none),
// which the tests use to make overlaps certain.
'use strict'
const fs = require('fs')
const path = require('path')
const { Lock, LockError } = require('dirlock')

const dir = process.env.COUNTER_DIR || '/var/lib/counter'

async function main () {
  const lock = new Lock(path.join(dir, 'locks'), 'counter')
  let release
  try {
    release = await lock.acquire({ timeout: 10000 }) // milliseconds
  } catch (e) {
    if (!(e instanceof LockError && e.code === 'ETIMEDOUT')) throw e
    process.stdout.write('Status: 503 Service Unavailable\r\nRetry-After: 1\r\n' +
      'Content-Type: text/plain\r\n\r\nBusy, please try again.\n')
    return
  }
  let n
  try {
    // Under the lock.
    const file = path.join(dir, 'count')
    n = fs.existsSync(file) ? Number(fs.readFileSync(file, 'utf8')) || 0 : 0
    await new Promise((resolve) => setTimeout(resolve, Number(process.env.COUNTER_DELAY_MS || 0)))
    n += 1
    fs.writeFileSync(file + '.tmp', `${n}\n`)
    release.check() // throws ELOST if the lock was broken as stale meanwhile
    fs.renameSync(file + '.tmp', file)
  } finally {
    release()
  }
  process.stdout.write(`Content-Type: text/plain\r\n\r\nvisit ${n}\n`)
}

main().catch((e) => {
  console.error(`counter: ${e.message}`) // the server's error log
  process.stdout.write('Status: 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\n' +
    'The counter failed (see the server log).\n')
})
