"""A ProxySQL admin interface test double.

A real MySQL-protocol server (tests/mysql_protocol.py: handshake, mysql_native_password — or
caching_sha2_password's full authentication with the server's RSA key, ``sha2_rsa_key=`` —,
COM_QUERY, text result sets) on a local port, answering from SQLite like ProxySQL does, with the tables and time series
recorded from a real ProxySQL 2.7.2 (tests/data/proxysql-2.7.2.jsonl.gz).

Quirks reproduced: every value is sent as text (VAR_STRING); SQLite errors come back as errno
1045 "ProxySQL Admin Error: ..."; a stats table is refreshed only when its exact (lower-case)
name is in the query and is emptied after each query; only the first of several statements
runs; the read-only ``stats`` user sees only the stats tables; KILL CONNECTION works for admin
users only, KILL QUERY is a syntax error.

Replay: each query that names a time-series table gets that table's next recorded state, so
counters move and rates appear. Tests can stop the double, make it hang (accept and never
answer), bring it back, present ProxySQL 1.4's column set, and transform any table.

``ProxySQLDouble(traffic=True)`` (``--traffic``) plays ProxySQL's traffic port instead: user
sbtest/sbtest, ``select @@version_comment limit 1`` answered by the proxy, the rest by a MariaDB
behind it (no stats tables: error 1109).

Run it by hand: ``python -m tests.proxysql_double --port 6032``.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import sqlite3
import struct
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from tests.mysql_protocol import ProtocolServer, QueryError

DATA = os.path.join(os.path.dirname(__file__), "data")
RECORDING = os.path.join(DATA, "proxysql-2.7.2.jsonl.gz")
# The recordings the double can serve (each described in ../shared/proxysql/README*.md):
#  "2.7"     one ProxySQL 2.7.2 under sysbench load, a reader shunned for a minute;
#  "cluster" three 2.7.2 nodes (127.0.0.1:6042/6052/6062) over MariaDB replication: lag,
#            monitor logs, errors, refused logins, 109 digests, query-rule drift on node 3;
#  "3.0"     ProxySQL 3.0.1 with a MariaDB and a PostgreSQL backend (every stats_pgsql_* table).
RECORDINGS = {
    "2.7": RECORDING,
    "cluster": os.path.join(DATA, "proxysql-2.7.2-cluster.jsonl.gz"),
    "3.0": os.path.join(DATA, "proxysql-3.0.1.jsonl.gz"),
}
CLUSTER_NODES = ("127.0.0.1:6042", "127.0.0.1:6052", "127.0.0.1:6062")

USERS = {  # user -> (password, kind)
    "admin": ("admin", "admin"),
    "radmin": ("radmin", "admin"),
    "stats": ("stats", "stats"),
}

# Playing ProxySQL's traffic port (ProxySQLDouble(traffic=True)): the frontend users of
# mysql_users log in, ProxySQL answers "select @@version_comment limit 1" itself and forwards
# every other query to a backend (a MariaDB whose default schema is sbtest).
TRAFFIC_USERS = {"sbtest": ("sbtest", "traffic")}
BACKEND_VERSION = "10.11.19-MariaDB"
BACKEND_TABLES = ("sbtest1", "sbtest2", "sbtest3", "sbtest4")

# Column sets of ProxySQL 1.4, derived from 2.7's by dropping what 1.4 lacks.
COLUMNS_1_4_DROPPED = {
    "stats_mysql_connection_pool": {"MaxConnUsed", "Queries_GTID_sync"},
    "mysql_query_rules": {"cache_empty_result", "cache_timeout", "gtid_from_hostgroup", "attributes"},
    "runtime_mysql_query_rules": {"cache_empty_result", "cache_timeout", "gtid_from_hostgroup", "attributes"},
    "stats_mysql_processlist": {"status_flags", "extended_info"},
    "mysql_servers": {"gtid_port"},
    "runtime_mysql_servers": {"gtid_port"},
}

# The monitor logs of ProxySQL 2.7.2 (SHOW CREATE TABLE monitor.<t> in the cluster recording;
# 3.0.1's are the same) that a recording may list (SHOW TABLES FROM monitor) without reading them.
# ProxySQL checks read_only only on the servers of mysql_replication_hostgroups and replication
# lag only on servers with max_replication_lag > 0: a recording configured with neither (the 2.7
# and 3.0 recordings) had these tables, empty.
UNREAD_MONITOR_LOGS = {
    "mysql_server_read_only_log": ["hostname", "port", "time_start_us", "success_time_us", "read_only", "error"],
    "mysql_server_replication_lag_log": ["hostname", "port", "time_start_us", "success_time_us", "repl_lag",
                                         "error"],
    # No recording has Galera backends: the Galera monitor's log and hostgroups are served empty,
    # with the columns ProxySQL 2.7.2 gave (SHOW CREATE TABLE in the cluster recording; the same
    # in its source, MySQL_Monitor.hpp and ProxySQL_Admin.cpp). Tests that need
    # rows add them (a transform of the log, replace_table of the hostgroups): documented as such.
    "mysql_server_galera_log": ["hostname", "port", "time_start_us", "success_time_us", "primary_partition",
                                "read_only", "wsrep_local_recv_queue", "wsrep_local_state", "wsrep_desync",
                                "wsrep_reject_queries", "wsrep_sst_donor_rejects_queries", "pxc_maint_mode",
                                "error"],
}
UNRECORDED_RUNTIME_TABLES = {
    "runtime_mysql_galera_hostgroups": ["writer_hostgroup", "backup_writer_hostgroup", "reader_hostgroup",
                                        "offline_hostgroup", "active", "max_writers", "writer_is_also_reader",
                                        "max_transactions_behind", "comment"],
}

Rows = List[list]
Transform = Callable[[List[str], Rows], Tuple[List[str], Rows]]


# ----- the recording -------------------------------------------------------------------------
@dataclass
class Recording:
    """Answers of the real ProxySQL: fixed ones (by query text and user) and time series."""

    fixed: Dict[Tuple[str, str], dict] = field(default_factory=dict)
    series: Dict[str, List[Tuple[List[str], Rows]]] = field(default_factory=dict)
    create: Dict[str, str] = field(default_factory=dict)  # table -> CREATE TABLE from SHOW CREATE TABLE
    node: Optional[str] = None  # the node kept from a cluster recording

    @classmethod
    def load(cls, path: str = RECORDING, node: Optional[str] = None) -> "Recording":
        """Read a recording. ``path`` is a file or a key of RECORDINGS; ``node`` ("host:port")
        keeps one node's answers of a cluster recording (default: the first node recorded)."""
        path = RECORDINGS.get(path, path)
        rec = cls()
        first_node = None
        # "select * from <t>" (optionally "order by ...") is a reading of <t>; the monitor logs
        # are also read incrementally ("where time_start_us > N order by time_start_us").
        select_all = re.compile(r"^select \* from ([a-z_.]+)( where time_start_us > \d+)?( order by .*)?$")
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                entry = json.loads(line)
                entry_node = entry.get("node")
                if entry_node is not None:
                    first_node = first_node or entry_node
                    node = node or entry_node
                    if entry_node != node:
                        continue
                sql, user = entry["sql"], entry["user"]
                rec.fixed.setdefault((user, sql), entry)
                if sql.startswith("SHOW CREATE TABLE") and entry.get("rows"):
                    table, ddl = entry["rows"][0]
                    rec.create[table] = ddl
                match = select_all.match(sql)
                if match and user == "admin" and "rows" in entry:
                    name = match.group(1).split(".")[-1]
                    rec.series.setdefault(name, []).append((entry["columns"], entry["rows"]))
        rec.node = node
        if first_node is not None and node != first_node:
            # Nodes 2 and 3 of the cluster recording were asked only for their own stats and
            # cluster tables; their configuration is node 1's (README-cluster.md), apart from
            # what they answered themselves (node 3's drifted query rules).
            first = cls.load(path, node=first_node)
            for key, entry in first.fixed.items():
                rec.fixed.setdefault(key, entry)
            # The stats tables they were never asked about (processlist, commands counters,
            # digests, errors, users, clients status, the monitor logs...) are served empty,
            # with node 1's columns: there is no recorded content to serve, and inventing
            # some would make tests pass on data no ProxySQL produced. Tests that need rows
            # there add them with a transform.
            for name, frames in first.series.items():
                if name not in rec.series and (name.startswith("stats_") or is_monitor_log(name)):
                    rec.series[name] = [(frames[0][0], [])]
        listed = rec.fixed.get(("admin", "SHOW TABLES FROM monitor"), {}).get("rows") or ()
        for (name,) in listed:
            if name in UNREAD_MONITOR_LOGS and name not in rec.series:
                rec.series[name] = [(list(UNREAD_MONITOR_LOGS[name]), [])]
        for name in [t for t in rec.series if is_monitor_log(t)]:
            rec.series[name] = _accumulated(rec.series[name])
        for name, columns in UNRECORDED_RUNTIME_TABLES.items():
            if name in rec.table_names():  # listed by SHOW TABLES but never read: empty, as it was
                rec.fixed.setdefault(("admin", f"select * from {name}"),
                                     {"sql": f"select * from {name}", "user": "admin", "columns": list(columns),
                                      "rows": []})
        return rec

    def version(self) -> str:
        return self.fixed[("admin", "select @@version")]["rows"][0][0]

    def table_names(self) -> set:
        """Every table the recorded ``SHOW TABLES`` listed (main schema)."""
        entry = self.fixed.get(("admin", "SHOW TABLES"))
        return {row[0] for row in entry["rows"]} if entry and entry.get("rows") else set()

    def admin_tables(self) -> List[str]:
        """Configuration and runtime tables recorded with a plain ``select * from <t>``."""
        names = []
        for user, sql in self.fixed:
            match = re.match(r"^select \* from ([a-z_]+)$", sql)
            if user == "admin" and match and not match.group(1).startswith("stats_") \
                    and "rows" in self.fixed[(user, sql)]:
                names.append(match.group(1))
        return names


