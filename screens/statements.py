"""Statements: which statements cost one MySQL / MariaDB server the most time right now, from
its performance_schema statement digest (events_statements_summary_by_digest).

One row per (schema, digest), sorted by Time/s: the milliseconds of statement time per second
the digest took over the last interval, with the Queries screen's columns where they apply, and
what only the server knows: rows examined and sent per call, statements that used no index,
errors, and the p95 latency where the server has QUANTILE_95 (MySQL 8.0; MariaDB has none).
Enter shows a digest's whole text and every figure.

The server is the one the Servers screen's cursor is on, else the first one; n / N step to the
next / previous server. The digest is read only while this screen shows that server, every
10 s at the most, the heaviest 300 digests by total time (collectors.mysql_statements).
"""
from __future__ import annotations

import time
from typing import Any, List, Optional, Tuple

from proxytop.collectors.innodb_fleet import Fleet, Server
from proxytop.collectors.mysql_statements import StatementsReading
from proxytop.metrics import statements, units
from proxytop.screens.base import DataView, Detail, Screen, seconds_between
from proxytop.screens.one_server import OneServer, server_bindings
from proxytop.screens.keys import Binding
from proxytop.screens.proclist import wrapped
from proxytop.screens.senders import SendersLink
from proxytop.screens.table import Column, Row

Segment = Tuple[str, Optional[str]]
NO_P95 = "p95: this server has no QUANTILE_95 (MySQL 8.0 has it; MariaDB does not)"


def text_cell(value: Any) -> str:
    return "(no digest text)" if value is None else str(value)  # performance_schema had no room for it


def off_line(server: str) -> str:
    """What to do where performance_schema is off (MariaDB's default): one line."""
    return (f"performance_schema is off on {server}: set performance_schema=ON in the server's configuration "
            "and restart it (it can't be turned on at runtime)")


def denied_line(server: str) -> str:
    return (f"SELECT on performance_schema is refused on {server}: GRANT SELECT ON performance_schema.* to the "
            "user proxytop reads as (asked again a minute later)")


def reading_of(snapshot) -> Optional[StatementsReading]:
    data = snapshot.data if snapshot is not None else None
    return data if isinstance(data, StatementsReading) else None


def digest_map(reading: Optional[StatementsReading]):
    return statements.rows_by_key(reading.digests.columns, reading.digests.rows) if reading is not None else None


def statement_rows(previous, current) -> List[Row]:
    """The rows of a server's last two readings (snapshots), each digest's age since last seen."""
    before, now = reading_of(previous), reading_of(current)
    if now is None:
        return []
    rows = statements.statement_rows(digest_map(before), digest_map(now), seconds_between(previous, current))
    for row in rows:
        last = row.get("last_seen")
        row["seen_ago"] = max(0.0, current.wall_time - last) if isinstance(last, (int, float)) else None
    return rows


def taken_at(snapshot) -> Optional[float]:
    return snapshot.taken_at if snapshot is not None else None


def mass_reset(previous, current) -> bool:
    """Most digests read twice were reset at once: someone truncated the table."""
    before, now = digest_map(reading_of(previous)), digest_map(reading_of(current))
    if not before or now is None:
        return False
    both = sum(1 for key in now if key in before)
    return both > 0 and statements.resets(before, now) > both / 2


