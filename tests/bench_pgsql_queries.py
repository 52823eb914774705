"""Benchmark of the Queries and Errors screens on both sides of a ProxySQL 3.0.1.

    python3 -m tests.bench_pgsql_queries [--cycles 20]

Figures, each beside its target:
- CPU per refresh (collect + derive + render) of Queries and Errors on the MySQL and the
  PostgreSQL side of the admin double serving the 3.0.1 recording (13 pgsql digests; three
  stats_pgsql_errors rows made in the recorded schema, as the tests do);
- load on ProxySQL: the queries per refresh, by table, that each PostgreSQL screen sends
  (only its own side's tables, the digest at its own slower pace, never a *_reset table).
"""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional, Sequence

from tests.bench_pgsql import HEADER_TABLES, argv_for, load_ok, pgsql_loads  # the header's tables: shown apart
from tests.benchmark import HEIGHT, TARGET_TYPICAL_MS, WIDTH, Stepper, cpu_figures, machine, measured_cycles
from tests.proxysql_double import ProxySQLDouble, Recording
from tests.test_pgsql_queries_errors import errors_from_schema

SCREENS = ("queries", "errors")
TITLES = {"queries": "Queries", "errors": "Errors"}
SIDES = ("mysql", "pgsql")
PGSQL_NEEDS = {
    "queries": {"stats_pgsql_query_digest", "runtime_pgsql_query_rules", "runtime_pgsql_users", "global_variables"},
    "errors": {"stats_pgsql_errors", "stats_pgsql_users"},
}


def double_for(recording: Recording) -> ProxySQLDouble:
    double = ProxySQLDouble(recording=recording)
    double.transforms["stats_pgsql_errors"] = errors_from_schema()
    return double.start()


def bench_cpu(cycles: int, recording: Recording) -> List[dict]:
    results = []
    double = double_for(recording)
    try:
        for screen in SCREENS:
            for side in SIDES:
                stepper = Stepper(argv_for(screen, side, double.port) + ["--digest-min-interval", "1"])
                try:
                    samples = measured_cycles(stepper, cycles)
                finally:
                    stepper.close()
                results.append(dict(screen=screen, side=side, **cpu_figures(samples)))
    finally:
        double.stop()
    return results


def print_cpu(results: List[dict], cycles: int, out) -> None:
    print(f"CPU per refresh, ProxySQL 3.0.1 (ms of CPU; mean of {cycles} cycles; {WIDTH}x{HEIGHT} terminal)", file=out)
    header = f"{'screen':<9}{'side':<7}{'rows':>6}{'collect':>9}{'derive+render':>14}{'total':>8}{'worst':>8}{'target':>8}  ok"
    print(header, file=out)
    print("-" * len(header), file=out)
    for r in results:
        ok = r["total"] <= TARGET_TYPICAL_MS
        print(f"{TITLES[r['screen']]:<9}{r['side']:<7}{r['rows']:>6}{r['collect']:>9.2f}{r['derive']:>14.2f}"
              f"{r['total']:>8.2f}{r['worst']:>8.2f}{TARGET_TYPICAL_MS:>8g}  {'yes' if ok else 'NO'}", file=out)
        if not ok:
            print(f"  {TITLES[r['screen']]} ({r['side']}) is over the budget on a machine shared with other work: "
                  f"compare the other side's figure (the same code on the same amount of data)", file=out)


def bench_load(recording: Recording, refreshes: int) -> List[dict]:
    return pgsql_loads(double_for(recording), PGSQL_NEEDS, HEADER_TABLES, refreshes)


def print_load(results: List[dict], out) -> None:
    print("Load on ProxySQL, PostgreSQL side: admin queries per refresh by table (stepped refreshes at the "
          "screen's interval; slow tables keep their own pace)", file=out)
    for r in results:
        own = ", ".join(f"{t} {n / r['refreshes']:.2f}" for t, n in sorted(r["per_table"].items())
                        if t not in HEADER_TABLES)
        header = ", ".join(f"{t} {n / r['refreshes']:.2f}" for t, n in sorted(r["per_table"].items()) if t in HEADER_TABLES)
        ok = load_ok(r)
        print(f"{TITLES[r['screen']]:<9}every {r['interval']:g}s: {own}  {'yes' if ok else 'NO'}", file=out)
        print(f"{'':<9}header: {header}", file=out)
        if r["other"]:
            print(f"{'':<9}tables of the MySQL side or of other screens: {', '.join(r['other'])}", file=out)
    print("  target: only the side's own tables, at most one query per table and refresh (the digest every 5 s "
          "at the most), never a *_reset table", file=out)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tests.bench_pgsql_queries", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=20, help="measured refresh cycles per screen and side")
    args = parser.parse_args(argv)
    out = sys.stdout
    recording = Recording.load("3.0")
    print(f"proxytop Queries/Errors PostgreSQL-side benchmark on {machine()}", file=out)
    print(file=out)
    print_cpu(bench_cpu(args.cycles, recording), args.cycles, out)
    print(file=out)
    print_load(bench_load(recording, 10), out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
