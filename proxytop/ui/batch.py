"""``--batch``: the screens as text every interval — for scripts, logs and cron; no curses.

Each report shows the chosen screens with the live view's column declarations, units, sort
and filter (the rows come from each screen's ``rows()`` and ``arrange()``): a rich table on a
terminal, aligned plain text when piped, or JSON lines / CSV with raw values under the column
keys. Like iostat, the first report waits until rates can be computed (two readings; for the
rates over ProxySQL's counter updates, until they have started: a second update seen, about
2 s; at most a few intervals, then the notes say "no rates yet"), so ``--count 1`` already
shows rates.

Over ``--replay`` the reports follow the recording's own time: one per interval of recorded
time, as fast as they can be printed, ending with the recording.

Exit status: 0 when done (the count reached, the recording ended), 1 when ProxySQL could not
be reached after retries (the reason in one line on stderr), 2 for a usage error.
"""
from __future__ import annotations

import csv
import datetime
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, IO, List, Optional, Sequence, Tuple

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from proxytop.core import mysql_source_server
from proxytop.metrics.events import Event, seen_at, watches
from proxytop.metrics.rates import NO_RATE_YET, RATES_PENDING
from proxytop.screens.base import Screen
from proxytop.screens.events import EventsScreen
from proxytop.screens.sided import header_collector
from proxytop.screens import filters, table
from proxytop.ui import view
from proxytop.screens.table import Column, Row, TableState, rows_word

FORMATS = ("table", "json", "csv")
CONNECT_ATTEMPTS = 3  # ProxySQL failures in a row (retried with backoff) before giving up
PROXYSQL = "proxysql"
TICK = 0.05  # seconds between checks while waiting (live)

# style names of the screens -> rich styles
RICH_STYLES = {
    "good": "green", "danger": "bold red", "warning": "yellow", "warning_bold": "bold yellow",
    "dim": "dim", "subtotal": "bold", "header": "bold", "header_title": "bold cyan", "label": "dim",
    "title": "bold", "sorted": "bold underline", "error": "bold red",
}


class UsageError(Exception):
    """A batch option that can't be applied (unknown sort column, bad filter): exit 2."""


# ----- choosing screens, sort and filter ----------------------------------------------------

def choose_screens(screens: Sequence[Screen], name: str) -> List[Screen]:
    """``--screen NAME``, or every screen with data sources configured for ``all``."""
    if name == "all":
        return [s for s in screens if s.built and s.active_collectors()]
    chosen = [s for s in screens if s.key == name]
    if chosen and not chosen[0].built:
        raise UsageError(f"the {chosen[0].title} screen is not available in this version of proxytop")
    return chosen


def parse_sort(text: str) -> Tuple[str, Optional[bool]]:
    """``COL``, ``COL:desc`` or ``COL:asc`` -> (column name, descending or None for the
    column's natural order).

    >>> parse_sort("queries/s"), parse_sort("hg:asc"), parse_sort("Server:DESC")
    (('queries/s', None), ('hg', False), ('Server', True))
    """
    name, sep, direction = text.rpartition(":")
    if sep and direction.lower() in ("asc", "desc"):
        return name, direction.lower() == "desc"
    return text, None


def table_states(screens: Sequence[Screen], sort: Optional[str], filter_text: Optional[str],
                 strict: bool) -> Dict[str, TableState]:
    """Each screen's starting state with ``--sort`` and ``--filter`` applied. With ``strict``
    (one screen) an option that does not fit it is a usage error; otherwise it applies to the
    screens it fits and is an error only when it fits none."""
    states = {s.key: s.initial_state() for s in screens}
    for option, text in (("sort", sort), ("filter", filter_text)):
        if not text:
            continue
        problems = []
        for screen in screens:
            state = states[screen.key]
            try:
                if option == "filter":
                    states[screen.key] = replace(state, filter=filters.parse(text, screen.columns))
                    continue
                name, descending = parse_sort(text)
                key = filters.resolve_column(name, screen.columns)
                if descending is None:
                    descending = next(c.numeric for c in screen.columns if c.key == key)  # as the s key does
                states[screen.key] = state.with_sort(key, descending)
            except filters.FilterError as exc:
                problems.append(f"{screen.title}: {exc}")
        if problems and (strict or len(problems) == len(screens)):
            raise UsageError(f"--{option} {text}: " + "; ".join(problems))
    return states


# ----- values -----------------------------------------------------------------------------

