"""test_admin.py - inspect, list_locks, break_lock and cleanup: a lock
left by a process that died is seen dead and broken; a live one is
refused unless forced."""
import os
import time

import pytest

import dirlock


def left_by_dead_child(space, name):
    """A child takes the lock and dies without releasing it."""
    pid = os.fork()
    if pid == 0:
        try:
            lock = dirlock.Lock(space, name, stale_age=60)
            lock.acquire()
        finally:
            os._exit(0)  # no destructor runs: the lock stays
    os.waitpid(pid, 0)
    return pid


def test_inspect_list_break_cleanup(space):
    assert dirlock.inspect(space, "none") is None
    with pytest.raises(dirlock.ENOLOCK):
        dirlock.break_lock(space, "none")

    lock = dirlock.Lock(space, "live", stale_age=60)
    lock.acquire()
    o = dirlock.inspect(space, "live")
    assert (o.name, o.pid, o.token, o.mode) == ("live", os.getpid(), lock.token, "exclusive")
    assert o.start_time > 0 and o.host and abs(o.acquired - time.time()) < 60 and 0 <= o.age < 60
    assert o.same_host is True and o.owner_alive is True and o.stale is False
    with pytest.raises(dirlock.ELIVE):
        dirlock.break_lock(space, "live")
    assert lock.check()
    names = [o.name for o in dirlock.list_locks(space)]
    assert "live" in names and names == sorted(names)
    dirlock.break_lock(space, "live", force=True)
    with pytest.raises(dirlock.ELOST):
        lock.check()
    with pytest.raises(dirlock.ELOST):
        lock.release()

    dead = left_by_dead_child(space, "dead")
    o = dirlock.inspect(space, "dead")
    assert o.pid == dead and o.owner_alive is False and o.stale is True
    dirlock.break_lock(space, "dead")
    assert dirlock.inspect(space, "dead") is None
    left_by_dead_child(space, "dead")
    t0 = time.monotonic()
    with dirlock.Lock(space, "dead", timeout=30):
        assert time.monotonic() - t0 < 5, "the next taker breaks a dead owner's lock at once"
    dirlock.cleanup(space)


def test_space_info(tmp_path):
    info = dirlock.space_info(f"flock:{tmp_path}/x")
    assert (info.backend, info.dir, info.fences) == ("flock", f"{tmp_path}/x", False)
    info = dirlock.space_info(tmp_path / "y")
    assert info == ("directory", str(tmp_path / "y"), True, True, True, True)
    assert not (tmp_path / "y").exists(), "space_info touches nothing"
    forms = dirlock.space_forms()
    assert forms[0][0].startswith("DIR ") and forms[0][1] is True
    assert any(f.startswith("flock:") and built for f, built in forms)
    with pytest.raises(dirlock.EINVAL):
        dirlock.space_info("")
