"""ProxySQL's own history (its ``stats_history`` schema) as series of points, and the seam that
joins them to proxytop's own readings of the same figure.

ProxySQL writes a row to each history table every ``admin-stats_*`` seconds (default 60): the
cumulative counters of stats_mysql_global as they were (Questions, Slow_queries, ...), the
connection gauges, its own CPU time as ``times()`` ticks and its allocator's memory. It keeps
the raw rows 7 days and one row per finished hour a year (``*_hour``: counters as the hour's
MAX, gauges as its AVG, system_cpu as the SUM of its cumulative ticks, which means nothing).
Details and traps: docs/proxysql-history.md.

Every point is stamped at the end of the time it describes (unix wall seconds): a rate at the
row that closes its interval, an hourly point at the end of its hour.
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from proxytop.core import Table
from proxytop.metrics.rates import to_number, to_numbers

Point = Tuple[float, float]

HOUR = 3600
# ProxySQL's system_cpu holds times() ticks. Linux counts them in USER_HZ, which the kernel's
# ABI fixes at 100 a second whatever its own HZ (sysconf(_SC_CLK_TCK) is 100 on every Linux
# architecture ProxySQL is built for). proxytop's own sysconf would tell this host's value, not
# the proxy's, so the constant is assumed rather than asked.
TICKS_PER_SECOND = 100

# The history tables read, and only the columns the series need (the read stays small).
CONNECTIONS_COLUMNS = ("timestamp", "Client_Connections_connected", "Client_Connections_created",
                       "Server_Connections_connected", "ConnPool_get_conn_failure", "Questions", "Slow_queries")
CPU_COLUMNS = ("timestamp", "tms_utime", "tms_stime")
MEMORY_COLUMNS = ("timestamp", "allocated", "resident")
RAW_TABLES: Mapping[str, Tuple[str, ...]] = {
    "mysql_connections": CONNECTIONS_COLUMNS,
    "system_cpu": CPU_COLUMNS,
    "system_memory": MEMORY_COLUMNS,
}
# system_cpu_hour is left out: its rows are the SUM of an hour's cumulative tick counts.
HOUR_TABLES: Mapping[str, Tuple[str, ...]] = {
    "mysql_connections_hour": CONNECTIONS_COLUMNS,
    "system_memory_hour": MEMORY_COLUMNS,
}
# Which admin variable sets how often each table is written (0 = never).
INTERVAL_VARIABLES: Mapping[str, str] = {
    "mysql_connections": "admin-stats_mysql_connections",
    "system_cpu": "admin-stats_system_cpu",
    "system_memory": "admin-stats_system_memory",
}
TSDB_TABLE = "tsdb_metrics"
# ProxySQL 3.x's TSDB (stats_history.tsdb_metrics) samples its Prometheus registry: the
# families that hold the figures of mysql_connections, mapped to that table's columns.
TSDB_METRICS: Mapping[str, str] = {
    "proxysql_questions_total": "Questions",
    "proxysql_slow_queries_total": "Slow_queries",
    "proxysql_client_connections_connected": "Client_Connections_connected",
    "proxysql_client_connections_created_total": "Client_Connections_created",
    "proxysql_server_connections_connected": "Server_Connections_connected",
}

COUNTER, GAUGE, CPU = "counter", "gauge", "cpu"


@dataclass(frozen=True)
class Figure:
    """One series made from one history table: how its points are worked out."""

    name: str
    label: str
    unit: str
    table: str
    columns: Tuple[str, ...]  # summed (system_cpu's user and system ticks)
    kind: str


FIGURES: Tuple[Figure, ...] = (
    Figure("questions_per_s", "ProxySQL Q/s", "/s", "mysql_connections", ("Questions",), COUNTER),
    Figure("slow_queries_per_s", "slow queries/s", "/s", "mysql_connections", ("Slow_queries",), COUNTER),
    Figure("client_connections", "client connections", "", "mysql_connections",
           ("Client_Connections_connected",), GAUGE),
    Figure("server_connections", "server connections", "", "mysql_connections",
           ("Server_Connections_connected",), GAUGE),
    Figure("client_connections_created_per_s", "client connections created/s", "/s", "mysql_connections",
           ("Client_Connections_created",), COUNTER),
    Figure("connpool_get_failures_per_s", "pool get failures/s", "/s", "mysql_connections",
           ("ConnPool_get_conn_failure",), COUNTER),
    Figure("proxysql_cpu_pct", "ProxySQL CPU % of a core", "%", "system_cpu", ("tms_utime", "tms_stime"), CPU),
    Figure("proxysql_memory_bytes", "ProxySQL memory (resident)", "bytes", "system_memory", ("resident",), GAUGE),
    Figure("proxysql_allocated_bytes", "ProxySQL memory (allocated)", "bytes", "system_memory", ("allocated",),
           GAUGE),
)


@dataclass(frozen=True)
class HistoryReading:
    """One reading of stats_history: the rows newer than the previous reading's.

    ``tables``: (table name, Table of the columns read) for every table read, rows oldest
    first; ``intervals``: (admin-stats_* variable, seconds) as read, () when the user may not
    read global_variables; ``problem``: why nothing could be read (one plain line);
    ``first``: the first reading on this connection (the whole history; the next ones only add).
    """

    tables: Tuple[Tuple[str, Table], ...] = ()
    intervals: Tuple[Tuple[str, int], ...] = ()
    problem: Optional[str] = None
    first: bool = True

    def table(self, name: str) -> Optional[Table]:
        return next((table for table_name, table in self.tables if table_name == name), None)

    def rows_read(self) -> int:
        return sum(len(table.rows) for _, table in self.tables)


@dataclass(frozen=True)
class HistorySeries:
    """One figure of ProxySQL's own history: ``points`` at ``resolution_s`` (its raw rows'),
    preceded by ``hourly_points`` (from the ``_hour`` tables, before the raw rows begin)."""

    name: str
    label: str
    unit: str
    resolution_s: float
    points: Tuple[Point, ...]
    hourly_points: Tuple[Point, ...] = ()

    def all_points(self) -> Tuple[Point, ...]:
        return self.hourly_points + self.points


@dataclass(frozen=True)
class Segment:
    """Part of a seamed series: whose points they are and how far apart they were taken."""

    origin: str  # PROXYSQL_HOURLY, PROXYSQL or PROXYTOP
    resolution_s: Optional[float]  # None for proxytop's own (its interval, which may change)
    points: Tuple[Point, ...]


PROXYSQL_HOURLY, PROXYSQL, PROXYTOP = "proxysql hourly", "proxysql", "proxytop"


@dataclass(frozen=True)
class SeamedSeries:
    """A figure from ProxySQL's history up to proxytop's first reading of it, proxytop's after."""

    name: str
    label: str
    unit: str
    segments: Tuple[Segment, ...]  # oldest first; none empty, none overlapping

    def points(self) -> Tuple[Point, ...]:
        return tuple(p for segment in self.segments for p in segment.points)

    @property
    def seam_at(self) -> Optional[float]:
        """The time of proxytop's first point (None when it has none yet)."""
        own = [s for s in self.segments if s.origin == PROXYTOP]
        return own[0].points[0][0] if own else None


