#!/usr/bin/python3
"""counter.py - a CGI hit counter in Python, with the dirlock package.

Each visit reads the count, adds one and writes it back (a temporary
file renamed over the count): a read-modify-write, which the lock makes
one visit at a time.

COUNTER_DIR: where the count and its lock live (default
/var/lib/counter), writable by the web server's user.
COUNTER_DELAY_MS: a pause inside the read-modify-write (default none),
which the tests use to make overlaps certain.
"""
import os
import sys
import time

import dirlock

DIR = os.environ.get("COUNTER_DIR", "/var/lib/counter")

try:
    with dirlock.Lock(os.path.join(DIR, "locks"), "counter", timeout=10) as lock:
        try:
            with open(os.path.join(DIR, "count")) as f:
                n = int(f.read() or 0)
        except FileNotFoundError:
            n = 0
        time.sleep(int(os.environ.get("COUNTER_DELAY_MS", "0")) / 1000)
        n += 1
        tmp = os.path.join(DIR, "count.tmp")
        with open(tmp, "w") as f:
            f.write(f"{n}\n")
        lock.check()  # raises dirlock.ELOST if the lock was broken as stale meanwhile
        os.replace(tmp, os.path.join(DIR, "count"))
except dirlock.ETIMEDOUT:
    sys.stdout.write("Status: 503 Service Unavailable\r\nRetry-After: 1\r\n"
                     "Content-Type: text/plain\r\n\r\nBusy, please try again.\n")
    sys.exit()

sys.stdout.write(f"Content-Type: text/plain\r\n\r\nvisit {n}\n")
