"""Measured: the Cluster screen and several ProxySQL endpoints.

    python3 -m tests.bench_cluster                 # about a minute on 2 cores
    python3 -m tests.bench_cluster --cycles 100 --switches 20

refresh  CPU per refresh of the Cluster screen watching a 10-node cluster: a Controller from
         proxytop.cli.build on a real Engine stepped on this thread (tests.benchmark.Stepper),
         -H naming ten test doubles. A cycle is the due collectors (the watched node's four
         cluster tables, a ping of each node) and view.render; CPU of this thread only.
         The doubles serve node 1 of the cluster recording with its cluster tables widened to
         ten peers (each peer's rows copied from one of the three recorded nodes).
switch   Node switching to a full screen, end to end: the installed proxytop in a
         pseudo-terminal with -H naming three doubles (the cluster recording, one per node),
         on ConnPool; ``n`` pressed, the time until the terminal shows the next node's name in
         the header and that node's backends in the table (the previous node's rows are
         dropped at once, so rows on screen are the new node's). p50 / p95 over the switches.
memory   Resident memory of that real proxytop with ten endpoints: the Cluster screen (ten
         node connections open and pinged), then ConnPool's all-nodes view (every node read).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Dict, List, Sequence

from tests.benchmark import Driver, RSSSampler, Stepper, machine, ms, percentile, timed_terminal
from tests.cluster_doubles import ClusterDoubles, node_recording
from tests.proxysql_double import CLUSTER_NODES, ProxySQLDouble

TARGET_REFRESH_MS = 5.0
TARGET_SWITCH_P95_MS = 1000.0
TARGET_RSS_MB = 80.0
CLUSTER_TABLES = ("runtime_proxysql_servers", "proxysql_servers", "stats_proxysql_servers_metrics",
                  "stats_proxysql_servers_checksums", "stats_proxysql_servers_clients_status")


def widen(ports: Sequence[int]):
    """A transform: the recorded three peers become len(ports) peers at the doubles' ports."""
    recorded = [int(n.split(":")[1]) for n in CLUSTER_NODES]

    def transform(columns: List[str], rows):
        if "port" in columns and "hostname" in columns:
            port_at = columns.index("port")
            comment_at = columns.index("comment") if "comment" in columns else None
            by_node: Dict[int, list] = {}
            for row in rows:
                by_node.setdefault(int(row[port_at]), []).append(row)
            out = []
            for i, port in enumerate(ports):
                for row in by_node.get(recorded[i % 3], []):
                    row = list(row)
                    row[port_at] = str(port)
                    if comment_at is not None:
                        row[comment_at] = f"node-{i + 1}"
                    out.append(row)
            return columns, out
        if "admin_mysql_ifaces" in columns and rows:
            at = columns.index("admin_mysql_ifaces")
            return columns, [[*rows[i % len(rows)][:at], f"127.0.0.1:{port}", *rows[i % len(rows)][at + 1:]]
                             for i, port in enumerate(ports)]
        return columns, rows

    return transform


def ten_nodes(count: int = 10) -> List[ProxySQLDouble]:
    recording = node_recording(CLUSTER_NODES[0])
    doubles = [ProxySQLDouble(recording=recording).start() for _ in range(count)]
    transform = widen([d.port for d in doubles])
    for double in doubles:
        for table in CLUSTER_TABLES:
            double.transforms[table] = transform
    return doubles


def bench_refresh(cycles: int) -> Dict[str, float]:
    doubles = ten_nodes()
    try:
        hosts = ",".join(f"127.0.0.1:{d.port}" for d in doubles)
        stepper = Stepper(["-H", hosts, "--screen", "cluster", "-d", "1"])
        stepper.connect()
        totals, renders, redraws = [], [], []
        lines = []
        for i in range(cycles + 3):
            stepper.connect()  # node sources activated by the screen
            collect, render, redraw, lines = stepper.cycle()
            if i >= 3:  # the first cycles connect and fill the histories
                totals.append(collect + render)
                renders.append(render)
                redraws.append(redraw)
        rows = sum(1 for line in lines if "node-" in "".join(t for t, _ in line) and "127.0.0.1:" in
                   "".join(t for t, _ in line))
        stepper.close()
        return {"total": statistics.mean(totals), "p95": percentile(totals, 0.95),
                "render": statistics.mean(renders), "redraw": statistics.mean(redraws), "rows": rows}
    finally:
        for double in doubles:
            double.stop()


