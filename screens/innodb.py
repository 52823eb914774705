"""InnoDB: redo-log checkpointing and page flushing of the MySQL servers behind the proxy.

One row per server (the fleet), Enter for the detail panel of the selected one. Servers come
from ``--mysql HOST[:PORT]`` / ``--mysql-socket PATH`` and, by default, from ProxySQL's
runtime_mysql_servers (admin user), read with the credentials the mysql client would use or,
when none are given, with ProxySQL's monitor credentials. A slow or dead server only delays its
own row. Nothing here writes to a server: INNODB_METRICS counters that are off are explained,
never enabled.
"""
from __future__ import annotations

import getpass
from typing import Dict, List, Mapping, Optional, Tuple

from proxytop.collectors.innodb import DISCOVERY, Discovery
from proxytop.collectors.innodb_fleet import Fleet, Server
from proxytop.metrics import units
from proxytop.metrics.innodb import (ASYNC, ENABLE_HINT, FLUSH_TYPE_METRICS, NEEDS_PROCESS, OK, SYNC, Assessment, EngineReading,
                             assess, bar)
from proxytop.config import mysql_options
from proxytop.config.mysql_options import Credentials
from proxytop.metrics.rates import to_number
from proxytop.screens.base import DataView, Detail, Screen, seconds_between
from proxytop.screens.table import Column, Row

add_arguments = mysql_options.add_arguments  # this screen's options (--mysql ...), offered by proxytop.screens


STATE_STYLE = {OK: "good", ASYNC: "warning_bold", SYNC: "danger", "DOWN": "danger"}
NEEDS_WORDS = {  # what a user without PROCESS misses, in the table's terms
    "age": "CkptAge",
    "pending_writes": "PendW",
    "by_type": "by type",
    "history_list_length": "HLL",
}


# ----- formatting -------------------------------------------------------------------------------

def state_style(row: Mapping) -> Optional[str]:
    return STATE_STYLE.get(str(row.get("state") or ""))


def age_style(row: Mapping) -> Optional[str]:
    return state_style(row) if row.get("state") in (ASYNC, SYNC) else None


def positive_style(key: str):
    def style(row: Mapping) -> Optional[str]:
        value = to_number(row.get(key))
        return "danger" if value else None
    return style


def dirty_style(row: Mapping) -> Optional[str]:
    value, limit = to_number(row.get("dirty_pct")), to_number(row.get("_max_dirty"))
    if value is None or limit is None:
        return None
    return "danger" if value >= limit else "warning" if value >= 0.9 * limit else None


def flushed_style(row: Mapping) -> Optional[str]:
    value, limit = to_number(row.get("flushed_s")), to_number(row.get("_io_max"))
    if value is None or not limit:
        return None
    return "warning_bold" if value > limit else None


def proxysql_style(row: Mapping) -> Optional[str]:
    text = str(row.get("proxysql") or "")
    if "SHUNNED" in text:
        return "danger"
    if "OFFLINE" in text:
        return "warning"
    return None


def note_style(row: Mapping) -> Optional[str]:
    return row.get("_note_style")


def rate_text(value) -> str:
    return units.MISSING if value is None else units.number(value)


def io_capacity_text(io: Optional[float], io_max: Optional[float]) -> Optional[str]:
    """
    >>> io_capacity_text(200, 2000), io_capacity_text(None, None)
    ('200/2000', None)
    """
    if io is None and io_max is None:
        return None
    return f"{units.plain(io)}/{units.plain(io_max)}"


def needs_text(assessment: Assessment) -> str:
    words = [NEEDS_WORDS[n] for n in assessment.needs_process if n in NEEDS_WORDS]
    return f"{NEEDS_PROCESS}: {', '.join(words)}" if words else ""


# ----- the detail panel, a section at a time --------------------------------------------------

Segment = Tuple[str, Optional[str]]
DetailLine = Tuple[Segment, ...]


