"""Servers: one row per MySQL / MariaDB server proxytop watches (its fleet), the first screen
of the MySQL servers' half.

Each server's own figures (its ``mysql.server.<server>`` readings, collectors.mysql_server):
version, role, uptime, Questions/s, threads connected and running, slow queries and aborted
connects per second, InnoDB row operations per second, the buffer pool's hit ratio, the
history list length, and the replication channels' threads and lag. A server that is down or
refuses stays on its row with the reason. Enter shows the server's sessions, c its channels.
"""
from __future__ import annotations

from typing import List, Mapping, Optional

from proxytop.collectors.innodb import DISCOVERY
from proxytop.collectors.innodb_fleet import Fleet, Server
from proxytop.collectors.mysql_server import ServerReading
from proxytop.metrics import units
from proxytop.metrics.rates import rate
from proxytop.screens.base import DataView, Detail, Screen, seconds_between
from proxytop.screens.keys import Binding
from proxytop.screens.table import Column, Row

ROW_OPERATIONS = ("Innodb_rows_read", "Innodb_rows_inserted", "Innodb_rows_updated", "Innodb_rows_deleted")
# MariaDB 10.6 and newer count no Innodb_rows_*: the rows read and written by any engine instead
HANDLER_OPERATIONS = ("Rows_read", "Handler_write", "Handler_update", "Handler_delete")


def row_operations(before: Mapping, status: Mapping, seconds) -> Optional[float]:
    """Row operations per second: InnoDB's row counters where the server has them, else the
    rows every engine read and wrote.

    >>> row_operations({"Rows_read": 10, "Handler_write": 0, "Handler_update": 0, "Handler_delete": 0},
    ...                {"Rows_read": 30, "Handler_write": 5, "Handler_update": 5, "Handler_delete": 0}, 2.0)
    15.0
    """
    names = ROW_OPERATIONS if ROW_OPERATIONS[0] in status else HANDLER_OPERATIONS
    rates = [rate(before.get(name), status.get(name), seconds) for name in names if name in status]
    return sum(rates) if rates and None not in rates else None


def role(reading: ServerReading) -> str:
    """replica (it replicates), galera (a wsrep node), read-only, or primary (writable).

    >>> role(ServerReading({}, {"read_only": "ON"})), role(ServerReading({}, {"read_only": "OFF"}))
    ('read-only', 'primary')
    """
    if reading.channels:
        return "replica"
    if str(reading.variables.get("wsrep_on") or "").upper() == "ON":
        return "galera"
    if str(reading.variables.get("read_only") or "").upper() == "ON":
        return "read-only"
    return "primary"


def replication_text(reading: ServerReading) -> Optional[str]:
    """The threads of each channel, 'Yes/Yes' (IO/SQL), those with a thread not running first
    (the column is narrower than several channels); a Galera node's state; None otherwise.

    >>> from proxytop.collectors.mysql_server import Channel
    >>> replication_text(ServerReading({}, {}, (Channel("eu", "db1:3306", "Yes", "Yes", 9),
    ...                                         Channel("ap", "db2:3306", "Yes", "No", None))))
    'Yes/No Yes/Yes'
    """
    if reading.channels:
        running = ("Yes", "Yes")
        channels = sorted(reading.channels, key=lambda c: (c.io_running, c.sql_running) == running)
        return " ".join(f"{c.io_running}/{c.sql_running}" for c in channels)
    state = reading.status.get("wsrep_local_state_comment")
    return str(state) if state else None


def worst_lag(channels) -> Optional[int]:
    lags = [c.lag for c in channels if c.lag is not None]
    return max(lags) if lags else None


def fleet_states_token(fleet: Fleet, view: DataView):
    """What changes a fleet screen's rows without a new reading: a server down or connecting
    (and its retry countdown)."""
    now = view.now()
    states = (view.state(server.source) for server in fleet.listed())
    return tuple((state, state.retry_seconds(now)) for state in states if state is not None and not state.connected)


def hit_ratio(previous: Mapping, current: Mapping) -> Optional[float]:
    """The buffer pool's hit ratio over the interval, %: page requests served without a read
    from disk.

    >>> hit_ratio({"Innodb_buffer_pool_read_requests": 1000, "Innodb_buffer_pool_reads": 10},
    ...           {"Innodb_buffer_pool_read_requests": 2000, "Innodb_buffer_pool_reads": 20})
    99.0
    """
    try:
        requests = current["Innodb_buffer_pool_read_requests"] - previous["Innodb_buffer_pool_read_requests"]
        reads = current["Innodb_buffer_pool_reads"] - previous["Innodb_buffer_pool_reads"]
    except (KeyError, TypeError):
        return None
    if requests <= 0 or reads < 0:
        return None
    return max(0.0, 100.0 * (1 - reads / requests))


