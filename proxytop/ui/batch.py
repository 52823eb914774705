"""``--batch``: the screens as text every interval — for scripts, logs and cron; no curses.

Each report shows the chosen screens with the same columns, units, sort and filter as the live
view (the rows come from each screen's ``rows()`` and ``arrange()``): a rich table on a
terminal, aligned plain text when piped, or JSON lines / CSV with raw values under the column
keys. Like iostat, the first report waits until rates can be computed (two readings), so
``--count 1`` already shows rates.

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
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, IO, List, Optional, Sequence, Tuple

from proxytop.screens.base import Screen
from proxytop.screens.sided import header_collector
from proxytop.screens import filters, table
from proxytop.ui import view
from proxytop.screens.table import Column, Row, TableState

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
            try:
                states[screen.key] = _apply(screen, states[screen.key], option, text)
            except filters.FilterError as exc:
                problems.append(f"{screen.title}: {exc}")
        if problems and (strict or len(problems) == len(screens)):
            raise UsageError(f"--{option} {text}: " + "; ".join(problems))
    return states


def _apply(screen: Screen, state: TableState, option: str, text: str) -> TableState:
    if option == "filter":
        return replace(state, filter=filters.parse(text, screen.columns))
    name, descending = parse_sort(text)
    key = filters.resolve_column(name, screen.columns)
    if descending is None:
        descending = next(c.numeric for c in screen.columns if c.key == key)  # as the s key does
    return state.with_sort(key, descending)


# ----- values -----------------------------------------------------------------------------

def raw_value(value: Any) -> Any:
    """A row value for JSON: numbers, text, true/false, null and lists of those.

    >>> raw_value(2.5), raw_value(float("nan")), raw_value((1, "a")), raw_value(b"x")
    (2.5, None, [1, 'a'], 'x')
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple, set, frozenset)):
        return [raw_value(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    try:
        number = float(value)  # Decimal and friends
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


def iso_time(at: float) -> str:
    return datetime.datetime.fromtimestamp(at).astimezone().isoformat(timespec="seconds")


# ----- one report ---------------------------------------------------------------------------

@dataclass
class Block:
    """What one screen shows in one report."""

    screen: Screen
    state: TableState
    rows: List[Row]  # arranged: filtered, sorted, with subtotal rows
    total: int  # rows before the filter
    notes: List[str]
    note_lines: List[Sequence[Tuple[str, Optional[str]]]]
    status: Optional[str]
    node: Optional[str] = None  # the watched ProxySQL node, when several are given
    data_wall: Optional[float] = None  # wall time of the newest reading the rows come from

    @property
    def data_rows(self) -> List[Row]:
        return [r for r in self.rows if r.get("_kind") != "subtotal"]

    def status_text(self) -> str:
        state = self.state
        title = next((c.title for c in self.screen.columns if c.key == state.sort_key), state.sort_key)
        pgsql = getattr(self.screen, "sided", False) and self.screen.side.key == "pgsql"
        parts = [self.screen.title + (" (PgSQL)" if pgsql else ""), f"sort {title} {'desc' if state.descending else 'asc'}"]
        if not state.filter.empty:
            parts.append(f"filter {state.filter.text}  {len(self.data_rows)}/{self.total} rows")
        else:
            parts.append(f"{self.total} rows")
        if self.status:
            parts.append(self.status)
        return "  ".join(parts)


def build_block(screen: Screen, state: TableState, data_view) -> Block:
    raw = screen.rows(data_view)
    screen.complete_rows(raw, data_view)  # every row is written out whole
    note_lines = [tuple(line) for line in screen.notes(data_view)]
    notes = ["".join(text for text, _ in line).rstrip() for line in note_lines]
    return Block(screen=screen, state=state, rows=screen.arrange(raw, state), total=len(raw),
                 notes=[n for n in notes if n], note_lines=note_lines, status=screen.status(data_view),
                 node=watched_node(data_view), data_wall=newest_reading(screen, data_view))


def watched_node(data_view) -> Optional[str]:
    """The watched node's address when proxytop was given several (None for one node)."""
    nodes = getattr(data_view.source(PROXYSQL), "nodes", None)
    return nodes.watched.label if nodes is not None and nodes.several else None


def newest_reading(screen: Screen, data_view) -> Optional[float]:
    """Wall time of the newest reading of the screen's collectors (when its query started):
    the processlist is read every 2 s at most, so its rows can be older than the report."""
    walls = [snapshot.wall_time for snapshot in map(data_view.latest, screen.active_collectors())
             if snapshot is not None]
    return max(walls) if walls else None


def _title(column: Column, state: TableState) -> str:
    if column.key == state.sort_key:
        return column.title.strip() + ("\u2193" if state.descending else "\u2191")
    return column.title.strip()


# ----- output formats ------------------------------------------------------------------------

class PlainOutput:
    """Aligned text, every column, nothing cut: for pipes, files and logs."""

    def __init__(self, out: IO[str]):
        self.out = out

    def report(self, when: float, header: str, blocks: Sequence[Block]) -> None:
        lines = [f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(when))}  {header}".rstrip()]
        for block in blocks:
            lines.append("")
            lines.append(block.status_text())
            lines.extend(block.notes)
            lines.extend(self.table(block))
        self.out.write("\n".join(lines) + "\n\n")
        self.out.flush()

    @staticmethod
    def table(block: Block) -> List[str]:
        columns = list(block.screen.columns)
        if not columns:
            return []
        titles = [_title(c, block.state) for c in columns]
        cells = [[c.text(row) for c in columns] for row in block.rows]
        widths = [max([len(t)] + [len(r[i]) for r in cells]) for i, t in enumerate(titles)]

        def line(values: Sequence[str]) -> str:
            parts = [v.rjust(w) if c.align == ">" else v.ljust(w) for v, w, c in zip(values, widths, columns)]
            return "  ".join(parts).rstrip()

        return [line(titles)] + [line(r) for r in cells]


class RichOutput:
    """A rich table per screen on a terminal: the columns that fit, styled as in the live view."""

    def __init__(self, out: IO[str], color: bool = True):
        from rich.console import Console

        self.console = Console(file=out, no_color=not color, highlight=False, soft_wrap=False)

    def report(self, when: float, header: str, blocks: Sequence[Block]) -> None:
        from rich.text import Text

        console = self.console
        console.print(Text(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(when))}  {header}".rstrip(),
                           style="bold"))
        for block in blocks:
            console.print()
            console.print(Text(block.status_text(), style="bold cyan"))
            for line in block.note_lines:
                text = Text()
                for segment, style in line:
                    text.append(segment, style=RICH_STYLES.get(style or "", ""))
                if text.plain.strip():
                    console.print(text)
            console.print(self.table(block))
        console.print()
        console.file.flush()

    def table(self, block: Block):
        from rich import box
        from rich.table import Table as RichTable

        # Which columns fit is decided on what the cells hold (rich sizes columns to their
        # content), with the live view's priorities; 3 = padding and rule between columns.
        sized = [replace(c, width=max([len(_title(c, block.state))] + [len(c.text(r)) for r in block.rows]))
                 for c in block.screen.columns]
        fitted = table.fit_columns(sized, max(20, self.console.width), gap=3, keep=block.state.sort_key)
        grid = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
        for column, width in fitted:
            grid.add_column(_title(column, block.state), justify="right" if column.align == ">" else "left",
                            no_wrap=True, overflow="ellipsis", min_width=min(width, len(column.title)),
                            header_style="bold underline" if column.key == block.state.sort_key else "bold")
        for row in block.rows:
            row_style = row.get("_style") or ("subtotal" if row.get("_kind") == "subtotal" else None)
            cells = []
            for column, _width in fitted:
                style = column.style(row) if column.style and row.get("_kind") != "subtotal" else None
                cells.append(_rich_text(column.text(row), style or row_style))
            grid.add_row(*cells)
        return grid


