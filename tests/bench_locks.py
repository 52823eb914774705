"""What one reading of the Locks screen costs with 500 sessions waiting for one row lock
(in-process CPU).

    python3 -m tests.bench_locks                 # a real MariaDB, 500 waiters
    python3 -m tests.bench_locks --waiters 200   # fewer

A throw-away MariaDB (max_connections raised, innodb_lock_wait_timeout an hour) gets one
transaction holding a row lock and 500 connections of this process each running an UPDATE of
that row, so the server reports 500 (waiter, blocker) pairs. One reading = the collector's two
statements (``collect``: the waits, then the processlist rows of the sessions they name), then
the screen's rows (``lock_rows``: the chains) and their order (``arrange_chains``). The figure is
this process's CPU per reading, the target 50 ms; the server's own CPU is not counted.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional, Sequence, Tuple

from proxytop.collectors.innodb import MySQLSource
from proxytop.collectors.innodb_fleet import Fleet
from proxytop.collectors import mysql_locks
from proxytop.collectors.mysql_locks import LockWaits
from proxytop.config.mysql_options import Credentials
from proxytop.core import Snapshot
from proxytop.polling.connection import Endpoint
from proxytop.screens.locks import LocksScreen
from tests.bench_innodb import line
from tests.benchmark import machine
from tests.mariadb import MariaDBServer, MariaDBUnavailable

TARGET_MS = 50.0
WAITERS = 500


class View:
    """The DataView calls the screen makes: the latest reading."""

    def __init__(self, name: str):
        self.name = name
        self.snapshot: Optional[Snapshot] = None

    def add(self, data) -> None:
        self.snapshot = Snapshot(self.name, data, time.monotonic(), 0.0)

    def latest(self, name):
        return self.snapshot if name == self.name else None

    def pair(self, name):
        return None, self.latest(name)

    def state(self, source):
        return None

    def error(self, name):
        return None


def wait_on(server: MariaDBServer, started: threading.Barrier) -> None:
    """One waiter: an UPDATE of the locked row, until the lock is released or the server stops."""
    try:
        conn = server.connect(via_socket=True)
        started.wait()
        with conn.cursor() as cursor:
            cursor.execute("UPDATE bench.t SET v = v + 1 WHERE id = 1")
    except Exception:  # the server stopped at the end of the run
        pass


def live(waiters: int, rounds: int) -> Optional[Tuple[float, float, int, int]]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < waiters + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, waiters + 1000), hard))
    try:
        server = MariaDBServer({"max_connections": str(waiters + 100), "innodb_lock_wait_timeout": "3600",
                                "general_log": "OFF"}, name="bench-locks").start()
    except MariaDBUnavailable as exc:
        print(f"  no MariaDB here ({exc})")
        return None
    holder = None
    try:
        server.query("CREATE DATABASE bench")
        server.query("CREATE TABLE bench.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
        server.query("INSERT INTO bench.t VALUES (1, 0), (2, 0)")
        holder = server.connect(via_socket=True)
        with holder.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute("UPDATE bench.t SET v = 1 WHERE id = 1")
        started = time.monotonic()
        barrier = threading.Barrier(waiters + 1)
        for _ in range(waiters):
            threading.Thread(target=wait_on, args=(server, barrier), daemon=True).start()
        barrier.wait()
        count = last = 0
        while time.monotonic() - started < 300:  # until every waiter waits (the count stops growing)
            count = server.query("SELECT COUNT(*) FROM information_schema.INNODB_LOCK_WAITS")[0][0]
            waiting = server.query("SELECT COUNT(*) FROM information_schema.INNODB_TRX "
                                   "WHERE trx_state = 'LOCK WAIT'")[0][0]
            if waiting >= waiters and count == last:
                break
            last = count
            time.sleep(1.0)
        print(f"  {waiting} transactions waiting, {count} (waiter, blocker) pairs in INNODB_LOCK_WAITS "
              f"after {time.monotonic() - started:.1f} s")
        endpoint = Endpoint(host=server.host, port=server.port, user=server.user, password=server.password)
        fleet = Fleet(Credentials(user=endpoint.user), endpoint.timeout, discover=False)
        fleet.add_explicit(endpoint)
        screen = LocksScreen(fleet=fleet)
        session = MySQLSource(endpoint).connect()
        collector = LockWaits(endpoint)
        view = View(collector.name)
        state = screen.initial_state()
        view.add(collector.collect(session))  # the first: connection set up, nothing measured
        collect_s = rows_s = 0.0
        shown = 0
        walls = []
        for _ in range(rounds):
            begun = time.process_time()
            wall = time.monotonic()
            reading = collector.collect(session)
            collected = time.process_time()
            walls.append(time.monotonic() - wall)
            if reading.error or reading.denied:
                print(f"  the reading failed: {reading.error or reading.denied}")
            view.add(reading)
            shown = len(screen.arrange(screen.rows(view), state))
            finished = time.process_time()
            collect_s += collected - begun
            rows_s += finished - collected
        print(f"  {len(reading.waits.rows)} pairs read, {len(reading.sessions.rows)} sessions; each reading took "
              f"{sorted(walls)[len(walls) // 2] * 1000:.0f} ms of wall time (median; the server's share included)")
        return collect_s / rounds * 1000, rows_s / rounds * 1000, shown, count
    finally:
        if holder is not None:
            try:
                holder.close()
            except Exception:
                pass
        server.stop()


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tests.bench_locks", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="readings measured")
    parser.add_argument("--waiters", type=int, default=WAITERS, help="sessions waiting for the row lock")
    parser.add_argument("--profile", action="store_true", help="print where the time goes (cProfile)")
    parser.add_argument("--time-limit", type=int, metavar="SECONDS",
                        help="the server's time limit of each statement instead of the collector's "
                             f"{mysql_locks.STATEMENT_SECONDS} s (to see what a reading would cost past it)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HOME", "/nonexistent")
    if args.time_limit:
        mysql_locks.STATEMENT_SECONDS = args.time_limit  # read by timed() at each statement
    print(f"Locks at {args.waiters} waiting sessions, CPU per reading; {machine()}")
    if args.profile:
        import cProfile
        import pstats
        profile = cProfile.Profile()
        figures = profile.runcall(live, args.waiters, args.rounds)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
    else:
        figures = live(args.waiters, args.rounds)
    if figures is None:
        return 1
    collect_ms, rows_ms, shown, waits = figures
    total = collect_ms + rows_ms
    line("collect + rows", f"{total:.1f} ms", f"<= {TARGET_MS:g} ms", total <= TARGET_MS,
         f"({collect_ms:.1f} + {rows_ms:.1f}; {waits} waits, {shown} rows shown)")
    return 0 if total <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
