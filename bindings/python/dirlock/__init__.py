"""dirlock - cross-process locks for CGI programs, over the dirlock C library.

    import dirlock

    with dirlock.Lock("/var/lib/board/locks", "messages", timeout=10):
        ...  # read the log, add the message, write it

A lock space is a directory (the locks are directories in it, made if
missing), "flock:DIR" (the kernel's flock(2) on files in DIR), or a Redis
server ("redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?prefix=P]",
"redis+unix:///SOCKET[?db=N&prefix=P]").  Lock names are 1 to 64
characters of [A-Za-z0-9._-], not starting with a dot.

Lock(space, name, **options) is a lock, taken by acquire() or a `with`
block and released by release() or the end of the block; a list of names
is a set, taken all or none.  inspect(), list_locks(), break_lock(),
cleanup() and ranges() look at a space; space_info() and space_forms()
say what a space string names and which kinds this build has.

Every failure raises a subclass of dirlock.Error named after the library's
code: dirlock.EBUSY, dirlock.ETIMEDOUT, dirlock.ELOST, ... (made at import
from the library's own list, dirlock.CODES), with .code ("EBUSY"),
.message (the library's, naming the lock and the holder), .errno and
.number.

The GIL is released while the library works, so a thread that waits for
a lock does not stall the others; in the main thread a signal (Ctrl-C)
ends a wait with its handler's exception.  A lock belongs to the process
that took it: after fork the child's release raises ENOTOWNER and the
parent keeps its lock.

asyncio: `async with dirlock.Lock(...)`, `await lock.acquire_async()` and
`await lock.upgrade_async()` wait without blocking the event loop: every
waiting acquire of a loop is the library's pending acquire, run by one
reader of the loop on the thread's descriptor (loop.add_reader), with no
thread and no descriptor of its own; each turn of the loop runs them for
about a millisecond at most.  Cancelling the task gives the wait up and
leaves nothing behind.
"""
from __future__ import annotations

import weakref
from types import TracebackType

from dirlock import _dirlock
from dirlock._dirlock import *  # noqa: F401,F403 - the C module is the API
from dirlock._dirlock import CODES, LIBRARY_VERSION, Error, Owner, RangeInfo, SpaceInfo  # noqa: F401

TYPE_CHECKING = False  # as typing's, without importing typing
if TYPE_CHECKING:  # asyncio itself is imported by the first asynchronous acquire
    import asyncio


class _Driver:
    """The asynchronous acquires of one asyncio loop: one reader on the
    thread's descriptor, which runs them (_dirlock._pending_next) and
    settles the future of each one that ended.  The reader is there while
    some acquire waits."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.fd = -1
        self.waiting: dict[int, tuple[Lock, asyncio.Future[None]]] = {}

    def wait(self, lock: Lock, fd: int) -> asyncio.Future[None]:
        """A future done when lock's acquire ends."""
        fut = self.loop.create_future()
        self.waiting[id(lock)] = (lock, fut)
        if self.fd != fd:
            if self.fd >= 0:
                self.loop.remove_reader(self.fd)
            self.loop.add_reader(fd, self._ready)
            self.fd = fd
        return fut

    def forget(self, lock: Lock) -> None:
        self.waiting.pop(id(lock), None)
        if not self.waiting and self.fd >= 0:
            self.loop.remove_reader(self.fd)
            self.fd = -1

    def _ready(self) -> None:
        while (lock := _dirlock._pending_next()) is not None:
            entry = self.waiting.get(id(lock))
            if entry is not None and entry[0] is lock and not entry[1].done():
                entry[1].set_result(None)


_drivers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Driver] = weakref.WeakKeyDictionary()


def _driver(loop: asyncio.AbstractEventLoop) -> _Driver:
    d = _drivers.get(loop)
    if d is None:
        d = _drivers[loop] = _Driver(loop)
    return d


class Lock(_dirlock.Lock):
    __doc__ = _dirlock.Lock.__doc__ + """

In asyncio code, `async with lock:` and `await lock.acquire_async()` /
`await lock.upgrade_async()` wait without blocking the event loop; a Lock
object is used by one task at a time."""
    __slots__ = ()

    async def _drive(self, fd: int, undo: str) -> None:
        """Wait until the acquire or upgrade under way ends (a step raises
        the library's error when it ended without the lock): the loop's
        driver runs it.  When the wait itself is ended -- the task
        cancelled, or anything else raised into it -- the acquire is
        canceled and finished, a lock it got meanwhile let go with `undo`,
        and the exception goes on."""
        import asyncio  # on first use: `import dirlock` stays light (issue 40)

        driver = _driver(asyncio.get_running_loop())
        try:
            while not self._pending_step():
                try:
                    await driver.wait(self, fd)
                except BaseException:
                    self._pending_cancel()
                    got = False
                    try:
                        # Its clean-up may wait too (a lock server's
                        # answer): still in the loop.
                        while not (got := self._pending_step()):
                            await driver.wait(self, fd)
                    except BaseException:  # dirlock.ECANCELED, or cancelled again
                        pass
                    self._pending_free()  # anything still under way, finished here
                    if got:
                        getattr(self, undo)()
                    raise
        finally:
            driver.forget(self)

    async def acquire_async(self) -> None:
        """Take the lock (every name of a set, or none) as acquire() does,
        with the same options, without blocking the event loop.  Raises
        dirlock.EBUSY, dirlock.ETIMEDOUT, ...; cancelling the task (or
        asyncio.timeout) gives the wait up, leaving nothing behind."""
        fd = self._acquire_start()
        if fd >= 0:
            await self._drive(fd, "release")

    async def upgrade_async(self, *, timeout: float | None = None, nonblocking: bool = False,
                            cancel_fd: object = None) -> None:
        """Intent -> exclusive as upgrade() does, without blocking the event
        loop.  A cancelled or failed upgrade keeps the intent lock."""
        fd = self._upgrade_start(timeout=timeout, nonblocking=nonblocking, cancel_fd=cancel_fd)
        await self._drive(fd, "downgrade_intent")

    async def __aenter__(self) -> Lock:
        await self.acquire_async()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool:
        return self.__exit__(exc_type, exc, tb)


# The library's version, as the C module was built with it.
__version__ = LIBRARY_VERSION
__all__ = ["Lock", "Error", "Owner", "RangeInfo", "SpaceInfo", "inspect", "list_locks", "break_lock", "cleanup",
           "ranges", "space_info", "space_forms", "code_name", "strerror", "CODES", "LIBRARY_VERSION"] + [c for c in CODES if c != "OK"]
