"""Several ProxySQL admin test doubles at once: a ProxySQL Cluster from the cluster recording.

Each double serves one node's answers (``Recording.load("cluster", node=...)``). The
recording names the nodes 127.0.0.1:6042/6052/6062 in its cluster tables; the doubles listen
on free ports instead, so every table that names a node (runtime_proxysql_servers,
proxysql_servers, the stats_proxysql_servers_* tables) is rewritten by a transform to the
doubles' real ports: proxytop's --cluster discovery then finds the doubles themselves.

Nodes 2 and 3 were asked only for their own stats and cluster tables: what the double serves
for their other tables is described in Recording.load (configuration: node 1's; other stats
tables: empty, with node 1's columns).

Run by hand: ``python -m tests.cluster_doubles`` prints the -H list to use.
"""
from __future__ import annotations

import functools
import time
from typing import Dict, List, Optional, Sequence

from tests.proxysql_double import CLUSTER_NODES, ProxySQLDouble, Recording

NODE_TABLES = ("runtime_proxysql_servers", "proxysql_servers", "stats_proxysql_servers_metrics",
               "stats_proxysql_servers_checksums")


@functools.lru_cache(maxsize=None)
def node_recording(node: str) -> Recording:
    """One node's recording, loaded once per test run (the file is parsed once per node)."""
    return Recording.load("cluster", node=node)


def remap_ports(ports: Dict[str, int]):
    """A transform: every (hostname, port) of a recorded node becomes the double's address."""

    def transform(columns: List[str], rows):
        if "port" in columns and "hostname" in columns:
            host_at, port_at = columns.index("hostname"), columns.index("port")
            for row in rows:
                real = ports.get(f"{row[host_at]}:{row[port_at]}")
                if real is not None:
                    row[port_at] = str(real)
        if "admin_mysql_ifaces" in columns:
            at = columns.index("admin_mysql_ifaces")
            for row in rows:
                real = ports.get(str(row[at]))
                if real is not None:
                    row[at] = f"127.0.0.1:{real}"
        return columns, rows

    return transform


class ClusterDoubles:
    """``start()`` one double per recorded node; ``doubles[i]`` is node i+1."""

    def __init__(self, nodes: Sequence[str] = CLUSTER_NODES, start_frame: int = 20):
        self.nodes = tuple(nodes)
        self.start_frame = start_frame
        self.doubles: List[ProxySQLDouble] = []

    def start(self) -> "ClusterDoubles":
        for node in self.nodes:
            double = ProxySQLDouble(recording=node_recording(node), start_frame=self.start_frame)
            self.doubles.append(double.start())
        ports = {node: double.port for node, double in zip(self.nodes, self.doubles)}
        transform = remap_ports(ports)
        for double in self.doubles:
            for table in NODE_TABLES + ("stats_proxysql_servers_clients_status",):
                double.transforms[table] = _chain(double.transforms.get(table), transform)
        return self

    def stop(self) -> None:
        for double in self.doubles:
            double.stop()

    @property
    def ports(self) -> List[int]:
        return [d.port for d in self.doubles]

    def label(self, index: int) -> str:
        return f"127.0.0.1:{self.doubles[index].port}"

    def hosts(self, count: Optional[int] = None) -> str:
        """The -H value naming the first ``count`` nodes (all by default)."""
        return ",".join(self.label(i) for i in range(count if count is not None else len(self.doubles)))


def _chain(first, second):
    if first is None:
        return second

    def both(columns, rows):
        return second(*first(columns, rows))

    return both


def main() -> None:
    cluster = ClusterDoubles().start()
    print(f"three ProxySQL nodes: proxytop -H {cluster.hosts()}   (or -H {cluster.label(0)} --cluster)",
          flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        cluster.stop()


if __name__ == "__main__":
    main()
