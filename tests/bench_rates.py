"""Rates against the recordings of real ProxySQLs: how far a rate strays from the 10 s mean.

    python3 -m tests.bench_rates

For each recording (tests/data: 2.7.2 single node, each node of the 2.7.2 cluster, 3.0.1), the
readings of stats_mysql_commands_counters (all commands), stats_mysql_query_rules (all hits)
and stats_mysql_global (Questions) are taken in order with the time each query was sent, and
two rates are computed at every reading once 20 s of readings are there:

- plain: the difference of the last two readings over their time (what proxytop showed before);
- steady: proxytop.rates.update_span (whole counter updates over at least RATE_WINDOW s);

each compared with the mean over the last 10 s (the counter's difference from the reading
10 s before). The target: under a steady load, within 5% of the 10 s mean; readings where the
10 s mean differs by more than 10% from the 10 s before it (the load changed: a reader
stopped, the load ended) are left out. The recorded loads are real (sysbench) and not
perfectly steady, so the median and 95th percentile are printed beside the largest.
"""
from __future__ import annotations

import gzip
import json
import os
import statistics
import sys
from typing import Dict, List, Optional, Sequence, Tuple

from proxytop.rates import RATE_WINDOW, to_number, update_span

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
RECORDINGS = ("proxysql-2.7.2.jsonl.gz", "proxysql-2.7.2-cluster.jsonl.gz", "proxysql-3.0.1.jsonl.gz")
TARGET = 0.05
MEAN_SPAN = 10.0
STEADY = 0.10  # a steady load: this 10 s mean within 10% of the 10 s mean before it


def total_of(columns: Sequence[str], rows: Sequence[Sequence], table: str) -> Optional[float]:
    at = {name: i for i, name in enumerate(columns)}
    if table == "stats_mysql_commands_counters":
        return sum(to_number(row[at["Total_cnt"]]) or 0 for row in rows)
    if table == "stats_mysql_query_rules":
        return sum(to_number(row[at["hits"]]) or 0 for row in rows)
    for row in rows:
        if row[at["Variable_Name"]] == "Questions":
            return to_number(row[at["Variable_Value"]])
    return None


TABLES = {"stats_mysql_commands_counters": "all commands/s", "stats_mysql_query_rules": "rule hits/s",
          "stats_mysql_global": "Questions/s"}


def series(path: str) -> Dict[Tuple[str, str], List[Tuple[float, float]]]:
    """{(node, table): [(t, total)]} of the periodic stats readings."""
    found: Dict[Tuple[str, str], List[Tuple[float, float]]] = {}
    with gzip.open(path, "rt") as lines:
        for line in lines:
            record = json.loads(line)
            sql = record.get("sql", "").lower()
            if "rows" not in record or not sql.startswith("select * from stats"):
                continue
            table = sql.split()[-1]
            if table not in TABLES:
                continue
            value = total_of(record["columns"], record["rows"], table)
            if value is not None:
                found.setdefault((record.get("node", ""), table), []).append((float(record["t"]), value))
    return found


def deviations(points: List[Tuple[float, float]]) -> Tuple[List[float], List[float]]:
    stamps = [t for t, _ in points]
    values = [v for _, v in points]
    plain, steady = [], []
    for i in range(1, len(points)):
        if stamps[i] - stamps[0] < RATE_WINDOW:
            continue
        j = max(k for k in range(i) if stamps[i] - stamps[k] >= MEAN_SPAN)
        mean = (values[i] - values[j]) / (stamps[i] - stamps[j])
        earlier = [k for k in range(j) if stamps[j] - stamps[k] >= MEAN_SPAN]
        if mean <= 0 or not earlier:
            continue
        k = max(earlier)
        before = (values[j] - values[k]) / (stamps[j] - stamps[k])
        if abs(before / mean - 1) > STEADY:
            continue  # the load changed: not a steady load (a reader stopped, the load ended)
        plain.append(abs((values[i] - values[i - 1]) / (stamps[i] - stamps[i - 1]) / mean - 1))
        span = update_span(stamps[:i + 1], values[:i + 1])
        if span is not None:
            steady.append(abs((values[span.end] - values[span.base]) / span.seconds / mean - 1))
    return plain, steady


def describe(values: List[float]) -> str:
    if not values:
        return "no rates"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"median {100 * statistics.median(ordered):5.1f}%  p95 {100 * p95:5.1f}%  max {100 * ordered[-1]:5.1f}%"


def main() -> int:
    print(f"Rates against the 10 s mean, recordings of real ProxySQLs (steady: whole updates over "
          f"at least {RATE_WINDOW:g} s; target: within {100 * TARGET:g}% under a steady load)")
    for name in RECORDINGS:
        for (node, table), points in sorted(series(os.path.join(DATA, name)).items()):
            plain, steady = deviations(points)
            label = f"{name.replace('.jsonl.gz', '')}{' ' + node if node else ''}"
            print(f"  {label:<40} {TABLES[table]:<15} {len(points):>4} readings, {len(plain):>3} under a steady load")
            print(f"    plain last interval   {describe(plain)}")
            print(f"    steady (proxytop)     {describe(steady)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
