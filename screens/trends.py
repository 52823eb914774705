"""Trends: the whole system on one page of stacked charts, over the last 5 minutes, hour, day.

Each trend is a figure of the whole system worked out from the rows of the screen that shows
it (Q/s from GloStat's Questions, the latency percentiles from ComCount's buckets, the MySQL
servers' Questions/s from the Servers screen's rows, the worst replica lag from Replication's
rows, ...), so it is the number that screen shows. The controller makes those screens' rows
from their readings, which Trends asks for on every screen at a slow pace (``alarm_readings``),
and keeps each trend in the figure history (proxytop.metrics.history) under
``("trends", key)``; this screen only draws them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from proxytop.collectors.diskstats import NAME as DISKSTATS
from proxytop.collectors.innodb_fleet import fleet_min_interval
from proxytop.collectors.proxysql import ConnectionPool
from proxytop.collectors.proxysql_stats import CommandCounters
from proxytop.collectors.proxysql_history import ProxySQLHistory
from proxytop.collectors.sides import twin_name
from proxytop.core import Snapshot
from proxytop.metrics import histogram, units
from proxytop.metrics.events import KINDS
from proxytop.metrics.proxysql_history import PROXYTOP, HistorySeries, history_series, resolution_text, seamed
from proxytop.metrics.rates import SteadyPair, to_number
from proxytop.metrics.sides import MYSQL, PGSQL
from proxytop.screens import chart
from proxytop.screens.base import DataView, Screen
from proxytop.screens.comcount import command_rows, total_executions
from proxytop.screens.connpool import header_queries, pool_rows
from proxytop.screens.iostat import disk_rows
from proxytop.screens.sided import HEADER, HEADER_NARROW, header_readings
from proxytop.screens.keys import Binding
from proxytop.screens.table import Column, Row

TREND_PACE = 10.0  # seconds between the readings Trends asks for while another screen is shown
WINDOWS = (("5 minutes", 300.0), ("1 hour", 3600.0), ("24 hours", 86400.0), ("7 days", 7 * 86400.0))
LARGE_FLEET = 50  # servers: past this, a fleet's trends are made at its own pace (new_inputs)
CHART_LINES = 6  # a chart's least height: its title, four rows of dots, the time axis


def _sum(rows: Sequence[Row], key: str) -> Optional[float]:
    values = [row[key] for row in rows if isinstance(row.get(key), (int, float)) and row.get("_kind") != "subtotal"]
    return float(sum(values)) if values else None


def _max(rows: Sequence[Row], key: str) -> Optional[float]:
    values = [row[key] for row in rows if isinstance(row.get(key), (int, float)) and row.get("_kind") != "subtotal"
              and not math.isinf(row[key])]
    return float(max(values)) if values else None


def _first(rows: Sequence[Row], key: str) -> Optional[float]:
    value = rows[0].get(key) if rows else None
    return float(value) if isinstance(value, (int, float)) else None


HEADER_ROWS = "header"  # the header's readings (read on every screen anyway), as one row


def header_rows(view: DataView) -> List[Row]:
    """The header's Q/s and client connections, worked out as the header does (the MySQL side)."""
    previous, current = header_readings(view.pair, None)
    if current is None or not current.data:
        return []
    qps, _counted = header_queries(MYSQL, (previous, current), view.pair(twin_name(ConnectionPool.name, PGSQL)))
    return [{"qps": qps, "clients": to_number(current.data.get("Client_Connections_connected"))}]


def latency_percentile(rows: Sequence[Row], fraction: float) -> Optional[float]:
    """A percentile (µs, a bucket's upper bound) of every command of the last interval: the
    ComCount rows' bucket differences added up.

    >>> rows = [{"_delta": (50, 40, 9, 1)}, {"_delta": (0, 0, 0, 0)}, {"_delta": None}]
    >>> latency_percentile(rows, 0.5), latency_percentile([], 0.5)
    (100, None)
    """
    deltas = [row["_delta"] for row in rows if row.get("_delta")]
    if not deltas:
        return None
    total = [sum(column) for column in zip(*deltas)]
    value = histogram.percentile(total, fraction)
    return None if value is None or math.isinf(value) else value


