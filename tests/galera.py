"""A MariaDB Galera cluster on 127.0.0.1 for the tests: three nodes (by default) of Debian's
mariadb-server and galera-4, state transfer by rsync, each on free ports of its own.

    cluster = GaleraCluster().start()   # node 1 bootstraps, the others join one at a time
    cluster.nodes[1].query("SET GLOBAL wsrep_desync = ON")
    cluster.stop()

As root, the nodes run as the OS user ``mysql``: rsync's state transfer fails as root (the
joiner's rsync daemon drops to ``nobody`` and can't write the datadir). A joiner's data,
root's password included, comes from its donor. Starting takes 20 to 60 s on a busy two-core
machine (each joiner copies the donor's datadir), so one cluster serves a whole test module.
"""
from __future__ import annotations

import os
import time
from typing import Dict, List

import pymysql
import pytest

from tests.mariadb import MariaDBServer, MariaDBUnavailable, find_binary, free_port

PROVIDER = "/usr/lib/galera/libgalera_smm.so"
START_TIMEOUT = 240.0  # seconds for one node to start and be Synced (a joiner copies the donor's data)


def free_ports(count: int) -> List[int]:
    """``count`` distinct free ports."""
    ports: List[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


class GaleraNode(MariaDBServer):
    """One node: ``ports`` has its "mysql", "gcomm", "ist" and "sst" ports."""

    run_as = "mysql"

    def __init__(self, number: int, ports: Dict[str, int], cluster: str, address: str, bootstrap: bool):
        options = {
            "server_id": str(number), "binlog_format": "ROW", "default_storage_engine": "InnoDB",
            "innodb_autoinc_lock_mode": "2", "wsrep_on": "ON", "wsrep_provider": PROVIDER,
            "wsrep_cluster_name": cluster, "wsrep_cluster_address": address, "wsrep_node_name": f"n{number}",
            "wsrep_node_address": f"127.0.0.1:{ports['gcomm']}",
            "wsrep_node_incoming_address": f"127.0.0.1:{ports['mysql']}",
            "wsrep_provider_options": f"gmcast.listen_addr=tcp://127.0.0.1:{ports['gcomm']};"
                                      f"ist.recv_addr=127.0.0.1:{ports['ist']};gcache.size=16M",
            "wsrep_sst_method": "rsync", "wsrep_sst_receive_address": f"127.0.0.1:{ports['sst']}",
        }
        if bootstrap:
            options["wsrep_new_cluster"] = None
        super().__init__(options, name=f"galera-n{number}", port=ports["mysql"])
        self.bootstrap = bootstrap

    def start(self, timeout: float = START_TIMEOUT) -> "GaleraNode":
        super().start(timeout)
        self.wait_for(lambda s: s.get("wsrep_local_state_comment") == "Synced" and s.get("wsrep_ready") == "ON",
                      timeout, "Synced")
        return self

    def _launch(self, server: str, as_root, deadline: float, password: str = "") -> None:
        # a joiner's data, root's password with it, comes from its donor
        super()._launch(server, as_root, deadline, password if self.bootstrap else self.password)

    def _secure_root(self) -> None:
        if self.bootstrap:
            super()._secure_root()
        else:
            self.version = self.query("SELECT VERSION()")[0][0]

    def wsrep(self) -> Dict[str, str]:
        return {str(k): str(v) for k, v in self.query("SHOW GLOBAL STATUS LIKE 'wsrep%'")}

    def wait_for(self, condition, timeout: float, what: str) -> Dict[str, str]:
        """Poll the node's wsrep status until ``condition(status)`` holds."""
        deadline, status = time.monotonic() + timeout, {}
        while time.monotonic() < deadline:
            try:
                status = self.wsrep()
            except pymysql.err.MySQLError:
                status = {}
            if condition(status):
                return status
            time.sleep(0.2)
        raise AssertionError(f"{self.name} not {what} in {timeout:g}s: {status.get('wsrep_local_state_comment')}\n"
                             + self.log_tail())


class GaleraCluster:
    def __init__(self, size: int = 3, name: str = "proxytop-galera"):
        ports = free_ports(4 * size)
        self.ports = [dict(zip(("mysql", "gcomm", "ist", "sst"), ports[4 * n: 4 * n + 4])) for n in range(size)]
        address = "gcomm://" + ",".join(f"127.0.0.1:{p['gcomm']}" for p in self.ports)
        self.nodes = [GaleraNode(n + 1, p, name, address, bootstrap=n == 0) for n, p in enumerate(self.ports)]

    def start(self) -> "GaleraCluster":
        try:
            for node in self.nodes:  # one at a time: a joiner needs a Synced donor
                node.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()


def galera_or_skip(size: int = 3) -> GaleraCluster:
    """A started cluster; the test is skipped when MariaDB or galera-4 is not installed (fails
    instead under CI)."""
    try:
        find_binary("server")
        if not os.path.exists(PROVIDER):
            raise MariaDBUnavailable(f"{PROVIDER} not found (install Debian's galera-4 and rsync)")
    except MariaDBUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    return GaleraCluster(size).start()


def main() -> None:
    started = time.monotonic()
    cluster = GaleraCluster().start()
    print(f"started in {time.monotonic() - started:.1f}s: " + ", ".join(n.address for n in cluster.nodes))
    try:
        print(cluster.nodes[0].wsrep().get("wsrep_cluster_size"))
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