COLUMNS = (
    Column("text", "Digest text", 40, "<", fmt=text_cell, numeric=False, priority=0, flexible=True,
           help="the statement with its literals replaced by ?, one line (DIGEST_TEXT)"),
    Column("schema", "Schema", 10, "<", numeric=False, priority=5, help="the schema it ran in (SCHEMA_NAME)"),
    Column("count_s", "Count/s", 8, fmt=units.number, priority=0, help="executions per second over the interval"),
    Column("time_s", "Time/s", 8, unit="ms/s", fmt=units.milliseconds, priority=0,
           help="ms of statement time per second over the interval (ΔSUM_TIMER_WAIT/Δt; 1000 = one thread busy)"),
    Column("share", "Share", 6, fmt=units.percent, priority=1, help="share of all digests' Time/s"),
    Column("avg_ms", "Avg", 7, unit="ms", fmt=units.milliseconds, priority=1, help="average latency over the interval"),
    Column("p95_ms", "P95", 7, unit="ms", fmt=units.milliseconds, priority=2,
           help="95th percentile latency since first seen (QUANTILE_95, MySQL 8.0 only)"),
    Column("max_ms", "Max", 7, unit="ms", fmt=units.milliseconds, priority=3, help="longest execution since first seen"),
    Column("examined_per_call", "Exam/call", 9, fmt=units.number, priority=1,
           help="rows examined per execution over the interval (many per row sent: a missing index)"),
    Column("sent_per_call", "Sent/call", 9, fmt=units.number, priority=2, help="rows sent per execution over the interval"),
    Column("no_index_s", "NoIdx/s", 7, fmt=units.number, priority=2,
           help="executions per second that used no index or no good one (full scans)"),
    Column("errors_s", "Err/s", 6, fmt=units.number, priority=3, help="executions per second that ended in an error"),
    Column("avg_life_ms", "AvgAll", 7, unit="ms", fmt=units.milliseconds, priority=4, help="average latency since first seen"),
    Column("seen_ago", "Last", 6, unit="s", fmt=units.age, priority=6, help="seconds since last seen (LAST_SEEN)"),
    Column("count", "Count", 8, fmt=units.number, priority=4, help="executions since first seen (COUNT_STAR)"),
    Column("digest", "Digest", 18, "<", numeric=False, priority=9, help="digest hash"),
)
WITHOUT_P95 = tuple(c for c in COLUMNS if c.key != "p95_ms")


def statement_detail(row: Row, server: str) -> Detail:
    """Enter on a digest: its whole text and every figure."""
    lines: List[List[Segment]] = [[("Digest text", "header")]]
    lines += [[(line, None)] for line in wrapped(row.get("full_text") or "(no digest text)")]
    lines.append([])
    figures = [("server", server), ("schema", row.get("schema") or units.MISSING), ("digest", row.get("digest")),
               ("first seen", _clock(row.get("first_seen"))), ("last seen", _clock(row.get("last_seen"))),
               ("now", f"{units.number(row.get('count_s'))}/s, Time/s {units.milliseconds(row.get('time_s'))} "
                       f"({units.percent(row.get('share'))} of all), avg {units.milliseconds(row.get('avg_ms'))}"),
               ("rows per call", f"examined {units.number(row.get('examined_per_call'))}, "
                                 f"sent {units.number(row.get('sent_per_call'))}"),
               ("per second", f"examined {units.number(row.get('examined_s'))}, "
                              f"affected {units.number(row.get('affected_s'))}, "
                              f"no index {units.number(row.get('no_index_s'))}, errors {units.number(row.get('errors_s'))}"),
               ("latency", f"avg {units.milliseconds(row.get('avg_life_ms'))}, max {units.milliseconds(row.get('max_ms'))}"
                           + (f", p95 {units.milliseconds(row.get('p95_ms'))}" if row.get("p95_ms") is not None else "")
                           + " since first seen"),
               ("total", f"{units.number(row.get('count'))} executions")]
    lines += [[(f"{label:<14}", "label"), (str(value), None)] for label, value in figures]
    if row.get("count_s") is None:
        lines.append([("(no rate yet: two readings are needed, and none across a reset)", "dim")])
    return Detail(f"Statement {row.get('digest')} on {server}", tuple(tuple(line) for line in lines))


def _clock(epoch: Any) -> str:
    if not isinstance(epoch, (int, float)) or not epoch:
        return units.MISSING
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