# ----- rows into points -----------------------------------------------------------------------

def merged(readings: Sequence[HistoryReading]) -> Dict[str, Table]:
    """Every table's rows since the last first reading, oldest first, each timestamp once.

    >>> a = HistoryReading((("system_cpu", Table(("timestamp", "tms_utime"), (("60", "1"), ("120", "2")))),))
    >>> b = HistoryReading((("system_cpu", Table(("timestamp", "tms_utime"), (("120", "2"), ("180", "3")))),),
    ...                    first=False)
    >>> merged([a, b])["system_cpu"].rows
    (('60', '1'), ('120', '2'), ('180', '3'))
    """
    start = max((i for i, r in enumerate(readings) if r.first), default=0)
    if start == len(readings) - 1:  # the first reading alone: read in order, each row once
        return {name: table for name, table in readings[start].tables}
    columns: Dict[str, Tuple[str, ...]] = {}
    rows: Dict[str, Dict[tuple, tuple]] = {}
    for reading in readings[start:]:
        for name, table in reading.tables:
            if "timestamp" not in table.columns:
                continue
            at = table.columns.index("timestamp")
            # the TSDB has a row per metric at each timestamp
            metric_at = table.columns.index("metric_name") if "metric_name" in table.columns else None
            columns.setdefault(name, table.columns)
            by_key = rows.setdefault(name, {})
            for row in table.rows:
                stamp = to_number(row[at])
                if stamp is not None:
                    by_key[(stamp, row[metric_at] if metric_at is not None else "")] = row
    return {name: Table(columns[name], tuple(by_key[k] for k in sorted(by_key))) for name, by_key in rows.items()}


