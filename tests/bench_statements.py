"""What one reading of the Statements screen costs with 10,000 digests in the server's
performance_schema (in-process CPU).

    python3 -m tests.bench_statements                  # a real MariaDB, 10,000 statement shapes
    python3 -m tests.bench_statements --digests 5000

A throw-away MariaDB with performance_schema=ON and performance_schema_digests_size raised
gets 10,000 distinct statement shapes (a SELECT through a different table alias each), so its
events_statements_summary_by_digest is full. Between two readings a few hundred of them run
again (rates to work out) and two new shapes appear (keys to work out). One reading = the
collector's statement (``collect``: the server sorts the table and sends its heaviest 300 rows;
proxytop's own are left out by their normalised text), then the screen's rows from the last two
readings (``statement_rows``: rates) and their sort (``arrange``). The figure is this process's
CPU per reading, the target 300 ms; the server's own time (the sort) is printed beside it.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import List, Optional, Sequence, Tuple

from proxytop.collectors.innodb import MySQLSource
from proxytop.collectors.innodb_fleet import Fleet
from proxytop.collectors.mysql_statements import MySQLStatements
from proxytop.config.mysql_options import Credentials
from proxytop.core import Snapshot
from proxytop.polling.connection import Endpoint
from proxytop.screens.statements import StatementsScreen
from tests.bench_innodb import line
from tests.benchmark import machine
from tests.mariadb import MariaDBServer, MariaDBUnavailable

TARGET_MS = 300.0
DIGESTS = 10000
AGAIN = 300  # shapes run again between two readings


class View:
    """The DataView calls the screen makes, over the last two readings."""

    def __init__(self, name: str):
        self.name = name
        self.snapshots: List[Snapshot] = []

    def add(self, data, wall: float) -> None:
        self.snapshots = self.snapshots[-1:] + [Snapshot(self.name, data, time.monotonic(), 0.0, wall_time=wall)]

    def pair(self, name):
        return (self.snapshots[-2] if len(self.snapshots) > 1 else None), self.snapshots[-1]

    def latest(self, name):
        return self.snapshots[-1] if self.snapshots else None

    def state(self, source):
        return None

    def error(self, name):
        return None

    def interval_in_force(self, name):
        return 10.0


def shape(n: int) -> str:
    """The n-th statement shape: a table alias of its own makes a digest of its own."""
    return f"SELECT a{n}.id, a{n}.v FROM bench.t AS a{n} WHERE a{n}.id = {n % 7}"


def run(cursor, shapes) -> None:
    for n in shapes:
        cursor.execute(shape(n))
        cursor.fetchall()


def live(digests: int, rounds: int) -> Optional[Tuple[float, float, float, int, int]]:
    try:
        server = MariaDBServer({"performance_schema": "ON", "performance_schema_digests_size": str(digests + 2000),
                                "general_log": "OFF"}, name="bench-statements").start()
    except MariaDBUnavailable as exc:
        print(f"  no MariaDB here ({exc})")
        return None
    try:
        server.query("CREATE DATABASE bench")
        server.query("CREATE TABLE bench.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
        server.query("INSERT INTO bench.t VALUES " + ", ".join(f"({i}, {i})" for i in range(10)))
        started = time.monotonic()
        conn = server.connect(via_socket=True)
        cursor = conn.cursor()
        run(cursor, range(digests))
        held = server.query("SELECT COUNT(*) FROM performance_schema.events_statements_summary_by_digest")[0][0]
        print(f"  {held} digests in performance_schema after {time.monotonic() - started:.1f} s")
        endpoint = Endpoint(host=server.host, port=server.port, user=server.user, password=server.password)
        fleet = Fleet(Credentials(user=endpoint.user), endpoint.timeout, discover=False)
        fleet.add_explicit(endpoint)
        screen = StatementsScreen(fleet=fleet)
        session = MySQLSource(endpoint).connect()
        collector = MySQLStatements(endpoint)
        view = View(collector.name)
        state = screen.initial_state()
        view.add(collector.collect(session), time.time())  # the probe and first keys: not measured
        collect_s = rows_s = 0.0
        server_s = 0.0
        shown = 0
        fresh = digests
        for turn in range(rounds):
            run(cursor, [(turn * AGAIN + k) % digests for k in range(AGAIN)] + [fresh, fresh + 1])
            fresh += 2
            begun, wall = time.process_time(), time.monotonic()
            reading = collector.collect(session)
            collected = time.process_time()
            server_s += time.monotonic() - wall - (collected - begun)
            view.add(reading, time.time())
            shown = len(screen.arrange(screen.rows(view), state))
            finished = time.process_time()
            collect_s += collected - begun
            rows_s += finished - collected
        conn.close()
        return collect_s / rounds * 1000, rows_s / rounds * 1000, server_s / rounds * 1000, shown, held
    finally:
        server.stop()


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tests.bench_statements", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="readings measured")
    parser.add_argument("--digests", type=int, default=DIGESTS, help="distinct statement shapes run")
    args = parser.parse_args(argv)
    os.environ.setdefault("HOME", "/nonexistent")
    print(f"Statements at {args.digests} digests, CPU per reading; {machine()}")
    figures = live(args.digests, args.rounds)
    if figures is None:
        return 1
    collect_ms, rows_ms, server_ms, shown, held = figures
    total = collect_ms + rows_ms
    line("collect + rows", f"{total:.1f} ms", f"<= {TARGET_MS:g} ms", total <= TARGET_MS,
         f"({collect_ms:.1f} + {rows_ms:.1f}; {held} digests, {shown} rows shown)")
    line("the server's sort and send (wall, not CPU here)", f"{server_ms:.1f} ms")
    return 0 if total <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