def bench_switch(switches: int) -> List[float]:
    cluster = ClusterDoubles().start()
    term = None
    try:
        term = timed_terminal(["-H", cluster.hosts(), "-d", "1"], cols=160, rows=40)
        driver = Driver(term)
        deadline = time.monotonic() + 30
        while "127.0.0.1:3331" not in term.text():
            if time.monotonic() > deadline:
                raise AssertionError("proxytop did not show ConnPool:\n" + term.text())
            time.sleep(0.05)
        times = []
        for i in range(switches):
            target = (i + 1) % 3
            wanted = f"node {target + 1}/3 {cluster.label(target)}"
            times.append(driver.press("n", lambda s, w=wanted: w in s and "127.0.0.1:3333" in s, timeout=15))
            time.sleep(0.3)
        return times
    finally:
        if term is not None:
            term.close()
        cluster.stop()


def bench_memory(seconds: float) -> Dict[str, float]:
    doubles = ten_nodes()
    term = None
    try:
        hosts = ",".join(f"127.0.0.1:{d.port}" for d in doubles)
        term = timed_terminal(["-H", hosts, "-d", "1", "--screen", "cluster"], cols=200, rows=50)
        sampler = RSSSampler(term.pid)
        sampler.start()
        sampler.phase = "cluster"
        deadline = time.monotonic() + 30
        while term.text().count(" ok ") < 10 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(seconds / 2)
        sampler.phase = "all nodes"
        term.send("1")
        term.send("a")
        time.sleep(seconds / 2)
        reachable = term.text()
        sampler.stopping = True
        return {"cluster": sampler.peak.get("cluster", 0.0), "all nodes": sampler.peak.get("all nodes", 0.0),
                "threads": max(sampler.threads.values(), default=0), "sum": "ALL NODES" in reachable}
    finally:
        if term is not None:
            term.close()
        for double in doubles:
            double.stop()


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else "MISSED"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cycles", type=int, default=60)
    parser.add_argument("--switches", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=12.0)
    args = parser.parse_args(argv)
    out = sys.stdout
    out.write(f"proxytop cluster benchmark on {machine()}\n\n")

    refresh = bench_refresh(args.cycles)
    out.write(f"refresh  Cluster screen, 10 nodes ({refresh['rows']} rows), {args.cycles} cycles\n")
    out.write(f"         CPU per refresh  mean {ms(refresh['total']):.2f} ms  p95 {ms(refresh['p95']):.2f} ms"
              f"  (render {ms(refresh['render']):.2f} ms, redraw {ms(refresh['redraw']):.3f} ms)"
              f"   target <= {TARGET_REFRESH_MS:g} ms: {verdict(ms(refresh['total']), TARGET_REFRESH_MS)}\n")
    out.flush()

    times = bench_switch(args.switches)
    p95 = ms(percentile(times, 0.95))
    out.write(f"switch   n to the next node's full ConnPool, {len(times)} switches over 3 live nodes\n")
    out.write(f"         p50 {ms(percentile(times, 0.5)):.0f} ms  p95 {p95:.0f} ms  max {ms(max(times)):.0f} ms"
              f"   target p95 <= {TARGET_SWITCH_P95_MS:g} ms: {verdict(p95, TARGET_SWITCH_P95_MS)}\n")
    out.flush()

    memory = bench_memory(args.seconds)
    peak = max(memory["cluster"], memory["all nodes"])
    out.write(f"memory   RSS with 10 endpoints: Cluster screen {memory['cluster']:.1f} MB, ConnPool all nodes "
              f"{memory['all nodes']:.1f} MB ({memory['threads']} threads)"
              f"   target <= {TARGET_RSS_MB:g} MB: {verdict(peak, TARGET_RSS_MB)}\n")
    if not memory["sum"]:
        out.write("         (the all-nodes view did not appear: that phase measured ConnPool alone)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
