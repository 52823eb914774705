"""Benchmark of the backend-health work: ``python -m tests.bench_health``.

Prints each figure beside its target (and why when one is missed):
- ConnPool with the health columns (Lag, RO, Monitor, In state): CPU per refresh — rows,
  arrange, the table lines of a 160x50 terminal — at 12 and 500 backends, each with a full
  monitor history (20 pings, 10 connects, 20 read_only and 61 lag checks per server);
- the header's backend alarm at 500 backends: per frame drawn, and per new pool reading;
- the Errors screen at 1,000 error rows, 100 of which changed since the reading before (rows,
  arrange, notes, table lines);
- the monitor logs against the ProxySQL double: admin queries per 2 s while ConnPool polls
  every 0.5 s, and the CPU of one incremental reading at 500 servers.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from proxytop.core import Snapshot, Table
from proxytop.collectors.errors import BackendErrors, FrontendUsers
from proxytop.collectors.monitor import KEEP, MonitorLogs, MonitorReadings, ServerMonitor
from proxytop.collectors.proxysql import ConnectionPool, RuntimeServers
from proxytop.screens.base import DataView
from proxytop.ui import view
from proxytop.screens.table import TableState
from tests.benchmark import machine, ms

TARGET_POOL_MS = {12: 3.0, 500: 15.0}
TARGET_ALARM_MS = 0.1  # per frame at 500 backends (frames are drawn up to ten times a second)
TARGET_ALARM_READING_MS = 5.0  # once per pool reading (every 1-2 s)
TARGET_ERRORS_MS = 5.0
TARGET_MONITOR_QUERIES_PER_2S = 1.0
ROUNDS = 30

POOL_COLUMNS = ("hostgroup", "srv_host", "srv_port", "status", "ConnUsed", "ConnFree", "ConnOK", "ConnERR",
                "MaxConnUsed", "Queries", "Queries_GTID_sync", "Bytes_data_sent", "Bytes_data_recv", "Latency_us")
SERVER_COLUMNS = ("hostgroup_id", "hostname", "port", "gtid_port", "status", "weight", "compression",
                  "max_connections", "max_replication_lag", "use_ssl", "max_latency_ms", "comment")


class SnapshotEngine:
    """What DataView asks of an engine, over fixed snapshots (no I/O, no threads)."""

    def __init__(self, pairs: Dict[str, Tuple[Optional[Snapshot], Snapshot]], now: float):
        self.pairs = pairs
        self._now = now

    def latest(self, name):
        pair = self.pairs.get(name)
        return pair[1] if pair else None

    def last_two(self, name):
        return self.pairs.get(name, (None, None))

    def history(self, name):
        pair = self.pairs.get(name)
        return tuple(s for s in pair if s is not None) if pair else ()

    def readings(self, name, after, until):
        return tuple(s for s in self.history(name) if (after is None or s.taken_at > after) and s.taken_at <= until)

    def not_recorded(self, name):
        return False

    def error(self, name):
        return None

    def state(self, source):
        return None

    def source(self, name):
        return None

    def now(self):
        return self._now


def pool_snapshots(backends: int, at: float) -> Dict[str, Tuple[Optional[Snapshot], Snapshot]]:
    def pool(step: int) -> Table:
        rows = []
        for n in range(backends):
            status = "SHUNNED_REPLICATION_LAG" if n % 50 == 7 else "ONLINE"
            rows.append(tuple(str(v) for v in (10 + n // 100, f"10.0.{n // 250}.{n % 250}", 3306, status, 5, 3,
                                               100 + step, step % 3, 9, 100000 + 500 * step, 0,
                                               10**6 + 9000 * step, 10**7 + 90000 * step, 350)))
        return Table(POOL_COLUMNS, tuple(rows))

    servers = Table(SERVER_COLUMNS, tuple(
        tuple(str(v) for v in (10 + n // 100, f"10.0.{n // 250}.{n % 250}", 3306, 0, "ONLINE", 100, 0, 200,
                               5 if n % 100 else 0, 0, 0, f"db{n}")) for n in range(backends)))
    start_us = 1_800_000_000_000_000
    monitors = {}
    for n in range(backends):
        def entries(kind, value=None, error_every=0):
            count = KEEP[kind]
            return tuple((start_us + i * 2_000_000, 300 if not (error_every and i % error_every == 0) else 0,
                          "timeout" if error_every and i % error_every == 0 else None,
                          None if value is None else str(value if not callable(value) else value(i)))
                         for i in range(count))
        monitors[f"10.0.{n // 250}.{n % 250}:3306"] = ServerMonitor(
            ping=entries("ping", error_every=7 if n % 40 == 3 else 0), connect=entries("connect"),
            read_only=entries("read_only", 1), lag=entries("lag", lambda i: i % 13))
    readings = MonitorReadings(servers=monitors, server_now_us=start_us + 130_000_000)
    return {
        ConnectionPool.name: (Snapshot(ConnectionPool.name, pool(0), at - 1.0, 0.01, wall_time=1.8e9 - 1),
                              Snapshot(ConnectionPool.name, pool(1), at, 0.01, wall_time=1.8e9)),
        RuntimeServers.name: (None, Snapshot(RuntimeServers.name, servers, at - 3, 0.01)),
        MonitorLogs.name: (None, Snapshot(MonitorLogs.name, readings, at - 0.5, 0.01, wall_time=1.8e9 - 0.5)),
    }


def refresh(screen, data_view, width=160, height=50) -> int:
    """What the controller does when a reading arrives: rows, arrange, the visible lines."""
    from proxytop.screens import table

    rows = screen.rows(data_view)
    arranged = screen.arrange(rows, screen.initial_state())
    fitted = table.fit_columns(screen.columns, width)
    for row in arranged[:height]:
        table.row_cells(row, fitted)
    screen.notes(data_view)
    return len(rows)


def timed(fn, rounds=ROUNDS, before=None) -> float:
    """The median of ``rounds`` CPU times of fn(), in ms (``before()`` runs untimed first)."""
    times = []
    for _ in range(rounds):
        if before is not None:
            before()
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    times.sort()
    return ms(times[len(times) // 2])


def bench_pool(backends: int) -> Tuple[float, float]:
    from proxytop.screens import connpool
    from proxytop.screens.connpool import ConnPoolScreen

    screen = ConnPoolScreen()
    data_view = DataView(SnapshotEngine(pool_snapshots(backends, 1000.0), 1000.2))
    assert refresh(screen, data_view) == backends
    new_reading = timed(lambda: screen._alarm_text(*(data_view.latest(n) for n in
                                                     (ConnectionPool.name, RuntimeServers.name, MonitorLogs.name))))
    screen.alarm(data_view)
    current = data_view.latest(ConnectionPool.name)

    def new_pool_reading():  # what a refresh costs when a reading arrives: the current one is new
        connpool._recent[:] = [r for r in connpool._recent if r[0] is not current]
        screen.status_log = type(screen.status_log)()
        screen.folded_until.clear()
        screen.folded_statuses.clear()

    class PoolOnly(ConnPoolScreen):  # the same screen without the health columns: what they add
        def rows(self, view):
            previous, latest = view.pair(ConnectionPool.name)
            return connpool.pool_rows(previous, latest, view.latest(RuntimeServers.name))

    monitor = data_view.latest(MonitorLogs.name)

    def new_monitor_reading():
        connpool._recent[:] = [r for r in connpool._recent if r[0] is not monitor]

    summary_ms = timed(lambda: connpool.monitor_summary(monitor), before=new_monitor_reading)
    bare, bare_view = PoolOnly(), DataView(data_view._engine)
    return (timed(lambda: refresh(screen, data_view), before=new_pool_reading), timed(lambda: screen.alarm(data_view)),
            new_reading, timed(lambda: refresh(bare, bare_view), before=new_pool_reading), summary_ms)


def error_snapshots(count: int) -> Dict[str, Tuple[Optional[Snapshot], Snapshot]]:
    columns = ("hostgroup", "hostname", "port", "username", "client_address", "schemaname", "errno", "count_star",
               "first_seen", "last_seen", "last_error")
    errnos = (1146, 1064, 1062, 1290, 1213, 1205, 2013, 9006, 1045, 1049)

    def reading(step):
        rows = tuple(tuple(str(v) for v in (10 + n % 20, f"10.0.0.{n % 200}", 3306, f"user{n % 30}", f"10.1.{n % 7}.1",
                                            f"db{n % 11}", errnos[n % len(errnos)], 10 + n + step * (n % 10 == 0), 1_800_000_000 - 900,
                                            1_800_000_000 - (n % 600) + step * (n % 10 == 0),
                                            f"error text {n} " * 4)) for n in range(count))
        return Table(columns, rows)

    users = Table(("username", "frontend_connections", "frontend_max_connections"),
                  tuple((f"user{n}", str(n * 3), "100") for n in range(30)))
    glob = {"Access_Denied_Wrong_Password": "10", "Access_Denied_Max_Connections": "0",
            "Access_Denied_Max_User_Connections": "3"}
    return {
        BackendErrors.name: (Snapshot(BackendErrors.name, reading(0), 999.0, 0.01, wall_time=1.8e9 - 1),
                             Snapshot(BackendErrors.name, reading(1), 1000.0, 0.01, wall_time=1.8e9)),
        FrontendUsers.name: (None, Snapshot(FrontendUsers.name, users, 1000.0, 0.01)),
        "proxysql.global": (Snapshot("proxysql.global", glob, 999.0, 0.0), Snapshot("proxysql.global", glob, 1000.0, 0.0)),
    }


def bench_errors(count: int) -> float:
    from proxytop.screens.errors import ErrorsScreen

    from proxytop.screens import errors

    screen = ErrorsScreen()
    data_view = DataView(SnapshotEngine(error_snapshots(count), 1000.2))
    assert refresh(screen, data_view) == count
    current = data_view.latest(BackendErrors.name)

    def new_reading():  # the previous reading was parsed when it was current; this one is new
        errors._parsed_readings[:] = [r for r in errors._parsed_readings if r[0] is not current]

    return timed(lambda: refresh(screen, data_view), before=new_reading)


def bench_monitor_load(seconds: float) -> Tuple[float, float, int]:
    """(monitor queries per 2 s with ConnPool at 0.5 s, CPU ms of one incremental reading of
    500 servers' rows, rows in it), against the double serving the cluster recording."""
    from proxytop.collectors.proxysql import GlobalStatus
    from proxytop.polling.connection import Endpoint, ProxySQLSource, open_admin
    from proxytop.polling.engine import Engine
    from tests.proxysql_double import ProxySQLDouble, Recording

    double = ProxySQLDouble(recording=Recording.load("cluster", node="127.0.0.1:6042"), start_frame=20).start()
    engine = Engine()
    try:
        engine.add_source(ProxySQLSource(Endpoint(port=double.port, timeout=5)))
        for collector in (GlobalStatus(), ConnectionPool(), RuntimeServers(), MonitorLogs()):
            engine.add_collector(collector)
        names = ["proxysql.global", ConnectionPool.name, RuntimeServers.name, MonitorLogs.name]
        for name in names:
            engine.set_interval(name, 0.5)
        engine.set_active(names)
        engine.start()
        deadline = time.monotonic() + 15
        while engine.latest(MonitorLogs.name) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        first = sum("monitor." in q for q in double.queries())
        time.sleep(seconds)
        per_2s = (sum("monitor." in q for q in double.queries()) - first) / seconds * 2
    finally:
        engine.stop()
        double.stop()

    # one incremental reading bringing 2 s of rows for 500 servers (ping, read_only, lag each)
    collector = MonitorLogs()
    columns = ("kind", "hostname", "port", "time_start_us", "success_us", "error", "value")
    base = 1_800_000_000_000_000
    collector._absorb(columns, [("now", None, None, base, None, None, None)] +
                      [(kind, f"10.0.0.{n % 250}", str(3306 + n // 250), base - 10**6, 200, None, "1")
                       for n in range(500) for kind in ("ping", "read_only", "lag")])
    rows = [("now", None, None, base + 2 * 10**6, None, None, None)] + \
        [(kind, f"10.0.0.{n % 250}", str(3306 + n // 250), base + 10**6, 210, None, "0")
         for n in range(500) for kind in ("ping", "read_only", "lag")]
    start = time.process_time()
    collector._absorb(columns, rows)
    return per_2s, ms(time.process_time() - start), len(rows) - 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="window for the monitor-query count")
    args = parser.parse_args(argv)
    out = sys.stdout
    print(f"proxytop health benchmark on {machine()}; load average {os.getloadavg()[0]:.1f}", file=out)
    print(f"{'figure':<58}{'measured':>10}{'target':>9}  met", file=out)
    ok = True

    def line(label, value, target, unit="ms", why=""):
        nonlocal ok
        met = value <= target
        ok = ok and met
        print(f"{label:<58}{value:>8.2f}{unit:>2}{target:>7g}{unit:>2}  {'yes' if met else 'NO'}"
              + (f"  ({why})" if not met and why else ""), file=out)

    for backends in (12, 500):
        refresh_ms, alarm_ms, alarm_new_ms, bare_ms, summary_ms = bench_pool(backends)
        line(f"ConnPool refresh with health columns, {backends} backends", refresh_ms, TARGET_POOL_MS[backends],
             why=f"the pool columns alone take {bare_ms:.1f} ms here; the health columns add "
                 f"{refresh_ms - bare_ms:.1f} ms; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"{'  of which the pool columns without health columns':<58}{bare_ms:>8.2f}ms", file=out)
        print(f"{'  plus, per monitor reading (every 2 s), its summary':<58}{summary_ms:>8.2f}ms", file=out)
        if backends == 500:
            line("header backend alarm per frame, 500 backends", alarm_ms, TARGET_ALARM_MS)
            line("header backend alarm per new pool reading, 500 backends", alarm_new_ms, TARGET_ALARM_READING_MS)
    line("Errors screen refresh, 1,000 error rows", bench_errors(1000), TARGET_ERRORS_MS,
         why=f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores while measured")
    per_2s, read_ms, rows = bench_monitor_load(args.seconds)
    line("monitor-log admin queries per 2 s (ConnPool every 0.5 s)", per_2s, TARGET_MONITOR_QUERIES_PER_2S, unit="  ")
    print(f"{'one incremental monitor reading, ' + format(rows, ',') + ' rows (500 servers)':<58}{read_ms:>8.2f}ms"
          f"{'':>9}  (no target: off the UI thread)", file=out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
