"""Make the recording ``proxytop --demo`` replays (proxytop/data/demo.rec.gz).

It runs the real program, ``proxytop --batch --screen all --record FILE``, for about a minute
against:

- the ProxySQL admin test double (tests/proxysql_double.py), which serves the tables recorded
  from a real ProxySQL 2.7.2 under sysbench load, with its three backends (127.0.0.1:3311,
  3312, 3313) renamed to the ports of
- three throw-away MariaDB servers (tests/mariadb.py): the writer under the InnoDB tests' write
  load (tests/test_innodb_live.py, slow flushing so the checkpoint age climbs), two idle
  readers.

So every screen has something to show: the pool, rules, counters and sessions from ProxySQL,
the InnoDB flushing of the writer, and the disks those servers write to (IOstat roles).

    python -m tests.make_demo_recording [--seconds 60] [--output proxytop/data/demo.rec.gz]

Needs MariaDB installed (as the test suite does). The recording holds no password: the MariaDB
root password goes to proxytop through MYSQL_PWD and is never written.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Tuple

from tests.mariadb import MariaDBServer
from tests.proxysql_double import ProxySQLDouble, Recording
from tests.terminal import proxytop_command
from tests.test_innodb_live import LOAD_OPTIONS, WriteLoad

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUTPUT = os.path.join(os.path.dirname(HERE), "proxytop", "data", "demo.rec.gz")
RECORDED_PORTS = ("3311", "3312", "3313")  # the backends in the ProxySQL recording
PORT_COLUMNS = ("port", "srv_port")


def port_mapper(ports: Dict[str, str]) -> Callable:
    """A test-double transform: backend ports of the ProxySQL recording -> our servers' ports."""

    def transform(columns: List[str], rows: List[list]) -> Tuple[List[str], List[list]]:
        at = [i for i, c in enumerate(columns) if c.lower() in PORT_COLUMNS]
        for row in rows:
            for i in at:
                row[i] = ports.get(str(row[i]), row[i])
        return columns, rows

    return transform


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=60, help="length of the recording (default 60)")
    parser.add_argument("--output", default=DEFAULT_OUTPUT, help=f"where to write it (default {DEFAULT_OUTPUT})")
    args = parser.parse_args(argv)

    servers = [MariaDBServer(LOAD_OPTIONS, name="demo-writer")]
    servers += [MariaDBServer(name=f"demo-reader{i}") for i in (1, 2)]
    double = None
    load = None
    try:
        for server in servers:
            server.start()
            print(f"MariaDB {server.version} on {server.address}", file=sys.stderr)
        writer = servers[0]
        load = WriteLoad(writer, threads=1)
        load.prepare()
        double = ProxySQLDouble(recording=Recording.load())
        mapper = port_mapper(dict(zip(RECORDED_PORTS, (str(s.port) for s in servers))))
        for table in set(double.recording.series) | {"mysql_servers", "runtime_mysql_servers"}:
            double.transforms[table] = mapper
        errors = recorded_errors(start_frame=20)  # the backend errors the 2.7 recording lacks
        double.transforms["stats_mysql_errors"] = lambda c, r: mapper(*errors(c, r))
        double.start()
        load.start()
        time.sleep(3)  # let the load get going before the first reading
        output = os.path.abspath(args.output)
        if os.path.exists(output):
            os.remove(output)
        with tempfile.TemporaryDirectory(prefix="proxytop-demo-") as state:
            env = dict(os.environ, MYSQL_PWD=writer.password, XDG_STATE_HOME=state, NO_COLOR="1")
            command = list(proxytop_command()) + [
                "--batch", "--screen", "all", "--format", "json", "--count", str(args.seconds),
                "-P", str(double.port), "--mysql", writer.address, "--mysql-user", writer.user,
                "--record", output]
            print("running: " + " ".join(command), file=sys.stderr)
            result = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                    timeout=args.seconds * 3 + 60)
        if result.returncode != 0:
            print(f"proxytop exited with {result.returncode}", file=sys.stderr)
            return 1
        print(f"{output}: {os.path.getsize(output):,} bytes; {load.statements:,} writes during the run",
              file=sys.stderr)
        return 0
    finally:
        if load is not None:
            load.stop()
        if double is not None:
            double.stop()
        for server in servers:
            server.stop()


CLUSTER_PORTS = {"3331": "3311", "3332": "3312", "3333": "3313"}  # the cluster recording's backends
CLUSTER_T0 = 1795385808  # the cluster recording's wall clock at t=0 (README-cluster.md)


def recorded_errors(start_frame: int) -> Callable:
    """A test-double transform: the 2.7 recording has no backend errors; serve those of the
    recorded cluster (1064, 1146, 1062, 1290), one frame per reading, on the 2.7 backends'
    ports, their first/last_seen moved to now."""
    frames = Recording.load("cluster").series["stats_mysql_errors"]
    shift = int(time.time()) - (CLUSTER_T0 + 2 * start_frame)  # read every 2 s when recorded
    served = [start_frame]

    def transform(columns: List[str], rows: List[list]) -> Tuple[List[str], List[list]]:
        recorded_columns, recorded = frames[min(served[0], len(frames) - 1)]
        served[0] += 1
        out = []
        for row in recorded:
            values = dict(zip(recorded_columns, row))
            values["port"] = CLUSTER_PORTS.get(values["port"], values["port"])
            for name in ("first_seen", "last_seen"):
                values[name] = str(int(values[name]) + shift)
            out.append([values.get(c) for c in columns])
        return columns, out

    return transform


if __name__ == "__main__":
    sys.exit(main())
