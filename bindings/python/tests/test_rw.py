"""test_rw.py - reader-writer modes, upgrade and downgrade, policies, and
range locks."""
import os

import pytest

import dirlock


def take(space, name, **options):
    lock = dirlock.Lock(space, name, **options)
    lock.acquire()
    return lock


def test_readers_and_writers(space):
    r1 = take(space, "rw", mode="shared")
    r2 = take(space, "rw", mode="shared", nonblocking=True)
    assert r2.mode == "shared"
    assert dirlock.inspect(space, "rw").readers == 2
    with pytest.raises(dirlock.EBUSY):
        take(space, "rw", nonblocking=True)
    with pytest.raises(dirlock.EUPGRADE):
        r1.upgrade(nonblocking=True)
    r1.release()
    r2.release()


def test_intent_upgrade_downgrade(space):
    i = take(space, "rw", mode="intent")
    r = take(space, "rw", mode="shared", nonblocking=True, no_deadlock=True)  # another process's
    with pytest.raises(dirlock.EBUSY):
        take(space, "rw", mode="intent", nonblocking=True)
    with pytest.raises(dirlock.ETIMEDOUT):
        i.upgrade(timeout=0.2)
    assert i.mode == "intent"
    r.release()
    i.upgrade(timeout=5)
    assert i.mode == "exclusive"
    with pytest.raises(dirlock.EBUSY):
        take(space, "rw", mode="shared", nonblocking=True)
    i.downgrade_intent()
    assert i.mode == "intent"
    take(space, "rw", mode="shared", nonblocking=True).release()
    i.release()
    w = take(space, "rw")
    w.downgrade()
    assert w.mode == "shared"
    take(space, "rw", mode="shared", nonblocking=True).release()
    w.release()


@pytest.mark.parametrize("policy", ["fair", "writer", "reader", "simple"])
def test_policies(space, policy):
    with dirlock.Lock(space, "p", mode="shared", policy=policy) as lock:
        assert lock.mode == "shared"


def test_ranges(space):
    a = take(space, "tree", range=(0, 0.5))
    assert a.range == (0, 0.5)
    b = take(space, "tree", range=(0.5, 1), nonblocking=True)
    with pytest.raises(dirlock.EBUSY):
        take(space, "tree", range=(0.25, 0.75), nonblocking=True)
    with pytest.raises(dirlock.EBUSY):
        take(space, "tree", nonblocking=True)
    a.shrink(0, 0.25)
    assert a.range == (0, 0.25)
    take(space, "tree", range=(0.3, 0.4), nonblocking=True).release()
    with pytest.raises(dirlock.EINVAL):
        a.shrink(0, 0.5)
    got = [(r.lo, r.hi, r.mode, r.waiting, r.pid) for r in dirlock.ranges(space, "tree")]
    assert got == [(0, 0.25, "exclusive", False, os.getpid()), (0.5, 1, "exclusive", False, os.getpid())]
    with pytest.raises(dirlock.EINVAL):
        take(space, "tree", range=(0, 1), reentrant=True)
    a.release()
    b.release()


def test_a_range_as_text(space):
    with dirlock.Lock(space, "tree", range="0.25:5e-1") as lock:
        assert lock.range == (0.25, 0.5)
    for bad in ["0.5:0.25", "1:", "inf:2", " 0:1", "0:1\0"]:
        with pytest.raises(dirlock.EINVAL):
            dirlock.Lock(space, "tree", range=bad)
