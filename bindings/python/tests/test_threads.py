"""test_threads.py - the GIL is released while a thread waits for a lock:
the other threads run on; threads wait for each other's locks; one Lock
object used by two threads at once is refused rather than raced."""
import threading
import time

import pytest

import dirlock


def test_a_waiting_thread_does_not_stall_the_others(lockdir):
    holder = dirlock.Lock(lockdir, "g")
    holder.acquire()
    got = []

    def waiter():
        with dirlock.Lock(lockdir, "g", timeout=10):
            got.append(time.monotonic())

    threads = [threading.Thread(target=waiter) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.1)  # both are waiting now
    t0 = time.monotonic()
    spins = 0
    while time.monotonic() - t0 < 0.5:
        spins += 1  # pure Python: runs only while nobody holds the GIL
    released_at = time.monotonic()
    holder.release()
    for t in threads:
        t.join(15)
    assert len(got) == 2 and min(got) >= released_at, "both waiters got the lock after the release"
    assert spins > 10000, f"the main thread ran only {spins} loops while two threads waited"


def test_one_object_two_threads(lockdir):
    holder = dirlock.Lock(lockdir, "g")
    holder.acquire()
    shared = dirlock.Lock(lockdir, "g", timeout=10)
    t = threading.Thread(target=shared.acquire)
    t.start()
    time.sleep(0.2)
    with pytest.raises(RuntimeError, match="another thread"):
        shared.release()
    holder.release()
    t.join(15)
    assert shared.held
    shared.release()
