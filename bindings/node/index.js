// index.js - dirlock for Node.js: cross-process locks whose waits never
// block the event loop.  The public API (Lock, LockError, the release
// function and what it carries, inspect, spaceInfo) over the addon,
// src/dirlock_node.c, which owns how a waiting acquire meets libuv.
//
//   const { Lock } = require('dirlock')
//   const lock = new Lock('/var/lib/app/locks', 'messages', { fifo: true })
//   const release = await lock.acquire({ blocking: true, timeout: 200 })
//   try { ... } finally { release() }
//   await lock.runExclusive(async () => { ... })
//
// Times are milliseconds, as everywhere in Node (timeout, staleAge); the
// library takes seconds, converted here and nowhere else.
'use strict'

let native
try {
  native = require('./build/Release/dirlock.node')
} catch (e) {
  if (e.code !== 'MODULE_NOT_FOUND') throw e
  throw new Error(
    'dirlock: the addon is not built (build/Release/dirlock.node): in the dirlock source tree, run ' +
      '`make bindings-node` at its top; in a project, `npm rebuild dirlock` (docs/bindings.md)',
    { cause: e }
  )
}

/** An error of the dirlock library: `code` is its name ('EBUSY',
 * 'ETIMEDOUT', ...; `codes` lists them all), `number` its number, `errno`
 * the system's errno for EIO (else 0), `message` the library's, naming
 * the lock, the path and the holder. */
class LockError extends Error {
  constructor (message, options) {
    super(message, options)
    this.name = 'LockError'
  }
}
native.init(LockError)

/** Every code of the library, by number (codes[1] === 'EBUSY'): the
 * library's own list, read when the addon loads. */
const codes = Object.freeze([...native.codes])

function lockError (code, message, cause) {
  const e = new LockError(message, cause === undefined ? undefined : { cause })
  e.code = code
  e.number = codes.indexOf(code)
  e.errno = 0
  return e
}

const KIND_ONE = 0
const KIND_RANGE = 1
const KIND_MANY = 2

const LOCK_OPTIONS = ['mode', 'policy', 'fifo', 'staleAge', 'noMkdir', 'noNotify', 'range', 'blocking', 'timeout']
const ACQUIRE_OPTIONS = ['blocking', 'timeout', 'signal']

