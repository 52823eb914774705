"""Replication: one row per replication channel of every watched server (MariaDB's
multi-source connections, MySQL's channels), and one per server writing a binary log that
replicas read (a primary), from each server's ``mysql.replication.<server>`` readings
(collectors.replication).

A channel: its source, IO and SQL threads, lag and its sparkline, relay log space, how far the
SQL thread is behind the IO thread (bytes) and by GTIDs (transactions), its last error, and
what ProxySQL makes of the server (hostgroups, status, max_replication_lag, the lag its monitor
measured). A primary: its binary log file and position, bytes written per second, replicas
connected, sync_binlog / innodb_flush_log_at_trx_commit, commits per group commit, fsyncs per
second. Enter shows a channel's whole status. The header alarm says when a thread stopped, a
channel failed, or lag heads past ProxySQL's max_replication_lag (``alarm``).
"""
from __future__ import annotations

from typing import List, Mapping, Optional, Sequence, Tuple

from proxytop.collectors.innodb import DISCOVERY
from proxytop.collectors.innodb_fleet import Fleet, Server
from proxytop.collectors.monitor import MonitorLogs
from proxytop.collectors.mysql_server import Channel, ServerReading
from proxytop.collectors.proxysql import RuntimeServers
from proxytop.collectors.replication import ChannelStatus, ReplicationReading
from proxytop.core import Snapshot
from proxytop.metrics import health, units
from proxytop.metrics.rates import rate
from proxytop.metrics.replication import (check_interval, field, gtid_set_behind, lag_alarm, mariadb_gtid_behind,
                                          sql_behind_io, views_disagree)
from proxytop.screens.base import DataView, Detail, Screen, seconds_between
from proxytop.screens.connpool import alarm_line, proxysql_now_us
from proxytop.screens.servers import fleet_states_token
from proxytop.screens.sparkline import sparkline
from proxytop.screens.table import Column, Row

SPARK_WIDTH = 16  # the Trend column: the kept lag readings in this many buckets
DETAIL_SPARK_WIDTH = 60
ALARM_PACE = 5.0  # seconds between the alarm's readings on the MySQL screens that don't read replication
ALARM_STALE = 15.0  # a reading older than this says nothing about now (its screen is no longer shown)
PRIMARY = "(primary)"  # the channel cell of a primary's row


