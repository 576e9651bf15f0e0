"""conftest.py - what the package's tests share: the lock spaces to run
against (a directory under pytest's tmp_path, and a private redis-server
on a unix socket, started once for the session, when one can be), and a
counter file worked on by several processes."""
import os
import re
import shutil
import subprocess
import time

import pytest

import dirlock


def _redis_unavailable():
    if shutil.which("redis-server") is None:
        return "redis-server is not installed"
    try:
        dirlock.list_locks("redis+unix:///nonexistent")
    except dirlock.Error as e:
        if "no Redis support" in e.message:
            return "the library was built without Redis support"
    return None


@pytest.fixture(scope="session")
def redis_space(tmp_path_factory):
    why = _redis_unavailable()
    if why:
        pytest.skip(f"Redis half: {why}")
    d = tmp_path_factory.mktemp("redis")
    sock = d / "redis.sock"
    setpriv = ["setpriv", "--pdeathsig", "KILL"] if shutil.which("setpriv") else []
    log = open(d / "redis.log", "w")
    server = subprocess.Popen(
        setpriv + ["redis-server", "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700",
                   "--save", "", "--appendonly", "no", "--dir", str(d), "--daemonize", "no"],
        stdout=log, stderr=subprocess.STDOUT)
    space = f"redis+unix://{sock}"
    try:
        for _ in range(500):
            if sock.exists():
                try:
                    dirlock.list_locks(space)
                    break
                except dirlock.Error:
                    pass
            time.sleep(0.01)
        else:
            pytest.skip(f"Redis half: redis-server did not start ({d / 'redis.log'})")
        yield space
    finally:
        server.kill()
        server.wait()
        log.close()


@pytest.fixture(params=["directory", "redis"])
def space(request, tmp_path):
    """A fresh lock space: a directory, or a prefix of its own on the
    private Redis server."""
    if request.param == "directory":
        d = tmp_path / "locks"
        d.mkdir()
        return str(d)
    base = request.getfixturevalue("redis_space")
    return f"{base}?prefix={re.sub(r'[^A-Za-z0-9._-]', '-', request.node.name)[:60]}"


@pytest.fixture
def lockdir(tmp_path):
    d = tmp_path / "locks"
    d.mkdir(exist_ok=True)
    return str(d)


def bump_counter(path):
    """One read-modify-write of a counter file, with a pause between the
    read and the write where another process can slip in."""
    n = read_counter(path)
    time.sleep(0.001)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{n + 1}\n")
    os.rename(tmp, path)


def read_counter(path):
    try:
        with open(path) as f:
            return int(f.read() or 0)
    except FileNotFoundError:
        return 0
