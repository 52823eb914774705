"""ComCount: ProxySQL's command counters, with latency percentiles from the bucket counts.

stats_mysql_commands_counters counts every command (SELECT, INSERT, COMMIT, ...) and sorts
each execution into one of twelve exclusive latency buckets. Rates, shares, the average and
the percentiles are all computed over the last interval (the difference between the two latest
readings); a counter that went down is a reset and gives no value for that interval.
ProxySQL adds each worker thread's counts to this table about once a second, so the interval
runs between readings that first showed new counts, over proxytop.metrics.rates.RATE_WINDOW seconds
at the least (proxytop.metrics.rates.update_span): one update more or less can't swing the figures.
"""
from __future__ import annotations

import math
import operator
from typing import Dict, List, Optional, Sequence, Tuple

from proxytop.collectors.proxysql_stats import CommandCounters
from proxytop.metrics import histogram, units
from proxytop.metrics.rates import SteadyPair, counter_total, rate, to_number
from proxytop.screens.base import DataView, Detail, Screen, seconds_between
from proxytop.screens.sided import SidedScreen
from proxytop.screens import allnodes
from proxytop.screens.asks import asks_line
from proxytop.screens.keys import Binding
from proxytop.screens.table import Column, Row

PERCENTILES = (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))
BAR_WIDTH = 30

Segment = Tuple[str, Optional[str]]
# A command's figures in one reading, as numbers: Total_cnt, Total_Time_us, the bucket counts.
Parsed = Tuple[Optional[float], Optional[float], Optional[Tuple[int, ...]]]


def command_rows(previous, current, show_unused: bool = False, seconds: Optional[float] = None) -> List[Row]:
    """Pure: two commands-counters snapshots -> one row per command.

    Commands never executed (Total_cnt 0) are left out unless ``show_unused``. ``seconds`` is
    the time the counters' difference covers (by default the time between the readings).
    """
    if current is None or current.data is None:
        return []
    if seconds is None:
        seconds = seconds_between(previous, current)
    before: Dict[str, Parsed] = {}
    if previous is not None and previous.data is not None:
        before = _commands_of(previous)
    fractions = tuple(fraction for _, fraction in PERCENTILES)
    rows: List[Row] = []
    for name, (total, spent, counts) in _commands_of(current).items():
        if not show_unused and not total:
            continue
        old = before.get(name)
        per_second = delta = average = None
        if old is not None:
            old_total, old_spent, old_counts = old
            per_second = rate(old_total, total, seconds)
            if per_second is not None:  # else the total went down (a reset) or no time passed: no histogram
                delta = histogram.bucket_delta(old_counts, counts)
            average = histogram.average_us(old_spent, spent, old_total, total)
        row: Row = {
            "_id": name,
            "command": name,
            "total": total,
            "rate": per_second,
            "share": None,
            "avg_us": average,
            "avg_all_us": average_since_start(spent, total),
            "_counts": counts,
            "_delta": delta,
        }
        for (key, _), value in zip(PERCENTILES, histogram.percentiles(delta, fractions)):
            row[key] = value
        rows.append(row)
    add_shares(rows)
    return rows


def _commands_of(snapshot) -> Dict[str, Parsed]:
    """{command: (Total_cnt, Total_Time_us, bucket counts)} of a reading. Columns are found by
    name (versions differ); a missing one gives None."""
    table = snapshot.data
    columns = table.columns
    name_at, total_at, spent_at = (columns.index(c) if c in columns else None
                                   for c in ("Command", "Total_cnt", "Total_Time_us"))
    counts_of = histogram.counts_reader(columns)
    commands = {
        (row[name_at] if name_at is not None else None): (
            to_number(row[total_at]) if total_at is not None else None,
            to_number(row[spent_at]) if spent_at is not None else None,
            counts_of(row))
        for row in table.rows}
    return commands


def total_executions(table) -> object:
    """What tells two readings apart: the sum of Total_cnt (every execution adds one).

    >>> from proxytop.core import Table
    >>> total_executions(Table(("Command", "Total_cnt"), (("SELECT", "10"), ("COMMIT", "2"))))
    12
    """
    if "Total_cnt" not in table.columns:
        return table.rows
    at = table.columns.index("Total_cnt")
    return counter_total([row[at] for row in table.rows])


def average_since_start(spent: Optional[float], count: Optional[float]) -> Optional[float]:
    """Total_Time_us / Total_cnt.

    >>> average_since_start(5000, 20)
    250.0
    >>> average_since_start(0, 0) is None, average_since_start(None, 3) is None
    (True, True)
    """
    if spent is None or not count:
        return None
    return spent / count