def field(label: str, *segments: Segment) -> DetailLine:
    """One labelled line of the detail panel; the labels line up in a column."""
    return ((f"  {label:<18}", "label"),) + segments


def server_line(server: Server, view: DataView) -> DetailLine:
    """Which server, where it was found, and how it is read (user, TLS)."""
    where = []
    source = view.source(server.source)
    if server.discovered is not None:
        pairs = ", ".join(f"{h} {s}" for h, s in zip(server.discovered.hostgroups, server.discovered.statuses))
        where.append(f"from runtime_mysql_servers: hostgroup {pairs}")
    if server.explicit:  # a replay's user gave no option: the recording's maker did
        where.append("also given with --mysql when recorded" if getattr(source, "replayed", False)
                     else "also given with --mysql" if where else "given with --mysql")
    session = getattr(source, "session", None)
    encryption = getattr(session, "encryption", None)
    return (("Server ", "label"), (server.key, "header"), (f"  ({'; '.join(where)})", "dim"),
            ("  user ", "label"), (server.endpoint.user, None),
            ("  TLS ", "label"), (encryption or "off", "good" if encryption else "dim"))


def flavour_lines(a: Assessment) -> List[DetailLine]:
    flavour = a.flavour
    return [(("Flavour ", "label"), (flavour.label if flavour else units.MISSING, "header"),
             (f"  {flavour.series}" if flavour else "", None),
             (f"  ({flavour.version_text})" if flavour and flavour.version_text else "", "dim")),
            ()]


def checkpoint_lines(a: Assessment) -> List[DetailLine]:
    """The checkpoint age against the redo log, with the bar that marks the flush limits."""
    lines: List[DetailLine] = [(("Checkpoint", "header"),)]
    limits = a.limits
    capacity = limits.capacity if limits else None
    if a.age is None and a.lacks("age"):
        return lines + [field("state", (NEEDS_PROCESS, "warning")),
                        field("checkpoint age", (NEEDS_PROCESS, "warning"),
                              (" (SHOW ENGINE INNODB STATUS gives the LSNs on this version)", "dim"))]
    lines.append(field("state", (a.state or units.MISSING, STATE_STYLE.get(a.state or ""))))
    age_text = units.size(a.age) if a.age is not None else units.MISSING
    lines.append(field("checkpoint age", (age_text, STATE_STYLE.get(a.state or "") if a.state != OK else None),
                       (f"  {units.percent(a.age_pct)} of {units.size(capacity)} redo log" if capacity
                        else "", None)))
    if a.modified_age is not None:
        lines.append(field("modified age", (units.size(a.modified_age), None),
                           ("  LSN − pages flushed up to: what this server compares with its limits", "dim")))
    lines.append(field("", (bar(a.modified_age if a.modified_age is not None else a.age, capacity,
                                limits.async_age if limits else None, limits.sync_age if limits else None, 52),
                            STATE_STYLE.get(a.state or "") if a.state != OK else "good"),
                       ("  A async  S sync", "dim")))
    return lines


def flush_limit_lines(a: Assessment) -> List[DetailLine]:
    """Where asynchronous and synchronous flushing start, and whether the server said so."""
    limits = a.limits
    if limits is None:
        return [field("limits", (units.MISSING, None), ("  waiting for the server's variables", "dim"))]
    sync_label = "sync flush above" if a.flavour is not None and a.flavour.is_mariadb else "sync flush at"
    return [field(label, (units.size(age), None), (f"  {units.percent(pct)}" if pct is not None else "", None),
                  (f"  {origin}", "dim" if origin == "server" else "warning"),
                  (f" ({limits.formula})" if origin == "computed" and limits.formula else "", "dim"))
            for label, age, pct, origin in (("async flush at", limits.async_age, a.async_pct, limits.async_origin),
                                            (sync_label, limits.sync_age, a.sync_pct, limits.sync_origin))]