def raw_value(value: Any) -> Any:
    """A row value for JSON: numbers, text, true/false, null and lists of those.

    >>> raw_value(2.5), raw_value(float("nan")), raw_value((1, "a")), raw_value(b"x")
    (2.5, None, [1, 'a'], 'x')
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        return [raw_value(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    try:
        number = float(value)  # float, Decimal and friends
        return number if math.isfinite(number) else None
    except (TypeError, ValueError):
        return str(value)


def csv_value(value: Any) -> str:
    """
    >>> csv_value(None), csv_value(1.5), csv_value(True), csv_value((1, 2))
    ('', '1.5', 'true', '1 2')
    """
    value = raw_value(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return " ".join(csv_value(v) for v in value)
    return str(value)


def iso_time(at: Optional[float]) -> Optional[str]:
    return None if at is None else datetime.datetime.fromtimestamp(at).astimezone().isoformat(timespec="seconds")


# ----- one report ---------------------------------------------------------------------------

@dataclass
class Block:
    """What one screen shows in one report."""

    screen: Screen
    state: TableState
    rows: List[Row]  # arranged: filtered, sorted, with subtotal rows
    total: int  # rows before the filter
    note_lines: List[Sequence[Tuple[str, Optional[str]]]]  # styled, as on the live screen
    status: Optional[str]
    node: Optional[str] = None  # the watched ProxySQL node, when several are given
    data_wall: Optional[float] = None  # wall time of the newest reading the rows come from
    extra: Dict[str, Any] = field(default_factory=dict)  # the screen's batch_extra (JSON only)

    @property
    def data_rows(self) -> List[Row]:
        return [r for r in self.rows if r.get("_kind") != "subtotal"]

    @property
    def notes(self) -> List[str]:
        texts = ["".join(text for text, _ in line).rstrip() for line in self.note_lines]
        return [t for t in texts if t]

    @property
    def columns(self) -> List[str]:
        return [c.key for c in self.screen.columns]

    def status_text(self) -> str:
        state, screen = self.state, self.screen
        pgsql = getattr(screen, "sided", False) and screen.side.key == "pgsql"
        title = next((c.title for c in screen.columns if c.key == state.sort_key), state.sort_key)
        parts = [screen.title + (" (PgSQL)" if pgsql else ""), f"sort {title} {'desc' if state.descending else 'asc'}"]
        if not state.filter.empty:
            parts.append(f"filter {state.filter.described}  {len(self.data_rows)}/{self.total} {rows_word(self.total)}")
        else:
            parts.append(f"{self.total} {rows_word(self.total)}")
        return "  ".join(parts + ([self.status] if self.status else []))


def build_block(screen: Screen, state: TableState, data_view) -> Block:
    raw = screen.rows(data_view)
    screen.complete_rows(raw, data_view)  # every row is written out whole
    nodes = getattr(data_view.source(PROXYSQL), "nodes", None)
    # when the rows' readings were taken (the processlist is read every 2 s at most)
    walls = [s.wall_time for s in map(data_view.latest, screen.active_collectors()) if s is not None]
    return Block(screen=screen, state=state, rows=screen.arrange(raw, state), total=len(raw),
                 note_lines=[tuple(line) for line in screen.notes(data_view)], status=screen.status(data_view),
                 node=nodes.watched.label if nodes is not None and nodes.several else None,
                 data_wall=max(walls) if walls else None, extra=screen.batch_extra(data_view))


def title(column: Column, state: TableState) -> str:
    arrow = ("\u2193" if state.descending else "\u2191") if column.key == state.sort_key else ""
    return column.title.strip() + arrow


# ----- output formats: each a function report(when, header, blocks, events) -----------------------------

def plain_lines(block: Block) -> List[str]:
    """Aligned text, every column, nothing cut: for pipes, files and logs."""
    columns = list(block.screen.columns)
    if not columns:
        return []
    cells = [[title(c, block.state) for c in columns]] + [[c.text(row) for c in columns] for row in block.rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return ["  ".join(v.rjust(w) if c.align == ">" else v.ljust(w) for v, w, c in zip(line, widths, columns)).rstrip()
            for line in cells]


def rich_table(block: Block, width: int):
    """The columns that fit, styled as in the live view."""
    # Which columns fit is decided on what the cells hold (rich sizes columns to their
    # content), with the live view's priorities; 3 = padding and rule between columns.
    sized = [replace(c, width=max([len(title(c, block.state))] + [len(c.text(r)) for r in block.rows]))
             for c in block.screen.columns]
    fitted = table.fit_columns(sized, max(20, width), gap=3, keep=block.state.sort_key)
    grid = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
    for column, width in fitted:
        grid.add_column(title(column, block.state), justify="right" if column.align == ">" else "left",
                        no_wrap=True, overflow="ellipsis", min_width=min(width, len(column.title)),
                        header_style="bold underline" if column.key == block.state.sort_key else "bold")
    for row in block.rows:
        subtotal = row.get("_kind") == "subtotal"
        row_style = row.get("_style") or ("subtotal" if subtotal else None)
        grid.add_row(*[Text(c.text(row), style=RICH_STYLES.get(
            (c.style(row) if c.style and not subtotal else None) or row_style or "", "")) for c, _ in fitted])
    return grid


def event_line(event: Event) -> str:
    """One event as one line of text.

    >>> event_line(Event(0.0, "proxysql", "status", "hg 20 127.0.0.1:3313", "ONLINE", "SHUNNED"))[8:]
    '  event  proxysql  status  hg 20 127.0.0.1:3313  ONLINE \u2192 SHUNNED'
    """
    return (f"{time.strftime('%H:%M:%S', time.localtime(event.wall_time))}  event  {event.source}  {event.kind}  "
            f"{event.what}  {event.change}")


Report = Callable[[float, str, Sequence[Block], Sequence[Event]], None]


def make_output(fmt: str, out: IO[str], color: bool = True) -> Report:
    """Each report: the screens' blocks, and the events seen since the last report (text: one
    line each after the report's first line; JSON: one more object, ``events`` a list; CSV:
    none), unless the Events screen is among the screens (its rows are every event kept)."""
    if fmt == "json":
        def report(when: float, header: str, blocks: Sequence[Block], events: Sequence[Event] = ()) -> None:
            if events:
                record = {"time": iso_time(when), "timestamp": round(when, 3), "events": [e.as_dict() for e in events]}
                out.write(json.dumps(record, separators=(",", ":")) + "\n")
            for block in blocks:  # one JSON object per screen per report, one per line
                screen, state = block.screen, block.state
                record = {
                    "time": iso_time(when), "timestamp": round(when, 3), "screen": screen.key,
                    **({"node": block.node} if block.node else {}),
                    "title": screen.title, "side": screen.side.key if getattr(screen, "sided", False) else None,
                    "sort": state.sort_key, "descending": state.descending, "filter": state.filter.text or None,
                    "status": block.status, "data_time": iso_time(block.data_wall),
                    "data_timestamp": round(block.data_wall, 3) if block.data_wall is not None else None,
                    "notes": block.notes, "columns": block.columns,
                    "rows": [{k: raw_value(row.get(k)) for k in block.columns} for row in block.data_rows],
                    **block.extra,
                }
                out.write(json.dumps(record, separators=(",", ":")) + "\n")
            out.flush()
    elif fmt == "csv":
        writer, headed = csv.writer(out, lineterminator="\n"), set()

        def report(when: float, header: str, blocks: Sequence[Block], events: Sequence[Event] = ()) -> None:
            for block in blocks:  # time,screen,<column keys>: each screen's header before its first rows
                node = [block.node] if block.node else []  # several nodes: each record names its node
                if block.screen.key not in headed:
                    writer.writerow(["time", "screen"] + (["node"] if node else []) + block.columns)
                    headed.add(block.screen.key)
                for row in block.data_rows:
                    writer.writerow([iso_time(when), block.screen.key] + node + [csv_value(row.get(k)) for k in block.columns])
            out.flush()
    elif getattr(out, "isatty", lambda: False)():
        console = Console(file=out, no_color=not color, highlight=False, soft_wrap=False)

        def report(when: float, header: str, blocks: Sequence[Block], events: Sequence[Event] = ()) -> None:
            console.print(Text(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(when))}  {header}".rstrip(), style="bold"))
            for event in events:
                console.print(Text(event_line(event), style=RICH_STYLES.get(event.severity, "")))
            for block in blocks:
                console.print()
                console.print(Text(block.status_text(), style="bold cyan"))
                for line in block.note_lines:
                    text = Text()
                    for segment, style in line:
                        text.append(segment, style=RICH_STYLES.get(style or "", ""))
                    if text.plain.strip():
                        console.print(text)
                console.print(rich_table(block, console.width))
            console.print()
            console.file.flush()
    else:
        def report(when: float, header: str, blocks: Sequence[Block], events: Sequence[Event] = ()) -> None:
            lines = [f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(when))}  {header}".rstrip()]
            lines += [event_line(event) for event in events]
            for block in blocks:
                lines += ["", block.status_text()] + block.notes + plain_lines(block)
            out.write("\n".join(lines) + "\n\n")
            out.flush()
    return report


# ----- the loop -------------------------------------------------------------------------------

class BatchRun:
    def __init__(self, engine, controller, screens: Sequence[Screen], states: Dict[str, TableState],
                 report, interval: float, count: Optional[int] = None, connect_timeout: float = 3.0,
                 err: IO[str] = sys.stderr):
        self.engine, self.controller, self.screens, self.states = engine, controller, list(screens), states
        self.report, self.interval, self.count, self.connect_timeout, self.err = report, interval, count, connect_timeout, err
        self.active: Tuple[str, ...] = ()
        # The event log (the Events screen's) and how many events it had at the last report.
        self.events_screen = next((s for s in controller.screens if isinstance(s, EventsScreen)), None)
        self.events_seen = 0
        self.paced: List[Tuple[str, float]] = []  # what events watch besides the screens' readings
        # a replay's polls drift by a few milliseconds from the interval
        self.tolerance = min(0.3, 0.3 * interval) if engine.replaying else 0.0

    def tick(self, names: Sequence[str]) -> bool:
        """Wait a little: live, while the engine polls on its threads; in a replay, move to the
        next poll of the reported collectors (False at the end of the recording)."""
        if self.engine.replaying:
            return self.engine.step(+1, names)
        time.sleep(TICK)
        return True

    def uses_proxysql(self) -> bool:
        return any(getattr(self.engine.collector(n), "source", None) == PROXYSQL
                   for screen in self.screens for n in screen.active_collectors())

    def activate(self) -> List[str]:
        """Poll what the chosen screens need (their sets can grow: servers discovered)."""
        names: List[str] = []
        for screen in self.screens:
            names += [n for n in screen.active_collectors() if n not in names]
        header = header_collector(self.controller.screen, names)
        if self.uses_proxysql() and self.engine.collector(header) is not None and header not in names:
            names.append(header)
        # what events watch, at the live view's slow paces: the pools, the servers' state, the variables
        paced = [(name, pace) for name, pace in self.controller.alarm_plan()
                 if watches(name) and name not in names and self.engine.collector(name) is not None]
        if tuple(names) + tuple(paced) != self.active:
            for name in names:
                collector = self.engine.collector(name)
                if collector is not None:
                    own = collector.own_pace
                    self.engine.set_interval(name, max(collector.default_interval, self.interval) if own else self.interval)
            for name, pace in paced:
                self.engine.set_interval(name, max(self.interval, pace, self.engine.collector(name).default_interval))
            self.engine.set_active(names + [name for name, _pace in paced])
            self.active = tuple(names) + tuple(paced)
        self.paced = paced
        return names

    def ready(self, names: Sequence[str]) -> bool:
        """Every collector has what its rates need (two readings; one for slow own-pace ones),
        or has said why not. ProxySQL itself must answer first (or be given up on: fatal)."""
        for name in names:
            collector = self.engine.collector(name)
            if collector is None or self.engine.error(name):
                continue
            state = self.engine.state(collector.source)
            if not self.engine.replaying and collector.source == PROXYSQL and (state is None or not state.connected):
                return False
            if state is not None and state.error and not state.connected:
                continue  # a MySQL server that is down: its row says so
            if len(self.engine.history(name)) < (1 if collector.own_pace else 2):
                return False
        return not any(NO_RATE_YET in note or RATES_PENDING in note for screen in self.screens
                       for note in build_block(screen, self.states[screen.key], self.controller.view).notes)

    def proxysql_down(self) -> bool:
        """Live, a chosen screen reads ProxySQL, and it has not answered (yet, or any more)."""
        if self.engine.replaying or not self.uses_proxysql():
            return False
        state = self.engine.state(PROXYSQL)
        return state is None or not state.connected

    def mysql_states(self) -> List[Any]:
        """Live, with no ProxySQL read: the MySQL servers' connection states."""
        if self.engine.replaying or self.uses_proxysql():
            return []
        return [s for s in self.engine.states() if mysql_source_server(s.name) is not None]

    def mysql_trying(self) -> bool:
        """Every MySQL server is down, and one is still being tried (not given up on yet)."""
        states = self.mysql_states()
        return bool(states) and not any(s.connected for s in states) and \
            any(s.failures < CONNECT_ATTEMPTS for s in states)

    def fatal(self) -> Optional[str]:
        """One line when ProxySQL, or with no ProxySQL every MySQL server, could not be reached
        after retries (a cron job's check sees exit status 1, not a report of rows all down)."""
        state = self.engine.state(PROXYSQL)
        if self.proxysql_down() and state is not None and state.failures >= CONNECT_ATTEMPTS:
            where = getattr(getattr(self.engine.source(PROXYSQL), "endpoint", None), "label", "ProxySQL")
            return f"cannot connect to ProxySQL at {where} after {state.failures} attempts: {state.error}"
        states = self.mysql_states()
        if states and all(not s.connected and s.failures >= CONNECT_ATTEMPTS for s in states):
            return "cannot connect to " + "; ".join(
                f"MySQL at {mysql_source_server(s.name)} after {s.failures} attempts: {s.error}" for s in states)
        return None

    def run(self) -> int:
        names = self.activate()
        # (a collector read every 10 s at the most, such as a server's statement digest, needs 20 s)
        slowest = max((c.min_interval for c in map(self.engine.collector, names) if c is not None and not c.own_pace),
                      default=0.0)
        deadline = self.engine.now() + max(4 * self.interval, 2 * self.connect_timeout + 3 * self.interval,
                                           2 * slowest + self.connect_timeout)
        # The first report waits for rates (bounded), and for ProxySQL to answer or be given up on.
        while (not self.ready(names) or self.mysql_trying()) and \
                (self.engine.now() < deadline or self.proxysql_down() or self.mysql_trying()):
            if self.fatal() or not self.tick(names):
                break
            names = self.activate()
        reports, due = 0, self.engine.now()
        while True:
            problem = self.fatal()
            if problem:
                self.err.write(f"proxytop: {problem}\n")
                self.err.flush()
                return 1
            self.activate()
            self.report_now(self.new_events())
            reports += 1
            if self.count is not None and reports >= self.count:
                return 0
            # On schedule (no drift); after a stall, never two reports back to back.
            due = max(due + self.interval, self.engine.now() + self.interval / 2)
            while self.engine.now() < due - self.tolerance and not self.fatal():
                names = self.activate()
                if not self.tick(names + [name for name, _pace in self.paced]):
                    self.last_events()
                    return 0  # the recording ended
            if self.engine.replaying:
                due = self.engine.now()

    def new_events(self) -> List[Event]:
        """The events seen since the last report (up to a replay's position)."""
        if self.events_screen is None:
            return []
        found, self.events_seen = self.events_screen.log.since(self.events_seen)
        return [e for e in found if seen_at(e) <= self.engine.now() + 1e-6]

    def report_now(self, events: Sequence[Event]) -> None:
        blocks = [build_block(s, self.states[s.key], self.controller.view) for s in self.screens]
        # the Events screen's block lists every event kept, as the live view does: the new ones
        # are not listed again
        self.report(self.engine.wall_now(), self.header(), blocks, () if self.events_screen in self.screens else events)

    def last_events(self) -> None:
        """At the end of a recording, a last report when events were seen since the one before."""
        events = self.new_events()
        if events:
            self.report_now(events)

    def header(self) -> str:
        if not self.uses_proxysql():
            return f"proxytop {os.uname().nodename}"
        return "".join(text for text, _ in view.header_lines(self.controller, 10_000)[0]).strip()


# ----- entry point ------------------------------------------------------------------------------

def main(config, engine, controller, out: IO[str] = sys.stdout, err: IO[str] = sys.stderr) -> int:
    """Run --batch over a built engine and controller (live or replay; not started yet)."""
    args = config.args
    screen_name = getattr(args, "screen", None) or config.screen
    screens = choose_screens(controller.screens, screen_name)
    states = table_states(screens, getattr(args, "sort", None), getattr(args, "filter", None),
                          strict=screen_name != "all")
    report = make_output(getattr(args, "format", None) or "table", out, color=config.color)
    if not screens:
        err.write("proxytop: no screen has data sources configured\n")
        return 2
    if not engine.replaying:
        engine.start()
    return BatchRun(engine, controller, screens, states, report, interval=config.delay,
                    count=getattr(args, "count", None), connect_timeout=config.endpoint.timeout, err=err).run()