def add_shares(rows: List[Row]) -> None:
    """Each command's share of all commands per second over the interval, in percent.

    >>> rows = [{"rate": 30.0}, {"rate": 10.0}, {"rate": None}]
    >>> add_shares(rows); [r["share"] for r in rows]
    [75.0, 25.0, None]
    """
    total = sum(r["rate"] for r in rows if r.get("rate") is not None)
    for row in rows:
        row["share"] = 100.0 * row["rate"] / total if (total > 0 and row.get("rate") is not None) else None


def combined(rows: Sequence[Row], key: str) -> Optional[Tuple[int, ...]]:
    """Bucket counts of all commands added together (None when no row has them)."""
    total: Optional[List[int]] = None
    for row in rows:
        counts = row.get(key)
        if counts is None:
            continue
        total = list(counts) if total is None else list(map(operator.add, total, counts))
    return tuple(total) if total is not None else None


def percentile_text(counts) -> str:
    """'p50 ≤500µs  p95 ≤5ms  p99 ≤10ms', or a dash when nothing ran."""
    if counts is None or sum(counts) == 0:
        return units.MISSING
    return "  ".join(f"{key} {histogram.format_bound(histogram.percentile(counts, f))}" for key, f in PERCENTILES)


def histogram_lines(counts: Optional[Sequence[int]], width: int = BAR_WIDTH) -> List[List[Segment]]:
    """Horizontal bars, one per bucket: label, bar, count, cumulative percent."""
    if counts is None:
        return [[("  no reading for this interval (first reading, or the counters were reset)", "dim")]]
    if sum(counts) == 0:
        return [[("  no executions", "dim")]]
    top = max(counts)
    cumulative = histogram.cumulative_percent(counts)
    lines: List[List[Segment]] = [[(f"  {'bucket':<8} {'':<{width}} {'count':>13} {'cum %':>7}", "label")]]
    for index, count in enumerate(counts):
        filled = 0 if not count else max(1, int(round(count / top * width)))
        bar = "\u2588" * filled
        style = "danger" if histogram.UPPER_US[index] >= 1_000_000 and count else None
        lines.append([
            (f"  {histogram.bucket_label(index):<8} ", "label"),
            (f"{bar:<{width}}", style),
            (f" {units.number(count):>13} {cumulative_text(cumulative[index]):>7}", None),
        ])
    return lines


def cumulative_text(value: Optional[float]) -> str:
    """A cumulative share that reads 100% only when every execution is counted.

    >>> cumulative_text(59.64), cumulative_text(99.998), cumulative_text(100.0), cumulative_text(None)
    ('59.64%', '99.99%', '100%', '—')
    """
    if value is None:
        return units.MISSING
    if value >= 100:
        return "100%"
    return f"{math.floor(value * 100) / 100:.2f}%"


def command_detail(row: Row, seconds: Optional[float]) -> Detail:
    """The drill-down of one command: both histograms and the percentile estimates."""
    interval = units.duration(seconds) if seconds else "interval"
    delta = row.get("_delta")
    executed = sum(delta) if delta is not None else None
    lines: List[List[Segment]] = [
        [("executions   ", "label"), (f"{units.number(row.get('total'))} since start", None),
         (f"   {units.number(executed)} in the last {interval} ({units.number(row.get('rate'))}/s)", None)],
        [("average      ", "label"), (f"{units.microseconds(row.get('avg_all_us'))} since start", None),
         (f"   {units.microseconds(row.get('avg_us'))} in the last {interval}", None)],
        [("percentiles  ", "label"), (f"since start {percentile_text(row.get('_counts'))}", None)],
        [("             ", "label"), (f"last {interval} {percentile_text(delta)}", None)],
        [("  Percentiles are the upper bound of the bucket holding them (not interpolated).", "dim")],
        [],
        [("Since start", "header")],
    ]
    lines += histogram_lines(row.get("_counts"))
    lines += [[], [(f"Last {interval}", "header")]]
    lines += histogram_lines(delta)
    return Detail(f"{row.get('command')}: latency", tuple(tuple(line) for line in lines))


def _latency_column(key: str, title: str, fraction: str, priority: int) -> Column:
    return Column(key, title, 7, unit="us", fmt=histogram.format_bound, priority=priority,
                  help=f"{fraction} latency over the interval: the upper bound of the bucket "
                       f"holding it (buckets are not interpolated)")