def redo_rate_lines(a: Assessment) -> List[DetailLine]:
    """The LSNs, how fast redo is written, and how long until the limits at that rate."""
    lines: List[DetailLine] = []
    if a.lsn is not None:
        lines.append(field("LSN", (units.exact(a.lsn), None),
                           ("  last checkpoint ", "label"), (units.exact(a.checkpoint_lsn), None),
                           ("  flushed to disk ", "label"), (units.exact(a.flushed_lsn), None)))
    lines.append(field("redo written", (units.size_rate(a.redo_rate), None),
                       (f"  ({a.redo_rate_source})" if a.redo_rate_source else "", "dim")))
    lines.append(field("sync flush in", (units.duration(a.full_in) if a.full_in is not None else units.MISSING, None),
                       ("  at this rate (writes stall); the whole log in ", "dim"),
                       (units.duration(a.log_full_in) if a.log_full_in is not None else units.MISSING, None)))
    return lines + [()]


def dirty_page_lines(a: Assessment) -> List[DetailLine]:
    return [(("Dirty pages", "header"),),
            field("dirty", (units.number(a.dirty_pages), None), (" of ", "dim"), (units.number(a.total_pages), None),
                  (" pages  ", "dim"), (units.percent(a.dirty_pct), dirty_style({"dirty_pct": a.dirty_pct,
                                                                                "_max_dirty": a.max_dirty_pct}))),
            field("max dirty pct", (units.percent(a.max_dirty_pct), None), ("  low-water mark ", "label"),
                  (units.percent(a.max_dirty_lwm), None)),
            ()]


def flushing_lines(a: Assessment) -> List[DetailLine]:
    """Pages flushed per second against the I/O capacity the server was given."""
    return [(("Flushing", "header"),),
            field("pages flushed", (rate_text(a.flushed_rate) + "/s" if a.flushed_rate is not None else units.MISSING,
                                    flushed_style({"flushed_s": a.flushed_rate, "_io_max": a.io_capacity_max})),
                  ("  io_capacity ", "label"), (units.plain(a.io_capacity), None),
                  ("  io_capacity_max ", "label"), (units.plain(a.io_capacity_max), None),
                  (f"  (LRU {rate_text(a.lru_flushed_rate)}/s)" if a.lru_flushed_rate is not None else "", "dim"))]


def flush_type_lines(a: Assessment) -> List[DetailLine]:
    """Flushing by type (INNODB_METRICS), or why it is not known and how a DBA turns it on."""
    lines: List[DetailLine] = []
    if a.by_type is not None:
        segments: List[Segment] = []
        for label, value in a.by_type:
            segments += [(f"{label} ", "label"), (f"{rate_text(value)}/s  " if value is not None else "off  ",
                                                  "danger" if label == "sync" and value else None)]
        lines.append(field("by type", *segments))
    elif a.lacks("by_type"):
        lines.append(field("by type", (NEEDS_PROCESS, "warning"), ("  (INNODB_METRICS)", "dim")))
    else:
        lines.append(field("by type", (units.MISSING, None)))
    if a.by_type_disabled:
        labels = dict((metric, label) for label, metric in FLUSH_TYPE_METRICS)
        off = ", ".join(labels.get(name, name) for name in a.by_type_disabled)
        lines.append(field("", (f"INNODB_METRICS counters off ({off}); a DBA can enable them with", "dim")))
        lines.append(field("", (ENABLE_HINT, None), ("  (proxytop never changes a server setting)", "dim")))
    return lines