def lag_series(lags: Sequence[Optional[int]], width: int) -> List[Optional[float]]:
    """The kept lag readings in ``width`` buckets, each the worst lag in it (a gap when
    unknown throughout): minutes of readings in a narrow column.

    >>> lag_series([1, 2, 3, 4, None, None], 3), lag_series([5, 7], 4)
    ([2, 4, None], [5, 7])
    """
    lags = list(lags)
    if len(lags) <= width:
        return lags
    size = -(-len(lags) // width)
    buckets = [lags[i:i + size] for i in range(0, len(lags), size)]
    return [max((v for v in bucket if v is not None), default=None) for bucket in buckets]


def thread_style(row: Mapping, key: str) -> Optional[str]:
    value = row.get(key)
    if value == "No":
        return "danger"
    if value == "Connecting":
        return "warning"
    return "good" if value == "Yes" else None


def channel_label(name: str) -> str:
    return name if name else "(default)"


def error_text(errno: int, error: str, when: object = None) -> Optional[str]:
    """'1062 Duplicate entry … (at 241126 22:41:07)', None without an error."""
    if not errno:
        return None
    return f"{errno} {error}" + (f" (at {when})" if when else "")


def transactions_behind(row: Mapping, gtid_slave_pos: object) -> Optional[int]:
    """Received but not applied, by GTIDs: MySQL's Retrieved against Executed_Gtid_Set,
    MariaDB's Gtid_IO_Pos against gtid_slave_pos: the row's own Gtid_Slave_Pos (SHOW ALL SLAVES
    STATUS, read every time) before the variable (read every 10 s).

    >>> transactions_behind({"Retrieved_Gtid_Set": "u:1-9", "Executed_Gtid_Set": "u:1-7"}, None)
    2
    >>> transactions_behind({"Gtid_IO_Pos": "0-1-30", "Using_Gtid": "Slave_Pos"}, "0-1-21")
    9
    >>> transactions_behind({"Gtid_IO_Pos": "0-1-30", "Gtid_Slave_Pos": "0-1-28"}, "0-1-21")
    2
    """
    if "Retrieved_Gtid_Set" in row:
        return gtid_set_behind(row.get("Retrieved_Gtid_Set"), row.get("Executed_Gtid_Set"))
    if "Gtid_IO_Pos" in row:
        gtid_slave_pos = row.get("Gtid_Slave_Pos", gtid_slave_pos)
        return mariadb_gtid_behind(row.get("Gtid_IO_Pos"), None if gtid_slave_pos is None else str(gtid_slave_pos))
    return None


def channel_problems(server: str, channel: Channel, row: Mapping) -> List[str]:
    """The alarm's words for a channel's stopped threads and errors, the SQL thread's first.

    >>> channel_problems("h:1", Channel("", "p:1", "Yes", "No", None, sql_errno=1062, sql_error="Duplicate entry"), {})
    ['h:1 SQL thread stopped: 1062 Duplicate entry']
    >>> channel_problems("h:1", Channel("eu", "p:1", "Connecting", "Yes", None, io_errno=2003, io_error="Can't"), {})
    ["h:1 channel 'eu' IO thread connecting: 2003 Can't"]
    """
    where = f"{server} channel '{channel.name}'" if channel.name else server
    problems = []
    if channel.sql_errno or channel.sql_running not in ("Yes", ""):
        state = "stopped" if channel.sql_running != "Yes" else "failing"
        problems.append(f"{where} SQL thread {state}" + (f": {channel.sql_errno} {channel.sql_error}"
                                                         if channel.sql_errno else ""))
    if channel.io_errno or channel.io_running == "No":
        state = {"No": "stopped", "Connecting": "connecting"}.get(channel.io_running, "failing")
        problems.append(f"{where} IO thread {state}" + (f": {channel.io_errno} {channel.io_error}"
                                                        if channel.io_errno else ""))
    return problems


# ----- the detail: every field of a channel, grouped and explained ------------------------------------

GROUPS = (  # (title, names as MariaDB / MySQL 5.7 call them, lowercased; Source/Replica read as Master/Slave)
    ("Errors", ("last_io_errno", "last_io_error", "last_io_error_timestamp", "last_sql_errno", "last_sql_error",
                "last_sql_error_timestamp", "last_errno", "last_error")),
    ("Threads", ("slave_io_running", "slave_sql_running", "slave_io_state", "slave_sql_running_state",
                 "slave_sql_state")),
    ("Lag and delay", ("seconds_behind_master", "sql_delay", "sql_remaining_delay", "slave_heartbeat_period",
                       "slave_received_heartbeats", "retried_transactions", "executed_log_entries", "parallel_mode",
                       "slave_ddl_groups", "slave_non_transactional_groups", "slave_transactional_groups")),
    ("Positions", ("master_log_file", "read_master_log_pos", "relay_master_log_file", "exec_master_log_pos",
                   "relay_log_file", "relay_log_pos", "relay_log_space", "max_relay_log_size", "until_condition",
                   "until_log_file", "until_log_pos")),
    ("GTID", ("using_gtid", "gtid_io_pos", "gtid_slave_pos", "retrieved_gtid_set", "executed_gtid_set",
              "auto_position", "replicate_do_domain_ids", "replicate_ignore_domain_ids")),
    ("Source", ("connection_name", "channel_name", "master_host", "master_port", "master_user", "master_server_id",
                "master_uuid", "connect_retry", "master_retry_count", "master_bind", "master_info_file")),
)
EXPLAINED = {
    "last_io_errno": "the IO thread's last error (reading the source's binary log)",
    "last_sql_errno": "the SQL thread's last error (applying events); it stops the thread",
    "last_errno": "the last error of either thread (MySQL keeps it as an alias of the SQL thread's)",
    "slave_io_running": "Yes: connected and reading; Connecting: trying to; No: stopped",
    "slave_sql_running": "Yes: applying relay log events; No: stopped (an error or STOP SLAVE)",
    "seconds_behind_master": "the applied event's age on the source; NULL while a thread is stopped",
    "sql_delay": "MASTER_DELAY: seconds the replica holds every event back on purpose",
    "sql_remaining_delay": "seconds left before the held event is applied",
    "read_master_log_pos": "how far the IO thread has read the source's binary log",
    "exec_master_log_pos": "how far the SQL thread has applied it (same file: the difference is bytes behind)",
    "relay_log_space": "bytes of relay logs on disk, read but not yet purged",
    "gtid_io_pos": "MariaDB: the last GTID received, per domain",
    "gtid_slave_pos": "MariaDB: the last GTID applied, per domain (the server's, all connections)",
    "retrieved_gtid_set": "MySQL: every GTID received on this channel",
    "executed_gtid_set": "MySQL: every GTID applied by the server",
    "using_gtid": "MariaDB: No (file and position), Slave_Pos or Current_Pos",
    "auto_position": "MySQL: 1 when the channel finds its place by GTIDs",
}
_CANONICAL = (("source", "master"), ("replica", "slave"))


def canonical(name: str) -> str:
    """A status field's name as MariaDB calls it, lowercased (MySQL 8.0.22 renamed them).

    >>> canonical("Seconds_Behind_Source"), canonical("Replica_SQL_Running_State")
    ('seconds_behind_master', 'slave_sql_running_state')
    """
    lowered = name.lower()
    for new, old in _CANONICAL:
        lowered = lowered.replace(new, old)
    return lowered


def grouped_fields(fields: Sequence[Tuple[str, object]]) -> List[Tuple[str, List[Tuple[str, object]]]]:
    """The fields in GROUPS' order, then the rest (filters, TLS…) under 'Other', as sent.

    >>> [(title, [n for n, _ in fs]) for title, fs in grouped_fields(
    ...     [("Master_Host", "h"), ("Replicate_Do_DB", ""), ("Last_SQL_Errno", 1062)])]
    [('Errors', ['Last_SQL_Errno']), ('Source', ['Master_Host']), ('Other', ['Replicate_Do_DB'])]
    """
    by_name = {canonical(name): (name, value) for name, value in fields}
    placed = set()
    groups = []
    for title, names in GROUPS:
        found = [by_name[n] for n in names if n in by_name]
        placed.update(n for n in names if n in by_name)
        if found:
            groups.append((title, found))
    rest = [(name, value) for name, value in fields if canonical(name) not in placed]
    if rest:
        groups.append(("Other", rest))
    return groups


# ----- ProxySQL's view of a server ----------------------------------------------------------------------

def max_replication_lag(servers: Optional[Snapshot], host: str, port: int) -> Optional[float]:
    """The largest max_replication_lag ProxySQL gives this server in any hostgroup (0: not checked)."""
    if servers is None or servers.data is None or not servers.data.has("max_replication_lag"):
        return None
    limits = [health.to_number(r.get("max_replication_lag")) for r in servers.data.dicts()
              if str(r.get("hostname")) == host and str(r.get("port")) == str(port)]
    limits = [limit for limit in limits if limit is not None]
    return max(limits) if limits else None


class ReplicationScreen(Screen):
    key = "replication"
    title = "Replication"
    short_title = "Repl"
    uses_fleet = True
    live_detail = True  # a channel's status follows new readings
    default_sort = ("server", False)
    tiebreak = ("server", "channel")
    all_columns = (
        Column("server", "Server", 18, "<", numeric=False, priority=0),
        Column("channel", "Channel", 10, "<", numeric=False, priority=1,
               help="the channel (MariaDB's connection name; (default) unnamed); (primary): the binary log it writes"),
        Column("source", "Source", 18, "<", numeric=False, priority=2,
               help="host:port it replicates from; a primary: the replicas connected (SHOW SLAVE HOSTS)"),
        Column("io", "IO", 10, "<", numeric=False, style=lambda r: thread_style(r, "io"), priority=1,
               help="the IO thread, reading the source's binary log: Yes, No, Connecting"),
        Column("sql", "SQL", 4, "<", numeric=False, style=lambda r: thread_style(r, "sql"), priority=1,
               help="the SQL thread, applying what was read: Yes, No"),
        Column("lag", "Lag", 6, unit="s", fmt=units.duration, priority=1,
               help="Seconds_Behind_Master / _Source (— while a thread is stopped)"),
        Column("trend", "Lag trend", SPARK_WIDTH, "<", numeric=False, priority=4,
               help="the lag over the last readings kept (up to 180: minutes), the worst of each bucket"),
        Column("relay", "Relay", 8, unit="B", fmt=units.size, priority=5, help="Relay_Log_Space: relay logs on disk, bytes"),
        Column("behind", "SQL<IO", 8, unit="B", fmt=units.size, priority=4,
               help="bytes the IO thread read that the SQL thread has not applied (Read_ − Exec_Master_Log_Pos, "
                    "same file only)"),
        Column("trx", "Trx<IO", 7, fmt=units.number, priority=3,
               help="transactions received but not applied, by GTIDs (MariaDB: Gtid_IO_Pos − gtid_slave_pos; "
                    "MySQL: Retrieved_Gtid_Set − Executed_Gtid_Set)"),
        Column("proxysql", "HG/Status", 12, "<", numeric=False, priority=5,
               help="ProxySQL's hostgroups of the server and its status there (runtime_mysql_servers)"),
        Column("max_lag", "MaxLag", 6, unit="s", fmt=units.duration, priority=5,
               help="ProxySQL's max_replication_lag for the server (it shuns a replica past it; 0: not checked)"),
        Column("px_lag", "PxLag", 6, unit="s", fmt=lambda v: units.MISSING if v is None else (
            units.duration(v) if isinstance(v, (int, float)) else str(v)), priority=5,
               help="the lag ProxySQL's monitor last measured (monitor.mysql_server_replication_lag_log)"),
        Column("binlog", "Binlog", 26, "<", numeric=False, priority=3,
               help="a primary: the binary log file and position written (SHOW MASTER STATUS)"),
        Column("binlog_s", "Binlog/s", 9, unit="B/s", fmt=units.size, priority=3,
               help="a primary: bytes written to the binary log per second (Binlog_bytes_written, else the position)"),
        Column("per_group", "Cmt/grp", 7, fmt=units.number, priority=6,
               help="a primary (MariaDB): commits per binary log group commit, over the interval "
                    "(Binlog_commits ÷ Binlog_group_commits)"),
        Column("fsync_s", "Fsync/s", 7, fmt=units.number, priority=6,
               help="a primary (MariaDB, sync_binlog=1): binary log fsyncs per second, one per group commit"),
        Column("sync", "Sync", 5, "<", numeric=False, priority=6,
               help="a primary: sync_binlog / innodb_flush_log_at_trx_commit (1/1: durable at every commit)"),
        Column("note", "Last error / note", 30, "<", numeric=False, style=lambda r: r.get("_note_style"),
               priority=0, flexible=True,
               help="the last IO and SQL errors (number, text, time); ProxySQL's view when it disagrees; "
                    "what needs a privilege"),
    )

    def __init__(self, config=None, fleet: Optional[Fleet] = None):
        super().__init__(config)
        self.fleet = fleet if fleet is not None else Fleet.from_config(config)
        self.columns = self.all_columns
        self._without_proxysql = tuple(c for c in self.all_columns if c.key not in ("proxysql", "max_lag", "px_lag"))
        if not getattr(config, "proxysql", True):
            self.columns = self._without_proxysql
        self._alarm: Tuple[object, Optional[str], int] = ((), None, 0)
        self.alarm_rank = 0

    # --- what is read -------------------------------------------------------------------------
    def active_collectors(self) -> List[str]:
        names = [DISCOVERY, RuntimeServers.name, MonitorLogs.name] if self.fleet.discover else []
        return names + [server.replication_name for server in self.fleet.listed()]

    def alarm_readings(self, view: DataView) -> Tuple[Tuple[str, float], ...]:
        """The readings the alarm takes on every screen: each server's own state (a few short
        statements, its channels among them), every ALARM_PACE s, and ProxySQL's
        max_replication_lag."""
        plan = [(DISCOVERY, 10.0), (RuntimeServers.name, 10.0)] if self.fleet.discover else []
        return tuple(plan + [(server.server_name, ALARM_PACE) for server in self.fleet.listed()])

    def rows_token(self, view: DataView):
        return fleet_states_token(self.fleet, view)

    # --- rows -----------------------------------------------------------------------------------------
    def rows(self, view: DataView) -> List[Row]:
        self.fleet.sync_discovered()
        if not self.fleet.discover:
            self.columns = self._without_proxysql
        proxysql = self._proxysql_readings(view)
        rows: List[Row] = []
        for server in self.fleet.listed():
            rows += self.server_rows(server, view, proxysql)
        return rows

    def _proxysql_readings(self, view: DataView):
        if not self.fleet.discover:
            return None, None, None
        monitor = view.latest(MonitorLogs.name)
        return view.latest(RuntimeServers.name), monitor, proxysql_now_us(monitor, view.now())

    def server_rows(self, server: Server, view: DataView, proxysql) -> List[Row]:
        base: Row = {"server": server.key, "proxysql": server.proxysql_label or None}
        state = view.state(server.source)
        if state is not None and not state.connected:
            note = f"down, {state.retry_text(view.now())}: {state.error}" if state.error else "connecting\u2026"
            return [dict(base, _id=server.key, note=note, _note_style="danger" if state.error else "dim")]
        previous, current = view.pair(server.replication_name)
        if current is None or not isinstance(current.data, ReplicationReading):
            error = view.error(server.replication_name)
            return [dict(base, _id=server.key, note=error or "waiting for the first reading\u2026",
                         _note_style="warning" if error else "dim")]
        reading = current.data
        host, port = server.endpoint.host, server.endpoint.port
        max_lag = max_replication_lag(proxysql[0], host, port)
        rows = [self.channel_row(server, status, reading, max_lag, proxysql, view) for status in reading.channels]
        before = previous.data if previous is not None and isinstance(previous.data, ReplicationReading) else None
        if reading.log_bin and (reading.replicas or not reading.channels):
            rows.append(self.primary_row(base, reading, before, seconds_between(previous, current)))
        notes = [f"{what} needs {privilege}" for what, privilege in reading.denied] + list(reading.errors)
        if not rows:
            rows.append(dict(base, _id=server.key, note="; ".join(notes) or "no replication: no channel, no binary log",
                             _note_style="warning" if notes else "dim"))
        elif notes:
            rows[-1]["note"] = "; ".join(filter(None, [rows[-1].get("note")] + notes))
            rows[-1].setdefault("_note_style", "warning")
        return rows

    def channel_row(self, server: Server, status: ChannelStatus, reading: ReplicationReading,
                    max_lag: Optional[float], proxysql, view: DataView) -> Row:
        channel, fields = status.channel, status.row()
        row: Row = {
            "_id": f"{server.key}|{channel.name}|{channel.source}", "_server": server.key,
            "server": server.key, "channel": channel_label(channel.name), "source": channel.source,
            "io": channel.io_running, "sql": channel.sql_running, "lag": channel.lag,
            "trend": sparkline(lag_series(status.lags, SPARK_WIDTH)),
            "relay": field(fields, "Relay_Log_Space"), "behind": sql_behind_io(fields),
            "trx": transactions_behind(fields, reading.variables.get("gtid_slave_pos")),
            "proxysql": server.proxysql_label or None, "max_lag": max_lag,
        }
        errors = [error_text(channel.io_errno, channel.io_error, field(fields, "Last_IO_Error_Timestamp")),
                  error_text(channel.sql_errno, channel.sql_error, field(fields, "Last_SQL_Error_Timestamp"))]
        errors = [f"{kind} {text}" for kind, text in zip(("IO", "SQL"), errors) if text]
        disagree = self.proxysql_view(server, channel, proxysql, row, view)
        notes = errors + ([disagree] if disagree else [])
        row["note"] = "; ".join(notes) or None
        row["_note_style"] = "danger" if errors else ("warning" if notes else None)
        return row

    def proxysql_view(self, server: Server, channel: Channel, proxysql, row: Row, view: DataView) -> Optional[str]:
        """ProxySQL's last measured lag into the row, and why it can't agree with the
        replica's own when it can't."""
        _servers, monitor, now_us = proxysql
        if monitor is None or not hasattr(monitor.data, "server"):
            return None
        entries = monitor.data.server(server.endpoint.host, server.endpoint.port)
        measured, at_us = health.latest_lag(entries)
        row["px_lag"] = health.to_number(measured) if health.to_number(measured) is not None else measured
        if measured is None:
            return None
        age = (now_us - at_us) / 1e6 if now_us is not None and at_us is not None else None
        interval = check_interval([entry[0] for entry in entries.lag]) if entries is not None else None
        return views_disagree(channel.lag, measured, age, interval,
                              view.interval_in_force(server.replication_name) or 1.0)

    def primary_row(self, base: Row, reading: ReplicationReading, before: Optional[ReplicationReading],
                    seconds: Optional[float]) -> Row:
        status, variables = reading.status, reading.variables
        old = before.status if before is not None else {}
        written = rate(old.get("Binlog_bytes_written"), status.get("Binlog_bytes_written"), seconds)
        if written is None and before is not None and before.binlog_file == reading.binlog_file:
            written = rate(before.binlog_position, reading.binlog_position, seconds)  # MySQL: the position's move
        commits = rate(old.get("Binlog_commits"), status.get("Binlog_commits"), seconds)
        groups = rate(old.get("Binlog_group_commits"), status.get("Binlog_group_commits"), seconds)
        sync_binlog = variables.get("sync_binlog")
        replicas = len(reading.replicas)
        return dict(
            base, _id=f"{base['server']}|{PRIMARY}", _server=base["server"], channel=PRIMARY,
            source=f"\u2192 {replicas} replica{'s' if replicas != 1 else ''}",
            binlog=f"{reading.binlog_file}:{reading.binlog_position}" if reading.binlog_file else None,
            binlog_s=written, per_group=commits / groups if commits is not None and groups else None,
            fsync_s=groups if str(sync_binlog) == "1" else None,
            sync=f"{sync_binlog}/{variables.get('innodb_flush_log_at_trx_commit')}" if sync_binlog is not None else None)

    def mysql_server(self, row: Row) -> Optional[str]:
        return row.get("_server") or row.get("server")

    def status(self, view: DataView) -> Optional[str]:
        return None  # each server's problems are on its rows

    def notes(self, view: DataView):
        if self.fleet.listed():
            return []
        return [(("No MySQL server to watch: add one with --mysql HOST[:PORT] or --mysql-socket PATH.", "warning"),)]

    # --- Enter: a channel's whole status ---------------------------------------------------------------
    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        server = self.fleet.servers.get(row.get("_server") or row.get("server") or "")
        if server is None:
            return None
        snapshot = view.latest(server.replication_name)
        reading = snapshot.data if snapshot is not None and isinstance(snapshot.data, ReplicationReading) else None
        if row.get("channel") == PRIMARY and reading is not None:
            return self.primary_detail(server, reading)
        status = next((s for s in (reading.channels if reading else ())
                       if f"{server.key}|{s.channel.name}|{s.channel.source}" == row.get("_id")), None)
        if status is None:
            return Detail(f"Replication of {server.key}", (((row.get("note") or "no channel", "dim"),),))
        lines = [(("Lag  ", "label"), (sparkline(lag_series(status.lags, DETAIL_SPARK_WIDTH)), "header"),
                  (f"  now {units.duration(status.channel.lag)}, over the last {len(status.lags)} readings", "dim"))]
        for problem in channel_problems(server.key, status.channel, status.row()):
            lines.append(((problem, "danger"),))
        for title, fields in grouped_fields(status.fields):
            lines += [(), ((title, "header"),)]
            for name, value in fields:
                style = "danger" if title == "Errors" and value not in (None, "", 0, "0") else None
                explained = EXPLAINED.get(canonical(name))
                lines.append(((f"  {name:<32}", "label"), ("NULL" if value is None else str(value), style))
                             + (((f"  {explained}", "dim"),) if explained else ()))
        return Detail(f"Channel {channel_label(status.channel.name)} of {server.key}", tuple(lines))

    def primary_detail(self, server: Server, reading: ReplicationReading) -> Detail:
        lines = [(("Binary log  ", "label"), (f"{reading.binlog_file}:{reading.binlog_position}", "header")),
                 (("  the variables below are read every 10 s; the position above every reading", "dim"),)]
        for name in ("log_bin", "binlog_format", "sync_binlog", "innodb_flush_log_at_trx_commit", "gtid_binlog_pos",
                     "gtid_executed"):
            if name in reading.variables:
                lines.append(((f"  {name:<32}", "label"), (str(reading.variables[name]), None)))
        for name, value in sorted(reading.status.items()):
            lines.append(((f"  {name:<32}", "label"), (str(value), None)))
        lines += [(), ((f"Replicas connected ({len(reading.replicas)})", "header"),)]
        lines += [((f"  server id {server_id:<8}", "label"), (address, None)) for server_id, address in reading.replicas]
        lines += [((f"{what} needs {privilege}", "warning"),) for what, privilege in reading.denied]
        return Detail(f"Binary log of {server.key}", tuple(lines))

    # --- the header alarm -----------------------------------------------------------------------------------
    def alarm(self, view: DataView) -> Optional[str]:
        """Stopped threads and replication errors of every server, then lag heading past
        ProxySQL's max_replication_lag; from the newest of each server's replication and
        Servers readings (the alarm's own, every ALARM_PACE s, on other screens)."""
        now = view.now()
        servers = view.latest(RuntimeServers.name) if self.fleet.discover else None
        pairs = []
        for server in self.fleet.listed():
            full, own = view.pair(server.replication_name), view.pair(server.server_name)
            newest = max((p for p in (full, own) if p[1] is not None), key=lambda p: p[1].taken_at, default=None)
            if newest is not None and now - newest[1].taken_at <= ALARM_STALE:
                pairs.append((server, newest))
        token = (servers,) + tuple(newest[1] for _server, newest in pairs)
        if token == self._alarm[0]:
            self.alarm_rank = self._alarm[2]
            return self._alarm[1]
        stopped: List[str] = []
        lagging: List[str] = []
        for server, (previous, current) in pairs:
            channels, before = self._channels(current), self._channels(previous)
            max_lag = max_replication_lag(servers, server.endpoint.host, server.endpoint.port)
            for channel, lags in channels:
                stopped += channel_problems(server.key, channel, {})
                earlier = lags[-2] if len(lags) > 1 else next(
                    (c.lag for c, _ in before if (c.name, c.source) == (channel.name, channel.source)), None)
                text = lag_alarm(channel.lag, earlier, max_lag)
                if text:
                    lagging.append(f"{server.key} {text}")
        text = alarm_line(stopped + lagging)
        rank = 0 if stopped else 1
        self._alarm = (token, text, rank)
        self.alarm_rank = rank
        return text

    @staticmethod
    def _channels(snapshot: Optional[Snapshot]) -> List[Tuple[Channel, Sequence[Optional[int]]]]:
        data = snapshot.data if snapshot is not None else None
        if isinstance(data, ReplicationReading):
            return [(status.channel, status.lags) for status in data.channels]
        if isinstance(data, ServerReading):
            return [(channel, ()) for channel in data.channels]
        return []


SCREEN = ReplicationScreen
