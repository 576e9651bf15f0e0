# dirlock/__init__.pyi - type hints of the dirlock package (the C module
# dirlock._dirlock, re-exported; Lock's asynchronous methods are Python's,
# dirlock/__init__.py).  The exception classes of the codes
# (dirlock.EBUSY, ...) are made at import from the library's own list, so
# they are not written out here: __getattr__ below types them all.
import os
from typing import NamedTuple, Protocol, Sequence

__version__: str
LIBRARY_VERSION: str
CODES: tuple[str, ...]

class _HasFileno(Protocol):
    def fileno(self) -> int: ...

class Error(Exception):
    code: str
    number: int
    message: str
    errno: int

def __getattr__(name: str) -> type[Error]: ...

class Owner(NamedTuple):
    name: str
    pid: int
    start_time: int
    host: str
    token: str
    acquired: float
    age: float
    same_host: bool
    owner_alive: bool | None
    stale: bool
    mode: str
    readers: int
    partner: int
    ranges: int

class RangeInfo(NamedTuple):
    lo: float
    hi: float
    mode: str
    waiting: bool
    upgrading: bool
    pid: int
    host: str
    age: float

class SpaceInfo(NamedTuple):
    backend: str
    dir: str | None
    ranges: bool
    fences: bool
    upgrade: bool
    owner_records: bool

class Lock:
    def __init__(
        self,
        space: str | os.PathLike[str],
        name: str | Sequence[str],
        *,
        timeout: float | None = None,
        nonblocking: bool = False,
        stale_age: float | None = None,
        mode: str = "exclusive",
        policy: str = "fair",
        fifo: bool = False,
        reentrant: bool = False,
        no_mkdir: bool = False,
        no_notify: bool = False,
        no_deadlock: bool = False,
        cancel_fd: int | _HasFileno | None = None,
        partner_pid: int | None = None,
        range: tuple[float, float] | str | None = None,
    ) -> None: ...
    def acquire(self) -> None: ...
    def release(self) -> None: ...
    def refresh(self) -> None: ...
    def check(self) -> bool: ...
    def fence(self) -> int: ...
    def upgrade(
        self, *, timeout: float | None = None, nonblocking: bool = False, cancel_fd: int | _HasFileno | None = None
    ) -> None: ...
    def downgrade(self) -> None: ...
    def downgrade_intent(self) -> None: ...
    def shrink(self, lo: float, hi: float) -> None: ...
    def __enter__(self) -> Lock: ...
    def __exit__(self, *exc: object) -> bool: ...
    async def acquire_async(self) -> None: ...
    async def upgrade_async(
        self, *, timeout: float | None = None, nonblocking: bool = False, cancel_fd: int | _HasFileno | None = None
    ) -> None: ...
    async def __aenter__(self) -> Lock: ...
    async def __aexit__(self, *exc: object) -> bool: ...
    @property
    def name(self) -> str | tuple[str, ...]: ...
    @property
    def names(self) -> tuple[str, ...]: ...
    @property
    def space(self) -> str: ...
    @property
    def held(self) -> bool: ...
    @property
    def token(self) -> str | None: ...
    @property
    def mode(self) -> str: ...
    @property
    def range(self) -> tuple[float, float] | None: ...

def inspect(space: str | os.PathLike[str], name: str, *, stale_age: float | None = None) -> Owner | None: ...
def list_locks(space: str | os.PathLike[str], *, stale_age: float | None = None) -> list[Owner]: ...
def break_lock(
    space: str | os.PathLike[str], name: str, *, force: bool = False, stale_age: float | None = None
) -> None: ...
def cleanup(space: str | os.PathLike[str]) -> None: ...
def ranges(space: str | os.PathLike[str], name: str) -> list[RangeInfo]: ...
def code_name(number: int) -> str | None: ...
def strerror(number: int) -> str: ...
def space_info(space: str | os.PathLike[str]) -> SpaceInfo: ...
def space_forms() -> list[tuple[str, bool]]: ...
