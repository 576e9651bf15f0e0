"""bench/waiters-asyncio.py - many asyncio tasks of one loop waiting for
one lock, served in turn (the Python half of bench/waiters-run).

    python3 bench/waiters-asyncio.py SPACE N

First the loop's lag with nothing else to do (2 s: the baseline), then N
tasks each `async with dirlock.Lock(SPACE, "many", timeout=600)`, the lock
held by the loop while they start; it lets go, and each lets go at once
once it has the lock.  The lag is how much later than 2 ms an
`asyncio.sleep(0.002)` comes back, measured by a task of its own while
they are served.  Prints two lines:
    idle LAG_P50_MS LAG_P99_MS LAG_MAX_MS
    waiters SERVED FAILED START_MS SERVE_MS LAG_P50_MS LAG_P99_MS LAG_MAX_MS FDS KIB
START_MS is the time to create and start the N tasks (the loop's one turn
that runs their first steps), SERVE_MS from the release to the last one
served, FDS and KIB what the waiting tasks took over the process's
before, once each is in the lock's queue.  Nothing is asserted."""
import asyncio
import os
import resource
import sys
import time

import dirlock

TICK = 0.002


def fds():
    return len(os.listdir("/proc/self/fd"))


def kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGESIZE") // 1024


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, len(v) * p // 100)] * 1e3 if v else 0.0


async def lags_until(done):
    out = []
    while not done():
        t = time.monotonic()
        await asyncio.sleep(TICK)
        out.append(max(0.0, time.monotonic() - t - TICK))
    return out


async def main(space, n):
    t_end = time.monotonic() + 2
    idle = await lags_until(lambda: time.monotonic() >= t_end)
    print(f"idle {pct(idle, 50):.3f} {pct(idle, 99):.3f} {pct(idle, 100):.3f}", flush=True)
    holder = dirlock.Lock(space, "many")
    holder.acquire()
    fds0, kib0 = fds(), kib()
    served = failed = 0

    async def one():
        nonlocal served, failed
        try:
            async with dirlock.Lock(space, "many", timeout=600):
                served += 1
        except dirlock.Error:
            failed += 1

    t0 = time.monotonic()
    tasks = [asyncio.create_task(one()) for _ in range(n)]
    await asyncio.sleep(0)  # the turn that runs every task's first step
    start_ms = (time.monotonic() - t0) * 1e3
    # Each one to its first wait: its ticket in the lock's queue.
    queue = os.path.join(space, "many.fifo")
    while sum(1 for e in os.listdir(queue) if e.startswith("t.")) < n:
        await asyncio.sleep(0.05)
    used_fds, used_kib = fds() - fds0, kib() - kib0
    t0 = time.monotonic()
    holder.release()
    lag_task = asyncio.create_task(lags_until(lambda: served + failed >= n))
    await asyncio.gather(*tasks)
    serve_ms = (time.monotonic() - t0) * 1e3
    lags = await lag_task
    print(f"waiters {served} {failed} {start_ms:.1f} {serve_ms:.1f} {pct(lags, 50):.3f} {pct(lags, 99):.3f} "
          f"{pct(lags, 100):.3f} {used_fds} {used_kib}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or int(sys.argv[2]) < 1:
        sys.exit("usage: python3 bench/waiters-asyncio.py SPACE N")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