class ComCountScreen(SidedScreen, Screen):
    key = "comcount"
    title = "ComCount"
    short_title = "Cmds"
    default_sort = ("rate", True)
    tiebreak = ("command",)
    columns = (
        Column("command", "Command", 20, "<", numeric=False, priority=0),
        Column("total", "Total", 8, fmt=units.number, priority=3, help="executions since ProxySQL started"),
        Column("rate", "Count/s", 9, fmt=units.number, priority=0, help="executions per second over the interval"),
        Column("share", "Share", 6, fmt=units.percent, priority=2, help="share of all commands per second"),
        Column("avg_us", "Avg", 8, unit="us", fmt=units.microseconds, priority=1,
               help="average latency over the interval: \u0394Total_Time_us / \u0394Total_cnt"),
        _latency_column("p50", "p50", "median", 1),
        _latency_column("p95", "p95", "95th percentile", 2),
        _latency_column("p99", "p99", "99th percentile", 2),
        Column("avg_all_us", "Avg all", 8, unit="us", fmt=units.microseconds, priority=6,
               help="average latency since ProxySQL started"),
    )
    bindings = (
        Binding(("i",), "toggle_unused", "show / hide commands never executed", "i unused"),
    )

    asks = (CommandCounters,)  # what this screen asks of ProxySQL (screens.asks)

    def collectors(self):
        return [CommandCounters()]

    def active_collectors(self):
        return allnodes.active_collectors(self, super().active_collectors())

    def _span(self, view: DataView):
        """(base reading, latest reading, seconds between the updates they show)."""
        steady = self.__dict__.setdefault("_steady", {})
        name = self.on_side(CommandCounters.name)
        if name not in steady:
            steady[name] = SteadyPair(total_executions)
        return steady[name](view.history(name))

    def _every_row(self, previous, current, seconds) -> List[Row]:
        """Every command's row, once per reading: the table and the summary line share them."""
        cached = getattr(self, "_rows_of", None)
        if cached is None or cached[0] is not previous or cached[1] is not current:
            self._rows_of = cached = (previous, current, command_rows(previous, current, True, seconds))
        return cached[2]

    def rows(self, view: DataView) -> List[Row]:
        if allnodes.on(self):  # every node's commands added up (key a)
            rows = allnodes.command_rows(self, view, command_rows, bool(self.options.get("unused")))
            add_shares(rows)
            return rows
        previous, current, seconds = self._span(view)
        every = self._every_row(previous, current, seconds)
        return every if self.options.get("unused") else [r for r in every if r.get("total")]

    def notes(self, view: DataView):
        if allnodes.on(self):
            return allnodes.notes(self, view, "stats_mysql_commands_counters")
        previous, current, seconds = self._span(view)
        if current is None or current.data is None:
            return []
        # Drawn on every wake-up; computed once per reading (the snapshots themselves are
        # the key: compared by identity, and held so that their ids can't be reused).
        unused = bool(self.options.get("unused"))
        cached = getattr(self, "_notes_of", None)
        if cached is None or cached[0] is not previous or cached[1] is not current or cached[2] != unused:
            self._notes_of = (previous, current, unused, self._summary(previous, current, seconds, view))
        return self._notes_of[3] + [asks_line(self, view, self.asks)]

    def _summary(self, previous, current, seconds, view: DataView):
        rows = self._every_row(previous, current, seconds)
        every = combined(rows, "_delta")
        total_rate = sum(r["rate"] for r in rows if r.get("rate") is not None) if previous else None
        line: List[Segment] = [("all commands ", "label"),
                               (f"{units.number(total_rate)}/s" if total_rate is not None else units.MISSING, "header")]
        if every is not None and sum(every):
            line += [("  latency over the last ", "label"), (units.duration(seconds) + " " if seconds else "", "label"),
                     (percentile_text(every), "header")]
        total_at = current.data.columns.index("Total_cnt") if current.data.has("Total_cnt") else None
        unused = 0 if total_at is None else sum(1 for r in current.data.rows if not to_number(r[total_at]))
        notes = [tuple(line)]
        last_two = view.pair(self.on_side(CommandCounters.name))
        covers = units.covers_text([seconds], seconds_between(*last_two))
        if covers:
            notes.append(((covers + " (ProxySQL updates this table about once a second)", "dim"),))
        if unused and not self.options.get("unused"):
            notes.append(((f"{unused} commands never executed are hidden (i shows them)", "dim"),))
        if self.side.key == "pgsql" and any(r.get("command") == "UNKNOWN" and r.get("total") for r in rows):
            notes.append((("UNKNOWN: ProxySQL 3.0 counts BEGIN and END (and other commands it does not "
                           "classify) as UNKNOWN", "dim"),))
        return notes

    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        return command_detail(row, self._span(view)[2])

    def action_toggle_unused(self, controller) -> None:
        self.options["unused"] = not self.options.get("unused")
        controller.say("showing every command" if self.options["unused"] else "hiding commands never executed")


SCREEN = ComCountScreen
