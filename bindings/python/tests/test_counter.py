"""test_counter.py - processes (multiprocessing) add one to a counter
file, each a read, a pause and a write: under the lock none of the
additions is lost; the twin without a lock loses some, which shows the
test can fail."""
import multiprocessing

import pytest

import dirlock
from conftest import bump_counter, read_counter

PROCS = 6
EACH = 30


def locked_worker(space, path, n):
    for _ in range(n):
        with dirlock.Lock(space, "counter", timeout=60):
            bump_counter(path)


def unlocked_worker(path, n):
    for _ in range(n):
        bump_counter(path)


def run(target, args, procs, method="fork"):
    ctx = multiprocessing.get_context(method)
    ps = [ctx.Process(target=target, args=args) for _ in range(procs)]
    for p in ps:
        p.start()
    for p in ps:
        p.join(120)
    return [p.exitcode for p in ps]


def test_locked_counter(space, tmp_path):
    path = str(tmp_path / "counter")
    assert run(locked_worker, (space, path, EACH), PROCS) == [0] * PROCS
    assert read_counter(path) == PROCS * EACH


def test_locked_counter_spawned(lockdir, tmp_path):
    path = str(tmp_path / "counter")
    assert run(locked_worker, (lockdir, path, 10), 3, "spawn") == [0] * 3
    assert read_counter(path) == 30


def test_the_twin_without_a_lock_loses(tmp_path):
    path = str(tmp_path / "counter")
    assert run(unlocked_worker, (path, EACH), PROCS) == [0] * PROCS
    got = read_counter(path)
    assert got < PROCS * EACH, f"no lock, yet all {got} additions kept"
