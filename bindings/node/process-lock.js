// process-lock.js - seed 004's `new Lock()`, with no space and no name: a
// lock within this process (one event loop), the seed's queue of
// waiters, which index.js's Lock uses in place of the library.  Not seen
// by other processes, nor by worker threads: each has its own.
//
// The queue keeps two facts: whether the lock is held, and the waiters
// in arrival order.  A release hands the lock to the first waiter
// without freeing it in between (held stays true), so no acquire
// started meanwhile can pass the queue; a try ({ blocking: false }) gets
// the lock only when it is free and nobody waits.  A waiter leaves the
// queue exactly once: granted, timed out or aborted, whichever comes
// first; the other two then find it gone and do nothing.
'use strict'

class ProcessQueue {
  #held = false
  #waiters = []
  #fail

  /** fail(code, message, cause): the LockError to reject with. */
  constructor (fail) {
    this.#fail = fail
  }

  get held () {
    return this.#held
  }

  get waiting () {
    return this.#waiters.length
  }

  /**
   * Resolves once the lock is this caller's.  blocking false, or a
   * timeout of 0: one try (EBUSY); timeout (ms, undefined or negative:
   * forever): ETIMEDOUT after it; signal: ECANCELED when it aborts.
   */
  take (blocking, timeout, signal, what) {
    if (signal?.aborted) return Promise.reject(this.#fail('ECANCELED', `${what}: aborted`, signal.reason))
    if (!this.#held && this.#waiters.length === 0) {
      this.#held = true
      return Promise.resolve()
    }
    if (blocking === false || timeout === 0) {
      return Promise.reject(this.#fail('EBUSY', `${what}: the lock is held in this process`))
    }
    return new Promise((resolve, reject) => {
      const waiter = { resolve, signal, timer: undefined, onAbort: undefined }
      const leave = err => {
        const i = this.#waiters.indexOf(waiter)
        if (i < 0) return
        this.#waiters.splice(i, 1)
        clearTimeout(waiter.timer)
        signal?.removeEventListener('abort', waiter.onAbort)
        reject(err)
      }
      if (timeout !== undefined && timeout >= 0 && timeout !== Infinity) {
        waiter.timer = setTimeout(() => leave(this.#fail('ETIMEDOUT', `${what}: not granted within ${timeout} ms`)), timeout)
      }
      if (signal) {
        waiter.onAbort = () => leave(this.#fail('ECANCELED', `${what}: aborted`, signal.reason))
        signal.addEventListener('abort', waiter.onAbort, { once: true })
      }
      this.#waiters.push(waiter)
    })
  }

  /** Let the lock go: to the first waiter, or free. */
  give () {
    const next = this.#waiters.shift()
    if (next === undefined) {
      this.#held = false
      return
    }
    clearTimeout(next.timer)
    if (next.onAbort) next.signal.removeEventListener('abort', next.onAbort)
    next.resolve()
  }
}

module.exports = { ProcessQueue }