def is_monitor_log(table: str) -> bool:
    """monitor.mysql_server_*_log and monitor.pgsql_server_*_log: tables that only grow."""
    return (table.startswith("mysql_server_") or table.startswith("pgsql_server_")) and table.endswith("_log")


def _accumulated(frames):
    """A monitor log as ProxySQL holds it: each frame has every row recorded up to then
    (deduplicated, oldest first), so that an incremental ``WHERE time_start_us > N`` works."""
    out, seen, rows_so_far = [], set(), []
    for columns, rows in frames:
        try:
            start = columns.index("time_start_us")
        except ValueError:
            start = None
        fresh = []
        for row in rows:
            key = tuple(row)
            if key not in seen:
                seen.add(key)
                fresh.append(row)
        if start is not None:
            fresh.sort(key=lambda r: int(r[start] or 0))
        rows_so_far = rows_so_far + fresh
        out.append((columns, rows_so_far))
    return out


def _sqlite_value(value):
    """Numbers stored as numbers so that ORDER BY and comparisons behave like ProxySQL's INT columns."""
    if isinstance(value, str) and 0 < len(value) <= 19 and value.isascii() \
            and value.lstrip("-").isdigit() and value.count("-") == (value[0] == "-") and len(value.lstrip("-")) <= 18 \
            and not (value.lstrip("-")[0] == "0" and len(value.lstrip("-")) > 1):  # text: a SQLSTATE '08006'
        return int(value)  # the same test as re.fullmatch(r"-?\d{1,18}"), without a regex per value
    return value


