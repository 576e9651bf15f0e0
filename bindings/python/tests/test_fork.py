"""test_fork.py - a lock belongs to the process that took it: after fork
the child's release, refresh and check raise ENOTOWNER, its copy going
away leaves the parent's lock held, and the parent keeps it."""
import os

import pytest

import dirlock


def in_child(fn):
    """Runs fn in a forked child; returns what it wrote, one line each."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        status = 1
        try:
            with os.fdopen(w, "w") as out:
                fn(out)
            status = 0
        finally:
            os._exit(status)
    os.close(w)
    with os.fdopen(r) as f:
        lines = f.read().splitlines()
    _, status = os.waitpid(pid, 0)
    return lines + [f"exit {os.waitstatus_to_exitcode(status)}"]


def code_of(fn):
    try:
        fn()
        return "OK"
    except dirlock.Error as e:
        return e.code


@pytest.mark.parametrize("reentrant", [False, True])
def test_the_child_is_refused(space, reentrant):
    lock = dirlock.Lock(space, "f", reentrant=reentrant)
    lock.acquire()
    token = lock.token

    def child(out):
        for what in ("check", "refresh", "release"):
            print(what, code_of(getattr(lock, what)), file=out)
        print("taker", code_of(dirlock.Lock(space, "f", nonblocking=True).acquire), file=out)

    assert in_child(child) == ["check ENOTOWNER", "refresh ENOTOWNER", "release ENOTOWNER", "taker EBUSY",
                               "exit 0"]
    assert lock.check() and dirlock.inspect(space, "f").token == token

    def drop(out):
        nonlocal lock
        del lock  # the child's copy goes away: only the copy is freed
        print("dropped", file=out)

    assert in_child(drop) == ["dropped", "exit 0"]
    assert lock.check()
    with pytest.raises(dirlock.EBUSY):
        dirlock.Lock(space, "f", nonblocking=True).acquire()
    lock.release()
    assert dirlock.inspect(space, "f") is None


def test_a_set_after_fork(space):
    lock = dirlock.Lock(space, ["s1", "s2"])
    lock.acquire()
    assert in_child(lambda out: print(code_of(lock.release), file=out)) == ["ENOTOWNER", "exit 0"]
    assert lock.check()
    lock.release()