def shunned(rows: Sequence[Row]) -> Optional[float]:
    """Backends ProxySQL has SHUNNED now (a subtotal row is not a backend)."""
    backends = [row for row in rows if row.get("_kind") != "subtotal" and row.get("status")]
    return float(sum(1 for row in backends if str(row["status"]).startswith("SHUNNED"))) if backends else None


def busiest_disk(rows: Sequence[Row], key: str) -> Optional[float]:
    """``key`` of the device with the highest %util."""
    devices = [row for row in rows if isinstance(row.get("util"), (int, float))]
    if not devices:
        return None
    busiest = max(devices, key=lambda row: row["util"])
    value = busiest.get(key)
    return float(value) if isinstance(value, (int, float)) else None


@dataclass(frozen=True)
class Trend:
    key: str
    title: str
    screen: str  # the screen whose rows it is worked out from
    value: Callable[[Sequence[Row]], Optional[float]]
    fmt: Callable[[float], str]
    chart: str = ""  # trends with the same chart share one (latency p50 and p95)
    help: str = ""
    proxysql: str = ""  # the figure of ProxySQL's own history (stats_history) that comes before it
    steps: bool = False  # a count that jumps from one reading to the next: drawn as steps, not slopes


def _ms(us: Optional[float]) -> Optional[float]:
    return None if us is None else us / 1000


TRENDS: Tuple[Trend, ...] = (
    Trend("qps", "Queries/s", HEADER_ROWS, lambda rows: _first(rows, "qps"), units.number,
          help="ProxySQL's Questions per second, as the header shows it", proxysql="questions_per_s"),
    Trend("p50", "Latency p50 ms", "comcount", lambda rows: _ms(latency_percentile(rows, 0.50)), units.number,
          chart="latency", help="latency of every command, from ComCount's buckets (a bucket's upper bound)"),
    Trend("p95", "Latency p95 ms", "comcount", lambda rows: _ms(latency_percentile(rows, 0.95)), units.number,
          chart="latency"),
    Trend("clients", "Client connections", HEADER_ROWS, lambda rows: _first(rows, "clients"), units.number,
          proxysql="client_connections"),
    Trend("errors", "Backend errors/s", "connpool", lambda rows: _sum(rows, "conn_err_s"), units.number,
          help="failed backend connections per second, every backend"),
    Trend("shunned", "SHUNNED backends", "connpool", shunned, units.number, steps=True),
    Trend("mysql_qps", "MySQL Questions/s, all servers", "servers", lambda rows: _sum(rows, "qps"), units.number,
          help="every MySQL server's Q/s (Questions), added up"),
    Trend("mysql_running", "MySQL threads running, all servers", "servers", lambda rows: _sum(rows, "running"),
          units.number, help="every server's Threads_running added up (each counts proxytop's reader)"),
    Trend("mysql_connected", "MySQL connections, all servers", "servers", lambda rows: _sum(rows, "connected"),
          units.number, help="every server's Threads_connected added up"),
    Trend("lag", "Worst replica lag", "replication", lambda rows: _max(rows, "lag"), units.duration,
          help="seconds, the most behind of every channel"),
    Trend("checkpoint", "Worst checkpoint age %", "innodb", lambda rows: _max(rows, "age_pct"), units.number,
          help="of the redo log's async limit"),
    Trend("disk_util", "Busiest disk %util", "iostat", lambda rows: busiest_disk(rows, "util"), units.number),
    Trend("disk_await", "Busiest disk w_await ms", "iostat", lambda rows: busiest_disk(rows, "w_await"),
          units.number, help="write await of the busiest disk"),
)


