// test/helpers.js - what the addon's tests share: a temporary directory
// per test (removed after it), the lock spaces to run the shared checks
// in, processes started for a test (killed after it), and waiting for a
// message from one of them.
'use strict'
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { fork, spawn } = require('node:child_process')

const TOP = path.resolve(__dirname, '..', '..', '..')
const DIRLOCK = process.env.DIRLOCK || path.join(TOP, 'bin', 'dirlock')

function tmpdir (t) {
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'dirlock-node-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

// The lock spaces every shared check runs in: a directory, and the same
// directory waited on without inotify (backing off and polling).
function spaces (t) {
  const dir = tmpdir(t)
  return [
    { kind: 'directory', space: path.join(dir, 'locks'), options: {} },
    { kind: 'directory without inotify', space: path.join(dir, 'locks-poll'), options: { noNotify: true } }
  ]
}

// A child process running a fixture with IPC; killed when the test ends.
function forkChild (t, fixture, args) {
  const child = fork(path.join(__dirname, 'fixtures', fixture), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  return child
}

// The next message from a child that satisfies `match`.
function message (child, match = () => true) {
  return new Promise((resolve, reject) => {
    const onMessage = m => {
      if (!match(m)) return
      cleanup()
      resolve(m)
    }
    const onExit = (code, signal) => {
      cleanup()
      reject(new Error(`child exited (${code ?? signal}) before the message`))
    }
    const cleanup = () => {
      child.off('message', onMessage)
      child.off('exit', onExit)
    }
    child.on('message', onMessage)
    child.on('exit', onExit)
  })
}

// The dirlock command holding `name` in `space` until stopped: resolves
// to the process once it holds (it prints "held").  It runs in a process
// group of its own with its command (which holds the lock with it), so
// that stop(child, signal) can end both.
function holdWithCommand (t, space, name, extra = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(DIRLOCK, ['-d', space, ...extra, name, '--', 'sh', '-c', 'echo held; exec sleep 600'],
      { stdio: ['ignore', 'pipe', 'inherit'], detached: true })
    t.after(() => stop(child, 'SIGKILL'))
    child.stdout.once('data', () => resolve(child))
    child.once('error', reject)
    child.once('exit', code => reject(new Error(`dirlock exited ${code} before holding ${name}`)))
  })
}

// Signal a process started with `detached` and its whole group.
function stop (child, signal) {
  try {
    process.kill(-child.pid, signal)
  } catch (e) {
    if (e.code !== 'ESRCH') throw e
  }
}

function exited (child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise(resolve => child.once('exit', resolve))
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

module.exports = { TOP, DIRLOCK, tmpdir, spaces, forkChild, message, holdWithCommand, stop, exited, sleep }