def numeric_columns(table: Table) -> Dict[str, list]:
    """Each column of a table as numbers (None where a value is no number), made in one pass
    a column: a week of minutes is 10,080 rows a table.

    >>> numeric_columns(Table(("timestamp", "v"), (("60", "1.5"), ("120", None))))
    {'timestamp': [60, 120], 'v': [1.5, None]}
    """
    by_column = list(zip(*table.rows)) if table.rows else [()] * len(table.columns)
    return {name: to_numbers(values) for name, values in zip(table.columns, by_column)}


def _values(numbers: Mapping[str, list], columns: Sequence[str]) -> List[Tuple[float, Optional[float]]]:
    """(timestamp, sum of ``columns``) of each row; the sum None when a value is missing."""
    if any(c not in numbers for c in columns) or "timestamp" not in numbers:
        return []
    stamps = numbers["timestamp"]
    if len(columns) == 1:
        sums = numbers[columns[0]]
    else:
        sums = [None if None in values else sum(values) for values in zip(*(numbers[c] for c in columns))]
    return [(float(t), v) for t, v in zip(stamps, sums) if t is not None]


def counter_rates(stamped: Sequence[Tuple[float, Optional[float]]], scale: float = 1.0,
                  longest: Optional[float] = None) -> Tuple[Point, ...]:
    """Per-second rates of a cumulative counter over each interval between rows, stamped at the
    row that ends it. A counter that went back is a ProxySQL restart: no rate for that interval;
    nor for an interval longer than ``longest`` (None: any).

    >>> counter_rates([(0, 100), (60, 160), (120, 40), (180, 100)])
    ((60.0, 1.0), (180.0, 1.0))
    >>> counter_rates([(0, 100), (60, 160), (180, 280)], longest=60)
    ((60.0, 1.0),)
    """
    points = []
    for (t0, v0), (t1, v1) in zip(stamped, stamped[1:]):
        if v0 is None or v1 is None or t1 <= t0 or v1 < v0 or (longest is not None and t1 - t0 > longest):
            continue
        points.append((float(t1), (v1 - v0) / (t1 - t0) * scale))
    return tuple(points)


def gauge_points(stamped: Sequence[Tuple[float, Optional[float]]]) -> Tuple[Point, ...]:
    """
    >>> gauge_points([(60, 3), (120, None), (180, 2.5)])
    ((60.0, 3.0), (180.0, 2.5))
    """
    return tuple((float(t), float(v)) for t, v in stamped if v is not None)


def cpu_percent(stamped: Sequence[Tuple[float, Optional[float]]]) -> Tuple[Point, ...]:
    """system_cpu's user + system ticks into % of one core over each interval.

    680 + 1148 ticks in 60 s at 100 ticks a second is 18.28 s of CPU in 60 s: 30.5 %.

    >>> cpu_percent([(1795631935, 39849 + 60318), (1795631995, 40529 + 61466)])
    ((1795631995.0, 30.466666666666665),)
    """
    return counter_rates(stamped, scale=100.0 / TICKS_PER_SECOND)


def hourly_points(figure: Figure, stamped: Sequence[Tuple[float, Optional[float]]],
                  before: Optional[float]) -> Tuple[Point, ...]:
    """A figure's points from its ``_hour`` table's (hour, value) rows, stamped at the end of
    each hour, for the hours that ended by ``before`` (the first raw row; None: all). Counters
    are the hour's MAX, so the rate of an hour is the difference to the hour before; gauges
    are the hour's AVG.

    >>> hourly_points(FIGURES[0], [(0, 3600), (3600, 10800), (10800, 20)], before=None)
    ((7200.0, 2.0),)
    """
    if figure.kind == CPU:
        return ()
    stamped = [(t + HOUR, v) for t, v in stamped if before is None or t + HOUR <= before]
    if figure.kind == GAUGE:
        return gauge_points(stamped)
    # a rate only between hours that follow each other (an hour without rows has no MAX)
    return counter_rates(stamped, longest=HOUR)