# The readings these screens' trends come from, whatever the screen shows (see rows_of).
FIXED_READINGS = {"connpool": (ConnectionPool.name,), "comcount": (CommandCounters.name,), "iostat": (DISKSTATS,)}
# The trends that need no ProxySQL: those of the MySQL servers and of the host's disks.
WITHOUT_PROXYSQL = ("servers", "replication", "innodb", "iostat")


def readings_of(screen: Screen) -> List[str]:
    """The readings a screen's trends are worked out from: FIXED_READINGS', each server's own
    reading for the Servers screen (not the discovery of servers: a new list of servers is no
    new figure), else what the screen reads."""
    if screen.key in FIXED_READINGS:
        return list(FIXED_READINGS[screen.key])
    if screen.key == "servers":
        return [server.server_name for server in screen.fleet.listed()]
    return list(screen.active_collectors())


# Figures only ProxySQL's own history has (every minute, from its stats_history schema).
PROXYSQL_HISTORY = "proxysql history"
HISTORY_TRENDS: Tuple[Trend, ...] = (
    Trend("slow", "Slow queries/s", PROXYSQL_HISTORY, lambda rows: None, units.number, proxysql="slow_queries_per_s"),
    Trend("proxysql_cpu", "ProxySQL CPU % of a core", PROXYSQL_HISTORY, lambda rows: None, units.number,
          proxysql="proxysql_cpu_pct"),
    Trend("proxysql_memory", "ProxySQL memory", PROXYSQL_HISTORY, lambda rows: None, units.size,
          proxysql="proxysql_memory_bytes"),
)
HISTORY_STYLE = "dim"  # ProxySQL's own points, before proxytop's


def event_legend(markers: Sequence[chart.Marker]) -> str:
    """What the event marks under the charts mean: the kinds present, in KINDS' order (all of
    them did not fit a title line at 130 columns).

    >>> event_legend([chart.Marker(1.0, "S", "warning"), chart.Marker(2.0, "L", "warning"), chart.Marker(3.0, "S", "warning")])
    '   events (E): S=status L=reload'
    >>> event_legend([chart.Marker(1.0, "\u25b2", "header")])  # the replay's position is no event
    ''
    """
    present = {m.mark for m in markers if m.style == "warning"}
    shown = [f"{mark}={kind}" for kind, (mark, _meaning) in KINDS.items() if mark in present]
    return f"   events (E): {' '.join(shown)}" if shown else ""


def trend_key(trend: Trend) -> tuple:
    return ("trends", trend.key)


def trend_values(rows_of: Mapping[str, Sequence[Row]]) -> Dict[str, Optional[float]]:
    """Each trend whose screen's rows are given: its value now."""
    return {trend.key: trend.value(rows_of[trend.screen]) for trend in TRENDS if trend.screen in rows_of}


def keep_trend_values(figures, rows_of: Mapping[str, Sequence[Row]], at: float) -> None:
    """The trends worked out from these rows, kept in the figure history at wall time ``at``
    (under trend_key: where the charts read them)."""
    for trend in TRENDS:
        if trend.screen in rows_of:
            figures.add(trend_key(trend), at, trend.value(rows_of[trend.screen]))


def charts_of(trends: Sequence[Trend]) -> List[List[Trend]]:
    """The trends grouped into charts, in order (those sharing a chart name together)."""
    groups: List[List[Trend]] = []
    for trend in trends:
        if trend.chart and groups and groups[-1][0].chart == trend.chart:
            groups[-1].append(trend)
        else:
            groups.append([trend])
    return groups