function optionsObject (options, known, what) {
  if (options === undefined || options === null) return {}
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${what}: the options must be an object`)
  }
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new TypeError(`${what}: unknown option '${key}' (known: ${known.join(', ')})`)
    }
  }
  return options
}

function boolOption (value, name) {
  if (value === undefined) return undefined
  if (typeof value !== 'boolean') throw new TypeError(`${name} must be true or false`)
  return value
}

// Milliseconds, or undefined; NaN is refused.
function msOption (value, name) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number') throw new TypeError(`${name} must be a number of milliseconds`)
  if (Number.isNaN(value)) throw lockError('EINVAL', `${name} is not a number`)
  return value
}

function nameIndex (value, names, what) {
  if (typeof value !== 'string') throw new TypeError(`${what} must be a string (${names.join(', ')})`)
  const i = names.indexOf(value)
  if (i < 0) throw lockError('EINVAL', `unknown ${what} '${value}' (${names.join(', ')})`)
  return i
}

function signalOption (signal) {
  if (signal === undefined || signal === null) return undefined
  if (typeof signal !== 'object' || typeof signal.aborted !== 'boolean' ||
      typeof signal.addEventListener !== 'function') {
    throw new TypeError('signal must be an AbortSignal')
  }
  return signal
}

// The library's timeout, in seconds: 0 one try, < 0 forever.
function waitSeconds (blocking, timeout) {
  if (blocking === false) return 0
  if (timeout === undefined || timeout < 0 || timeout === Infinity) return -1
  return timeout / 1000
}

function canceled (signal, what) {
  return lockError('ECANCELED', `${what}: aborted`, signal.reason)
}

// Run one pending acquire of the addon: startFn(callback) starts it and
// returns its id; the callback comes from the loop, later.  An
// abort cancels it; one that got its lock all the same lets it go with
// undo(handle) and rejects, so that an aborted acquire never holds.
function pending (startFn, signal, what, undo) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(canceled(signal, what))
      return
    }
    let settled = false
    let id = 0
    const onAbort = () => {
      if (!settled) native.cancel(id)
    }
    const done = (err, handle) => {
      settled = true
      signal?.removeEventListener('abort', onAbort)
      if (err) {
        if (err.code === 'ECANCELED' && signal?.aborted && err.cause === undefined) err.cause = signal.reason
        reject(err)
      } else if (signal?.aborted) {
        try {
          undo(handle)
        } catch (e) {
          reject(e)
          return
        }
        reject(canceled(signal, what))
      } else {
        resolve(handle)
      }
    }
    id = startFn(done)
    if (!settled && signal) signal.addEventListener('abort', onAbort, { once: true })
  })
}

// The options a lock within this process takes: new Lock() or new
// Lock({ blocking, timeout }).
const PROCESS_LOCK_OPTIONS = ['blocking', 'timeout']

/**
 * A lock named `name` (or, for an array of names, a set of them, taken
 * all or none) in lock space `space`: a directory, "flock:DIR", or a lock
 * server's URL ("redis://...").  Nothing is taken until acquire() or
 * runExclusive().  Options: mode ('exclusive', 'shared', 'intent'),
 * policy ('fair', 'writer', 'reader', 'simple'), fifo, staleAge (ms),
 * noMkdir, noNotify, range ([lo, hi] or 'LO:HI'), and blocking and timeout
 * (ms), the defaults of every acquire.
 *
 * With no space and no name -- seed 004's `new Lock()`, or `new Lock({
 * blocking, timeout })` -- a lock within this process: its own queue,
 * served in arrival order (process-lock.js), with the same acquire(),
 * runExclusive(), release function and errors, and nothing shared with
 * other processes or worker threads.
 */
class Lock {
  #local = null
  #space
  #names
  #isSet
  #range
  #spec
  #blocking
  #timeout
  #held = 0
  #waiting = 0

  constructor (space, name, options) {
    if (name === undefined && options === undefined && (space === undefined || isPlainObject(space))) {
      const o = optionsObject(space, PROCESS_LOCK_OPTIONS, 'new Lock() (a lock within this process)')
      // The in-process queue is loaded on first use: require('dirlock') stays light.
      const { ProcessQueue } = require('./process-lock')
      this.#local = new ProcessQueue(lockError)
      this.#blocking = boolOption(o.blocking, 'blocking')
      this.#timeout = msOption(o.timeout, 'timeout')
      return
    }
    if (typeof space !== 'string' || space === '') {
      throw new TypeError('space must be a non-empty string (or new Lock() with no space and no name: a lock within this process)')
    }
    this.#space = space
    if (typeof name === 'string') {
      this.#names = [name]
      this.#isSet = false
    } else if (Array.isArray(name) && name.length > 0 && name.every(n => typeof n === 'string')) {
      this.#names = [...name]
      this.#isSet = true
    } else {
      throw new TypeError('name must be a string, or a non-empty array of strings (a set)')
    }
    const o = optionsObject(options, LOCK_OPTIONS, 'new Lock()')
    let flags = 0
    if (boolOption(o.fifo, 'fifo')) flags |= native.flags.fifo
    if (boolOption(o.noMkdir, 'noMkdir')) flags |= native.flags.noMkdir
    if (boolOption(o.noNotify, 'noNotify')) flags |= native.flags.noNotify
    const staleAge = msOption(o.staleAge, 'staleAge')
    this.#spec = {
      mode: o.mode === undefined ? 0 : nameIndex(o.mode, native.modes, 'mode'),
      policy: o.policy === undefined ? 0 : nameIndex(o.policy, native.policies, 'policy'),
      flags,
      staleAge: staleAge === undefined ? 0 : staleAge / 1000
    }
    if (staleAge !== undefined && !(staleAge > 0)) {
      throw lockError('EINVAL', `staleAge must be more than 0 ms (got ${staleAge})`)
    }
    this.#range = null
    if (o.range !== undefined && o.range !== null) {
      if (this.#isSet) throw lockError('EINVAL', 'range locks are taken one name at a time')
      if (typeof o.range === 'string') {
        this.#range = native.parseRange(o.range)
      } else if (Array.isArray(o.range) && o.range.length === 2 && o.range.every(x => typeof x === 'number')) {
        this.#range = [...o.range]
      } else {
        throw new TypeError("range must be [lo, hi] (two numbers) or a string 'LO:HI'")
      }
    }
    this.#blocking = boolOption(o.blocking, 'blocking')
    this.#timeout = msOption(o.timeout, 'timeout')
  }

  /** The lock space; null for a lock within this process. */
  get space () {
    return this.#local ? null : this.#space
  }

  /** The name given (an array of them for a set); null for a lock within
   * this process. */
  get name () {
    if (this.#local) return null
    return this.#isSet ? [...this.#names] : this.#names[0]
  }

  /** True while an acquire of this Lock holds the lock (not yet released).
   * Whether another process holds it: inspect(), or acquire({ blocking:
   * false }). */
  get locked () {
    return this.#local ? this.#local.held : this.#held > 0
  }

  /** How many acquires of this Lock are waiting. */
  get waiting () {
    return this.#local ? this.#local.waiting : this.#waiting
  }

  /**
   * Take the lock.  Resolves to the release function (which also carries
   * the held lock's calls: fence(), check(), upgrade(), ...); rejects with
   * a LockError: EBUSY for { blocking: false } when it is held,
   * ETIMEDOUT after `timeout` ms, ECANCELED when `signal` aborts, ...
   * Waiting never blocks the event loop.
   */
  acquire (options) {
    try {
      const o = optionsObject(options, ACQUIRE_OPTIONS, 'acquire()')
      const blocking = boolOption(o.blocking, 'blocking') ?? this.#blocking ?? true
      const timeout = msOption(o.timeout, 'timeout') ?? this.#timeout
      const signal = signalOption(o.signal)
      if (this.#local) return this.#local.take(blocking, timeout, signal, 'acquire()').then(() => this.#holdLocal())
      const spec = { ...this.#spec, timeout: waitSeconds(blocking, timeout) }
      const kind = this.#isSet ? KIND_MANY : this.#range ? KIND_RANGE : KIND_ONE
      const [lo, hi] = this.#range ?? [0, 0]
      const names = this.#isSet ? this.#names : this.#names[0]
      if (signal?.aborted) return Promise.reject(canceled(signal, 'acquire()'))
      this.#waiting++
      let counted = true
      const uncount = () => {
        if (counted) this.#waiting--
        counted = false
      }
      const p = pending(done => {
        try {
          return native.start(kind, this.#space, names, lo, hi, spec, (err, handle) => {
            uncount()
            done(err, handle)
          })
        } catch (e) {
          uncount()
          throw e
        }
      }, signal, 'acquire()', handle => native.release(handle))
      return p.then(handle => this.#hold(handle))
    } catch (e) {
      return Promise.reject(e)
    }
  }

  /**
   * Run `callback(release)` under the lock and release it afterwards,
   * whatever the callback did; resolves to what the callback returned.
   * Options as for acquire().  When the lock was lost meanwhile, the
   * release rejects with ELOST after a callback that succeeded; after one
   * that threw, the callback's error goes on with the release's error as
   * its `releaseError`.
   */
  async runExclusive (callback, options) {
    if (typeof callback !== 'function') throw new TypeError('runExclusive(callback): callback must be a function')
    const release = await this.acquire(options)
    let result
    try {
      result = await callback(release)
    } catch (e) {
      if (!release.released) {
        try {
          release()
        } catch (releaseError) {
          if (e !== null && typeof e === 'object') e.releaseError = releaseError
        }
      }
      throw e
    }
    if (!release.released) release()
    return result
  }

  // The release function of a new hold, carrying the hold's calls.
  #hold (handle) {
    this.#held++
    let released = false
    const settle = () => {
      if (!released && native.info(handle) === null) {
        released = true
        this.#held--
      }
    }
    const release = function release () {
      if (released) throw lockError('EBALANCE', 'release(): the lock was released already')
      try {
        native.release(handle)
      } finally {
        settle()
      }
    }
    const info = () => native.info(handle)
    Object.defineProperties(release, {
      released: { get: () => released, enumerable: true },
      name: { get: () => (this.#isSet ? info()?.names : info()?.names[0]) ?? this.name, enumerable: true },
      mode: {
        get: () => {
          const i = info()
          return i ? native.modes[i.mode] : null
        },
        enumerable: true
      },
      token: { get: () => info()?.token ?? null, enumerable: true },
      range: { get: () => info()?.range ?? null, enumerable: true },
      check: { value: () => native.check(handle) },
      refresh: { value: () => native.refresh(handle) },
      fence: { value: () => native.fence(handle) },
      downgrade: { value: () => native.downgrade(handle) },
      downgradeIntent: { value: () => native.downgradeIntent(handle) },
      shrink: {
        value: (lo, hi) => {
          if (typeof lo !== 'number' || typeof hi !== 'number') throw new TypeError('shrink(lo, hi) takes two numbers')
          native.shrink(handle, lo, hi)
        }
      },
      upgrade: {
        value: (options) => {
          try {
            const o = optionsObject(options, ACQUIRE_OPTIONS, 'upgrade()')
            const blocking = boolOption(o.blocking, 'blocking') ?? this.#blocking ?? true
            const timeout = msOption(o.timeout, 'timeout') ?? this.#timeout
            const signal = signalOption(o.signal)
            const spec = { ...this.#spec, timeout: waitSeconds(blocking, timeout) }
            return pending(done => native.upgrade(handle, spec, done), signal, 'upgrade()',
              () => native.downgradeIntent(handle)).then(() => undefined)
          } catch (e) {
            return Promise.reject(e)
          }
        }
      }
    })
    if (typeof Symbol.dispose === 'symbol') {
      Object.defineProperty(release, Symbol.dispose, {
        value: () => {
          if (!released) release()
        }
      })
    }
    return release
  }

  // The release function of a hold of a lock within this process: the
  // same function, carrying what such a lock has (no fence, no modes, no
  // range; it cannot be broken, so check() is true until released).
  #holdLocal () {
    const local = this.#local
    let released = false
    const release = function release () {
      if (released) throw lockError('EBALANCE', 'release(): the lock was released already')
      released = true
      local.give()
    }
    const ifHeld = (what, result) => () => {
      if (released) throw lockError('EBALANCE', `${what}: the lock was released already`)
      return result
    }
    const none = what => () => {
      throw lockError('EINVAL', `${what}: a lock within this process (new Lock()) has none; new Lock(space, name) has`)
    }
    Object.defineProperties(release, {
      released: { get: () => released, enumerable: true },
      name: { value: null, enumerable: true },
      mode: { get: () => (released ? null : 'exclusive'), enumerable: true },
      token: { value: null, enumerable: true },
      range: { value: null, enumerable: true },
      check: { value: ifHeld('check()', true) },
      refresh: { value: ifHeld('refresh()', undefined) },
      fence: { value: none('fence()') },
      downgrade: { value: none('downgrade()') },
      downgradeIntent: { value: none('downgradeIntent()') },
      shrink: { value: none('shrink()') },
      upgrade: { value: () => Promise.reject(lockError('EINVAL', 'upgrade(): a lock within this process (new Lock()) has no modes')) }
    })
    if (typeof Symbol.dispose === 'symbol') {
      Object.defineProperty(release, Symbol.dispose, {
        value: () => {
          if (!released) release()
        }
      })
    }
    return release
  }
}

function isPlainObject (x) {
  return typeof x === 'object' && x !== null && !Array.isArray(x)
}

/**
 * The owner record of lock `name` in `space`, or null when it is free:
 * { name, pid, startTime, host, token, acquired (ms since the epoch), age
 * (ms), sameHost, ownerAlive (null: cannot tell), stale, mode, readers,
 * partner, ranges }.  A few file reads (a round trip on a lock server),
 * made synchronously.
 */
function inspect (space, name, options) {
  const o = optionsObject(options, ['staleAge'], 'inspect()')
  const staleAge = msOption(o.staleAge, 'staleAge')
  const r = native.inspect(space, name, staleAge === undefined ? 0 : staleAge / 1000)
  if (r !== null) r.mode = native.modes[r.mode] ?? r.mode
  return r
}

/** What a lock space string names, without touching the space:
 * { backend, dir, ranges, fences, upgrade, ownerRecords }. */
function spaceInfo (space) {
  return native.spaceInfo(space)
}

module.exports = { Lock, LockError, inspect, spaceInfo, codes, libraryVersion: native.version }
