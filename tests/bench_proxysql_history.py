"""Benchmark of reading ProxySQL's own history: ``python -m tests.bench_proxysql_history``.

Against the ProxySQL double serving a full history generated from the recorded shapes (7
days of 1-minute rows in each raw table, a year of hours in each ``_hour`` table, as a
ProxySQL with every admin-stats_* at its default of 60 s holds after a year), prints:
- the first read (once when proxytop starts): rows read, wall time, proxytop's CPU (the
  collector: PyMySQL decoding the rows), and what answering cost the ProxySQL side: the CPU
  of SQLite running those statements in the double (ProxySQL answers them with the same
  SQLite over its proxysql_stats.db; the network and ProxySQL's own packet writing are not in it);
- the series made of it (pure functions), CPU;
- an incremental read after ProxySQL wrote its next minute: rows, proxytop's CPU.
"""
from __future__ import annotations

import argparse
import time

from proxytop.collectors.proxysql_history import ProxySQLHistory
from proxytop.config.endpoints import Endpoint
from proxytop.metrics.proxysql_history import history_series, history_status
from proxytop.polling.connection import open_admin
from tests.benchmark import machine, ms
from tests.proxysql_double import ProxySQLDouble, StatsHistory

TARGET_FIRST_READ_S = 1.0  # wall time, once at start (it runs on the ProxySQL worker, not the UI thread)
TARGET_PROXYSQL_MS = 250.0  # SQLite's CPU answering the first read
TARGET_SERIES_MS = 200.0
TARGET_INCREMENT_MS = 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=7)
    parser.add_argument("--hour-days", type=float, default=365)
    parser.add_argument("--rounds", type=int, default=3, help="first reads timed (the best is printed)")
    args = parser.parse_args()
    print(machine())
    end = int(time.time()) // 60 * 60
    started = time.monotonic()
    history = StatsHistory.recorded().generated(end=end, days=args.days, hour_days=args.hour_days)
    print(f"history generated in {time.monotonic() - started:.1f} s: "
          + ", ".join(f"{t} {len(rows):,}" for t, rows in sorted(history.rows.items()) if rows))
    double = ProxySQLDouble(history=history).start()
    try:
        best = None
        for _ in range(args.rounds):
            session = open_admin(Endpoint(port=double.port))
            session.query("select count(*) from stats_history.system_cpu")  # the double builds its tables
            double.history_cpu.clear()
            reader = ProxySQLHistory()
            wall, cpu = time.monotonic(), time.thread_time()
            reading = reader.collect(session)
            wall, cpu = time.monotonic() - wall, time.thread_time() - cpu
            proxysql_cpu = sum(seconds for _, seconds in double.history_cpu)
            if best is None or wall < best[0]:
                best = (wall, cpu, proxysql_cpu, reading, reader, session, list(double.history_cpu))
        wall, cpu, proxysql_cpu, reading, reader, session, statements = best
        rows = reading.rows_read()
        print(f"first read: {rows:,} rows in {len(reading.tables)} tables; wall {wall:.3f} s "
              f"(target {TARGET_FIRST_READ_S} s); proxytop CPU {ms(cpu):.0f} ms; "
              f"ProxySQL side (SQLite) CPU {ms(proxysql_cpu):.0f} ms (target {TARGET_PROXYSQL_MS:.0f} ms)")
        for sql, seconds in statements:
            print(f"    {ms(seconds):7.1f} ms  {sql[:110]}")
        cpu = time.thread_time()
        series = history_series([reading])
        cpu = time.thread_time() - cpu
        print(f"series: {len(series)} figures, {sum(len(s.all_points()) for s in series):,} points, "
              f"CPU {ms(cpu):.0f} ms (target {TARGET_SERIES_MS:.0f} ms)")
        print(f"status: {history_status([reading])}")
        for table in ("mysql_connections", "system_cpu", "system_memory"):
            last = history.rows[table][-1]
            history.write(table, [[last[0] + 60] + last[1:]])
        session.query("select count(*) from stats_history.system_cpu")  # the double rebuilds its tables
        cpu = time.thread_time()
        increment = reader.collect(session)
        cpu = time.thread_time() - cpu
        print(f"incremental read: {increment.rows_read()} rows, proxytop CPU {ms(cpu):.2f} ms "
              f"(target {TARGET_INCREMENT_MS} ms)")
    finally:
        double.stop()


if __name__ == "__main__":
    main()
