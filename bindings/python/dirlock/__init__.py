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
"""
from dirlock._dirlock import *  # noqa: F401,F403 - the C module is the API
from dirlock._dirlock import CODES, LIBRARY_VERSION, Error, Lock, Owner, RangeInfo, SpaceInfo  # noqa: F401

__version__ = "1.0.0"
__all__ = ["Lock", "Error", "Owner", "RangeInfo", "SpaceInfo", "inspect", "list_locks", "break_lock", "cleanup",
           "ranges", "space_info", "space_forms", "code_name", "strerror", "CODES", "LIBRARY_VERSION"] + [c for c in CODES if c != "OK"]