def interval_of(table: str, readings: Sequence[HistoryReading], stamps: Sequence[float]) -> Optional[float]:
    """Seconds between a table's rows: its admin-stats_* variable when read and not 0, else
    the median step of its rows' ``stamps`` (the stats user can't read global_variables).

    >>> interval_of("system_cpu", [HistoryReading(intervals=(("admin-stats_system_cpu", 30),))], [])
    30.0
    >>> interval_of("system_cpu", [], [0, 60, 125, 180])
    60.0
    """
    variable = INTERVAL_VARIABLES.get(table)
    for reading in reversed(readings):
        value = dict(reading.intervals).get(variable)
        if value:
            return float(value)
    if len(stamps) < 2:
        return None
    return float(median(b - a for a, b in zip(stamps, stamps[1:])))


def tsdb_as_connections(table: Optional[Table]) -> Optional[Table]:
    """stats_history.tsdb_metrics rows (timestamp, metric_name, value) turned into
    mysql_connections' columns, one row per timestamp (a figure the TSDB lacks: None).

    >>> tsdb = Table(("timestamp", "metric_name", "value"), (("60", "proxysql_questions_total", "10.0"),
    ...     ("60", "proxysql_client_connections_connected", "2.0"), ("120", "proxysql_questions_total", "70.0")))
    >>> tsdb_as_connections(tsdb).rows[1]
    (120, None, None, None, None, 70.0, None)
    """
    if table is None or not table.rows:
        return None
    at, name_at, value_at = (table.columns.index(c) for c in ("timestamp", "metric_name", "value"))
    by_time: Dict[int, Dict[str, float]] = {}
    for row in table.rows:
        column = TSDB_METRICS.get(row[name_at])
        stamp, value = to_number(row[at]), to_number(row[value_at])
        if column is not None and stamp is not None and value is not None:
            by_time.setdefault(int(stamp), {})[column] = value
    rows = tuple((t,) + tuple(by_time[t].get(c) for c in CONNECTIONS_COLUMNS[1:]) for t in sorted(by_time))
    return Table(CONNECTIONS_COLUMNS, rows)


def history_series(readings: Sequence[HistoryReading]) -> Tuple[HistorySeries, ...]:
    """Every figure of :data:`FIGURES` that has points, from the readings of one connection
    (the engine's history of the collector, oldest first)."""
    tables = merged(readings)
    connections = tables.get("mysql_connections")
    if connections is None or not connections.rows:
        # a 3.x whose classic tables are off or empty: its TSDB, when it has one
        tsdb = tsdb_as_connections(tables.get(TSDB_TABLE))
        if tsdb is not None:
            tables["mysql_connections"] = tsdb
    numbers: Dict[str, Dict[str, list]] = {}

    def values_of(name: str, columns: Tuple[str, ...]) -> list:
        table = tables.get(name)
        if table is None:
            return []
        if name not in numbers:
            numbers[name] = numeric_columns(table)
        return _values(numbers[name], columns)

    intervals: Dict[str, float] = {}
    out = []
    for figure in FIGURES:
        stamped = values_of(figure.table, figure.columns)
        if figure.kind == COUNTER:
            points = counter_rates(stamped)
        elif figure.kind == CPU:
            points = cpu_percent(stamped)
        else:
            points = gauge_points(stamped)
        first_raw = stamped[0][0] if stamped else None
        hourly = hourly_points(figure, values_of(figure.table + "_hour", figure.columns), first_raw)
        if not points and not hourly:
            continue
        if figure.table not in intervals:
            intervals[figure.table] = interval_of(figure.table, readings, [t for t, _ in stamped]) or 60.0
        out.append(HistorySeries(figure.name, figure.label, figure.unit, intervals[figure.table], points, hourly))
    return tuple(out)


# ----- what was read, in one line -------------------------------------------------------------

def span_text(seconds: float) -> str:
    """
    >>> span_text(72 * 60), span_text(7 * 86400 - 60), span_text(5 * 3600), span_text(400 * 86400)
    ('72 minutes', '7 days', '5 hours', '400 days')
    """
    if seconds < 2 * HOUR:
        return f"{round(seconds / 60)} minutes"
    if seconds < 2 * 86400:
        return f"{round(seconds / HOUR)} hours"
    return f"{round(seconds / 86400)} days"


def resolution_text(seconds: float) -> str:
    """
    >>> resolution_text(60), resolution_text(10), resolution_text(300)
    ('1-minute', '10-second', '5-minute')
    """
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}-minute"
    return f"{seconds:g}-second"


