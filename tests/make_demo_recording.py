"""Make the recording ``proxytop --demo`` replays (proxytop/data/demo.rec.gz).

It runs the real program, ``proxytop --batch --screen all --record FILE``, for about a minute
against the ports of a real setup:

- the ProxySQL admin test double (tests/proxysql_double.py) on 127.0.0.1:6032, serving the
  tables recorded from a real ProxySQL 2.7.2 under sysbench load, whose backends are
  127.0.0.1:3311 (writer), 3312 and 3313 (readers, replicas of the writer);
- three throw-away MariaDB servers (tests/mariadb.py) on exactly those ports: the writer under
  the InnoDB tests' write load (tests/test_innodb_live.py, slow flushing so the checkpoint age
  climbs), performance_schema on (the Statements screen) and with a session idle in an open
  transaction (the Sessions screen's usual blocker), another waiting for its row and a deadlock
  provoked before the run (the Locks screen's); the two readers replicate its writes.

So every screen has something to show: the pool, rules, counters and sessions from ProxySQL,
the InnoDB flushing of the writer, and the disk those servers write to (IOstat roles; its
space view, f: the filesystem, its growth, each server's binary log and largest table); and
the Events screen a ProxySQL variable changed, the query rules loaded again and a reader's
long_query_time set, some seconds into the run.

Before the recorded minute, and before the write load starts, proxytop's IOstat watches the
disk serve single direct reads and writes, one at a time, until it has learned its
single-request read and write awaits; the recorded run starts from those saved baselines, so its saturation columns show
ratios rather than "learning". On a machine too busy to learn them within two minutes (the
learner takes only intervals with a short queue), the awaits of the single requests are
measured instead and given with ``--disk-baseline``. Afterwards the disk is renamed ``sda`` (and its partitions ``sdaN``)
the baseline file's temporary path shown as the default one, the servers' temporary folders
as /var/lib/mysql (socket /run/mysqld/mysqld.sock) and their host names as db1-db3: the
recording shows nothing of the machine it was made on.

Made again, from the top of the checkout (after ./tests/run has made .venv), with one command:

    .venv/bin/python -m tests.make_demo_recording [--seconds 60] [--output proxytop/data/demo.rec.gz]

whenever a screen is added, a collector's data change, or the recording format does
(proxytop/recordings/recording.py: VERSION, TYPES); then run tests/test_demo.py. It fails,
and says which, when a collector's readings could not be recorded (a type of value missing from
recording.TYPES). Needs MariaDB installed (as the test suite does) and ports 6032 and 3311-3313
free. The recording holds no password: the MariaDB root password goes to proxytop through
MYSQL_PWD and is never written.
"""
from __future__ import annotations

import argparse
import bisect
import gzip
import json
import mmap
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import pymysql

from proxytop.collectors.baseline_file import STATE_NAME
from proxytop.metrics.iostat import DIRECTIONS, RULES, percentile
from proxytop.polling.devices import DeviceMapper
from proxytop.recordings.recording import iter_lines
from tests.mariadb import MariaDBServer
from tests.proxysql_double import RECORDINGS, ProxySQLDouble, Recording, StatsHistory, is_monitor_log
from tests.terminal import proxytop_command
from tests.test_innodb_live import LOAD_OPTIONS, WriteLoad
from tests.test_replication import REPL_PASSWORD, REPL_USER, change_master, running, unlogged, wait

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUTPUT = os.path.join(os.path.dirname(HERE), "proxytop", "data", "demo.rec.gz")
ADMIN_PORT = 6032
BACKEND_PORTS = (3311, 3312, 3313)  # the backends in the ProxySQL recording: writer, reader, reader
NEUTRAL_DISK = "sda"
SHOWN_STATE_FILE = f"~/.local/state/proxytop/{STATE_NAME}"  # where a DBA's own run keeps its baselines
WARM_UP_LIMIT = 120.0  # seconds to learn the disk's baselines before measuring them instead


def replicate(writer, readers) -> None:
    """Each reader a GTID replica of the writer, from the writer's position now (the load's
    tables, made next, reach them)."""
    unlogged(writer, f"CREATE USER '{REPL_USER}'@'%' IDENTIFIED BY '{REPL_PASSWORD}'",
             f"GRANT REPLICATION SLAVE ON *.* TO '{REPL_USER}'@'%'")
    for reader in readers:
        change_master(reader, writer)
    wait(lambda: all(running(reader) for reader in readers), what="the readers to replicate")