def channel_problems(channels) -> List[str]:
    """Stopped threads and errors of the channels, one phrase each."""
    problems = []
    for c in channels:
        where = f"channel '{c.name}' " if c.name else ""
        if c.io_errno:
            problems.append(f"{where}IO error {c.io_errno}: {c.io_error}")
        if c.sql_errno:
            problems.append(f"{where}SQL error {c.sql_errno}: {c.sql_error}")
        if not c.io_errno and c.io_running not in ("Yes", "Connecting"):
            problems.append(f"{where}IO thread stopped")
        if not c.sql_errno and c.sql_running != "Yes":
            problems.append(f"{where}SQL thread stopped")
    return problems


def repl_style(row: Mapping) -> Optional[str]:
    text = str(row.get("repl") or "")
    if "No" in text:
        return "danger"
    if "Connecting" in text or (text and row.get("role") == "galera" and text != "Synced"):
        return "warning"
    return None


def note_style(row: Mapping) -> Optional[str]:
    return row.get("_note_style")


class ServersScreen(Screen):
    key = "servers"
    title = "Servers"
    short_title = "Srv"
    uses_fleet = True
    default_sort = ("server", False)
    tiebreak = ("server",)
    bindings = (
        Binding(("ENTER",), "sessions", "the sessions of the selected server (the Sessions screen)", "Enter sessions"),
        Binding(("c",), "channels", "the replication channels of the selected server: threads, lag, errors",
                "c channels"),
    )
    all_columns = (
        Column("server", "Server", 18, "<", numeric=False, priority=0),
        Column("proxysql", "HG/Status", 12, "<", numeric=False, priority=6,
               help="ProxySQL hostgroups of the server and its status there (runtime_mysql_servers)"),
        Column("version", "Version", 16, "<", numeric=False, priority=5, help="product and version"),
        Column("role", "Role", 9, "<", numeric=False, priority=1,
               help="replica (it replicates), galera (a wsrep node), read-only (read_only=ON) or primary"),
        Column("uptime", "Uptime", 7, unit="s", fmt=units.duration, priority=4, help="Uptime"),
        Column("qps", "Q/s", 7, fmt=units.number, priority=1, help="Questions per second"),
        Column("connected", "Conn", 5, fmt=units.plain, priority=2, help="Threads_connected"),
        Column("running", "Run", 4, fmt=units.plain, priority=1, help="Threads_running"),
        Column("slow_s", "Slow/s", 6, fmt=units.number, priority=3, help="Slow_queries per second"),
        Column("aborted_s", "AbConn/s", 8, fmt=units.number, priority=5,
               help="Aborted_connects per second: failed logins and handshakes"),
        Column("rows_s", "Rows/s", 7, fmt=units.number, priority=3,
               help="row operations per second: Innodb_rows_read + inserted + updated + deleted (MariaDB 10.6+, "
                    "which has none: Rows_read + Handler_write + Handler_update + Handler_delete, every engine's)"),
        Column("hit_pct", "BPhit%", 6, fmt=units.percent_figure, priority=4,
               help="buffer pool hit ratio over the interval: page requests served without a disk read"),
        Column("hll", "HLL", 6, fmt=units.number, priority=5,
               help="history list length (Innodb_history_list_length, MariaDB): undo not yet purged"),
        Column("lag", "Lag", 6, unit="s", fmt=units.duration, priority=2,
               help="replication lag, Seconds_Behind_Master/Source (the worst channel's)"),
        Column("repl", "IO/SQL", 8, "<", numeric=False, style=repl_style, priority=2,
               help="each channel's IO and SQL threads (Yes, No, Connecting); a Galera node's state"),
        Column("note", "Note", 24, "<", numeric=False, style=note_style, priority=0, flexible=True,
               help="why a server can't be read, replication errors, what needs a privilege"),
    )

    def __init__(self, config=None, fleet: Optional[Fleet] = None):
        super().__init__(config)
        self.fleet = fleet if fleet is not None else Fleet.from_config(config)
        self._down = 0
        self.columns = self.all_columns
        self._without_proxysql = tuple(c for c in self.all_columns if c.key != "proxysql")
        if not getattr(config, "proxysql", True):  # no ProxySQL: no hostgroups to show
            self.columns = self._without_proxysql

    def active_collectors(self) -> List[str]:
        names = [DISCOVERY] if self.fleet.discover else []
        return names + [server.server_name for server in self.fleet.listed()]

    def rows_token(self, view: DataView):
        return fleet_states_token(self.fleet, view)

    def rows(self, view: DataView) -> List[Row]:
        self.fleet.sync_discovered()
        if not self.fleet.discover:  # none asked of ProxySQL (or -H/-P named a MySQL server)
            self.columns = self._without_proxysql
        rows = [self.server_row(server, view) for server in self.fleet.listed()]
        self._down = sum(1 for row in rows if row.get("_down"))
        return rows

    def server_row(self, server: Server, view: DataView) -> Row:
        session = getattr(view.source(server.source), "session", None)
        flavour = getattr(session, "flavour", None)
        row: Row = {"_id": server.key, "server": server.key, "proxysql": server.proxysql_label or None,
                    "version": flavour.label if flavour is not None else None}
        state = view.state(server.source)
        if state is not None and not state.connected:
            if state.error:
                row.update(note=f"down, {state.retry_text(view.now())}: {state.error}", _note_style="danger",
                           _down=True, role="DOWN", _spill="note")
            else:
                row.update(note="connecting\u2026", _note_style="dim")
            return row
        previous, current = view.pair(server.server_name)
        if current is None or not isinstance(current.data, ServerReading):
            row.update(note=view.error(server.server_name) or "waiting for the first reading\u2026",
                       _note_style="warning" if view.error(server.server_name) else "dim")
            return row
        reading = current.data
        status = reading.status
        before = previous.data.status if previous is not None and isinstance(previous.data, ServerReading) else {}
        seconds = seconds_between(previous, current)
        per_second = {name: rate(before.get(name), status.get(name), seconds)
                      for name in ("Questions", "Slow_queries", "Aborted_connects")}
        row.update(
            role=role(reading), uptime=status.get("Uptime"), qps=per_second["Questions"],
            connected=status.get("Threads_connected"), running=status.get("Threads_running"),
            slow_s=per_second["Slow_queries"], aborted_s=per_second["Aborted_connects"],
            rows_s=row_operations(before, status, seconds),
            hit_pct=hit_ratio(before, status), hll=status.get("Innodb_history_list_length"),
            lag=worst_lag(reading.channels), repl=replication_text(reading))
        problems = channel_problems(reading.channels)
        notes = problems + [f"replication status needs {reading.replication_denied}" if reading.replication_denied
                            else None, reading.replication_error, view.error(server.server_name)]
        notes = [note for note in notes if note]
        row["note"] = "; ".join(notes) if notes else None
        row["_note_style"] = "danger" if problems else "warning"
        return row

    def action_sessions(self, controller) -> None:
        controller.show_screen("sessions")

    def action_channels(self, controller) -> None:
        controller.do_open()

    def notes(self, view: DataView):
        listed = self.fleet.listed()
        if listed:
            return []
        how = ("add one with --mysql HOST[:PORT] or --mysql-socket PATH"
               + (", or let ProxySQL's runtime_mysql_servers list them (an admin user)" if self.fleet.discover else ""))
        return [((f"No MySQL server to watch: {how}.", "warning"),)]

    def status(self, view: DataView) -> Optional[str]:
        return f"{self._down} of {len(self.fleet.listed())} server(s) down" if self._down else None

    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        server = self.fleet.servers.get(row.get("_id"))
        if server is None:
            return None
        lines = []
        snapshot = view.latest(server.server_name)
        reading = snapshot.data if snapshot is not None and isinstance(snapshot.data, ServerReading) else None
        if reading is None:
            lines.append(((row.get("note") or "no reading yet", "dim"),))
        elif reading.replication_denied:
            lines.append(((f"Replication status needs the {reading.replication_denied} privilege.", "warning"),))
        elif not reading.channels:
            lines.append((("This server replicates from no source.", "dim"),))
        for channel in reading.channels if reading is not None else ():
            lines += [(("Channel ", "label"), (repr(channel.name) if channel.name else "(default)", "header"),
                       ("  from ", "label"), (channel.source, None)),
                      ((f"  {'IO thread':<14}", "label"), (channel.io_running, repl_style({"repl": channel.io_running}))),
                      ((f"  {'SQL thread':<14}", "label"), (channel.sql_running, repl_style({"repl": channel.sql_running}))),
                      ((f"  {'lag':<14}", "label"), (units.duration(channel.lag), None))]
            for problem in channel_problems((channel,)):
                lines.append(((f"  {problem}", "danger"),))
            lines.append(())
        return Detail(title=f"Replication of {server.key}", lines=tuple(lines))


SCREEN = ServersScreen