def _rich_text(text: str, style: Optional[str]):
    from rich.text import Text

    return Text(text, style=RICH_STYLES.get(style or "", ""))


class JsonOutput:
    """One JSON object per screen per report, one per line: raw values under column keys."""

    def __init__(self, out: IO[str]):
        self.out = out

    def report(self, when: float, header: str, blocks: Sequence[Block]) -> None:
        for block in blocks:
            keys = [c.key for c in block.screen.columns]
            record = {
                "time": iso_time(when),
                "timestamp": round(when, 3),
                "screen": block.screen.key,
                **({"node": block.node} if block.node else {}),
                "title": block.screen.title,
                "side": block.screen.side.key if getattr(block.screen, "sided", False) else None,
                "sort": block.state.sort_key,
                "descending": block.state.descending,
                "filter": block.state.filter.text or None,
                "status": block.status,
                "data_time": iso_time(block.data_wall) if block.data_wall is not None else None,
                "data_timestamp": round(block.data_wall, 3) if block.data_wall is not None else None,
                "notes": block.notes,
                "columns": keys,
                "rows": [{k: raw_value(row.get(k)) for k in keys} for row in block.data_rows],
            }
            self.out.write(json.dumps(record, separators=(",", ":")) + "\n")
        self.out.flush()


class CsvOutput:
    """CSV with raw values: ``time,screen,<column keys>``; each screen's header line comes
    before its first rows."""

    def __init__(self, out: IO[str]):
        self.out = out
        self.writer = csv.writer(out, lineterminator="\n")
        self.headed: set = set()

    def report(self, when: float, header: str, blocks: Sequence[Block]) -> None:
        stamp = iso_time(when)
        for block in blocks:
            keys = [c.key for c in block.screen.columns]
            node = [block.node] if block.node else []  # several nodes: each record names its node
            if block.screen.key not in self.headed:
                self.writer.writerow(["time", "screen"] + (["node"] if node else []) + keys)
                self.headed.add(block.screen.key)
            for row in block.data_rows:
                self.writer.writerow([stamp, block.screen.key] + node + [csv_value(row.get(k)) for k in keys])
        self.out.flush()


