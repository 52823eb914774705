"""Benchmark of Trends' MySQL figures: ``python -m tests.bench_trends_mysql``.

Trends' MySQL Questions/s, threads running and connections are the Servers screen's rows added
up, made again whenever a server's own reading is new (the Replication alarm reads each server
every 5 s on every screen: no statement more for the servers). What that costs proxytop, on the
UI thread: the Servers rows and the three figures, at 12 and 500 servers, over fixed readings
(no I/O). With 12 servers they are made on each frame that finds a new server reading; at 500
(a reading new about 100 times a second) at most every 5 s, the fleet's own pace
(screens.trends.new_inputs).
"""
from __future__ import annotations

import time

from proxytop.collectors.innodb_fleet import Fleet, Server
from proxytop.collectors.mysql_server import ServerReading
from proxytop.config.mysql_options import Credentials
from proxytop.core import Snapshot
from proxytop.metrics.history import FigureHistory
from proxytop.polling.connection import Endpoint
from proxytop.screens.base import DataView
from proxytop.screens.servers import ServersScreen
from proxytop.screens.trends import keep_trend_values
from tests.bench_health import SnapshotEngine
from tests.benchmark import machine, ms

TARGET_MS = {12: 1.0, 500: 20.0}  # each time the figures are made
ROUNDS = 30
T0 = 1_700_000_000.0


def status(n: int, step: int) -> dict:
    return {"Uptime": 86400 + step * 5, "Questions": 1_000_000 * n + step * 5_000, "Threads_connected": 20 + n % 7,
            "Threads_running": 1 + n % 3, "Slow_queries": step, "Aborted_connects": 0,
            "Innodb_rows_read": 10 ** 9 + step * 40_000, "Innodb_rows_inserted": step * 100,
            "Innodb_rows_updated": step * 50, "Innodb_rows_deleted": step,
            "Innodb_buffer_pool_read_requests": 10 ** 10 + step * 10 ** 6, "Innodb_buffer_pool_reads": 10 ** 5 + step,
            "Innodb_history_list_length": 120}


def screen_and_view(servers: int):
    fleet = Fleet(Credentials("monitor"), 5.0, discover=False)
    pairs = {}
    for n in range(servers):
        server = Server(f"10.0.{n // 250}.{n % 250}:3306", Endpoint(host=f"10.0.{n // 250}.{n % 250}", port=3306))
        fleet.servers[server.key] = server
        variables = {"read_only": "ON" if n % 2 else "OFF"}
        pairs[server.server_name] = tuple(
            Snapshot(server.server_name, ServerReading(status(n, step), variables), T0 + step * 5, 0.002,
                     wall_time=T0 + step * 5) for step in (0, 1))
    return ServersScreen(None, fleet=fleet), DataView(SnapshotEngine(pairs, T0 + 5), None, figures=FigureHistory())


def per_frame(servers: int) -> float:
    screen, view = screen_and_view(servers)
    figures = view.figures
    start = time.thread_time()
    for i in range(ROUNDS):
        keep_trend_values(figures, {"servers": screen.rows(view)}, T0 + 5 + i)
    cost = ms(time.thread_time() - start) / ROUNDS
    kept = figures.points(("trends", "mysql_qps"), T0, T0 + 5 + ROUNDS)[-1][1]
    assert kept == servers * 1000.0, kept  # each server: 5,000 Questions in 5 s
    return cost


def main() -> None:
    print(machine())
    for servers, target in TARGET_MS.items():
        cost = per_frame(servers)
        print(f"Trends' MySQL figures at {servers} servers (the Servers rows + 3 figures), each time made: "
              f"{cost:.3f} ms (target {target:g} ms) {'met' if cost <= target else 'MISSED'}")


if __name__ == "__main__":
    main()
