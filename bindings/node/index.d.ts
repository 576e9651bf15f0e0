// index.d.ts - the types of dirlock for Node.js (index.js).

/** An error of the dirlock library. */
export class LockError extends Error {
  name: 'LockError'
  /** The library's name of the code: 'EBUSY', 'ETIMEDOUT', 'ECANCELED', ... (see `codes`). */
  code: string
  /** The code's number (codes[number] === code). */
  number: number
  /** The system's errno for EIO, else 0. */
  errno: number
}

/** Every code of the library, by number: codes[0] === 'OK'. */
export const codes: readonly string[]

/** The library's version. */
export const libraryVersion: string

export type Mode = 'exclusive' | 'shared' | 'intent'
export type Policy = 'fair' | 'writer' | 'reader' | 'simple'

export interface AcquireOptions {
  /** false: one try, LockError EBUSY when held (default true). */
  blocking?: boolean
  /** Milliseconds to wait (blocking only): LockError ETIMEDOUT after it; default forever. */
  timeout?: number
  /** Aborting it gives the wait up: LockError ECANCELED (its cause the signal's reason). */
  signal?: AbortSignal
}

export interface LockOptions {
  mode?: Mode
  policy?: Policy
  /** Serve exclusive waiters in arrival order. */
  fifo?: boolean
  /** Milliseconds after which an unrefreshed lock may be broken (default 180000). */
  staleAge?: number
  /** Do not make a missing lock directory. */
  noMkdir?: boolean
  /** Never use inotify: back off and poll. */
  noNotify?: boolean
  /** Lock the half-open range [lo, hi) of the name: [lo, hi], or 'LO:HI'. */
  range?: [number, number] | string
  /** The default of every acquire. */
  blocking?: boolean
  /** The default of every acquire (ms). */
  timeout?: number
}

/** The function that releases a held lock, carrying the held lock's calls. */
export interface Release {
  /** Release the lock (LockError ELOST when it had been broken meanwhile; EBALANCE the second time). */
  (): void
  readonly released: boolean
  /** The name, or the names of a set in name order; null for a lock within this process. */
  readonly name: string | string[] | null
  /** As held now (upgrades and downgrades change it); null once released. */
  readonly mode: Mode | null
  /** The 128-bit random token of this acquisition (hex); null for a set. */
  readonly token: string | null
  /** [lo, hi] of a range lock, else null. */
  readonly range: [number, number] | null
  /** true while held; throws LockError ELOST when it was broken. */
  check(): true
  /** Renew the lock's age (at least every third of the stale age for a long hold). */
  refresh(): void
  /** A number greater than that of every earlier acquisition of the same lock (exact: below 2^53). */
  fence(): number
  /** Intent -> exclusive, waiting only for the readers present. */
  upgrade(options?: AcquireOptions): Promise<void>
  /** Exclusive -> shared, letting no writer in between. */
  downgrade(): void
  /** An upgraded intent lock back to intent. */
  downgradeIntent(): void
  /** Narrow a held range to [lo, hi), a part of it. */
  shrink(lo: number, hi: number): void
}

export class Lock {
  /**
   * A lock named `name` (or a set of names, taken all or none) in `space`:
   * a directory, 'flock:DIR', or 'redis://...'.
   */
  constructor(space: string, name: string | string[], options?: LockOptions)
  /**
   * Seed 004's `new Lock()`: a lock within this process, its acquires
   * served in arrival order; not shared with other processes or worker
   * threads.  Its release function has no fence, modes or range.
   */
  constructor(options?: Pick<LockOptions, 'blocking' | 'timeout'>)
  /** null for a lock within this process. */
  readonly space: string | null
  /** null for a lock within this process. */
  readonly name: string | string[] | null
  /** True while an acquire of this Lock holds the lock. */
  readonly locked: boolean
  /** How many acquires of this Lock are waiting. */
  readonly waiting: number
  /** Take the lock; waiting never blocks the event loop. */
  acquire(options?: AcquireOptions): Promise<Release>
  /** Run the callback under the lock and release it afterwards, whatever the callback did. */
  runExclusive<T>(callback: (release: Release) => T | Promise<T>, options?: AcquireOptions): Promise<T>
}

export interface Owner {
  name: string
  pid: number
  startTime: number
  host: string
  token: string
  /** Milliseconds since the epoch. */
  acquired: number
  /** Milliseconds since it was taken or last refreshed. */
  age: number
  sameHost: boolean
  /** null when it cannot be told (another host). */
  ownerAlive: boolean | null
  stale: boolean
  mode: Mode
  readers: number
  partner: number
  ranges: number
}

/** The owner record of a lock, or null when it is free (a synchronous read). */
export function inspect(space: string, name: string, options?: { staleAge?: number }): Owner | null

export interface SpaceInfo {
  backend: string
  dir: string | null
  ranges: boolean
  fences: boolean
  upgrade: boolean
  ownerRecords: boolean
}

/** What a lock space string names, without touching the space. */
export function spaceInfo(space: string): SpaceInfo
