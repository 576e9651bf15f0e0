"""test_signals.py - a wait in the main thread ends on a signal whose
handler raises (Ctrl-C: KeyboardInterrupt; an alarm), and goes on when
the handler returns."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import dirlock

WAITER = textwrap.dedent("""
    import signal, sys, time, dirlock
    seen = []
    if sys.argv[2] == "usr1":
        signal.signal(signal.SIGUSR1, lambda *a: seen.append("usr1"))
    if sys.argv[2] == "alarm":
        def late(*a):
            raise TimeoutError("alarm")
        signal.signal(signal.SIGALRM, late)
        signal.alarm(1)
    options = {}
    if sys.argv[2] == "usr1+cancel":
        signal.signal(signal.SIGUSR1, lambda *a: seen.append("usr1"))
        options["cancel_fd"] = sys.stdin
    lock = dirlock.Lock(sys.argv[1], "x", **options)
    print("waiting", flush=True)
    t0 = time.monotonic()
    try:
        lock.acquire()
        print("acquired, handler ran:", seen, flush=True)
    except BaseException as e:
        print(type(e).__name__, round(time.monotonic() - t0), *seen, flush=True)
""")


@pytest.fixture
def waiter(lockdir):
    procs = []

    def start(how):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        # SIGINT at its default in the child, so that Python installs its
        # KeyboardInterrupt handler: a suite run from a background job
        # (no job control) would pass it on ignored.
        p = subprocess.Popen([sys.executable, "-c", WAITER, lockdir, how], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        procs.append(p)
        assert p.stdout.readline() == "waiting\n"
        time.sleep(0.3)  # inside the wait
        return p

    yield start
    for p in procs:
        p.kill()
        p.wait()


def test_ctrl_c_ends_a_wait(lockdir, waiter):
    with dirlock.Lock(lockdir, "x"):
        p = waiter("int")
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=10)
    assert out == "KeyboardInterrupt 0\n"


def test_an_alarm_ends_a_wait(lockdir, waiter):
    with dirlock.Lock(lockdir, "x"):
        p = waiter("alarm")
        out, _ = p.communicate(timeout=10)
    assert out == "TimeoutError 1\n"


def test_a_handler_that_returns_lets_the_wait_go_on(lockdir, waiter):
    with dirlock.Lock(lockdir, "x"):
        p = waiter("usr1")
        p.send_signal(signal.SIGUSR1)
        time.sleep(0.3)
        assert p.poll() is None, "still waiting"
    out, _ = p.communicate(timeout=10)
    assert out == "acquired, handler ran: ['usr1']\n"


def test_signals_and_a_cancel_descriptor_together(lockdir, waiter):
    # The wait watches both (an epoll set): the signal's handler runs and
    # the wait goes on; then the caller's descriptor ends it.
    with dirlock.Lock(lockdir, "x"):
        p = waiter("usr1+cancel")
        p.send_signal(signal.SIGUSR1)
        time.sleep(0.3)
        assert p.poll() is None, "still waiting after the handler ran"
        p.stdin.write("x")
        p.stdin.flush()
        out, _ = p.communicate(timeout=10)
    name, _, handled = out.split()
    assert (name, handled) == ("ECANCELED", "usr1"), out
