"""test_errors.py - one exception class per code the library names, under
dirlock.Error, carrying the library's code, message and errno; wrong
arguments are errors too."""
import errno
import os

import pytest

import dirlock


def test_a_class_per_code():
    assert dirlock.CODES[0] == "OK"
    assert len(dirlock.CODES) >= 18
    for number, name in enumerate(dirlock.CODES):
        assert dirlock.code_name(number) == name
        if name == "OK":
            assert not hasattr(dirlock, "OK")
            continue
        cls = getattr(dirlock, name)
        assert issubclass(cls, dirlock.Error)
        assert cls.__name__ == name and cls.__module__ == "dirlock"
        assert cls.__doc__ == dirlock.strerror(number) != "unknown dirlock error"
    assert dirlock.code_name(len(dirlock.CODES)) is None
    assert not issubclass(dirlock.EBUSY, dirlock.ETIMEDOUT)


def test_the_error_carries_the_library_s_code_and_message(lockdir):
    with dirlock.Lock(lockdir, "a"):
        with pytest.raises(dirlock.EBUSY) as info:
            dirlock.Lock(lockdir, "a", nonblocking=True).acquire()
    e = info.value
    assert isinstance(e, dirlock.Error)
    assert e.code == "EBUSY"
    assert e.number == dirlock.CODES.index("EBUSY")
    assert e.errno == 0
    assert "'a'" in e.message and str(os.getpid()) in e.message
    assert str(e) == e.message


def test_names(lockdir):
    for bad in ["", ".x", "../x", "a/b", "a b", "x" * 65, "ä"]:
        with pytest.raises(dirlock.ENAME):
            dirlock.Lock(lockdir, bad).acquire()


def test_a_nul_is_no_shorter_name(lockdir):
    # C would stop at the NUL: another name than the one given.
    for name in ["a\0b", ["x", "a\0"]]:
        with pytest.raises(dirlock.ENAME):
            dirlock.Lock(lockdir, name)
    assert dirlock.inspect(lockdir, "a") is None and dirlock.inspect(lockdir, "x") is None
    with pytest.raises(ValueError):
        dirlock.Lock(lockdir + "\0/elsewhere", "a")
    with pytest.raises(ValueError):
        dirlock.inspect(lockdir, "a\0b")


@pytest.mark.parametrize("options", [
    {"mode": "exclusively"},
    {"policy": "unfair"},
    {"stale_age": 0.05},
    {"timeout": "soon"},
    {"timeout": float("nan")},
    {"partner_pid": 2**22 + 1},
    {"partner_pid": 2**32 + 1},  # truncated to an int, pid 1
    {"partner_pid": -1},
    {"range": (2, 1)},
    {"range": (1,)},
    {"nonblocking": True, "timeout": 5},
])
def test_invalid_options(lockdir, options):
    with pytest.raises(dirlock.EINVAL):
        dirlock.Lock(lockdir, "o", **options).acquire()
    assert dirlock.inspect(lockdir, "o") is None


def test_wrong_types(lockdir):
    with pytest.raises(TypeError):
        dirlock.Lock(lockdir, "o", bogus=1)
    with pytest.raises(TypeError):
        dirlock.Lock(lockdir, 42)
    with pytest.raises(TypeError):
        dirlock.Lock(lockdir, "o", 5)  # options are keywords only
    with pytest.raises(dirlock.EINVAL):
        dirlock.Lock(lockdir, "o", cancel_fd="x")


def test_a_closed_cancel_descriptor(lockdir):
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    with pytest.raises(dirlock.EINVAL):
        dirlock.Lock(lockdir, "o", cancel_fd=r).acquire()


def test_eio_keeps_errno(lockdir):
    with pytest.raises(dirlock.EIO) as info:
        dirlock.Lock(os.path.join(lockdir, "absent"), "o", no_mkdir=True).acquire()
    assert info.value.errno == errno.ENOENT
    assert os.path.join(lockdir, "absent") in info.value.message
