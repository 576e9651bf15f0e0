"""peer_sqlite.py - worker of the network-filesystem benchmark
(bench/netfs-run) for SQLite: the counter is a row of DIR/counter.db,
bumped in one transaction (BEGIN IMMEDIATE, read, write, COMMIT), the
lock being SQLite's own (fcntl record locks on the database file, its
rollback journal: WAL is for one host), waited for by its busy handler.

    python3 peer_sqlite.py DIR START SECONDS OUT
    python3 peer_sqlite.py DIR hold           (take, print "held", keep)
    python3 peer_sqlite.py DIR wait TIMEOUT   (take once: seconds, or "timeout")

OUT gets one line per acquisition: "WAIT_US IN_TIME", as
bench/peer_worker.c.  The benchmark reads the counter from the database."""
import os
import sqlite3
import sys
import time


def connect(d, timeout):
    """The database, its table made by whichever worker comes first (the
    others wait for it: "database is locked" while it does)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            db = sqlite3.connect(os.path.join(d, "counter.db"), timeout=timeout, isolation_level=None)
            db.execute("PRAGMA journal_mode=DELETE")
            db.execute("CREATE TABLE IF NOT EXISTS c (id INTEGER PRIMARY KEY, v INTEGER)")
            return db
        except sqlite3.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main():
    d, start = sys.argv[1:3]
    if start == "hold":
        db = connect(d, 3600)
        db.execute("BEGIN IMMEDIATE")
        print("held", flush=True)
        while True:
            time.sleep(3600)
    if start == "wait":
        asked = time.monotonic()
        try:
            db = connect(d, float(sys.argv[3]))
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            print("timeout")
            sys.exit(1)
        print("%.3f" % (time.monotonic() - asked))
        db.execute("COMMIT")
        return
    seconds, out_path = sys.argv[3:5]
    start = float(start)
    end = start + float(seconds)
    db = connect(d, 60)
    lines = []
    while time.time() < start:
        time.sleep(min(0.01, max(0.0, start - time.time())))
    try:
        while time.time() < end:
            asked = time.monotonic()
            db.execute("BEGIN IMMEDIATE")
            got = time.monotonic()
            row = db.execute("SELECT v FROM c WHERE id = 1").fetchone()
            v = (row[0] if row else 0) + 1
            db.execute("INSERT OR REPLACE INTO c (id, v) VALUES (1, ?)", (v,))
            db.execute("COMMIT")
            lines.append("%.0f %d\n" % ((got - asked) * 1e6, time.time() <= end))
    finally:  # what was committed is counted, also when SQLite fails
        with open(out_path, "w") as f:
            f.writelines(lines)


main()