class TrendsScreen(Screen):
    key = "trends"
    title = "Trends"
    short_title = "Trend"
    bindings = (
        Binding(("w",), "window", "the time shown: 5 minutes, 1 hour, 24 hours, 7 days (ProxySQL's own history)",
                "w window"),
        Binding(("KEY_DOWN", "KEY_NPAGE"), "later_charts", "the charts below", "\u2191\u2193 charts"),
        Binding(("KEY_UP", "KEY_PPAGE"), "earlier_charts", "the charts above"),
    )

    def __init__(self, config=None):
        super().__init__(config)
        self.window = 0
        self.first = 0
        self.from_screens: List[Screen] = []  # the screens the trends come from (watch())
        self.with_header = True  # a ProxySQL is watched: its header's readings too
        self._history: Tuple[object, Dict[str, HistorySeries]] = (None, {})  # (made of, ProxySQL's own series)
        self._commands = SteadyPair(total_executions)  # the command counters over whole updates, as ComCount's

    def watch(self, screens: Sequence[Screen]) -> None:
        """The screens of this run that trends are worked out from."""
        wanted = {trend.screen for trend in TRENDS}
        with_proxysql = getattr(self.config, "proxysql", True)
        self.from_screens = [s for s in screens if s.key in wanted and s.built
                             and (with_proxysql or s.key in WITHOUT_PROXYSQL)]
        self.with_header = with_proxysql

    def inputs(self) -> List[Tuple[str, List[str]]]:
        """What each group of trends is made of: (the screen, or the header, its readings)."""
        made_of = [(HEADER_ROWS, [twin_name(HEADER_NARROW, MYSQL), twin_name(HEADER, MYSQL)])] if self.with_header else []
        return made_of + [(screen.key, readings_of(screen)) for screen in self.from_screens]

    def rows_of(self, key: str, view: DataView) -> List[Row]:
        """The rows a group of trends is worked out from: ConnPool's, ComCount's and IOstat's
        from their MySQL-side readings and whole disks, whatever those screens show now (the
        PostgreSQL side, every node, the space view); the others' rows as their screens make them."""
        if key == HEADER_ROWS:
            return header_rows(view)
        if key == "connpool":
            return pool_rows(*view.pair(ConnectionPool.name), None)
        if key == "comcount":
            previous, current, seconds = self._commands(view.history(CommandCounters.name))
            return command_rows(previous, current, False, seconds)
        if key == "iostat":
            return disk_rows(*view.pair(DISKSTATS))
        return next(s for s in self.from_screens if s.key == key).rows(view)

    def active_collectors(self) -> List[str]:
        return [name for key, names in self.inputs() if key != HEADER_ROWS for name in names]

    def new_inputs(self, latest: Callable[[str], Optional[Snapshot]], made: Dict[str, tuple]) -> List[Tuple[str, float]]:
        """The groups of trends (inputs()) whose readings are new since those ``made`` records
        (recorded there now), each with the wall time of its newest reading: a group read once
        (InnoDB while it was shown) is not kept again as a new point at every later time. A
        large fleet's group (500 servers: a reading new some 100 times a second) is made again
        at most at its servers' own pace (fleet_min_interval: 5 s), not on every frame."""
        fresh = []
        for key, names in self.inputs():
            readings = [r for r in map(latest, names) if r is not None]
            made_of = tuple(r.taken_at for r in readings)
            before = made.get(key)
            if not readings or before == made_of:
                continue
            if (len(names) > LARGE_FLEET and before
                    and max(made_of) - max(before) < fleet_min_interval(len(names))):
                continue
            made[key] = made_of
            fresh.append((key, max(r.wall_time for r in readings)))
        return fresh

    def proxysql_history(self, view: DataView) -> Dict[str, HistorySeries]:
        """ProxySQL's own history by figure, worked out again only when a reading of it is new
        (a year of it takes about 150 ms: not on every frame)."""
        snapshots = view.history(ProxySQLHistory.name) if self.with_header else ()
        key = (len(snapshots), snapshots[-1].taken_at if snapshots else None)
        if self._history[0] != key:
            readings = [s.data for s in snapshots if s.data is not None]
            self._history = (key, {series.name: series for series in history_series(readings)} if readings else {})
        return self._history[1]

    def shown_trends(self, view: DataView) -> List[Trend]:
        """The trends this run can show: those whose screen is watched, and those of ProxySQL's
        own history that it holds."""
        shown = {key for key, _names in self.inputs()}
        history = self.proxysql_history(view)
        return [t for t in TRENDS if t.screen in shown] + [t for t in HISTORY_TRENDS if t.proxysql in history]

    def alarm_readings(self, view: DataView) -> Tuple[Tuple[str, float], ...]:
        """What the trends need read on every screen, beyond what is read there anyway (the
        header's readings, the pools, and each MySQL server's own reading with its replication
        threads, the Servers screen's, which the Replication alarm takes every 5 s):
        ProxySQL's command counters (one small table) and the host's disks, every TREND_PACE
        seconds. A fixed set: a plan that changed with the screens' state would make the engine
        start its readings again. The worst checkpoint age is drawn while InnoDB or Trends is
        shown (reading every server's engine status on every screen costs them too much)."""
        keys = {screen.key for screen in self.from_screens}
        plan = [(CommandCounters.name, TREND_PACE)] if "comcount" in keys and self.with_header else []
        plan += [(DISKSTATS, TREND_PACE)] if "iostat" in keys else []
        return tuple(plan)

    # (the table of --batch: the figures themselves are kept and charted under their own keys)
    columns = (
        Column("place", "#", 3, graphed=False, help="the figure's place on the Trends page (the charts' order)"),
        Column("figure", "Figure", 26, align="<", numeric=False, help="a figure of the whole system"),
        Column("now", "Now", 10, fmt=units.number, graphed=False, help="its latest value, in the unit the figure's name gives"),
        Column("low", "Min", 10, fmt=units.number, graphed=False, help="the lowest over the window shown (w)"),
        Column("mean", "Avg", 10, fmt=units.number, graphed=False, help="the mean over the window shown"),
        Column("high", "Max", 10, fmt=units.number, graphed=False, help="the highest over the window shown"),
    )

    def rows(self, view: DataView) -> List[Row]:
        """A row per trend: now, and the least, mean and most over the window, from the kept
        figures; where none are kept (--batch) the value now, from its screen's rows."""
        _name, start, end = self.window_span(view)
        made: Dict[str, Optional[float]] = {}
        shown = {key for key, _names in self.inputs()}
        if not any(trend_key(t) in view.figures for t in TRENDS):
            made = trend_values({key: self.rows_of(key, view) for key in shown})
        history = self.proxysql_history(view)
        rows: List[Row] = []
        for place, trend in enumerate(self.shown_trends(view), 1):
            if trend.screen == PROXYSQL_HISTORY:
                values = [v for t, v in history[trend.proxysql].all_points() if start <= t <= end and v is not None]
            else:
                values = [v for _t, v in view.figures.points(trend_key(trend), start, end) if not math.isnan(v)]
            now = values[-1] if values else made.get(trend.key)
            rows.append({"_id": trend.key, "place": place, "figure": trend.title, "now": now,
                         "low": min(values, default=None), "mean": sum(values) / len(values) if values else None,
                         "high": max(values, default=None)})
        return rows

    def windows(self, view: DataView) -> Tuple[Tuple[str, Optional[float]], ...]:
        """The windows ``w`` steps through; a replay's starts with the whole recording."""
        return ((("the whole recording", None),) if view.wall_span() is not None else ()) + WINDOWS

    def window_span(self, view: DataView) -> Tuple[str, float, float]:
        """The window shown: its name, start and end (wall seconds)."""
        windows = self.windows(view)
        name, seconds = windows[self.window % len(windows)]
        if seconds is None:
            start, end = view.wall_span()
            return name, start, end
        end = view.wall_now()
        return f"the last {name}", end - seconds, end

    def action_window(self, controller) -> None:
        self.window = (self.window + 1) % len(self.windows(controller.view))
        controller.say(f"Trends: {self.window_span(controller.view)[0]}")

    def action_later_charts(self, controller) -> None:
        self.first = min(len(charts_of(self.shown_trends(controller.view))) - 1, self.first + 1)

    def action_earlier_charts(self, controller) -> None:
        self.first = max(0, self.first - 1)

    def canvas(self, view: DataView, width: int, height: int,
               events: Callable[[float, float], Sequence[chart.Marker]] = lambda start, end: ()
               ) -> List[List[Tuple[str, Optional[str]]]]:
        """The charts that fit, each at least CHART_LINES tall, with the events of the window
        (``events(start, end)``: the Events tab's) marked under each."""
        name, start, end = self.window_span(view)
        markers = list(events(start, end))
        if view.wall_span() is not None:  # a replay: where it plays, under each chart
            markers = list(markers) + [chart.Marker(min(view.wall_now(), end), "\u25b2", "header")]  # (time moved on)
        groups = charts_of(self.shown_trends(view))
        history = self.proxysql_history(view)
        lines: List[List[Tuple[str, Optional[str]]]] = [[("The whole system over ", "dim"),
                                                           (name, "header"), ("   w window", "dim")]]
        legend = event_legend(markers)  # events under the charts: what their letters mean
        if legend:
            lines[0].append((legend, "dim"))
        if not groups:
            return lines
        room = max(1, height - 1)
        fit = max(1, min(len(groups), room // CHART_LINES))
        self.first = min(self.first, len(groups) - fit)
        chosen = groups[self.first:self.first + fit]
        each = max(4, room // len(chosen))
        made: Dict[str, Optional[float]] = {}  # the values now from the screens' rows, made when needed
        for group in chosen:
            plots = [chart.Plot(trend.title, view.figures.points(trend_key(trend), start, end),
                                chart.SERIES_STYLES[i % len(chart.SERIES_STYLES)], steps=trend.steps)
                     for i, trend in enumerate(group)]
            title: List[Tuple[str, Optional[str]]] = []
            for trend, plot in zip(group, plots):
                values = [v for t, v in plot.points if not math.isnan(v) and t <= view.wall_now()]
                if not values and trend.screen == PROXYSQL_HISTORY:  # ProxySQL's own latest figure
                    values = [v for _t, v in history[trend.proxysql].points if v is not None]
                elif not values and trend.screen in dict(self.inputs()):
                    # none kept up to now (a replay's scan reads every 10 s): the screens' value now
                    made = made or trend_values({key: self.rows_of(key, view) for key, _names in self.inputs()})
                    values = [made[trend.key]] if made.get(trend.key) is not None else []
                now_text = trend.fmt(values[-1]) if values else "no reading yet"
                title += [(chart.LEGEND_MARK + " ", plot.style) if len(group) > 1 else ("", None),
                          (trend.title, "label"), (f" {now_text}   ", "header")]
            before = [history_plot(history[t.proxysql], plot.points, start, end)
                      for t, plot in zip(group, plots) if t.proxysql in history]
            before = [plot for plot in before if plot.points]
            if before:
                title.append((chart.LEGEND_MARK + " ", HISTORY_STYLE))
                title.append((f"ProxySQL's own {resolution_text(history[group[0].proxysql].resolution_s)} figures   ",
                              "dim"))
            if group[0].help:  # what the figure is (added up, the worst, ...), where the line has room
                title.append((group[0].help, "dim"))
            lines.append(chart.clip(title, width))
            lines += chart.draw(before + plots, width, each - 1, start, end, fmt=group[0].fmt, markers=markers,
                                label_width=8)
        if len(groups) > len(chosen):
            lines.append([(f"charts {self.first + 1}-{self.first + len(chosen)} of {len(groups)}: "
                           "\u2191\u2193 for the others", "dim")])
        return lines[:height]


def history_plot(series: HistorySeries, live: Sequence[Tuple[float, float]], start: float, end: float) -> chart.Plot:
    """ProxySQL's own points of a figure before proxytop's first (the seam), in the window."""
    joined = seamed(series, [p for p in live if not math.isnan(p[1])])
    points = [(t, math.nan if v is None else float(v)) for segment in joined.segments
              if segment.origin != PROXYTOP for t, v in segment.points if start <= t <= end]
    return chart.Plot(series.label, points, HISTORY_STYLE)


SCREEN = TrendsScreen
