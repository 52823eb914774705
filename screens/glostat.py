"""GloStat: ProxySQL's global status (stats_mysql_global) and memory (stats_memory_metrics).

Every variable in one table, in sections a DBA knows (Connections, Prepared statements,
Commands, Query cache, Monitor, Traffic, Memory, Other), with a per-second rate for counters
and the plain value for gauges. Variables this version of proxytop does not know (newer
ProxySQL releases add some) are shown as text, without a rate: nothing is guessed.

The global status is the header's own collector ("proxysql.global"): this screen adds no
second query of stats_mysql_global. The memory metrics take ProxySQL's digest lock, so they
are read every 10 s at the most.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from proxytop.collectors.proxysql_history import ProxySQLHistory
from proxytop.collectors.proxysql_stats import GlobalStatus, MemoryMetrics, MySQLVariables
from proxytop.metrics import units
from proxytop.metrics.proxysql_history import history_status, summary
from proxytop.metrics.rates import RATE_WINDOW, RATES_PENDING, UpdateTracker, delta, rate, to_number
from proxytop.metrics.sides import digest_memory
from proxytop.screens.asks import asks_line
from proxytop.screens.base import DataView, Screen, seconds_between
from proxytop.screens.sided import SidedScreen
from proxytop.screens.table import Column, Row, TableState, filter_rows, sort_rows

SECTIONS = ("Connections", "Prepared statements", "Commands", "Query cache", "Monitor", "Traffic",
            "Memory", "Other")

COUNTER, GAUGE, TEXT = "counter", "gauge", "text"
COUNT, BYTES, SECONDS, MILLISECONDS, MICROSECONDS, NANOSECONDS = "count", "bytes", "seconds", "ms", "us", "ns"


@dataclass(frozen=True)
class Rule:
    pattern: "re.Pattern"
    section: str
    kind: str
    unit: str = COUNT


def rule(regex: str, section: str, kind: str, unit: str = COUNT, flags: int = 0) -> Rule:
    return Rule(re.compile(regex + r"\Z", flags), section, kind, unit)


# What proxytop knows of stats_mysql_global (1.4 to 3.0); the first matching rule wins.
RULES: Tuple[Rule, ...] = (
    rule(r"Stmt_(Client|Server)_Active_(Total|Unique)|Stmt_Cached|Stmt_Max_Stmt_id", "Prepared statements", GAUGE),
    rule(r"Com_(frontend|backend)_stmt_\w+", "Prepared statements", COUNTER),
    rule(r"Query_Cache_(Memory_bytes)", "Query cache", GAUGE, BYTES),
    rule(r"Query_Cache_Entries", "Query cache", GAUGE),
    rule(r"Query_Cache_bytes_(IN|OUT)", "Query cache", COUNTER, BYTES),
    rule(r"Query_Cache_(count_GET|count_GET_OK|count_SET|Purged)", "Query cache", COUNTER),
    rule(r"MySQL_Monitor_Workers(_Aux|_Started)?", "Monitor", GAUGE),
    rule(r"MySQL_Monitor_\w+", "Monitor", COUNTER),
    rule(r"Queries_(backends|frontends)_bytes_(recv|sent)", "Traffic", COUNTER, BYTES),
    rule(r"(Client|Server)_Connections_(connected|non_idle|hostgroup_locked)|Active_Transactions",
         "Connections", GAUGE),
    rule(r"(Client|Server)_Connections_(aborted|created|delayed)|Access_Denied_\w+|ConnPool_get_conn_\w+"
         r"|MyHGM_myconnpoll_\w+|new_req_conns_count|mysql_killed_backend_\w+"
         r"|client_host_error_killed_connections|max_connect_timeouts|mysql_unexpected_frontend_\w+",
         "Connections", COUNTER),
    rule(r"(Query_Processor|Backend_query)_time_nsec", "Commands", COUNTER, NANOSECONDS),
    rule(r"queries_with_max_lag_ms__total_wait_time_us", "Commands", COUNTER, MICROSECONDS),
    rule(r"Mirror_(concurrency|queue_length)", "Commands", GAUGE),
    rule(r"Questions|Slow_queries|Com_\w+|GTID_consistent_queries|GTID_session_collected"
         r"|Selects_for_update__autocommit0|queries_with_max_lag_ms(__delayed)?|backend_lagging_during_query"
         r"|backend_offline_during_query|get_aws_aurora_replicas_skipped_during_query"
         r"|hostgroup_locked_(set_cmds|queries)|generated_error_packets|automatic_detected_sql_injection"
         r"|whitelisted_sqli_fingerprint",
         "Commands", COUNTER),
    rule(r"\w+_bytes", "Memory", GAUGE, BYTES),
    rule(r"ProxySQL_Uptime", "Other", GAUGE, SECONDS),
    rule(r"MySQL_Thread_Workers|Servers_table_version", "Other", GAUGE),
)

UNKNOWN = Rule(re.compile(""), "Other", TEXT, COUNT)
MEMORY_METRIC = Rule(re.compile(""), "Memory", GAUGE, BYTES)  # every stats_memory_metrics row is bytes


def classify(name: str) -> Rule:
    """Section, kind (counter / gauge / text) and unit of a stats_mysql_global variable.

    >>> [(r.section, r.kind, r.unit) for r in map(classify, ("Com_commit", "Query_Cache_Memory_bytes", "Frobs_new"))]
    [('Commands', 'counter', 'count'), ('Query cache', 'gauge', 'bytes'), ('Other', 'text', 'count')]
    """
    return first_match(RULES, name)


def first_match(rules: Sequence[Rule], name: str) -> Rule:
    """The first of ``rules`` whose pattern matches the whole name; UNKNOWN when none does."""
    for candidate in rules:
        if candidate.pattern.match(name):
            return candidate
    return UNKNOWN


def global_rows(previous, current, memory=None, history: Sequence = (),
                tracker: Optional[UpdateTracker] = None, classify: Callable[[str], Rule] = classify) -> List[Row]:
    """Pure: two global-status snapshots (+ the latest memory metrics) -> one row per variable.

    A value that is not a number (``mysql_listener_paused`` is true/false) stays text; an
    unknown variable is text too, without a rate. Given the ``history`` of readings (oldest
    first, ending with ``current``), each counter's rate spans its own whole updates
    (:func:`steady_bases`) instead of the last interval.
    """
    rows: List[Row] = []
    if current is not None and current.data:
        seconds = seconds_between(previous, current)
        before: Mapping[str, str] = previous.data if previous is not None and previous.data else {}
        steady = len(history) > 1 and history[-1] is current
        bases = steady_bases(history, tracker=tracker, classify=classify) if steady else {}
        for name, raw in current.data.items():  # a counter without its span yet has no rate (yet)
            old, span = bases.get(name, (None, None) if steady else (before.get(name), seconds))
            rows.append(_row("global", name, raw, old, span, classify(name)))
    if memory is not None and memory.data:
        known = {row["name"] for row in rows}
        for name, raw in memory.data.items():
            if name not in known:  # SQLite3_memory_bytes is in both: the global one is fresher
                rows.append(_row("memory", name, raw, None, None, MEMORY_METRIC))
    return rows


def steady_bases(history: Sequence, window: float = RATE_WINDOW, tracker: Optional[UpdateTracker] = None,
                 classify: Callable[[str], Rule] = classify) -> Dict[str, Tuple[str, float]]:
    """{counter: (its value at the start of its span, seconds)}: for each counter of the
    latest reading, where a rate over its whole updates starts (proxytop.metrics.rates.update_span).

    Some variables move with every query, others only when a worker thread adds its share
    (about once a second): each one's span is found from its own values. ``tracker`` is an
    UpdateTracker already fed with the readings (the screen keeps one across readings).
    """
    readings = [s for s in history if s.data]
    if len(readings) < 2:
        return {}
    if tracker is None:
        tracker = UpdateTracker(window)
        for snapshot in readings:
            tracker.add(snapshot.taken_at, snapshot.data)
    bases: Dict[str, Tuple[str, float]] = {}
    for name in readings[-1].data:
        if classify(name).kind == COUNTER:
            span = tracker.span(name)
            if span is not None:
                bases[name] = span
    return bases


def _row(origin: str, name: str, raw, old, seconds, rule: Rule) -> Row:
    number = to_number(raw)
    kind = rule.kind if number is not None else TEXT
    return {
        "_id": (origin, name),
        "section": rule.section,
        "name": name,
        "value": number if kind != TEXT else raw,
        "rate": rate(old, raw, seconds) if kind == COUNTER else None,
        "type": kind,
        "_unit": rule.unit,
    }


def value_text(row: Mapping) -> str:
    """A value in the unit of its variable.

    >>> value_text({"value": 1536, "type": "gauge", "_unit": "bytes"}), value_text({"value": "false", "type": "text"})
    ('1.5KiB', 'false')
    >>> value_text({"value": 185, "type": "gauge", "_unit": "seconds"}), value_text({"value": 1234567, "type": "counter"})
    ('3m05s', '1.2M')
    >>> value_text({"value": 2500000000, "type": "counter", "_unit": "ns"})
    '2.5s'
    """
    value = row.get("value")
    if value is None:
        return units.MISSING
    if row.get("type") == TEXT:
        return str(value)
    return in_unit(value, row.get("_unit"))


def rate_text(row: Mapping) -> str:
    """Per second for counters (the column's title says so: no /s in the cell); blank for
    gauges and text (they have no rate).

    >>> rate_text({"rate": 2048.0, "type": "counter", "_unit": "bytes"}), rate_text({"rate": 12.5, "type": "counter"})
    ('2.0KiB', '12')
    >>> rate_text({"rate": None, "type": "counter"}), rate_text({"rate": None, "type": "gauge"})
    ('—', '')
    """
    if row.get("type") != COUNTER:
        return ""
    value = row.get("rate")
    if value is None:
        return units.MISSING
    return in_unit(value, row.get("_unit"))


def in_unit(value, unit: Optional[str]) -> str:
    """A value (or its rate: time or bytes per second) in the unit of its variable.

    >>> in_unit(2048, BYTES), in_unit(185, SECONDS), in_unit(1500000, NANOSECONDS), in_unit(250, MICROSECONDS)
    ('2.0KiB', '3m05s', '1.5ms', '250µs')
    """
    if unit == BYTES:
        return units.size(value)
    if unit == SECONDS:
        return units.duration(value)
    if unit == NANOSECONDS:
        return units.duration(to_number(value) / 1e9)
    if unit == MILLISECONDS:
        return units.duration(to_number(value) / 1e3)
    if unit == MICROSECONDS:
        return units.microseconds(value)
    return units.number(value)


def in_sections(rows: Sequence[Row], columns: Sequence[Column], state: TableState,
                sections: Sequence[str]) -> List[Row]:
    """Sections in a fixed order (``sections``), each under a heading; sort and filter within them."""
    visible = filter_rows(rows, columns, state.filter)
    by_section: Dict[str, List[Row]] = {}
    for row in visible:
        by_section.setdefault(row.get("section"), []).append(row)
    arranged: List[Row] = []
    for section in sections:
        members = by_section.get(section)
        if not members:
            continue
        arranged.append({"_id": ("section", section), "_kind": "subtotal", "name": f"\u2500\u2500 {section}"})
        arranged.extend(sort_rows(members, state.sort_key, state.descending, ("name",)))
    return arranged


@dataclass(frozen=True)
class RowColumn(Column):
    """A column whose text depends on the whole row (each variable has its own unit)."""

    render: Optional[Callable[[Mapping], str]] = None

    def text(self, row: Mapping) -> str:
        if row.get("_kind") == "subtotal" or self.render is None:
            return super().text(row)
        return self.render(row)


# ----- the lines a DBA reads first ----------------------------------------------------------
def ratio_text(part, whole) -> str:
    part, whole = to_number(part), to_number(whole)
    if part is None or not whole:
        return units.MISSING
    return units.percent(100.0 * part / whole)


def multiplexing(stats: Mapping[str, str]) -> Optional[str]:
    """Clients per backend connection.

    >>> multiplexing({"Client_Connections_connected": "120", "Client_Connections_non_idle": "30",
    ...               "Server_Connections_connected": "12"})
    '120 clients (30 active) on 12 backend connections: 10.0 per backend connection'
    >>> multiplexing({"Client_Connections_connected": "5", "Server_Connections_connected": "0"})
    '5 clients on no backend connection'
    """
    clients = to_number(stats.get("Client_Connections_connected"))
    backends = to_number(stats.get("Server_Connections_connected"))
    if clients is None or backends is None:
        return None
    active = to_number(stats.get("Client_Connections_non_idle"))
    text = f"{units.number(clients)} clients"
    if active is not None:
        text += f" ({units.number(active)} active)"
    if not backends:
        return text + " on no backend connection"
    return text + f" on {units.number(backends)} backend connections: {clients / backends:.1f} per backend connection"


def cache_hit_ratio(previous: Optional[Mapping[str, str]], current: Mapping[str, str],
                    seconds: Optional[float]) -> Optional[str]:
    """Query cache GET_OK / GET over the interval, and since start.

    >>> cache_hit_ratio({"Query_Cache_count_GET": "100", "Query_Cache_count_GET_OK": "40"},
    ...                 {"Query_Cache_count_GET": "300", "Query_Cache_count_GET_OK": "190"}, 2.0)
    '75.0% over the last 2s (150 of 200 lookups), 63.3% since start'
    >>> cache_hit_ratio(None, {"Query_Cache_count_GET": "0", "Query_Cache_count_GET_OK": "0"}, None)
    'no lookups since start (no rule has a cache_ttl, or nothing matched one)'
    """
    gets, hits = current.get("Query_Cache_count_GET"), current.get("Query_Cache_count_GET_OK")
    if to_number(gets) is None or to_number(hits) is None:
        return None
    if not to_number(gets):
        return "no lookups since start (no rule has a cache_ttl, or nothing matched one)"
    overall = f"{ratio_text(hits, gets)} since start"
    if previous is None or not seconds:
        return overall
    lookups = delta(previous.get("Query_Cache_count_GET"), gets)
    found = delta(previous.get("Query_Cache_count_GET_OK"), hits)
    if lookups is None or found is None:
        return overall  # counters were reset: no interval figure
    if not lookups:
        return f"no lookups in the last {units.duration(seconds)}, {overall}"
    return (f"{ratio_text(found, lookups)} over the last {units.duration(seconds)} "
            f"({units.number(found)} of {units.number(lookups)} lookups), {overall}")


def max_connections_usage(stats: Mapping[str, str], variables: Optional[Mapping[str, str]]) -> Tuple[str, Optional[str]]:
    """(text, style): frontend connections against mysql-max_connections.

    >>> max_connections_usage({"Client_Connections_connected": "1700"}, {"mysql-max_connections": "2048"})
    ('1.7k of mysql-max_connections 2048 (83.0%)', 'warning')
    """
    clients = to_number(stats.get("Client_Connections_connected"))
    variables = variables or {}
    # the PostgreSQL side's reading has pgsql-max_connections (notes are said of the side shown)
    name = "mysql-max_connections" if "mysql-max_connections" in variables else "pgsql-max_connections"
    limit = to_number(variables.get(name))
    if clients is None or not limit:
        return units.MISSING, None
    share = 100.0 * clients / limit
    style = "danger" if share >= 95 else "warning" if share >= 80 else None
    # the setting as it is set; the connections a count like any other
    return f"{units.number(clients)} of {name} {units.plain(variables.get(name))} ({units.percent(share)})", style


class GloStatScreen(SidedScreen, Screen):
    key = "glostat"
    title = "GloStat"
    short_title = "Stat"
    default_sort = ("name", False)
    columns = (
        Column("name", "Variable", 44, "<", numeric=False, priority=0),
        RowColumn("value", "Value", 14, render=value_text, priority=0, help="gauges: the current value; counters: the total"),
        RowColumn("rate", "Per second", 12, render=rate_text, priority=1,
                  help="counters only: increase per second over the interval"),
        Column("type", "Type", 7, "<", numeric=False, priority=3,
               help="counter (cumulative, shown per second), gauge (a current value) or text "
                    "(not a number, or a variable this version of proxytop does not know)"),
        Column("section", "Section", 19, "<", numeric=False, priority=4, flexible=True),
    )

    asks = (GlobalStatus,)  # what this screen asks of ProxySQL each refresh (screens.asks)

    def collectors(self):
        # ProxySQL's own history (stats_history) is registered here and read on every screen
        # (alarm_readings) until the graphs use it; this screen's notes say what it holds.
        return [GlobalStatus(), MemoryMetrics(), MySQLVariables(), ProxySQLHistory()]

    def alarm_readings(self, view: DataView) -> Tuple[Tuple[str, float], ...]:
        """ProxySQL's own history, from the start and on every screen, at ProxySQL's pace
        (none when no ProxySQL is watched: only MySQL servers)."""
        if view.source(ProxySQLHistory.source) is None:
            return ()
        reader = next(c for c in self._collector_cache() if c.name == ProxySQLHistory.name)
        return ((reader.name, reader.default_interval),)

    def history_readings(self, view: DataView):
        return [s.data for s in view.history(ProxySQLHistory.name) if s.data is not None]

    def history_line(self, view: DataView) -> Optional[str]:
        """history_status of the readings, worked out once per new reading (a year of history
        takes about 150 ms: not on every frame)."""
        snapshots = view.history(ProxySQLHistory.name)
        if not snapshots:
            return None
        key = (len(snapshots), snapshots[-1].taken_at)
        if getattr(self, "_history_line", (None, None))[0] != key:
            readings = [s.data for s in snapshots if s.data is not None]
            self._history_line = (key, history_status(readings) if readings else None)
        return self._history_line[1]

    def batch_extra(self, view: DataView):
        """What --batch's JSON adds: a summary of ProxySQL's own history."""
        readings = self.history_readings(view)
        return {"proxysql_history": summary(readings)} if readings else {}

    def rows(self, view: DataView) -> List[Row]:
        name = self.on_side(GlobalStatus.name)
        previous, current = view.pair(name)
        if current is None:
            # Not read yet on this side (just switched to it): the memory metrics alone would
            # be the rows, and the cursor would stay on them once the variables arrive.
            return []
        history = view.history(name)
        return global_rows(previous, current, view.latest(MemoryMetrics.name), history,
                           self._tracker_of(name, history), self.classify_of())

    def classify_of(self) -> Callable[[str], Rule]:
        """The rules of the side shown (its variables are named differently)."""
        return classify_pgsql if self.side.key == "pgsql" else classify

    def _tracker_of(self, name: str, history: Sequence) -> UpdateTracker:
        """The side's UpdateTracker, given the readings it has not seen yet (started again
        after a gap: readings the engine no longer keeps, the other side's readings, or a
        replay that jumped back to before the last reading it saw)."""
        tracker = getattr(self, "_tracker", None)
        readings = [s for s in history if s.data]
        if tracker is None or getattr(self, "_tracker_name", None) != name or not readings \
                or tracker.last_stamp is None or readings[0].taken_at > tracker.last_stamp \
                or readings[-1].taken_at < tracker.last_stamp:
            tracker = self._tracker = UpdateTracker()
            self._tracker_name = name
        for snapshot in readings:
            if tracker.last_stamp is None or snapshot.taken_at > tracker.last_stamp:
                tracker.add(snapshot.taken_at, snapshot.data)
        return tracker

    def arrange(self, rows: Sequence[Row], state: TableState) -> List[Row]:
        return in_sections(rows, self.columns, state, SECTIONS)

    def notes(self, view: DataView):
        previous, current = view.pair(self.on_side(GlobalStatus.name))
        if current is None or not current.data:
            return []
        stats = current.data
        lines = []
        name = self.on_side(GlobalStatus.name)
        history = view.history(name)
        tracker = self._tracker_of(name, history)
        bases = steady_bases(history, tracker=tracker, classify=self.classify_of())
        # The span named is the moving counters': one that never moved is a 0 over the whole
        # time proxytop has watched it, which says nothing of what the rates cover.
        spans = [seconds for name, (_, seconds) in bases.items() if tracker.moved(name)] or \
            [seconds for _, seconds in bases.values()]
        covers = units.covers_text(spans, seconds_between(previous, current))
        if covers:
            pending = tracker.pending()
            later = f"; {pending} counters {RATES_PENDING}" if pending and spans else ""
            lines.append(((f"Per second: {covers}{later}", "dim"),))
        mux = multiplexing(stats)
        if mux:
            lines.append((("Multiplexing  ", "label"), (mux, None)))
        cache = cache_hit_ratio(previous.data if previous is not None else None, stats,
                                seconds_between(previous, current))
        if cache:
            lines.append((("Query cache   ", "label"), ("hit ratio " + cache, None)))
        session = getattr(view.source("proxysql"), "session", None)
        if session is not None and not session.is_admin:
            lines.append((("Frontend      ", "label"),
                          ("connections vs mysql-max_connections needs an admin user (global_variables)", "dim")))
        else:
            variables = view.latest(self.on_side(MySQLVariables.name))
            text, style = max_connections_usage(stats, variables.data if variables is not None else None)
            lines.append((("Frontend      ", "label"), (text, style)))
        memory = view.latest(MemoryMetrics.name)
        if memory is not None and memory.data is None:
            lines.append((("Memory: this ProxySQL has no stats_memory_metrics table", "dim"),))
        elif memory is not None:
            digests = digest_memory(memory.data, self.side)
            if digests is not None:
                lines.append((("Digests       ", "label"), (units.size(to_number(digests)), None),
                              (" of memory held by the query digest map (stats_mysql_query_digest)", "dim")))
            age = max(0.0, view.now() - memory.taken_at)
            lines.append(((f"Memory: stats_memory_metrics every {units.interval(MemoryMetrics.min_interval)} at most "
                           f"(it takes the digest lock), {units.duration(age)} old", "dim"),))
        status = self.history_line(view)
        if status:
            lines.append((("History       ", "label"), (status, None), (" (stats_history)", "dim")))
        lines.append(asks_line(self, view, self.asks))
        return lines


SCREEN = GloStatScreen


# GloStat's PostgreSQL side: stats_pgsql_global (ProxySQL 3.0). Its variables are named
# differently from stats_mysql_global (PgHGM_pgconnpoll_* for MyHGM_myconnpoll_*, PgSQL_Monitor_*
# for MySQL_Monitor_*, Commit / Rollback instead of the Com_* counters), so it has rules of its
# own in the same sections; a variable not known here is shown as text, without a rate, as on
# the MySQL side.
PGSQL_RULES: Tuple[Rule, ...] = (
    rule(r"Query_Cache_(Memory_bytes)", "Query cache", GAUGE, BYTES),
    rule(r"Query_Cache_Entries", "Query cache", GAUGE),
    rule(r"Query_Cache_bytes_(IN|OUT)", "Query cache", COUNTER, BYTES),
    rule(r"Query_Cache_(count_GET|count_GET_OK|count_SET|Purged)", "Query cache", COUNTER),
    rule(r"PgSQL_Monitor_Workers(_Aux|_Started)?", "Monitor", GAUGE),
    rule(r"PgSQL_Monitor_\w+", "Monitor", COUNTER),
    rule(r"Queries_(backends|frontends)_bytes_(recv|sent)", "Traffic", COUNTER, BYTES),
    rule(r"(Client|Server)_Connections_(connected|non_idle|hostgroup_locked)|Active_Transactions",
         "Connections", GAUGE),
    rule(r"(Client|Server)_Connections_(aborted|created|delayed)|Access_Denied_\w+|PgHGM_pgconnpoll_\w+"
         r"|new_req_conns_count|pgsql_killed_backend_\w+|client_host_error_killed_connections"
         r"|max_connect_timeouts|Backend_reset_connection",
         "Connections", COUNTER),
    rule(r"Mirror_(concurrency|queue_length)", "Commands", GAUGE),
    rule(r"Questions|Slow_queries|Commit(_filtered)?|Rollback(_filtered)?|Selects_for_update__autocommit0"
         r"|(Backend|Frontend)_set_client_encoding|generated_error_packets|backend_offline_during_query",
         "Commands", COUNTER),
    rule(r"\w+_bytes", "Memory", GAUGE, BYTES),
    rule(r"ProxySQL_Uptime", "Other", GAUGE, SECONDS),
    rule(r"PgSQL_Thread_Workers|Servers_table_version", "Other", GAUGE),
)


def classify_pgsql(name: str) -> Rule:
    """Section, kind and unit of a stats_pgsql_global variable.

    >>> [(r.section, r.kind) for r in map(classify_pgsql, ("PgHGM_pgconnpoll_get", "Commit", "PgSQL_Monitor_ping_check_ERR"))]
    [('Connections', 'counter'), ('Commands', 'counter'), ('Monitor', 'counter')]
    >>> [(r.section, r.kind, r.unit) for r in map(classify_pgsql, ("pgsql_backend_buffers_bytes", "PgSQL_Thread_Workers"))]
    [('Memory', 'gauge', 'bytes'), ('Other', 'gauge', 'count')]
    """
    return first_match(PGSQL_RULES, name)