# ----- ProxySQL's own history (stats_history) --------------------------------------------------
HISTORY_RECORDING = os.path.join(DATA, "proxysql-2.7.2-stats-history.jsonl.gz")
HOUR = 3600
# ProxySQL 3.x's TSDB tables, from its source (include/ProxySQL_Statistics.hpp, PROXYSQLTSDB
# builds): no recording of one exists. Its sampler writes one row per Prometheus metric and
# label set every tsdb-sample_interval seconds, the metric family's name and the labels as JSON.
TSDB_CREATE = {
    "tsdb_metrics": "CREATE TABLE tsdb_metrics (timestamp INT NOT NULL, metric_name TEXT NOT NULL, "
                    "labels TEXT NOT NULL DEFAULT '{}', value REAL, PRIMARY KEY (timestamp, metric_name, labels)) "
                    "WITHOUT ROWID",
    "tsdb_metrics_hour": "CREATE TABLE tsdb_metrics_hour (bucket INT NOT NULL, metric_name TEXT NOT NULL, "
                         "labels TEXT NOT NULL DEFAULT '{}', avg_value REAL, max_value REAL, min_value REAL, "
                         "count INT, PRIMARY KEY (bucket, metric_name, labels)) WITHOUT ROWID",
}
# The Prometheus families the TSDB samples for mysql_connections' figures (MySQL_Thread.cpp,
# MySQL_HostGroups_Manager.cpp), by the column of mysql_connections they follow.
TSDB_FAMILIES = {
    "Questions": "proxysql_questions_total",
    "Slow_queries": "proxysql_slow_queries_total",
    "Client_Connections_connected": "proxysql_client_connections_connected",
    "Client_Connections_created": "proxysql_client_connections_created_total",
    "Server_Connections_connected": "proxysql_server_connections_connected",
}
# How ProxySQL rolls raw rows up into *_hour rows (ProxySQL_Statistics.cpp): counters MAX,
# gauges AVG, system_cpu SUM (of cumulative tick counts).
HOUR_AVERAGED = {"Client_Connections_connected", "Server_Connections_connected", "Entries_In_Cache",
                 "Memory_Bytes", "allocated", "resident", "active", "mapped", "metadata", "retained"}
HOUR_SUMMED_TABLES = {"system_cpu"}


