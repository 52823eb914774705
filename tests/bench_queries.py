"""Measured cost of the Queries screen: CPU per refresh, resident memory, admin queries.

    python3 -m tests.bench_queries                    # everything (about ten minutes on 2 cores)
    python3 -m tests.bench_queries --only cpu --cycles 10

cpu     CPU per refresh of the Queries screen at 200 and 20,000 digests (the ProxySQL double
        serving tests.scale_digests through its transforms), as tests.benchmark measures the
        other screens: a Controller from proxytop.cli.build on a real Engine stepped on this
        thread, its clock advanced by the interval in force; "collect" is the digest read off
        the socket and its parse into columns (the worker's thread in the real program),
        "derive+render" the rates, grouping, sort and the 200x50 screen; at 20,000 three
        lines: the generated shape, a tenth of the digests running, and two new digests at
        random places before each read. Also the drill-down with its route, and QueryRules' "queries this rule
        catches" at 20,000 digests (computed once per reading, then redrawn).
memory  Resident memory of a process running proxytop's engine and Queries screen (stepped
        as for cpu) through 61 reads of 20,000 digests: the digest's whole history (the
        drill-down's Time/s sparkline), the double in a child process.
load    Admin queries per interval from the double's query log: digest reads while the screen
        is shown, none while another screen is, and none naming a *_reset table.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from typing import Iterator, List, Optional, Sequence, Tuple

import psutil

from proxytop.collectors.digest import MYSQL_TABLES, statement
from proxytop.polling.connection import admin_statement
from tests.benchmark import HEIGHT, WIDTH, RSSSampler, Stepper, machine, ms
from tests.proxysql_double import ProxySQLDouble, Recording
from tests.scale_digests import ScaleDigests

DIGEST = "stats_mysql_query_digest"
READ = statement(MYSQL_TABLES, (2, 7, 2)).lower()  # the read of the recorded 2.7.2
TARGET_TYPICAL_MS = 5.0  # at 200 digests
TARGET_SCALE_MS = 300.0  # at 20,000 digests (read every 10 s or so: 3% of a core)
TARGET_RSS_MB = 120.0
IDLE_SHARE = 0.1  # the "realistic" line: a tenth of the digests run in each interval
# (label, digests, target ms, share of the digests that run in each interval: None = the
# generated shape, two thirds)
NEW_PER_READ = 2  # the "new digests" line: digests that appear before each read
SIZES = (("typical", 200, TARGET_TYPICAL_MS, None, 0), ("scale", 20_000, TARGET_SCALE_MS, None, 0),
         ("realistic", 20_000, TARGET_SCALE_MS, IDLE_SHARE, 0),
         ("new", 20_000, TARGET_SCALE_MS, None, NEW_PER_READ))


def serve(recording: Recording, digests: int, changing: Optional[float] = None, new: int = 0) -> ProxySQLDouble:
    double = ProxySQLDouble(recording=recording, start_frame=30)
    double.transforms[DIGEST] = ScaleDigests(recording, digests=digests, changing=changing, new_per_read=new)
    return double.start()


def interval_in_force(stepper: Stepper) -> float:
    from proxytop.collectors.digest import QueryDigest

    collector = stepper.engine.collector(QueryDigest.name)
    return max(stepper.controller.interval(), collector.min_interval)


@contextmanager
def served_elsewhere(digests: int, changing: Optional[float] = None, new: int = 0) -> Iterator[int]:
    """The double in a child process (``--serve``), its port: its work, allocations and garbage
    collections are not counted as the collect's."""
    spec = f"{digests},{'' if changing is None else changing},{new}"
    server = subprocess.Popen([sys.executable, "-m", "tests.bench_queries", "--serve", spec],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield int(server.stdout.readline())
    finally:
        server.stdin.close()
        server.wait(timeout=30)


def bench_cpu(cycles: int) -> List[dict]:
    results = []
    for label, digests, target, changing, new in SIZES:
        with served_elsewhere(digests, changing, new) as port:
            stepper = Stepper(["-P", str(port), "--screen", "queries", "-d", "5", "--connect-timeout", "30"])
            try:
                results.append(measure_cpu(stepper, cycles, label, digests, target, changing, new))
            finally:
                stepper.close()
    return results


def measure_cpu(stepper: Stepper, cycles: int, label: str, digests: int, target: float,
                changing: Optional[float], new: int) -> dict:
    stepper.connect()
    samples = []
    for n in range(3 + cycles):  # three warm-up cycles: two readings make rates
        stepper.clock.now += interval_in_force(stepper) - stepper.controller.interval()
        sample = stepper.cycle()
        if n >= 3:
            samples.append(sample)
    collect = [s[0] for s in samples]
    derive = [s[1] for s in samples]
    total = [a + b for a, b in zip(collect, derive)]
    detail = drill_down(stepper)
    result = dict(size=label, digests=digests, changing=changing, new=new, collect=ms(statistics.mean(collect)),
                  derive=ms(statistics.mean(derive)), total=ms(statistics.mean(total)),
                  worst=ms(max(total)), redraw=ms(statistics.median(s[2] for s in samples)),
                  detail=detail, interval=interval_in_force(stepper), target=target,
                  read=stepper.engine.collector("proxysql.query_digest").last_duration)
    print(f"  cpu {label:<8} {result['total']:8.2f} ms", file=sys.stderr, flush=True)
    if label == "scale":
        result["caught"] = caught(stepper)
    return result


def drill_down(stepper: Stepper) -> float:
    """ms of CPU to open the top digest's drill-down (route included) and draw it."""
    from proxytop.ui import view

    start = time.thread_time()
    stepper.controller.handle_key(10)
    view.render(stepper.controller, WIDTH, HEIGHT)
    spent = time.thread_time() - start
    stepper.controller.handle_key(27)
    view.render(stepper.controller, WIDTH, HEIGHT)
    return ms(spent)


def caught(stepper: Stepper) -> Tuple[float, float]:
    """ms of CPU for QueryRules' "queries this rule catches": the first time (every digest's
    route evaluated), then after the next digest reading (routes kept for unchanged digests)."""
    from proxytop.screens import queries

    caught = queries.CaughtQueries()
    start = time.thread_time()
    queries.caught_section(4, stepper.controller.view, caught)
    first = ms(time.thread_time() - start)
    stepper.clock.now += interval_in_force(stepper) - stepper.controller.interval()
    stepper.cycle()
    start = time.thread_time()
    queries.caught_section(4, stepper.controller.view, caught)
    return first, ms(time.thread_time() - start)


def print_cpu(results: List[dict], cycles: int, out) -> bool:
    print(f"Queries: CPU per refresh (ms of CPU; mean of {cycles} cycles after 3 warm-up cycles; "
          f"{WIDTH}x{HEIGHT} terminal)", file=out)
    header = (f"{'data':<16}{'every':>7}{'read s':>8}{'collect':>9}{'derive+render':>14}{'total':>8}{'worst':>8}"
              f"{'redraw':>8}{'drill':>8}{'target':>8}  ok")
    print(header, file=out)
    print("-" * len(header), file=out)
    ok_all = True
    for r in results:
        ok = r["total"] <= r["target"]
        ok_all &= ok
        data = f"{r['digests']:>6,} digests" if r["changing"] is None else f"{r['digests']:>6,}, {r['changing']:.0%} run"
        if r.get("new"):
            data = f"{r['digests']:>6,}, +{r['new']} new"
        print(f"{data:<16}{r['interval']:>6g}s{r['read']:>8.3f}{r['collect']:>9.1f}"
              f"{r['derive']:>14.1f}{r['total']:>8.1f}{r['worst']:>8.1f}{r['redraw']:>8.2f}{r['detail']:>8.1f}"
              f"{r['target']:>8g}  {'yes' if ok else 'NO'}", file=out)
        if not ok:
            print(f"  missed: {r['collect']:.0f} ms of the {r['total']:.0f} are the collect, on the worker's thread: "
                  f"{r['digests']:,} row packets read off the socket (a few Python "
                  f"steps per row) and the counters that changed parsed and merged, with their deltas; the rest is the "
                  f"sort and drawing; at the {r['interval']:g} s interval in force that is "
                  f"{r['total'] / 10 / r['interval']:.1f}% of a core", file=out)
        if "caught" in r:
            first, next_reading = r["caught"]
            print(f"  QueryRules \"queries this rule catches\" at {r['digests']:,} digests: {first:.0f} ms the first "
                  f"time (every route evaluated), {next_reading:.0f} ms once per digest reading after that (routes "
                  f"kept while the rules and the digest's text are unchanged), then redrawn from memory", file=out)
    print("  (read s = the last digest read in real time, the test double's work included; every = the interval "
          "in force, at least 20 times that; drill = opening the top digest's drill-down with its route, once; "
          f"\"{IDLE_SHARE:.0%} run\": only that share of the digests run in each interval, as on a real ProxySQL where "
          "most of a large digest table is idle; \"+N new\": N digests appear before each read, at random places in the "
          "table, as new query shapes do; the other lines are the generated shape, two thirds running)",
          file=out)
    return ok_all


def serve_forever(spec: str) -> None:
    """The double with generated digests in this process, until stdin closes (the figures are
    taken in another process, without the double's own work and memory); ``spec``:
    "digests[,share running[,new per read]]"."""
    digests, changing, new = (spec.split(",") + ["", ""])[:3]
    double = serve(Recording.load("cluster", node="127.0.0.1:6042"), int(digests),
                   float(changing) if changing else None, int(new or 0))
    print(double.port, flush=True)
    try:
        sys.stdin.read()
    finally:
        double.stop()


def bench_memory(readings: int, timeout: float) -> dict:
    """Resident memory of a process that runs proxytop's engine and Queries screen (the
    Stepper: a Controller from proxytop.cli.build on a real Engine), stepped through
    ``readings`` digest reads so that the engine's history of the digest is full, with the
    double in a child process. The real program would wait 20 times the read time between
    two reads (half an hour for 61 readings); the stepped engine reads at once."""
    out = subprocess.run([sys.executable, "-m", "tests.bench_queries", "--memory-child", str(readings)],
                         capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"memory run failed: {out.stderr.strip().splitlines()[-1:] or out.returncode}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def memory_child(readings: int) -> None:
    from proxytop.collectors.digest import QueryDigest
    from proxytop.ui import view

    with served_elsewhere(20_000) as port:
        sampler = RSSSampler(os.getpid())
        sampler.phase = "queries"
        sampler.start()
        stepper = Stepper(["-P", str(port), "--screen", "queries", "-d", "5", "--connect-timeout", "60"])
        stepper.connect()
        started = time.monotonic()
        for n in range(readings):
            stepper.clock.now += interval_in_force(stepper) - stepper.controller.interval()
            stepper.cycle()
            if n == readings - 1:  # the drill-down's Time/s sparkline over the whole history
                stepper.controller.handle_key(10)
                view.render(stepper.controller, WIDTH, HEIGHT)
        history = len(stepper.controller.view.history(QueryDigest.name))
        time.sleep(0.3)  # one more sample after the last reading
        sampler.stopping = True
        now = psutil.Process().memory_info().rss / 2 ** 20
        print(json.dumps(dict(peak=sampler.peak.get("queries", 0.0), now=now, reads=readings, history=history,
                              seconds=time.monotonic() - started)))
        stepper.close()


def print_memory(result: dict, readings: int, out) -> bool:
    ok = result["peak"] <= TARGET_RSS_MB
    print("Queries: resident memory with 20,000 digests and the digest's full history (psutil RSS of the process "
          "running the engine and the screen; the double in another process)", file=out)
    print(f"{'digest reads':>13}{'history':>9}{'seconds':>9}{'peak MB':>9}{'end MB':>8}{'target':>8}  ok", file=out)
    print(f"{result['reads']:>13}{result['history']:>9}{result['seconds']:>9.0f}{result['peak']:>9.1f}"
          f"{result['now']:>8.1f}{TARGET_RSS_MB:>8g}  {'yes' if ok else 'NO'}", file=out)
    return ok


def bench_load(recording: Recording, seconds: float) -> dict:
    """A real proxytop: ConnPool, then Queries, then ConnPool again, each for ``seconds``."""
    from tests.terminal import Terminal

    double = serve(recording, 200)
    term = Terminal(["-P", str(double.port), "--screen", "connpool"], cols=WIDTH, rows=HEIGHT)
    try:
        term.wait_for("127.0.0.1:3331", timeout=30)
        marks = {}

        def digest_reads():
            with double._lock:
                return [t for t, _u, sql in double.query_log if sql.strip().lower() == admin_statement(READ)]

        time.sleep(seconds)
        marks["hidden before"] = len(digest_reads())
        term.send("8")
        term.wait_for("200 digests", timeout=30)
        shown = time.monotonic()
        time.sleep(seconds)
        times = digest_reads()
        marks["shown"] = len(times)
        shown_for = time.monotonic() - shown
        term.send("1")
        term.wait_for("127.0.0.1:3331", timeout=30)
        time.sleep(1.0)
        left = len(digest_reads())
        time.sleep(seconds)
        marks["hidden after"] = len(digest_reads()) - left
        gaps = [b - a for a, b in zip(times, times[1:])]
        resets = [q for q in double.queries() if "_reset" in q]
        return dict(marks=marks, shown_for=shown_for, min_gap=min(gaps) if gaps else None, resets=len(resets))
    finally:
        term.close()
        double.stop()


def print_load(result: dict, seconds: float, out) -> bool:
    marks = result["marks"]
    expected = result["shown_for"] / 5.0 + 1
    ok = (marks["hidden before"] == 0 and marks["hidden after"] == 0 and result["resets"] == 0
          and marks["shown"] <= expected + 0.5 and (result["min_gap"] or 5.0) >= 4.9)
    print(f"Queries: admin queries reading the digest (a real proxytop, {seconds:g} s per phase)", file=out)
    print(f"  hidden (ConnPool) before: {marks['hidden before']}   shown {result['shown_for']:.0f} s: {marks['shown']} "
          f"(at most {expected:.1f}: one per 5 s interval in force)   hidden after: {marks['hidden after']}   "
          f"shortest gap {result['min_gap'] or 0:.2f} s   *_reset: {result['resets']}   "
          f"{'ok' if ok else 'NOT OK'}", file=out)
    return ok


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="cpu,memory,load")
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--readings", type=int, default=61, help="digest reads before the memory figure")
    parser.add_argument("--memory-timeout", type=float, default=600.0)
    parser.add_argument("--load-seconds", type=float, default=20.0)
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # the double, for the other runs
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)  # the memory run itself
    args = parser.parse_args(argv)
    if args.serve:
        serve_forever(args.serve)
        return 0
    if args.memory_child:
        memory_child(args.memory_child)
        return 0
    only = set(args.only.split(","))
    recording = Recording.load("cluster", node="127.0.0.1:6042")
    out = sys.stdout
    print(machine(), file=out)
    ok = True
    if "cpu" in only:
        ok &= print_cpu(bench_cpu(args.cycles), args.cycles, out)
        out.flush()
    if "load" in only:
        ok &= print_load(bench_load(recording, args.load_seconds), args.load_seconds, out)
        out.flush()
    if "memory" in only:
        ok &= print_memory(bench_memory(args.readings, args.memory_timeout), args.readings, out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
