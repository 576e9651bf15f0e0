"""test_many.py - a list of names is a set: all or none, every name once
in name order, released, refreshed and checked together."""
import pytest

import dirlock


def held(space, name):
    return dirlock.inspect(space, name) is not None


def test_a_set(space):
    lock = dirlock.Lock(space, ["log", "index", "log", "count"], timeout=5)
    assert lock.name == ("log", "index", "log", "count")
    with lock:
        assert lock.names == ("count", "index", "log")
        assert all(held(space, n) for n in lock.names)
        assert lock.check() is True
        lock.refresh()
        with pytest.raises(dirlock.EINVAL):
            lock.fence()
        with pytest.raises(dirlock.EINVAL):
            lock.upgrade()
    assert not any(held(space, n) for n in ("count", "index", "log"))


def test_all_or_none(space):
    with dirlock.Lock(space, "index", no_deadlock=True):  # stands for another process's hold
        with pytest.raises(dirlock.EBUSY):
            dirlock.Lock(space, ["log", "index", "count"], nonblocking=True).acquire()
        assert not held(space, "log") and not held(space, "count")
        with pytest.raises(dirlock.ETIMEDOUT):
            dirlock.Lock(space, ("log", "index"), timeout=0.2).acquire()
    with pytest.raises(dirlock.ENAME):
        dirlock.Lock(space, ["ok", "../bad"]).acquire()
    assert not held(space, "ok")
    with pytest.raises(dirlock.EINVAL):
        dirlock.Lock(space, ["a", "b"], range=(0, 1))
    with pytest.raises(TypeError):
        dirlock.Lock(space, ["a", 1])


def test_release(space):
    lock = dirlock.Lock(space, ["a", "b"])
    lock.acquire()
    lock.release()
    assert not held(space, "a") and not held(space, "b")
    with pytest.raises(dirlock.EBALANCE):
        lock.release()