def history_status(readings: Sequence[HistoryReading], series: Optional[Tuple[HistorySeries, ...]] = None) -> str:
    """What ProxySQL's own history gave, or why nothing, in one line.

    >>> history_status([HistoryReading(problem="not readable by this user: no such table")])
    'not readable by this user: no such table'
    >>> history_status([HistoryReading(intervals=(("admin-stats_mysql_connections", 0),))])
    'off: admin-stats_mysql_connections = 0'
    >>> history_status([HistoryReading()])
    'empty'
    """
    if not readings:
        return "not read yet"
    start = max((i for i, r in enumerate(readings) if r.first), default=0)
    problem = next((r.problem for r in reversed(readings[start:]) if r.problem), None)
    if problem:
        return problem
    intervals = dict(readings[-1].intervals)
    off = [f"{name} = 0" for name in INTERVAL_VARIABLES.values() if intervals.get(name) == 0]
    series = history_series(readings) if series is None else series
    if not series:
        return "off: " + ", ".join(off) if off else "empty"
    by_name = {s.name: s for s in series}
    main = by_name.get("questions_per_s") or series[0]
    raw = main.points
    text = "ProxySQL's own"
    if raw:
        text += f" {resolution_text(main.resolution_s)} history, {span_text(raw[-1][0] - raw[0][0] + main.resolution_s)}"
    if main.hourly_points:
        hours = main.hourly_points
        text += (", hourly " if raw else " hourly history, ") + span_text(hours[-1][0] - hours[0][0] + HOUR) \
            + (" before that" if raw else "")
    if _from_tsdb(readings):
        text += " (from its TSDB)"
    if off:
        text += "; off now: " + ", ".join(off)
    return text


def _from_tsdb(readings: Sequence[HistoryReading]) -> bool:
    """The classic mysql_connections table gave no rows, the TSDB did."""
    start = max((i for i, r in enumerate(readings) if r.first), default=0)
    tables = [(name, table) for r in readings[start:] for name, table in r.tables]
    return not any(t.rows for name, t in tables if name == "mysql_connections") \
        and any(t.rows for name, t in tables if name == TSDB_TABLE)


def summary(readings: Sequence[HistoryReading]) -> dict:
    """The history in a few plain values (for --batch JSON): the status line and, per series,
    its resolution, how many points, from when to when, and the last value."""
    all_series = history_series(readings)
    out = {"status": history_status(readings, all_series), "series": {}}
    for series in all_series:
        points = series.all_points()
        out["series"][series.name] = {
            "label": series.label, "unit": series.unit, "resolution_s": series.resolution_s,
            "points": len(series.points), "hourly_points": len(series.hourly_points),
            "from": points[0][0], "to": points[-1][0], "last": points[-1][1],
        }
    return out


# ----- the seam -------------------------------------------------------------------------------

def seamed(history: Optional[HistorySeries], live: Iterable[Point], name: str = "", label: str = "",
           unit: str = "") -> SeamedSeries:
    """ProxySQL's points of a figure before proxytop's first live point of it, proxytop's from
    there on: ProxySQL's keep their resolution (hourly, then its raw rows'), proxytop's are
    as it read them. Without a history, the live points alone.

    >>> h = HistorySeries("questions_per_s", "Q/s", "/s", 60.0, ((60.0, 5.0), (120.0, 6.0), (180.0, 7.0)),
    ...                   ((0.0, 4.0),))
    >>> s = seamed(h, [(150.0, 6.5), (151.0, 6.6)])
    >>> [(seg.origin, seg.resolution_s, seg.points) for seg in s.segments]
    [('proxysql hourly', 3600, ((0.0, 4.0),)), ('proxysql', 60.0, ((60.0, 5.0), (120.0, 6.0))), ('proxytop', None, ((150.0, 6.5), (151.0, 6.6)))]
    >>> s.seam_at
    150.0
    """
    live = tuple(live)
    seam = live[0][0] if live else None
    segments = []
    if history is not None:
        name, label, unit = name or history.name, label or history.label, unit or history.unit
        for origin, resolution, points in ((PROXYSQL_HOURLY, HOUR, history.hourly_points),
                                           (PROXYSQL, history.resolution_s, history.points)):
            before = tuple(p for p in points if seam is None or p[0] < seam)
            if before:
                segments.append(Segment(origin, resolution, before))
    if live:
        segments.append(Segment(PROXYTOP, None, live))
    return SeamedSeries(name, label, unit, tuple(segments))