def flushing_setting_lines(a: Assessment) -> List[DetailLine]:
    """Synchronous flush waits, and the settings that decide how eagerly pages are flushed."""
    lines: List[DetailLine] = []
    if a.sync_waits_rate is not None:
        lines.append(field("sync flush waits", (f"{rate_text(a.sync_waits_rate)}/s",
                                                "danger" if a.sync_waits_rate else None)))
    lines.append(field("adaptive flushing", ("on" if a.adaptive_flushing else "off" if a.adaptive_flushing is not None
                                             else units.MISSING, None),
                       (f"  lwm {units.percent(a.adaptive_flushing_lwm)} of the redo log" if a.adaptive_flushing_lwm
                        is not None else "", "dim"),
                       (f"  innodb_flush_log_at_trx_commit={a.flush_log_at_trx_commit}" if a.flush_log_at_trx_commit
                        is not None else "", "dim")))
    return lines + [()]


def pending_lines(a: Assessment) -> List[DetailLine]:
    """Pending writes and fsyncs, and the waits that mean flushing is falling behind."""
    lines: List[DetailLine] = [(("Pending I/O and stalls", "header"),)]
    if a.pending_flush_list is None and a.lacks("pending_writes"):
        asked = "INNODB_BUFFER_POOL_STATS" if a.flavour is not None and a.flavour.is_mariadb else "SHOW ENGINE INNODB STATUS"
        lines.append(field("pending writes", (NEEDS_PROCESS, "warning"), (f"  ({asked})", "dim")))
    else:
        lines.append(field("pending writes", ("LRU ", "label"), (units.plain(a.pending_lru), None),
                           ("  flush list ", "label"), (units.plain(a.pending_flush_list),
                                                        "warning" if a.pending_flush_list else None),
                           ("  single page ", "label"), (units.plain(a.pending_single_page), None)))
    lines.append(field("pending fsyncs", (units.plain(a.pending_fsyncs), "warning" if a.pending_fsyncs else None),
                       ("  log fsyncs ", "label") if a.pending_log_fsyncs is not None else ("", None),
                       (units.plain(a.pending_log_fsyncs), None) if a.pending_log_fsyncs is not None else ("", None)))
    lines.append(field("buffer wait_free", (f"{rate_text(a.wait_free_rate)}/s" if a.wait_free_rate is not None
                                            else units.MISSING, "danger" if a.wait_free_rate else None),
                       ("  threads waiting for a clean page", "dim")))
    lines.append(field("log waits", (f"{rate_text(a.log_waits_rate)}/s" if a.log_waits_rate is not None
                                     else units.MISSING, "danger" if a.log_waits_rate else None),
                       ("  waits for log buffer space", "dim")))
    if a.history_list_length is None and a.lacks("history_list_length"):
        lines.append(field("history list", (NEEDS_PROCESS, "warning")))
    else:
        lines.append(field("history list", (units.number(a.history_list_length), None),
                           ("  undo records not yet purged", "dim")))
    return lines


def source_lines(a: Assessment) -> List[DetailLine]:
    """Where each value came from (status variable, INNODB_METRICS, the engine status text)."""
    if not a.sources:
        return []
    return [(), (("Sources", "header"),)] + [field(what, (where, "dim")) for what, where in a.sources]


# ----- the screen -------------------------------------------------------------------------------


