"""peer_filelock.py - worker of the side-by-side benchmark (bench/peers-run)
for py-filelock (Debian python3-filelock), used as its documentation shows:
one lock object per process, acquire() with its defaults (wait forever,
poll every 50 ms), release().

    python3 peer_filelock.py soft|flock DIR START SECONDS OUT
    python3 peer_filelock.py soft|flock DIR hold        (take, print "held", keep)
    python3 peer_filelock.py soft|flock DIR wait TIMEOUT (take once: seconds, or "timeout")

soft: SoftFileLock (creates DIR/counter.lock with O_EXCL, polls);
flock: FileLock (flock(2) with LOCK_NB on DIR/counter.lock, polls).
Each acquisition: lock, read DIR/counter, add one, write it back, unlock.
OUT gets one line per acquisition: "WAIT_US IN_TIME" (the time acquire()
took; 1 when the release came before the end), as bench/peer_worker.c."""
import os
import sys
import time

import filelock


def main():
    kind, d = sys.argv[1:3]
    cls = filelock.SoftFileLock if kind == "soft" else filelock.FileLock
    lock = cls(os.path.join(d, "counter.lock"))
    if sys.argv[3] == "hold":
        lock.acquire()
        print("held", flush=True)
        while True:
            time.sleep(3600)
    if sys.argv[3] == "wait":
        asked = time.monotonic()
        try:
            lock.acquire(timeout=float(sys.argv[4]))
        except filelock.Timeout:
            print("timeout")
            sys.exit(1)
        print("%.3f" % (time.monotonic() - asked))
        lock.release()
        return
    start, seconds, out_path = sys.argv[3:6]
    start = float(start)
    end = start + float(seconds)
    counter = os.path.join(d, "counter")
    lines = []
    while time.time() < start:
        time.sleep(min(0.01, max(0.0, start - time.time())))
    while time.time() < end:
        asked = time.monotonic()
        lock.acquire()
        got = time.monotonic()
        try:
            with open(counter) as f:
                v = int(f.read() or 0)
        except FileNotFoundError:
            v = 0
        with open(counter, "w") as f:
            f.write("%d\n" % (v + 1))
        lock.release()
        lines.append("%.0f %d\n" % ((got - asked) * 1e6, time.time() <= end))
    with open(out_path, "w") as f:
        f.writelines(lines)


main()