class StatementsScreen(OneServer, Screen):
    key = "statements"
    title = "Statements"
    short_title = "Stmt"
    shows = "statements"
    columns = COLUMNS
    default_sort = ("time_s", True)
    tiebreak = ("digest",)
    default_interval = 10.0
    live_detail = True
    bindings = (Binding(("S",), "senders", "the ProxySQL digests that send the selected statement, beside this "
                        "server's figures (ProxySQL's digest, read while open)", "S ProxySQL"),) \
        + server_bindings("the statements")

    def __init__(self, config=None, fleet: Optional[Fleet] = None):
        super().__init__(config, fleet)
        self._frame: Tuple[Any, List[Row]] = (None, [])
        self.link = SendersLink()
        self.link_open = False  # the detail shown is the link's (S), not the statement's (Enter)

    def reading_name(self, server: Server) -> str:
        return server.statements_name

    # --- readings and rows -----------------------------------------------------------------------
    def rows(self, view: DataView) -> List[Row]:
        server = self.server()
        previous, current = self.readings(view)
        reading = reading_of(current)
        # no p95 column where the server has none (MariaDB), rather than a column of dashes
        self.columns = COLUMNS if reading is not None and reading.p95 else WITHOUT_P95
        key = (server.key if server else None, taken_at(previous), taken_at(current))
        if self._frame[0] != key:  # worked out once per reading (an open detail asks ten times a second)
            self._frame = (key, statement_rows(previous, current))
        return [dict(row) for row in self._frame[1]]

    def notes(self, view: DataView):
        server = self.server()
        previous, current = self.readings(view)
        reading = reading_of(current)
        lines = self.server_lines(view, reading)
        if server is None or reading is None:
            return lines
        if not reading.enabled:
            return lines + [((off_line(server.key), "warning_bold"),)]
        if reading.denied:
            return lines + [((denied_line(server.key), "warning"),)]
        if reading.error:
            return lines + [((reading.error, "warning"),)]
        interval = view.interval_in_force(server.statements_name)
        read_at = time.strftime("%H:%M:%S", time.localtime(current.wall_time))
        lines.append((("Digest  ", "label"), (f"{len(reading.digests.rows)} digests", None),
                      (f"   read at {read_at} in {units.milliseconds(current.duration * 1000.0)}", None),
                      (f"   every {units.interval(interval)}" if interval else "", None),
                      (f"   the heaviest {reading.limit} by total time: each read sorts the server's digest table",
                       "dim")))
        hidden = [f"proxytop's own statements hidden ({reading.own_hidden})" if reading.own_hidden else "",
                  "" if reading.p95 else NO_P95]
        if any(hidden):
            lines.append((("; ".join(h for h in hidden if h), "dim"),))
        if mass_reset(previous, current):
            lines.append(((f"the digest table was reset (TRUNCATE) before {read_at}: no rates for this interval",
                           "warning_bold"),))
        elif not reading.digests.rows:
            lines.append((("The digest is empty: no statements since the server started or the table was truncated.",
                           "dim"),))
        return lines

    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        server = self.server()
        if server is None:
            return None
        # it follows new readings: the row of the same digest in the latest rows
        fresh = next((r for r in self.rows(view) if r.get("_id") == row.get("_id")), row)
        if self.link_open:
            self.fleet.sync_discovered()  # its hostgroups, discovered since (no I/O)
            return self.link.detail(fresh, server, self.fleet, self.config, view)
        return statement_detail(fresh, server.key)

    # --- the link to ProxySQL (S) ----------------------------------------------------------------
    def detail_collectors(self, row: Row) -> List[str]:
        return self.link.collectors(self.config, self.fleet) if self.link_open else []

    def detail_closed(self) -> None:
        self.link_open = False

    def on_show(self, selected) -> None:
        super().on_show(selected)
        self.link_open = False  # a detail left by switching screens: Enter opens the statement's again

    def action_senders(self, controller) -> None:
        row = controller.selected_row()
        if row is None or "digest" not in row:
            controller.say("no statement selected", "error")
            return
        self.link_open = True
        controller.do_open()


SCREEN = StatementsScreen