class InnoDBScreen(Screen):
    key = "innodb"
    title = "InnoDB"
    uses_fleet = True
    short_title = "Inno"
    default_sort = ("server", False)
    tiebreak = ("server",)
    live_detail = True  # the detail panel follows new readings
    columns = (
        Column("server", "Server", 18, "<", numeric=False, priority=0),
        Column("proxysql", "HG/Status", 12, "<", numeric=False, style=proxysql_style, priority=3,
               help="ProxySQL hostgroups of the server and its status there (runtime_mysql_servers)"),
        Column("flavour", "Flavour", 13, "<", numeric=False, priority=5, help="product and release series"),
        Column("state", "State", 11, "<", numeric=False, style=state_style, priority=0,
               help="OK, ASYNC FLUSH (checkpoint age past the async limit) or SYNC FLUSH (writes stall)"),
        Column("age", "CkptAge", 8, unit="B", fmt=units.size, style=age_style, priority=2,
               help="checkpoint age: LSN minus the last checkpoint, in bytes"),
        Column("age_pct", "Age%", 6, fmt=units.percent_figure, style=age_style, priority=1,
               help="checkpoint age as a share of the redo log capacity (innodb_log_file_size; "
                    "x innodb_log_files_in_group before MariaDB 10.5; innodb_redo_log_capacity on MySQL 8.0.30+)"),
        Column("redo_rate", "Redo/s", 8, unit="B/s", fmt=units.size, priority=1, help="redo bytes written per second"),
        Column("full_in", "Sync in", 7, unit="s", fmt=units.duration, priority=3,
               help="time until the sync flush limit (writes stall) at the current redo rate: "
                    "(sync limit - age) / Redo/s"),
        Column("dirty_pct", "Dirty%", 6, fmt=units.percent_figure, style=dirty_style, priority=2,
               help="dirty pages as a share of all buffer pool pages (Innodb_buffer_pool_pages_total), "
                    "compared with innodb_max_dirty_pages_pct"),
        Column("dirty", "Dirty", 6, fmt=units.number, priority=6, help="dirty pages in the buffer pool"),
        Column("flushed_s", "Flush/s", 7, fmt=rate_text, style=flushed_style, priority=2,
               help="pages flushed per second"),
        Column("io_capacity", "IOcap", 9, "<", numeric=False, priority=7,
               help="innodb_io_capacity / innodb_io_capacity_max"),
        Column("pending", "PendW", 5, fmt=units.number, priority=4,
               help="pending flush-list writes (SHOW ENGINE INNODB STATUS; MariaDB: INNODB_BUFFER_POOL_STATS; needs PROCESS)"),
        Column("wait_free_s", "WaitFr/s", 8, fmt=rate_text, style=positive_style("wait_free_s"), priority=3,
               help="Innodb_buffer_pool_wait_free per second: threads waiting for a clean page"),
        Column("log_waits_s", "LogW/s", 6, fmt=rate_text, style=positive_style("log_waits_s"), priority=4,
               help="Innodb_log_waits per second: waits for log buffer space"),
        Column("hll", "HLL", 6, fmt=units.number, priority=5, help="history list length (undo not yet purged)"),
        Column("adaptive", "Adapt", 5, "<", numeric=False, priority=8, help="innodb_adaptive_flushing"),
        Column("note", "Note", 22, "<", numeric=False, style=note_style, priority=0, flexible=True,
               help="connection state, what needs PROCESS, collector errors"),
    )

    def __init__(self, config=None, prompt=getpass.getpass, fleet: Optional[Fleet] = None):
        super().__init__(config)
        # server -> (the readings, state and errors its row was made of, the row): at 500
        # servers read every 5 s, a frame makes the rows of the fifty read since the last one,
        # not all 500 (about 50 us each).
        self._rows: Dict[str, tuple] = {}
        self._alarms: Dict[str, List[str]] = {ASYNC: [], SYNC: []}  # servers by state, as of the last rows
        self._down = 0
        self._listed = 0
        # The fleet the Servers screen shows too; this screen registers it with the engine.
        self.fleet = fleet if fleet is not None else Fleet.from_config(config, prompt)
        if not getattr(config, "proxysql", True):  # no ProxySQL: no hostgroups to show
            self.columns = tuple(c for c in self.columns if c.key != "proxysql")

    @property
    def servers(self) -> Dict[str, Server]:
        return self.fleet.servers

    @property
    def credentials(self) -> Credentials:
        return self.fleet.credentials

    def sources(self):
        return self.fleet.sources()

    def collectors(self):
        return self.fleet.collectors()

    def attach(self, engine) -> None:
        self.fleet.attach(engine)

    def active_collectors(self) -> List[str]:
        return self.fleet.active_collectors()

    # ----- readings ------------------------------------------------------------------------------
    def assessment(self, server: Server, view: DataView) -> Assessment:
        """The server's values from its latest readings (and the ones before, for rates)."""
        previous, current = view.pair(server.status_name)
        engine_previous, engine_current = view.pair(server.engine_name)
        variables = view.latest(server.vars_name)
        session = getattr(view.source(server.source), "session", None)
        return assess(
            status=current.data if current is not None else None,
            previous_status=previous.data if previous is not None else None,
            status_seconds=seconds_between(previous, current),
            variables=variables.data if variables is not None else None,
            engine=engine_current.data if engine_current is not None and isinstance(engine_current.data, EngineReading)
            else None,
            previous_engine=engine_previous.data if engine_previous is not None else None,
            engine_seconds=seconds_between(engine_previous, engine_current),
            flavour=getattr(session, "flavour", None),
        )

    def _connection_note(self, server: Server, view: DataView) -> Tuple[Optional[str], Optional[str], bool]:
        """(state override, note, down) from the server's source state."""
        state = view.state(server.source)
        if state is None or state.connected:
            return None, None, False
        if state.error:
            return "DOWN", f"down, {state.retry_text(view.now())}: {state.error}", True
        return None, "connecting\u2026", True

    def rows_token(self, view: DataView):
        """A server that is down or connecting changes its row without a new reading (its
        state, its retry countdown)."""
        now = view.now()
        states = (view.state(server.source) for server in self.fleet.listed())
        return tuple((state, state.retry_seconds(now)) for state in states if state is not None and not state.connected)

    def rows(self, view: DataView) -> List[Row]:
        """Every listed server's row, made again only when its readings, state or errors
        changed; the servers in ASYNC / SYNC flush and down are counted on the way."""
        self.fleet.sync_discovered()
        now = view.now()
        rows: List[Row] = []
        alarms: Dict[str, List[str]] = {ASYNC: [], SYNC: []}
        down = 0
        for server in self.fleet.listed():
            state = view.state(server.source)
            connected = state is not None and state.connected
            made_of = (tuple(map(view.latest, server.names)), state, None if connected or state is None
                       else state.retry_seconds(now), server.discovered, tuple(map(view.error, server.names)))
            kept = self._rows.get(server.key)
            if kept is None or kept[0] != made_of:
                kept = self._rows[server.key] = (made_of, self.server_row(server, view))
            row = kept[1]
            rows.append(row)
            if connected and row.get("state") in alarms:
                alarms[row["state"]].append(server.key)
            down += state is not None and bool(state.error) and not connected
        self._alarms, self._down, self._listed = alarms, down, len(rows)
        return rows

    def server_row(self, server: Server, view: DataView) -> Row:
        """One server's row: its assessment, or why it can't be read (over the numbers)."""
        state_override, connection_note, down = self._connection_note(server, view)
        session = getattr(view.source(server.source), "session", None)
        flavour = getattr(session, "flavour", None)
        row: Row = {
            "_id": server.key,
            "server": server.key,
            "proxysql": server.proxysql_label or None,
            "flavour": flavour.short if flavour is not None else None,
        }
        if down:
            # the reason runs over the numbers the server could not give (readable at 140 columns)
            row.update(state=state_override, note=connection_note, _spill="note",
                       _note_style="danger" if state_override else "dim")
            return row
        a = self.assessment(server, view)
        if a.flavour is not None:
            row["flavour"] = a.flavour.short
        row.update(
            state=a.state, age=a.age, age_pct=a.age_pct, redo_rate=a.redo_rate, full_in=a.full_in,
            dirty_pct=a.dirty_pct, dirty=a.dirty_pages, flushed_s=a.flushed_rate,
            io_capacity=io_capacity_text(a.io_capacity, a.io_capacity_max), pending=a.pending_flush_list,
            wait_free_s=a.wait_free_rate, log_waits_s=a.log_waits_rate, hll=a.history_list_length,
            adaptive=None if a.adaptive_flushing is None else ("on" if a.adaptive_flushing else "off"),
            _max_dirty=a.max_dirty_pct, _io_max=a.io_capacity_max)  # _ keys: what the colour rules compare with
        errors = [view.error(name) for name in server.names]
        needs = needs_text(a)
        notes = [e for e in errors if e] + ([needs] if needs else [])
        row["note"] = "; ".join(notes) if notes else None
        row["_note_style"] = "warning" if (needs or any(errors)) else "dim"
        return row

    def notes(self, view: DataView):
        lines = []
        snapshot = view.latest(DISCOVERY) if self.fleet.discover else None
        discovery = snapshot.data if snapshot is not None and isinstance(snapshot.data, Discovery) else None
        listed = self.fleet.listed()
        if self.fleet.discover:
            if discovery is None:
                error = view.error(DISCOVERY)
                proxysql = view.state("proxysql")
                if error:
                    lines.append(((f"Discovery through ProxySQL failed: {error}", "warning"),))
                elif not listed and proxysql is not None and not proxysql.connected and proxysql.error:
                    # the discovery waits for ProxySQL: say why, and how to do without it
                    lines.append((("ProxySQL can't be reached (the header says why), so its backends can't be found: "
                                   "watch MySQL servers directly with --mysql HOST[:PORT].", "warning"),))
                elif not listed:
                    lines.append(((
                        "Looking for backends in ProxySQL's runtime_mysql_servers\u2026", "dim"),))
            elif not discovery.admin:
                lines.append((("Discovering backends needs a ProxySQL admin user (runtime_mysql_servers); "
                               "add servers with --mysql HOST[:PORT].", "dim"),))
            elif discovery.servers:
                who = (f"as ProxySQL's monitor user '{discovery.monitor_user}' (no MySQL credentials given)"
                       if not self.credentials.given and discovery.monitor_user else f"as '{self.credentials.user}'")
                lines.append(((f"{len(discovery.servers)} backend(s) from ProxySQL's runtime_mysql_servers, read {who}.",
                               "dim"),))
        if not listed and (discovery is not None or not self.fleet.discover):
            lines.append((("No MySQL server to watch: add one with --mysql HOST[:PORT] or --mysql-socket PATH"
                           + (", or connect to ProxySQL as an admin user to discover its backends."
                              if self.fleet.discover else "."), "warning"),))
        if self._alarms[SYNC]:
            lines.append(((f"SYNC FLUSH (writes stall on redo space): {', '.join(self._alarms[SYNC])}", "danger"),))
        if self._alarms[ASYNC]:
            lines.append(((f"ASYNC FLUSH (checkpoint age past the async limit): {', '.join(self._alarms[ASYNC])}",
                           "warning_bold"),))
        return lines

    def status(self, view: DataView) -> Optional[str]:
        return f"{self._down} of {self._listed} server(s) down" if self._down else None

    # ----- the detail panel ----------------------------------------------------------------------
    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        server = self.servers.get(row.get("_id"))
        if server is None:
            return None
        return Detail(title=f"InnoDB flushing on {server.key}", lines=tuple(self.detail_lines(server, view)))

    def detail_lines(self, server: Server, view: DataView) -> List[DetailLine]:
        lines = [server_line(server, view)]
        state_override, note, down = self._connection_note(server, view)
        if down:
            return lines + [((note or "", "danger" if state_override else "dim"),)]
        a = self.assessment(server, view)
        for section in (flavour_lines, checkpoint_lines, flush_limit_lines, redo_rate_lines, dirty_page_lines,
                        flushing_lines, flush_type_lines, flushing_setting_lines, pending_lines, source_lines):
            lines += section(a)
        problems = [view.error(name) for name in server.names if view.error(name)]
        if problems:
            lines.append(())
            lines += [((problem, "warning"),) for problem in problems]
        return lines

SCREEN = InnoDBScreen
