"""test_lock.py - one lock in one process: acquire and release, the
context manager, refresh, check, fence, accessors, busy and timeouts,
reentrant holds, every option by keyword, flock: spaces, and the cancel
descriptor."""
import os
import threading
import time

import pytest

import dirlock


def held(space, name):
    return dirlock.inspect(space, name) is not None


def test_acquire_and_release(space):
    lock = dirlock.Lock(space, "a", timeout=5)
    assert not lock.held and lock.token is None and not held(space, "a")
    lock.acquire()
    assert lock.held and held(space, "a")
    assert len(lock.token) == 32 and int(lock.token, 16) >= 0
    assert lock.name == "a" and lock.names == ("a",) and lock.space == space
    assert lock.mode == "exclusive" and lock.range is None
    assert lock.check() is True
    lock.refresh()
    f = lock.fence()
    assert f > 0 and lock.fence() == f
    owner = dirlock.inspect(space, "a")
    assert owner.pid == os.getpid() and owner.token == lock.token
    lock.release()
    assert not lock.held and not held(space, "a")
    with pytest.raises(dirlock.EBALANCE):
        lock.release()
    lock.acquire()
    assert lock.fence() > f, "a later acquisition has a greater fence"
    with pytest.raises(dirlock.EINVAL):
        lock.acquire()  # not reentrant: would wait on itself
    lock.release()


def test_context_manager(space):
    lock = dirlock.Lock(space, "w")
    with lock as got:
        assert got is lock and held(space, "w")
    assert not held(space, "w")
    with pytest.raises(ZeroDivisionError):
        with dirlock.Lock(space, "w"):
            1 / 0
    assert not held(space, "w"), "released when the block raised"


def test_a_lock_broken_in_the_block(space):
    with pytest.raises(dirlock.ELOST):
        with dirlock.Lock(space, "w"):
            dirlock.break_lock(space, "w", force=True)
    with pytest.raises(KeyError) as info:
        with dirlock.Lock(space, "w"):
            dirlock.break_lock(space, "w", force=True)
            raise KeyError("the block's own")
    notes = getattr(info.value, "__notes__", [])
    assert any("release failed" in n and "broken" in n for n in notes), notes


def test_busy_and_timeout(space):
    with dirlock.Lock(space, "a", no_deadlock=True):  # stands for another process's hold
        with pytest.raises(dirlock.EBUSY):
            dirlock.Lock(space, "a", nonblocking=True).acquire()
        with pytest.raises(dirlock.EBUSY):
            dirlock.Lock(space, "a", timeout=0).acquire()
        t0 = time.monotonic()
        with pytest.raises(dirlock.ETIMEDOUT):
            dirlock.Lock(space, "a", timeout=0.3).acquire()
        assert time.monotonic() - t0 >= 0.25


def test_reentrant(space):
    lock = dirlock.Lock(space, "re", reentrant=True)
    lock.acquire()
    lock.acquire()
    lock.release()
    assert lock.held and held(space, "re")
    lock.release()
    assert not lock.held and not held(space, "re")
    with pytest.raises(dirlock.EBALANCE):
        lock.release()
    with lock:
        assert held(space, "re")
    assert not held(space, "re")


def test_every_option(lockdir):
    lock = dirlock.Lock(lockdir, "o", timeout=None, stale_age=30, mode="exclusive", policy="writer", fifo=True,
                        reentrant=False, no_mkdir=False, no_notify=True, partner_pid=os.getpid(), range=None)
    with lock:
        owner = dirlock.inspect(lockdir, "o")
        assert owner.partner == os.getpid() and not owner.stale
        assert dirlock.inspect(lockdir, "o", stale_age=0.1) is not None


def test_flock_spaces(lockdir):
    with dirlock.Lock(f"flock:{lockdir}", "k") as lock:
        with pytest.raises(dirlock.EBUSY):
            dirlock.Lock(f"flock:{lockdir}", "k", nonblocking=True).acquire()
        with pytest.raises(dirlock.EINVAL):
            lock.fence()
    with dirlock.Lock(f"flock:{lockdir}", "k", nonblocking=True):
        pass


def test_cancel_fd(lockdir):
    r, w = os.pipe()
    try:
        with dirlock.Lock(lockdir, "c", no_deadlock=True):  # another process's hold
            threading.Timer(0.3, os.write, (w, b"x")).start()
            t0 = time.monotonic()
            with pytest.raises(dirlock.ECANCELED):
                dirlock.Lock(lockdir, "c", timeout=10, cancel_fd=r).acquire()
            assert time.monotonic() - t0 < 5
            with open(r, "rb", buffering=0, closefd=False) as f:
                with pytest.raises(dirlock.ECANCELED):  # a file object: its fileno()
                    dirlock.Lock(lockdir, "c", timeout=10, cancel_fd=f).acquire()
    finally:
        os.close(r)
        os.close(w)


def test_a_path_object(tmp_path):
    with dirlock.Lock(tmp_path / "locks", "p") as lock:
        assert held(str(tmp_path / "locks"), "p") and lock.space == str(tmp_path / "locks")
