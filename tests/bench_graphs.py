"""Graphs: memory of an hour of figures for a lab-sized system, and the time to draw charts.

    python -m tests.bench_graphs

An hour at 1 s of what the lab-sized system (3 backends, the demo's ProxySQL) keeps: ConnPool's
4 rows (3 backends, a subtotal) x 14 figures every second, the Queries screen's 100 top digests
x 8 figures every 10 s, Replication's 3 channels x 8 figures and InnoDB's 3 servers x 12 every
5 s, IOstat's 4 devices x 24 every second, and the 10 Trends every 5 s; then a day more, so the
minute tier is full. Drawing: the Trends page at 200x60 and a row's graph (14 figures) over
an hour of 1 s points. Then a new figure added to a full history.
"""
from __future__ import annotations

import math
import time
import tracemalloc

from proxytop.metrics.history import FigureHistory
from proxytop.screens import chart

T0 = 1_700_000_000.0
# (figures, seconds between readings)
LAB = {"connpool": (4 * 14, 1), "queries": (100 * 8, 10), "replication": (3 * 8, 5), "innodb": (3 * 12, 5),
       "iostat": (4 * 24, 1), "trends": (10, 5)}


def fill(history: FigureHistory, seconds: int, start: float = T0) -> None:
    for second in range(seconds):
        t = start + second
        for screen, (figures, pace) in LAB.items():
            if second % pace == 0:
                for n in range(figures):
                    history.add((screen, n), t, 100 + 50 * math.sin(second / 300 + n))


def main() -> None:
    tracemalloc.start()
    history = FigureHistory()
    fill(history, 3600)
    hour, _peak = tracemalloc.get_traced_memory()
    print(f"an hour of the lab-sized system: {len(history.series)} figures, {history.size():,} points, "
          f"{hour / 2**20:.1f} MiB")
    fill(history, 86400, start=T0 + 3600)
    day, _peak = tracemalloc.get_traced_memory()
    print(f"25 hours (the minute tier full): {history.size():,} points, {day / 2**20:.1f} MiB")
    tracemalloc.stop()

    end = T0 + 3600 + 86400
    points = history.points(("connpool", 0), end - 3600, end)
    plots = [chart.Plot("a", points, "series0")]
    runs = 50
    started = time.perf_counter()
    for _ in range(runs):
        chart.draw(plots, 200, 56, end - 3600, end)
    one = (time.perf_counter() - started) / runs * 1000
    print(f"one chart 200x56, an hour of 1 s points ({len(points):,}): {one:.2f} ms")
    started = time.perf_counter()
    for _ in range(runs):
        for n in range(7):  # the Trends page at 200x60: seven charts of 8 lines
            chart.draw([chart.Plot("t", history.points(("trends", n), end - 3600, end), "series0")], 200, 7,
                       end - 3600, end, label_width=8)
    page = (time.perf_counter() - started) / runs * 1000
    print(f"the Trends page 200x60 (7 charts, an hour of 5 s points each): {page:.2f} ms")
    started = time.perf_counter()
    for _ in range(runs):
        for n in range(7):  # a row's graph at 200x60, an hour of 1 s points per figure
            chart.draw([chart.Plot("f", history.points(("connpool", n), end - 3600, end), "series0")], 200, 7,
                       end - 3600, end, label_width=8)
    row = (time.perf_counter() - started) / runs * 1000
    print(f"a row's graph 200x60 (7 charts, an hour of 1 s points each): {row:.2f} ms")

    # A full history (20,000 figures) taking new ones: a screen whose rows come and go
    # (Sessions: 100 new sessions a refresh) makes the least recently added ones go.
    full = FigureHistory()
    for n in range(full.max_series):
        full.add(("full", n), T0, 1.0)
    started = time.perf_counter()
    for n in range(1000):
        full.add(("new", n), T0 + 1, 1.0)
    each = (time.perf_counter() - started) / 1000 * 1e6
    print(f"a new figure in a full history (20,000 figures): {each:.1f} \u00b5s")


if __name__ == "__main__":
    main()