def make_output(fmt: str, out: IO[str], color: bool = True):
    if fmt == "json":
        return JsonOutput(out)
    if fmt == "csv":
        return CsvOutput(out)
    if hasattr(out, "isatty") and out.isatty():
        return RichOutput(out, color=color)
    return PlainOutput(out)


# ----- the loop -------------------------------------------------------------------------------

class LivePacer:
    """Real time: wait by sleeping while the engine polls on its threads."""

    tolerance = 0.0

    def __init__(self, sleep: Callable[[float], None] = time.sleep):
        self.sleep = sleep

    def tick(self, names: Sequence[str]) -> bool:
        self.sleep(TICK)
        return True


class ReplayPacer:
    """Recorded time: move to the next poll of the reported collectors; False at the end."""

    def __init__(self, engine, interval: float):
        self.engine = engine
        self.tolerance = min(0.3, 0.3 * interval)  # polls drift by a few milliseconds

    def tick(self, names: Sequence[str]) -> bool:
        return self.engine.step(+1, names)


class BatchRun:
    def __init__(self, engine, controller, screens: Sequence[Screen], states: Dict[str, TableState],
                 output, interval: float, count: Optional[int] = None, connect_timeout: float = 3.0,
                 pacer=None, err: IO[str] = sys.stderr, wall: Optional[Callable[[], float]] = None):
        self.engine = engine
        self.controller = controller
        self.screens = list(screens)
        self.states = states
        self.output = output
        self.interval = interval
        self.count = count
        self.connect_timeout = connect_timeout
        self.pacer = pacer or LivePacer()
        self.err = err
        self.wall = wall or engine.wall_now
        self.reports = 0
        self._active: Tuple[str, ...] = ()

    # --- what polls ---
    def names(self) -> List[str]:
        names: List[str] = []
        for screen in self.screens:
            names += [n for n in screen.active_collectors() if n not in names]
        header = header_collector(self.controller.screen, names)
        if self.uses_proxysql() and self.engine.collector(header) is not None \
                and header not in names:
            names.append(header)
        return names

    def uses_proxysql(self) -> bool:
        for screen in self.screens:
            for name in screen.active_collectors():
                collector = self.engine.collector(name)
                if collector is not None and collector.source == PROXYSQL:
                    return True
        return False

    def activate(self) -> List[str]:
        """Poll what the chosen screens need (their sets can grow: servers discovered)."""
        names = self.names()
        if tuple(names) != self._active:
            for name in names:
                collector = self.engine.collector(name)
                if collector is None:
                    continue
                interval = max(collector.default_interval, self.interval) if collector.own_pace else self.interval
                self.engine.set_interval(name, interval)
            self.engine.set_active(names)
            self._active = tuple(names)
        return names

    # --- when to report ---
    def ready(self, names: Sequence[str]) -> bool:
        """Every collector has what its rates need (two readings; one for slow own-pace ones),
        or has said why not. ProxySQL itself must answer first (or be given up on: fatal)."""
        live = not self.engine.replaying
        for name in names:
            collector = self.engine.collector(name)
            if collector is None or self.engine.error(name):
                continue
            state = self.engine.state(collector.source)
            if live and collector.source == PROXYSQL and (state is None or not state.connected):
                return False
            if state is not None and state.error and not state.connected:
                continue  # a MySQL server that is down: its row says so
            needed = 1 if collector.own_pace else 2
            if len(self.engine.history(name)) < needed:
                return False
        return True

    def fatal(self) -> Optional[str]:
        """One line when ProxySQL could not be reached after retries."""
        if self.engine.replaying or not self.uses_proxysql():
            return None
        state = self.engine.state(PROXYSQL)
        if state is None or state.connected or state.failures < CONNECT_ATTEMPTS:
            return None
        source = self.engine.source(PROXYSQL)
        where = getattr(getattr(source, "endpoint", None), "label", "ProxySQL")
        return f"cannot connect to ProxySQL at {where} after {state.failures} attempts: {state.error}"

    def waiting_for_proxysql(self) -> bool:
        if self.engine.replaying or not self.uses_proxysql():
            return False
        state = self.engine.state(PROXYSQL)
        return state is None or not state.connected

    def run(self) -> int:
        names = self.activate()
        first_wait = max(4 * self.interval, 2 * self.connect_timeout + 3 * self.interval)
        deadline = self.engine.now() + first_wait
        # The first report waits for rates (bounded), and for ProxySQL to answer or be given up on.
        while not self.ready(names) and (self.engine.now() < deadline or self.waiting_for_proxysql()):
            problem = self.fatal()
            if problem:
                return self._fail(problem)
            if not self.pacer.tick(names):
                break
            names = self.activate()
        problem = self.fatal()
        if problem:
            return self._fail(problem)
        due = self.engine.now()
        while True:
            self.report()
            if self.count is not None and self.reports >= self.count:
                return 0
            # On schedule (no drift); after a stall, never two reports back to back.
            due = max(due + self.interval, self.engine.now() + self.interval / 2)
            while self.engine.now() < due - self.pacer.tolerance:
                problem = self.fatal()
                if problem:
                    return self._fail(problem)
                if not self.pacer.tick(self.activate()):
                    return 0  # the recording ended
            if self.engine.replaying:
                due = self.engine.now()

    def _fail(self, problem: str) -> int:
        self.err.write(f"proxytop: {problem}\n")
        self.err.flush()
        return 1

    def header(self) -> str:
        if not self.uses_proxysql():
            return f"proxytop {os.uname().nodename}"
        line = view.header_lines(self.controller, 10_000)[0]
        return "".join(text for text, _ in line).strip()

    def report(self) -> None:
        self.activate()
        data_view = self.controller.view
        blocks = [build_block(screen, self.states[screen.key], data_view) for screen in self.screens]
        self.output.report(self.wall(), self.header(), blocks)
        self.reports += 1


# ----- entry point ------------------------------------------------------------------------------

def main(config, engine, controller, out: IO[str] = sys.stdout, err: IO[str] = sys.stderr) -> int:
    """Run --batch over a built engine and controller (live or replay; not started yet)."""
    args = config.args
    screen_name = getattr(args, "screen", None) or "connpool"
    screens = choose_screens(controller.screens, screen_name)
    states = table_states(screens, getattr(args, "sort", None), getattr(args, "filter", None),
                          strict=screen_name != "all")
    replaying = engine.replaying
    pacer = ReplayPacer(engine, config.delay) if replaying else LivePacer()
    run = BatchRun(engine, controller, screens, states, make_output(getattr(args, "format", None) or "table", out,
                                                                   color=config.color),
                   interval=config.delay, count=getattr(args, "count", None),
                   connect_timeout=config.endpoint.timeout, pacer=pacer, err=err)
    if not screens:
        err.write("proxytop: no screen has data sources configured\n")
        return 2
    if not replaying:
        engine.start()
    return run.run()