def busy_ports(ports) -> List[int]:
    busy = []
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                busy.append(port)
    return busy


class SingleRequests:
    """Direct 4 KiB reads and writes at random offsets of a file, one at a
    time (about 50 of each a second): they give the IOstat learner quiet intervals of both
    directions, and their own timings measure the disk's single-request awaits when the machine
    is too busy for proxytop to learn them (it learns only from intervals with a short queue)."""

    def __init__(self, folder: str, size: int = 64 << 20, per_second: float = 50.0):
        self.path = os.path.join(folder, "single-requests.bin")
        self.size = size
        self.pause = 1.0 / per_second
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.timings: Dict[str, List[float]] = {direction: [] for direction in DIRECTIONS}

    def start(self) -> "SingleRequests":
        with open(self.path, "wb") as handle:
            for _ in range(self.size >> 20):
                handle.write(os.urandom(1 << 20))
            handle.flush()
            os.fsync(handle.fileno())
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        direct = getattr(os, "O_DIRECT", 0)
        # a direct write returns when the device has it, like the writes iostat's w_await times
        # (flushes are counted apart); without direct I/O only O_DSYNC reaches the device
        fd = os.open(self.path, os.O_RDWR | (direct or os.O_DSYNC))
        buffer = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT requires
        try:
            while not self._stop.wait(self.pause):
                for direction in DIRECTIONS:
                    offset = random.randrange(self.size // 4096) * 4096
                    if not direct:  # no direct I/O here: drop the page from the cache
                        os.posix_fadvise(fd, offset, 4096, os.POSIX_FADV_DONTNEED)
                    started = time.perf_counter()
                    if direction == DIRECTIONS[0]:
                        os.preadv(fd, [buffer], offset)
                    else:
                        os.pwritev(fd, [buffer], offset)
                    self.timings[direction].append((time.perf_counter() - started) * 1000.0)
        finally:
            os.close(fd)
            buffer.close()

    def median_ms(self, direction: str) -> Optional[float]:
        timings = list(self.timings[direction])
        return round(percentile(timings, 50.0), 3) if timings else None

    @property
    def count(self) -> int:
        return sum(len(t) for t in self.timings.values())

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        try:
            os.remove(self.path)
        except OSError:
            pass


def disk_of(path: str) -> str:
    """The whole disk a path is on (sdb for /var/lib/mysql on sdb1)."""
    mapper = DeviceMapper()
    device, why = mapper.locate(path)
    if device is None:
        raise SystemExit(f"{path} has no block device ({why}): the IOstat screen would have nothing to show")
    return mapper.beneath(device)[-1] if mapper.kind(device) != "disk" else device


def learned_samples(state_file: str, disk: str) -> Dict[str, int]:
    """Samples per direction the saved baselines hold for ``disk`` (0 before the first save)."""
    try:
        with open(state_file, encoding="utf-8") as handle:
            entry = json.load(handle).get("devices", {}).get(disk, {})
    except (OSError, ValueError):
        return {direction: 0 for direction in DIRECTIONS}
    return {direction: len(entry.get(direction) or ()) for direction in DIRECTIONS}


def warm_up(command: List[str], env: Mapping[str, str], state_file: str, disk: str) -> Dict[str, int]:
    """Run proxytop's IOstat until the disk's read and write baselines are learned (it saves them
    the moment each becomes known) or WARM_UP_LIMIT passes; returns the samples saved."""
    process = subprocess.Popen(command + ["--screen", "iostat", "--count", str(int(WARM_UP_LIMIT) + 5)],
                               env=dict(env), stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + WARM_UP_LIMIT
    samples = learned_samples(state_file, disk)
    try:
        while time.monotonic() < deadline and process.poll() is None:
            samples = learned_samples(state_file, disk)
            if all(count >= RULES.min_samples for count in samples.values()):
                break
            time.sleep(1)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(30)
    return learned_samples(state_file, disk)


# ----- what the recording shows of this machine -------------------------------------------------

def disk_renames(names, disk: str) -> Dict[str, str]:
    """This machine's disk and its partitions -> the neutral names.

    >>> disk_renames(["vda", "vda1", "vda15", "loop0", "vdab"], "vda")
    {'vda': 'sda', 'vda1': 'sda1', 'vda15': 'sda15'}
    >>> disk_renames(["nvme0n1", "nvme0n1p2"], "nvme0n1")
    {'nvme0n1': 'sda', 'nvme0n1p2': 'sda2'}
    """
    renames = {}
    for name in names:
        if name == disk:
            renames[name] = NEUTRAL_DISK
            continue
        partition = re.fullmatch(re.escape(disk) + r"p?(\d+)", name)
        if partition:
            renames[name] = NEUTRAL_DISK + partition.group(1)
    return renames


def renamed(value: Any, renames: Mapping[str, str]) -> Any:
    """A recorded value (its JSON form) with every device name, as a key or a string, renamed.

    >>> renamed({"vda": {"f": {"name": "vda", "n": 3}}, "roles": {"vda1": ["data"]}}, {"vda": "sda", "vda1": "sda1"})
    {'sda': {'f': {'name': 'sda', 'n': 3}}, 'roles': {'sda1': ['data']}}
    """
    if isinstance(value, dict):
        return {renames.get(k, k): renamed(v, renames) for k, v in value.items()}
    if isinstance(value, list):
        return [renamed(v, renames) for v in value]
    if isinstance(value, str):
        return renames.get(value, value)
    return value


def device_fields(value: Any) -> List[str]:
    """Every string under a key "device" in a recorded value (its JSON form).

    >>> device_fields({"f": {"filesystems": {"__t": [{"f": {"device": "vda1", "mount": "/"}}]}}})
    ['vda1']
    """
    found: List[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "device" and isinstance(item, str):
                found.append(item)
            else:
                found += device_fields(item)
    elif isinstance(value, list):
        for item in value:
            found += device_fields(item)
    return found


def placed(value: Any, folders: Mapping[str, str], hosts: Mapping[str, str]) -> Any:
    """A recorded value with the test servers' temporary folders at a real server's places and,
    in a server's variables, its host name by its port.

    >>> placed({"datadir": "/tmp/x-1/data/", "port": "3311", "hostname": "vm", "socket": "/tmp/x-1/mysqld.sock"},
    ...        {"/tmp/x-1/data": "/var/lib/mysql", "/tmp/x-1/mysqld.sock": "/run/mysqld/mysqld.sock"}, {"3311": "db1"})
    {'datadir': '/var/lib/mysql/', 'port': '3311', 'hostname': 'db1', 'socket': '/run/mysqld/mysqld.sock'}
    """
    if isinstance(value, dict):
        out = {k: placed(v, folders, hosts) for k, v in value.items()}
        if "datadir" in out and "hostname" in out and str(out.get("port")) in hosts:
            out["hostname"] = hosts[str(out["port"])]
        return out
    if isinstance(value, list):
        return [placed(v, folders, hosts) for v in value]
    if isinstance(value, str):
        for folder, place in folders.items():
            if value == folder or value.startswith(folder + "/"):
                return place + value[len(folder):]
    return value


def real_places(servers) -> Dict[str, str]:
    """Each test server's temporary folders -> where a packaged MariaDB keeps them."""
    folders = {}
    for server in servers:
        folders[os.path.join(server.basedir, "data")] = "/var/lib/mysql"
        folders[server.socket] = "/run/mysqld/mysqld.sock"
        folders[os.path.join(server.basedir, "tmp")] = "/tmp"
        folders[server.basedir] = "/var/lib/mysql"
    return folders


def neutralise(path: str, disk: str, folders: Mapping[str, str] = {}, hosts: Mapping[str, str] = {}) -> None:
    """Rewrite the recording at ``path`` so that it shows nothing of this machine: neutral disk
    names, the baseline file at its default place, the servers' folders and host names those
    of a real setup."""
    lines = []
    for line in iter_lines(path):
        envelope_text, tab, data_text = line.decode("utf-8").partition("\t")
        envelope = json.loads(envelope_text)
        if tab and folders:
            data_text = json.dumps(placed(json.loads(data_text), folders, hosts), separators=(",", ":"),
                                   allow_nan=False)
        if envelope.get("k") == "h":  # --disk-baseline DEV=... among the recorded options
            envelope["options"] = renamed(envelope.get("options", {}), {disk: NEUTRAL_DISK})
            envelope_text = json.dumps(envelope, separators=(",", ":"), allow_nan=False)
        if envelope.get("k") == "s" and envelope.get("c") == "host.diskstats" and tab:
            data = json.loads(data_text)
            fields = data.get("f", {})
            data = renamed(data, disk_renames(fields.get("devices", {}), disk))
            if data.get("f", {}).get("state_file"):
                data["f"]["state_file"] = SHOWN_STATE_FILE
            data_text = json.dumps(data, separators=(",", ":"), allow_nan=False)
        if envelope.get("k") == "s" and envelope.get("c") == "host.space" and tab:
            # IOstat's space view: each filesystem's block device, under its neutral name too
            data = json.loads(data_text)
            names = disk_renames(device_fields(data), disk)
            names.update({f"/dev/{old}": f"/dev/{new}" for old, new in names.items()})  # the mount source
            data = renamed(data, names)
            data_text = json.dumps(data, separators=(",", ":"), allow_nan=False)
        lines.append(envelope_text + tab + data_text + "\n")
    temporary = path + ".tmp"
    with gzip.open(temporary, "wt", encoding="utf-8") as handle:
        handle.writelines(lines)
    os.replace(temporary, path)


def unrecorded(path: str) -> List[str]:
    """Collectors that took readings none of which the recording holds: the recorder refused
    them all (a value of a type missing from recording.TYPES; proxytop logs which)."""
    read, recorded = set(), set()
    for line in iter_lines(path):
        envelope = json.loads(line.split(b"\t", 1)[0])
        if envelope.get("k") == "col":
            read.add(envelope["name"])
        elif envelope.get("k") == "s":
            recorded.add(envelope["c"])
    return sorted(read - recorded)


def last_baselines(path: str) -> Dict[str, Any]:
    """The neutral disk's (read, write) baselines in the recording's last disk snapshot."""
    last = None
    for line in iter_lines(path):
        if b'"c":"host.diskstats"' in line.split(b"\t", 1)[0]:
            last = line
    if last is None:
        return {}
    baselines = json.loads(last.split(b"\t", 1)[1])["f"]["baselines"].get(NEUTRAL_DISK, {})
    return {direction: pair["f"] for direction, pair in zip(DIRECTIONS, baselines.get("__t", ()))}


CLUSTER_TABLES = ("stats_proxysql_servers_metrics", "stats_proxysql_servers_checksums",
                  "stats_proxysql_servers_clients_status")


def graft_cluster_tables(recording: Recording) -> None:
    """The single-node recording has no ProxySQL Cluster: the Cluster screen's tables are
    node 1's of the three-node cluster recording (its peers at 127.0.0.1:6042/6052/6062, node 3
    with drifted query rules), so the demo shows that screen too."""
    cluster = Recording.load("cluster")
    # node 1 is the node the demo watches: its peers name it by the demo's admin port
    watched = {"6042": str(ADMIN_PORT)}
    for table in CLUSTER_TABLES:
        recording.series[table] = [(columns, _renamed_ports(columns, rows, watched))
                                   for columns, rows in cluster.series[table]]
    key = ("admin", "select * from runtime_proxysql_servers")
    entry = dict(cluster.fixed[key])
    entry["rows"] = _renamed_ports(entry["columns"], entry["rows"], watched)
    recording.fixed[key] = entry


OWN_METRICS = {"Uptime_s": "ProxySQL_Uptime", "Queries": "Questions",  # metrics column: stats_mysql_global
               "Client_Connections_connected": "Client_Connections_connected",
               "Client_Connections_created": "Client_Connections_created"}


def served_global(double: ProxySQLDouble) -> Dict[str, str]:
    """The watched ProxySQL's counters now: the 2.7 recording's stats_mysql_global reading
    served last (variable -> value)."""
    served = max(0, double.frames.get("stats_mysql_global", 1) - 1)
    frames = double.recording.series["stats_mysql_global"]
    _columns, rows = frames[min(served, len(frames) - 1)]
    return {row[0]: row[1] for row in rows}


def own_metrics(double: ProxySQLDouble) -> Callable:
    """A test-double transform of stats_proxysql_servers_metrics: the watched node's own row
    reports the watched ProxySQL's counters (the 2.7 recording's stats_mysql_global reading
    served last), taken anew at each of its recorded reports (every ~10 s). The grafted
    cluster's node 1 is another ProxySQL: as recorded its uptime and Queries/s would
    contradict the header's (up 39s, Q/s 21,232 beside Uptime 1m32s, Queries/s 682)."""
    reported: Dict[str, Any] = {}

    def transform(columns: List[str], rows: List[list]) -> Tuple[List[str], List[list]]:
        port, uptime = columns.index("port"), columns.index("Uptime_s")
        out = []
        for row in rows:
            row = list(row)
            if row[port] == str(ADMIN_PORT):
                if reported.get("report") != row[uptime]:  # a new report: the counters of now
                    values = served_global(double)
                    reported.update(report=row[uptime], values={
                        column: values[name] for column, name in OWN_METRICS.items() if name in values})
                for column, value in reported["values"].items():
                    row[columns.index(column)] = value
            out.append(row)
        return columns, out

    return transform


def checks_since_start(double: ProxySQLDouble) -> Callable:
    """A test-double transform of stats_proxysql_servers_checksums: nothing the watched node
    saw or counted before it started. The grafted cluster's node 1 had been up about a minute
    longer than the watched ProxySQL (the 2.7 recording's): as recorded, its diff_check (one
    check a second since it started) and changed_at went back before the watched node's start
    ("differs on node-3 for 1m43s", ↑103, beside an uptime of 41 s). On the cluster's clock
    (updated_at) the watched node started its ProxySQL_Uptime ago; a changed_at before that
    becomes that moment (the node's first check), diff_check is at most the checks made since
    (cluster_check_interval_ms 1000: one a second), and the node's own configuration was loaded
    (epoch) when it started at the earliest."""

    def transform(columns: List[str], rows: List[list]) -> Tuple[List[str], List[list]]:
        if not rows or "diff_check" not in columns:
            return columns, rows
        port, epoch, changed_at, updated_at, diff_check = (
            columns.index(c) for c in ("port", "epoch", "changed_at", "updated_at", "diff_check"))
        now = max(int(row[updated_at]) for row in rows)
        uptime = int(served_global(double).get("ProxySQL_Uptime", now))
        started = now - uptime
        out = []
        for row in rows:
            row = list(row)
            row[changed_at] = str(max(int(row[changed_at]), started))
            row[diff_check] = str(min(int(row[diff_check]), max(0, int(row[updated_at]) - started)))
            if row[port] == str(ADMIN_PORT):
                row[epoch] = str(max(int(row[epoch]), started))
            out.append(row)
        return columns, out

    return transform


def _renamed_ports(columns, rows, ports: Mapping[str, str]):
    at = columns.index("port") if "port" in columns else None
    if at is None:
        return rows
    return [row[:at] + [ports.get(row[at], row[at])] + row[at + 1:] for row in rows]


def digests_seen_now() -> Callable:
    """A test-double transform: the recorded digests' first/last_seen moved by one shift, so
    that the newest of the first reading is now (the recording's epoch is days old: every digest
    would look idle for days; a shift that changed between readings would look like resets)."""
    shift: List[int] = []

    def transform(columns: List[str], rows: List[list]) -> Tuple[List[str], List[list]]:
        if "last_seen" not in columns or not rows:
            return columns, rows
        first_at, last_at = columns.index("first_seen"), columns.index("last_seen")
        if not shift:
            shift.append(int(time.time()) - max(int(row[last_at] or 0) for row in rows))
        return columns, _shifted(rows, (first_at, last_at), shift[0])

    return transform


def monitor_on_run_clock(double: ProxySQLDouble, clock_table: str = "stats_mysql_connection_pool") -> Dict[str, Callable]:
    """Test-double transforms for the monitor logs: the rows ProxySQL had logged when the
    connection pool reading the double serves now was recorded, their time_start_us moved onto
    this run's clock. The 2.7 recording was made days before the run and read its monitor logs
    every 10 s, the pool every second: served as recorded, the demo's checks would be days
    old and would run ahead of the pool's statuses (a ping error beside an ONLINE server).
    When the pool's readings are served faster than the run's clock, the checks stop at now."""
    series = double.recording.series
    logs = [table for table in series if is_monitor_log(table)]
    pool_times = [t - recorded_times(clock_table, "2.7", node=None)[0]
                  for t in recorded_times(clock_table, "2.7", node=None)]

    def newest(table: str, rows) -> int:
        at = series[table][0][0].index("time_start_us")
        return max((int(row[at]) for row in rows), default=0)

    # the pool's t=0 on the monitor's clock: the newest check of the first readings (taken with it)
    start_us = max(newest(table, series[table][0][1]) for table in logs)
    shift: List[int] = []

    def transform_for(table: str) -> Callable:
        columns_all, rows_all = series[table][-1]  # every row the recording logged
        at = columns_all.index("time_start_us")

        def transform(columns: List[str], rows: List[list]) -> Tuple[List[str], List[list]]:
            served = max(0, min(len(pool_times) - 1, double.frames.get(clock_table, 1) - 1))
            until_us = start_us + int(pool_times[served] * 1e6)
            now_us = int(time.time() * 1e6)
            if not shift:  # the moment of the first reading is now on the run's clock
                shift.append(now_us - until_us)
            # the pool's readings may be served faster than one a second: never a check from the future
            until_us = min(until_us, now_us - shift[0])
            kept = [row for row in rows_all if int(row[at]) <= until_us]
            return list(columns_all), _shifted(kept, (at,), shift[0])

        return transform

    return {table: transform_for(table) for table in logs}


def _shifted(rows: List[list], columns: Tuple[int, ...], shift: int) -> List[list]:
    out = []
    for row in rows:
        row = list(row)
        for at in columns:
            if row[at] is not None:
                row[at] = str(int(row[at]) + shift)
        out.append(row)
    return out


# seconds into the run: the module versions' second reading (every 10 s) sees the reload, the
# variables' second (every 30 s) the variables
SETTINGS_CHANGED_AFTER = 8.0  # (after proxytop has started and read them once, even on a busy machine)


def change_settings(double: ProxySQLDouble, reader: MariaDBServer) -> None:
    """For the Events screen: an admin raises ProxySQL's mysql-max_connections and loads the
    query rules again (a new version, the same checksum), and a DBA sets a reader's
    long_query_time."""
    _columns, rows = double.first_frame("runtime_global_variables")
    double.replace_table("runtime_global_variables",
                         [[row[0], "4096" if row[0] == "mysql-max_connections" else row[1]] for row in rows])
    double.replace_table("runtime_mysql_query_rules", double.first_frame("runtime_mysql_query_rules")[1])
    reader.query("SET GLOBAL long_query_time = 2")


def hold_a_transaction(server: MariaDBServer):
    """A session idle in an open transaction that has locked a row (of a table of its own: the
    write load never waits for it), as an application that forgot to commit leaves one."""
    conn = server.connect()
    with conn.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS load_db.orders (id INT PRIMARY KEY, state VARCHAR(16)) ENGINE=InnoDB")
        cursor.execute("REPLACE INTO load_db.orders VALUES (1, 'new'), (2, 'new'), (3, 'new'), (4, 'new')")
        cursor.execute("BEGIN")
        cursor.execute("UPDATE load_db.orders SET state = 'paid' WHERE id = 1")
    return conn


def deadlock_then_wait(server: MariaDBServer) -> Tuple[list, threading.Thread]:
    """For the Locks screen: a deadlock between two sessions (rows of their own), then a session
    waiting for the row hold_a_transaction keeps locked (for the whole run). Returns the
    connections and the waiting thread: close them once that row is released and the thread
    is done (closing a connection another thread reads on blocks both)."""
    first, second, waiter = server.connect(), server.connect(), server.connect()
    with first.cursor() as a, second.cursor() as b:
        a.execute("BEGIN")
        a.execute("UPDATE load_db.orders SET state = 'a' WHERE id = 3")
        b.execute("BEGIN")
        b.execute("UPDATE load_db.orders SET state = 'b' WHERE id = 4")
        crossing = threading.Thread(target=lambda: _quietly(a, "UPDATE load_db.orders SET state = 'a' WHERE id = 4"))
        crossing.start()
        time.sleep(0.5)  # a waits for b's row: b's next statement closes the cycle
        _quietly(b, "UPDATE load_db.orders SET state = 'b' WHERE id = 3")
        crossing.join(10)
    first.rollback()
    second.rollback()
    with waiter.cursor() as cursor:
        cursor.execute("SET SESSION innodb_lock_wait_timeout = 3600")
    waiting = threading.Thread(target=_quietly, daemon=True,
                               args=(waiter.cursor(), "UPDATE load_db.orders SET state = 'shipped' WHERE id = 1"))
    waiting.start()
    return [first, second, waiter], waiting


def _quietly(cursor, sql: str) -> None:
    try:
        cursor.execute(sql)
    except pymysql.err.MySQLError:
        pass  # the deadlock's victim, or the waiter when the run ends


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=60, help="length of the recording (default 60)")
    parser.add_argument("--output", default=DEFAULT_OUTPUT, help=f"where to write it (default {DEFAULT_OUTPUT})")
    args = parser.parse_args(argv)
    ports = (ADMIN_PORT,) + BACKEND_PORTS
    deadline = time.monotonic() + 30  # a port briefly taken by some client's connection comes free
    while busy_ports(ports) and time.monotonic() < deadline:
        time.sleep(1)
    busy = busy_ports(ports)
    if busy:
        print(f"ports {', '.join(map(str, busy))} are in use: the demo is recorded on the ports of a real "
              f"setup (ProxySQL admin {ADMIN_PORT}, backends {BACKEND_PORTS[0]}-{BACKEND_PORTS[-1]})", file=sys.stderr)
        return 1

    # the writer with performance_schema on: the Statements screen shows its statement digest
    # the readers replicate from the writer (the Replication screen's channels, a primary's
    # binary log): the writer writes one, unlike the InnoDB tests' load
    writer_options = dict(LOAD_OPTIONS, performance_schema="ON", log_bin="mariadb-bin", server_id="1")
    writer_options.pop("skip_log_bin")
    servers = [MariaDBServer(writer_options, name="demo-writer", port=BACKEND_PORTS[0])]
    servers += [MariaDBServer({"server_id": str(i + 1)}, name=f"demo-reader{i}", port=port)
                for i, port in enumerate(BACKEND_PORTS[1:], 1)]
    double = None
    load = None
    probes = None
    held = None
    others: list = []
    waiting = None
    try:
        for server in servers:
            server.start()
            print(f"MariaDB {server.version} on {server.address}", file=sys.stderr)
        writer = servers[0]
        replicate(writer, servers[1:])
        disk = disk_of(writer.datadir)
        load = WriteLoad(writer, threads=1)
        load.prepare()
        recording = Recording.load()
        graft_cluster_tables(recording)
        # ProxySQL's own history (stats_history) up to the demo's start: six hours of minutes and a
        # week of hours before them, of the recorded shapes (docs/proxysql-history.md)
        history = StatsHistory.recorded().generated(end=int(time.time()) // 60 * 60, days=0.25, hour_days=8)
        double = ProxySQLDouble(port=ADMIN_PORT, recording=recording, history=history)
        double.start()
        probes = SingleRequests(writer.basedir).start()
        output = os.path.abspath(args.output)
        if os.path.exists(output):
            os.remove(output)
        with tempfile.TemporaryDirectory(prefix="proxytop-demo-") as state:
            env = dict(os.environ, MYSQL_PWD=writer.password, XDG_STATE_HOME=state, NO_COLOR="1")
            command = list(proxytop_command()) + [
                "--batch", "--format", "json", "-P", str(ADMIN_PORT), "--mysql", writer.address,
                "--mysql-user", writer.user, "--digest-min-interval", str(DIGEST_EVERY)]
            state_file = os.path.join(state, "proxytop", STATE_NAME)
            print(f"learning the single-request awaits of {disk} (at most {WARM_UP_LIMIT:.0f} s)", file=sys.stderr)
            samples = warm_up(command, env, state_file, disk)
            print(f"baseline samples of {disk}: {samples} (needed {RULES.min_samples} each)", file=sys.stderr)
            # the warm-up's header took readings of the pool and the counters (a reading per
            # second for up to two minutes): the recorded minute starts where it would without
            # one, and never runs past the 2.7 recording's end into its start (a ProxySQL restart)
            double.rewind()
            double.transforms["stats_mysql_errors"] = recorded_errors(start_frame=20)  # errors the 2.7 recording lacks
            double.transforms["stats_mysql_query_digest"] = digests_seen_now()
            double.set_frame("stats_mysql_query_digest", 1)  # reading 0 (t≈0, before the load) is empty
            load.start()
            held = hold_a_transaction(writer)
            others, waiting = deadlock_then_wait(writer)
            # from here on the monitor's checks follow the pool's readings, on the run's clock
            double.transforms.update(monitor_on_run_clock(double))
            double.transforms["stats_proxysql_servers_metrics"] = own_metrics(double)
            double.transforms["stats_proxysql_servers_checksums"] = checks_since_start(double)
            time.sleep(3)  # let the load get going before the first reading
            recording = command + ["--screen", "all", "--count", str(args.seconds), "--record", output]
            if any(count < RULES.min_samples for count in samples.values()):
                # too busy a machine to learn: the baselines are measured and given by hand
                measured = [probes.median_ms(direction) for direction in DIRECTIONS]
                print(f"measured single-request awaits of {disk}: {measured} ms", file=sys.stderr)
                recording += ["--disk-baseline", f"{disk}={measured[0]},{measured[1]}"]
            print("running: " + " ".join(recording), file=sys.stderr)
            changes = threading.Timer(SETTINGS_CHANGED_AFTER, change_settings, (double, servers[1]))
            changes.start()
            try:
                result = subprocess.run(recording, env=env, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                        timeout=args.seconds * 3 + 60)
            finally:
                changes.cancel()
        if result.returncode != 0:
            print(f"proxytop exited with {result.returncode}", file=sys.stderr)
            return 1
        missing = unrecorded(output)
        if missing:
            print(f"readings of {', '.join(missing)} could not be recorded: add their types to "
                  f"proxytop/recordings/recording.py TYPES", file=sys.stderr)
            return 1
        hosts = {str(port): f"db{i}" for i, port in enumerate(BACKEND_PORTS, 1)}
        neutralise(output, disk, real_places(servers), hosts)
        baselines = last_baselines(output)
        print(f"{output}: {os.path.getsize(output):,} bytes; {load.statements:,} writes and {probes.count:,} "
              f"single requests during the run", file=sys.stderr)
        for direction, base in baselines.items():
            print(f"  {NEUTRAL_DISK} {direction} baseline: {base['ms']} ms ({base['source']}, {base['samples']} samples)",
                  file=sys.stderr)
        if not baselines or any(base["source"] == "learning" for base in baselines.values()):
            print("  a baseline is still being learned: the saturation columns will say so", file=sys.stderr)
        return 0
    finally:
        if held is not None:
            held.close()  # (the waiter gets its row and returns)
        if waiting is not None:
            waiting.join(30)
        for conn in others:
            conn.close()
        if probes is not None:
            probes.stop()
        if load is not None:
            load.stop()
        if double is not None:
            double.stop()
        for server in servers:
            server.stop()


CLUSTER_PORTS = {"3331": "3311", "3332": "3312", "3333": "3313"}  # the cluster recording's backends
CLUSTER_T0 = 1795385808  # the cluster recording's wall clock at t=0 (README-cluster.md)
CLUSTER_NODE = "127.0.0.1:6042"  # the node Recording.load("cluster") serves
# The 2.7 recording read stats_mysql_query_digest every 10 s (README.md) and the test double
# serves one recorded reading per query: proxytop reads it at that pace too, or the digests'
# first/last_seen would run faster than the demo's clock (every 5 s, its default: twice as fast).
DIGEST_EVERY = 10


def recorded_times(table: str, recording: str = "cluster", node: str = CLUSTER_NODE) -> List[float]:
    """When each reading of ``table`` that the double serves was taken (t, seconds since the
    recording started): the readings Recording.load keeps as the table's series."""
    times = []
    with gzip.open(RECORDINGS[recording], "rt", encoding="utf-8") as handle:
        for line in handle:
            entry = json.loads(line)
            if (entry.get("node", node) == node and entry["user"] == "admin" and "rows" in entry
                    and entry["sql"] == f"select * from {table}"):
                times.append(float(entry["t"]))
    return times


def recorded_errors(start_frame: int) -> Callable:
    """A test-double transform: the 2.7 recording has no backend errors; serve those of the
    recorded cluster (1064, 1146, 1062, 1290) on the 2.7 backends' ports, on the demo's clock:
    from ``start_frame`` on, the reading recorded as many seconds later as have passed since
    the first one served (the cluster's were read every 2 s, proxytop reads them every second),
    their first/last_seen moved by one shift so that the first reading served is now."""
    frames = Recording.load("cluster").series["stats_mysql_errors"]
    times = recorded_times("stats_mysql_errors")
    assert len(times) == len(frames), "the errors' readings and their times differ"
    started: List[float] = []  # monotonic time of the first reading served, and the shift

    def transform(columns: List[str], rows: List[list]) -> Tuple[List[str], List[list]]:
        if not started:
            started.extend((time.monotonic(), int(time.time()) - int(CLUSTER_T0 + times[start_frame])))
        due = times[start_frame] + time.monotonic() - started[0]
        shift = started[1]
        index = max(start_frame, min(len(frames) - 1, bisect.bisect_right(times, due) - 1))
        recorded_columns, recorded = frames[index]
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