@dataclass
class StatsHistory:
    """ProxySQL's stats_history schema as a double serves it: each table's CREATE TABLE and
    rows, and whether the stats user is refused it (``denied``). ``write()`` adds rows as
    ProxySQL's timers do; sessions see them at their next query of stats_history."""

    create: Dict[str, str] = field(default_factory=dict)  # table -> CREATE TABLE
    rows: Dict[str, Rows] = field(default_factory=dict)
    denied: bool = False
    generation: int = 0

    @classmethod
    def recorded(cls, path: str = HISTORY_RECORDING) -> "StatsHistory":
        """The schema and rows a real ProxySQL 2.7.2 answered (../shared/proxysql/README-history.md)."""
        history = cls()
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                entry = json.loads(line)
                sql = entry["sql"]
                if sql.startswith("SHOW CREATE TABLE stats_history.") and entry.get("rows"):
                    table, ddl = entry["rows"][0]
                    history.create[table] = ddl
                elif sql.startswith("SELECT * FROM stats_history.") and "rows" in entry:
                    table = sql.rsplit(".", 1)[1]
                    # the recording lists the one finished hour twice: its primary key keeps one
                    history.rows[table] = [list(r) for r in dict.fromkeys(tuple(r) for r in entry["rows"])]
        return history

    def columns(self, table: str) -> List[str]:
        ddl = self.create[table]
        body = ddl[ddl.index("(") + 1:]
        names = []
        for part in body.split(","):
            word = part.strip().split()[0] if part.strip() else ""
            if word and word.upper() not in ("PRIMARY", "UNIQUE") and not word.startswith("("):
                names.append(word.strip('"`'))
        return names

    def write(self, table: str, rows: Rows) -> None:
        """Rows ProxySQL writes (its timers): seen by every session from its next query."""
        self.rows.setdefault(table, []).extend(list(r) for r in rows)
        self.generation += 1

    def generated(self, end: int, days: float = 7, hour_days: float = 365, interval: int = 60,
                  restart_at: Optional[int] = None, tsdb: bool = False) -> "StatsHistory":
        """A longer history of the same shapes: the recorded minutes' steps (each counter's
        increase, each gauge's value) repeated from ``hour_days`` before ``end`` to ``end``;
        the raw rows of the last ``days`` kept, and every finished hour rolled up as ProxySQL
        does. ``restart_at``: ProxySQL restarted then (its counters start again from 0).
        ``tsdb``: a 3.x's tsdb_metrics too."""
        out = StatsHistory(create=dict(self.create), denied=self.denied)
        first_raw = int(end - days * 86400) // interval * interval
        start = min(first_raw, int(end - hour_days * 86400) // HOUR * HOUR)
        last_hour = end // HOUR * HOUR  # the hour under way is not rolled up yet
        for table in ("mysql_connections", "myhgm_connections", "system_cpu", "system_memory", "mysql_query_cache"):
            recorded = self.rows.get(table) or []
            if len(recorded) < 2:
                continue
            columns = self.columns(table)
            raw, hours, hour, group = [], [], None, []
            for row in _extended(columns, recorded, range(start, end + 1, interval), restart_at):
                if row[0] >= first_raw:
                    raw.append(row)
                if row[0] >= last_hour:
                    continue
                if hour is not None and row[0] // HOUR * HOUR != hour:
                    hours.append(_rolled_up(columns, group, table in HOUR_SUMMED_TABLES))
                    group = []
                hour = row[0] // HOUR * HOUR
                group.append(row)
            if group:
                hours.append(_rolled_up(columns, group, table in HOUR_SUMMED_TABLES))
            out.rows[table] = raw
            out.rows[table + "_hour"] = [h for h in hours if h[0] >= end - hour_days * 86400 or h[0] >= first_raw]
        if tsdb:
            out = out.with_tsdb()
        return out

    def with_tsdb(self) -> "StatsHistory":
        """The same history with a 3.x TSDB holding mysql_connections' figures, its classic
        tables left empty (as with admin-stats_mysql_connections = 0)."""
        out = StatsHistory(create=dict(self.create, **TSDB_CREATE), rows=dict(self.rows), denied=self.denied)
        columns = self.columns("mysql_connections")
        tsdb = []
        for row in self.rows.get("mysql_connections", []):
            for column, family in TSDB_FAMILIES.items():
                tsdb.append([row[0], family, "{}", float(row[columns.index(column)])])
        out.rows["tsdb_metrics"] = tsdb
        out.rows["mysql_connections"] = []
        return out


def _extended(columns: List[str], recorded: Rows, stamps, restart_at: Optional[int]):
    """Rows at ``stamps`` following the recorded rows' minute-to-minute steps, over and over."""
    steps = [[_number(b) - _number(a) for a, b in zip(before, after)] for before, after in zip(recorded, recorded[1:])]
    gauges = [i for i, c in enumerate(columns) if c in HOUR_AVERAGED]
    current = [0] * len(columns)
    previous = None
    for n, stamp in enumerate(stamps):
        if restart_at is not None and previous is not None and previous < restart_at <= stamp:
            current = [0] * len(columns)
        previous = stamp
        step = steps[n % len(steps)]
        current = [c + max(s, 0) for c, s in zip(current, step)]
        row = list(current)
        for i in gauges:
            row[i] = _number(recorded[(n + 1) % len(recorded)][i])
        row[0] = stamp
        yield row


def _number(text):
    value = float(text)
    return int(value) if value.is_integer() else value


def _rolled_up(columns: List[str], group: Rows, summed: bool) -> list:
    """ProxySQL's roll-up of one hour's raw rows (ProxySQL_Statistics.cpp)."""
    row = [group[0][0] // HOUR * HOUR]
    for i, column in enumerate(columns[1:], start=1):
        values = [r[i] for r in group]
        if summed:
            row.append(sum(values))
        elif column in HOUR_AVERAGED:
            row.append(sum(values) / len(values))
        else:
            row.append(max(values))
    return row


# ----- the double -----------------------------------------------------------------------------
class AdminError(QueryError):
    """ProxySQL's errors, SQLSTATE 28000 unless told."""

    def __init__(self, code: int, message: str, state: str = "28000"):
        super().__init__(code, message, state)


class ProxySQLDouble(ProtocolServer):
    """Start with ``start()``; ``port`` is then the listening port. Thread-safe controls."""

    unsupported_command = "ProxySQL Admin Error: Command not supported"

    def __init__(self, port: int = 0, host: str = "127.0.0.1", start_frame: int = 20,
                 version: str = "2.7", recording: Optional[Recording] = None, loop: bool = True,
                 tls=None, traffic: bool = False, sha2_rsa_key=None, history: Optional[StatsHistory] = None):
        super().__init__(port=port, host=host, tls=tls, sha2_rsa_key=sha2_rsa_key)
        # stats_history (ProxySQL's own history): the recorded one unless told
        self.history = history if history is not None else StatsHistory.recorded()
        self.history_cpu: List[Tuple[str, float]] = []  # (stats_history query, CPU seconds answering it)
        self.traffic = traffic  # play ProxySQL's traffic port (6033) instead of its admin port
        self.recording = recording or Recording.load()
        self.version = version
        self.loop = loop
        self.frames: Dict[str, int] = {}
        self.start_frame = start_frame
        self.transforms: Dict[str, Transform] = {}
        self.kills: List[int] = []
        # Tables replaced for every session (replace_table), and how often: sessions take them
        # before their next query. ``rules_loads`` is the version of mysql_query_rules in
        # runtime_checksums_values (each LOAD MYSQL QUERY RULES TO RUNTIME raises it).
        self.replaced: Dict[str, Tuple[List[str], Rows]] = {}
        self.replaced_generation = 0
        self.rules_loads = 1
        self.rules_loaded_at = int(time.time())

    # --- controls ---
    def set_frame(self, table: str, frame: int) -> None:
        with self._lock:
            self.frames[table] = frame

    def rewind(self) -> None:
        """Serve every time series from ``start_frame`` again, as to a client that just came."""
        with self._lock:
            self.frames.clear()

    def replace_table(self, table: str, rows: Rows) -> None:
        """Give a configuration or runtime table new rows (same columns) in every session, as
        an admin's edits would: ``runtime_mysql_query_rules`` replaced is a LOAD MYSQL QUERY
        RULES TO RUNTIME (its version in runtime_checksums_values goes up, as ProxySQL's does
        with every load, even of the same rules)."""
        columns, _ = self.first_frame(table)
        with self._lock:
            self.replaced[table] = (list(columns), [list(row) for row in rows])
            self.replaced_generation += 1
            if table == "runtime_mysql_query_rules":
                self.rules_loads += 1
                self.rules_loaded_at = int(time.time())

    def queries(self, user: Optional[str] = None) -> List[str]:
        """The statements received, without proxytop's ``/* proxytop */`` at their end (the
        statement audit, tests/test_safety.py, checks the tag in ``query_log``)."""
        with self._lock:
            return [_PROXYTOP_TAG.sub("", sql) for _, u, sql in self.query_log if user is None or u == user]

    # --- tables ---
    def _columns_for(self, table: str, columns: List[str], rows: Rows) -> Tuple[List[str], Rows]:
        dropped = COLUMNS_1_4_DROPPED.get(table, set()) if self.version == "1.4" else set()
        if dropped:
            keep = [i for i, c in enumerate(columns) if c not in dropped]
            columns = [columns[i] for i in keep]
            rows = [[row[i] for i in keep] for row in rows]
        transform = self.transforms.get(table)
        if transform is not None:
            columns, rows = transform(list(columns), [list(r) for r in rows])
        return columns, rows

    def next_frame(self, table: str) -> Tuple[List[str], Rows]:
        frames = self.recording.series[table]
        with self._lock:
            index = self.frames.get(table, self.start_frame)
            if index >= len(frames):
                index = 0 if self.loop else len(frames) - 1
            self.frames[table] = index + 1
        columns, rows = frames[index]
        return self._columns_for(table, columns, rows)

    def first_frame(self, table: str) -> Tuple[List[str], Rows]:
        if table in self.recording.series:
            columns, rows = self.recording.series[table][0]
        elif table.startswith("runtime_") and ("admin", f"select * from {table}") not in self.recording.fixed:
            return self.first_frame(table[len("runtime_"):])  # a runtime table not recorded: as its sessions hold it
        else:
            entry = self.recording.fixed[("admin", f"select * from {table}")]
            columns, rows = entry["columns"], entry["rows"]
        return self._columns_for(table, columns, rows)

    # --- the protocol's questions ---
    def handshake_version(self) -> str:
        return "5.5.30" if self.version == "1.4" else "8.0.11"

    def password_of(self, user: str) -> Optional[str]:
        known = (TRAFFIC_USERS if self.traffic else USERS).get(user)
        return known[0] if known is not None else None

    def access_denied(self, user: str, with_password: bool) -> str:
        return "ProxySQL Error: " + super().access_denied(user, with_password)

    def open_session(self, user: str, conn_id: int) -> "Session":
        return Session(self, user)


# Tables whose *_reset twin exists (reading the twin zeroes the counters for everybody).
RESET_TWINS = ("stats_mysql_connection_pool", "stats_mysql_query_digest", "stats_mysql_errors",
               "stats_pgsql_connection_pool", "stats_pgsql_query_digest", "stats_pgsql_errors")

_PROXYTOP_TAG = re.compile(r" /\* proxytop \*/$")
_TRAILING_COMMENT = re.compile(r"\s*/\*[^*]*\*/\s*;?\s*$")
_KILL = re.compile(r"^\s*kill\s+(connection\s+)?(\d+)\s*;?\s*$", re.IGNORECASE)


CONFIG_RULES_CHECKSUM = ("checksum memory mysql query rules", "checksum mem mysql query rules",
                         "checksum mysql query rules")


def rows_checksum(rows) -> str:
    """A 64-bit hash of rows written as ProxySQL writes its checksums ("0x%0X%0X" of the two
    32-bit halves, unpadded); the hash itself is not ProxySQL's SpookyHash (nothing compares
    the two), but like it, another row or value gives another checksum."""
    digest = hashlib.blake2b(repr([tuple(row) for row in rows]).encode(), digest_size=8).digest()
    low, high = struct.unpack("<II", digest)
    return f"0x{low:X}{high:X}"


def first_statement(sql: str) -> str:
    """ProxySQL runs only the first of several statements."""
    quote = None
    for i, ch in enumerate(sql):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == ";":
            return sql[:i]
    return sql


class Session:
    """One client connection: its own SQLite database, like ProxySQL's per-query rebuild."""

    def __init__(self, double: ProxySQLDouble, user: str):
        self.double = double
        self.user = user
        if double.traffic:
            self.kind = "traffic"
            return
        self.kind = USERS[user][1]
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        rec = double.recording
        self.series_tables = [t for t in rec.series if t.startswith("stats_") or is_monitor_log(t)]
        # The stats user reads the monitor schema too (the cluster recording: `select * from
        # monitor.mysql_server_ping_log limit 1` as stats answered a row).
        self.db.execute("ATTACH ':memory:' AS monitor")
        if self.kind == "admin":
            self.db.execute("ATTACH ':memory:' AS stats")
            # Configuration and runtime tables: as first recorded (runtime_* is not replayed).
            recorded = set(rec.admin_tables()) | set(t for t in rec.series if t.startswith("runtime_"))
            for table in sorted(recorded):
                columns, rows = double.first_frame(table)
                self._create(table, columns, rows, ddl=None)
            # A runtime table the recording did not ask for is its configuration table (what
            # LOAD ... TO RUNTIME leaves when nobody changed it since): runtime_mysql_users of 2.7.
            for table in sorted(recorded):
                twin = "runtime_" + table
                if twin not in recorded and twin in rec.table_names():
                    columns, rows = double.first_frame(table)
                    self._create(twin, columns, rows, ddl=None)
            if "runtime_checksums_values" not in recorded:  # recorded as a schema only
                self._create("runtime_checksums_values", ["name", "version", "epoch", "checksum"], [], ddl=None)
        self.replaced_seen = 0
        self.history_seen = None  # the generation of stats_history this session holds
        for table in self.series_tables:
            if is_monitor_log(table):
                schema = "monitor."
            else:
                schema = "stats." if self.kind == "admin" else ""
            columns, _ = double.first_frame(table)
            self._create(schema + table, columns, [], ddl=None)
            if table in RESET_TWINS:
                self._create(schema + table + "_reset", columns, [], ddl=None)

    def _create(self, table: str, columns: Sequence[str], rows: Rows, ddl: Optional[str]) -> None:
        quoted = ", ".join(f'"{c}"' for c in columns)
        self.db.execute(f"CREATE TABLE {table} ({quoted})")
        self._fill(table, columns, rows)

    def _fill(self, table: str, columns: Sequence[str], rows: Rows) -> None:
        self.db.execute(f"DELETE FROM {table}")
        if rows:
            marks = ", ".join("?" for _ in columns)
            self.db.executemany(f"INSERT INTO {table} VALUES ({marks})",
                                [[_sqlite_value(v) for v in row] for row in rows])

    def _refresh(self, sql: str) -> None:
        """Rebuild the stats tables the query names (exact, case-sensitive), like ProxySQL."""
        for table in self.series_tables:
            named = table.lower() in sql.lower() if "processlist" in table else table in sql
            if not named:
                continue
            schema = "monitor." if is_monitor_log(table) else ("stats." if self.kind == "admin" else "")
            columns, rows = self.double.next_frame(table)
            self.db.execute(f"DROP TABLE IF EXISTS {schema}{table}")
            quoted = ", ".join(f'"{c}"' for c in columns)
            self.db.execute(f"CREATE TABLE {schema}{table} ({quoted})")
            self._fill(schema + table, columns, rows)
            if f"{table}_reset" in sql:
                self._fill(f"{schema}{table}_reset", columns, rows)

    def _take_history(self) -> None:
        """stats_history, attached as ProxySQL attaches its proxysql_stats.db (to the admin
        and the stats user's databases alike), built at the first query naming it and again
        after ProxySQL wrote rows (StatsHistory.write)."""
        history = self.double.history
        if self.history_seen == history.generation:
            return
        if self.history_seen is None:
            self.db.execute("ATTACH ':memory:' AS stats_history")
        for table in history.create:
            self.db.execute(f"DROP TABLE IF EXISTS stats_history.{table}")
            self.db.execute(history.create[table].replace("CREATE TABLE ", "CREATE TABLE stats_history.", 1)
                            .replace("CREATE TABLE  ", "CREATE TABLE stats_history.", 1))
            rows = history.rows.get(table) or []
            if rows:
                marks = ", ".join("?" for _ in rows[0])
                self.db.executemany(f"INSERT OR REPLACE INTO stats_history.{table} VALUES ({marks})",
                                    [[_sqlite_value(v) for v in row] for row in rows])
        self.history_seen = history.generation

    def _take_replaced(self) -> None:
        """The tables replaced for every session since this one last looked (replace_table)."""
        with self.double._lock:
            if self.replaced_seen == self.double.replaced_generation:
                return
            self.replaced_seen = self.double.replaced_generation
            replaced = dict(self.double.replaced)
        for table, (columns, rows) in replaced.items():
            self._fill(table, columns, rows)

    def _fill_checksums(self) -> None:
        """runtime_checksums_values, filled when a query names it as ProxySQL does. Only the
        query rules' row: (version, epoch, checksum of the runtime rules)."""
        rows = self.db.execute("select * from runtime_mysql_query_rules order by rule_id").fetchall()
        with self.double._lock:
            version, epoch = self.double.rules_loads, self.double.rules_loaded_at
        self._fill("runtime_checksums_values", ["name", "version", "epoch", "checksum"],
                   [["mysql_query_rules", version, epoch, rows_checksum(rows)]])

    def _vacuum(self) -> None:
        for table in self.series_tables:
            if is_monitor_log(table):
                continue
            schema = "stats." if self.kind == "admin" else ""
            self.db.execute(f"DELETE FROM {schema}{table}")

    def forwarded(self, sql: str):
        """A traffic-port query: ProxySQL's own answer, or the backend's."""
        if sql == "select @@version_comment limit 1":  # the one byte-exact match ProxySQL answers
            return (["@@version_comment"], [["(ProxySQL)"]])
        sql = _TRAILING_COMMENT.sub("", sql)  # the backend ignores a comment
        lowered = " ".join(sql.lower().split())
        if lowered.startswith("set "):
            return None
        if lowered in ("select @@version", "select version()"):
            return ([sql.split(None, 1)[1]], [[BACKEND_VERSION]])
        if lowered == "show tables":
            return (["Tables_in_sbtest"], [[name] for name in BACKEND_TABLES])
        named = re.search(r"\bfrom\s+`?(\w+)", lowered)
        if named and named.group(1) not in BACKEND_TABLES:
            raise AdminError(1109, f"Unknown table '{named.group(1)}' in sbtest", "42S02")
        raise AdminError(1064, "You have an error in your SQL syntax", "42000")

    def query(self, sql: str):
        if self.kind == "traffic":
            return self.forwarded(sql)
        sql = first_statement(sql).strip()
        lowered = " ".join(sql.lower().split())
        rec = self.double.recording
        if lowered.startswith("set ") or lowered in ("begin", "commit", "rollback"):
            return None
        # ProxySQL knows KILL CONNECTION and select @@version by their first words (a comment
        # after them is ignored); SHOW TABLES and CHECKSUM ... only as the whole statement.
        sql_words = _TRAILING_COMMENT.sub("", sql)
        kill = _KILL.match(sql_words)
        if kill:
            if self.kind != "admin" or (kill.group(1) is None and "query" in lowered):
                raise AdminError(1045, 'ProxySQL Admin Error: near "KILL": syntax error')
            self.double.kills.append(int(kill.group(2)))
            return None
        if lowered.startswith("kill"):
            raise AdminError(1045, 'ProxySQL Admin Error: near "KILL": syntax error')
        if " ".join(sql_words.lower().split()) in ("select @@version", "select version()"):
            version = "1.4.16-1-g6c9ae2b" if self.double.version == "1.4" else rec.version()
            return ([sql_words.split(None, 1)[1]], [[version]])
        if lowered.startswith("select @@version_comment"):
            return (["@@version_comment"], [["(ProxySQL Admin Module)"]])
        if lowered.startswith("select @@"):
            if self.kind != "admin":
                raise AdminError(1045, "ProxySQL Admin Error: no such column: @@")
            name = lowered[len("select @@"):].split()[0]
            for row in self.double.first_frame("global_variables")[1]:
                if row[0] == name:
                    return ([f"@@{name}"], [[row[1]]])
            raise AdminError(1045, f"ProxySQL Admin Error: no such variable {name}")
        if lowered in ("show tables", "show tables from stats", "show tables from monitor", "show databases"):
            entry = rec.fixed.get(("stats" if self.kind == "stats" and lowered == "show tables" else "admin", sql)) \
                or rec.fixed.get(("admin", sql.upper().replace("FROM", "FROM")))
            entry = entry or rec.fixed.get(("admin", {"show tables": "SHOW TABLES",
                                                      "show tables from stats": "SHOW TABLES FROM stats",
                                                      "show tables from monitor": "SHOW TABLES FROM monitor",
                                                      "show databases": "SHOW DATABASES"}[lowered]))
            if self.kind == "stats" and lowered != "show tables":
                raise AdminError(1045, "ProxySQL Admin Error: no such database")
            if self.kind == "stats":
                entry = rec.fixed[("stats", "SHOW TABLES")]
            return (entry["columns"], [list(r) for r in entry["rows"]])
        if "stats_history" in lowered:
            if self.kind == "stats" and self.double.history.denied:
                raise AdminError(1045, "ProxySQL Admin Error: no such table: stats_history.mysql_connections")
            if " ".join(sql_words.lower().split()) == "show tables from stats_history":
                return (["tables"], [[name] for name in sorted(self.double.history.create)])
            self._take_history()
        if self.kind == "admin":
            self._take_replaced()
            if lowered in CONFIG_RULES_CHECKSUM:  # ProxySQL's: a hash of every row, as one row
                rows = self.db.execute("select * from mysql_query_rules order by rule_id").fetchall()
                return (["table", "checksum"], [["MYSQL QUERY RULES", rows_checksum(rows)]])
            if "runtime_checksums_values" in sql:
                self._fill_checksums()
        self._refresh(sql)
        started = time.thread_time()
        try:
            cursor = self.db.execute(sql)
            columns = [d[0] for d in cursor.description] if cursor.description else []
            rows = [list(r) for r in cursor.fetchall()] if cursor.description else []
        except sqlite3.Error as exc:
            raise AdminError(1045, f"ProxySQL Admin Error: {exc}") from None
        finally:
            self._vacuum()
            if "stats_history" in lowered:
                # what answering cost (SQLite's work, as inside ProxySQL): tests/bench_proxysql_history.py
                self.double.history_cpu.append((sql, time.thread_time() - started))
        if not cursor.description:
            return None
        return (columns, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description="ProxySQL admin test double")
    parser.add_argument("--port", type=int, default=6032)
    parser.add_argument("--start-frame", type=int, default=20)
    parser.add_argument("--version", choices=("2.7", "1.4"), default="2.7",
                        help="1.4: serve ProxySQL 1.4's column set")
    parser.add_argument("--recording", choices=sorted(RECORDINGS), default="2.7")
    parser.add_argument("--node", help="with --recording cluster: the node to serve (host:port)")
    parser.add_argument("--traffic", action="store_true",
                        help="play ProxySQL's traffic port (user sbtest/sbtest, a MariaDB behind it)")
    args = parser.parse_args()
    recording = Recording.load(args.recording, node=args.node)
    double = ProxySQLDouble(port=args.port, start_frame=args.start_frame, version=args.version,
                            recording=recording, traffic=args.traffic).start()
    print(f"ProxySQL admin test double on 127.0.0.1:{double.port} (admin/admin, stats/stats)", flush=True)
    double.run_until_interrupted()


if __name__ == "__main__":
    main()
