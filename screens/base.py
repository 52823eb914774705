"""What a screen is: declared columns plus pure functions from snapshots to rows.

A screen never does I/O. It names the collectors it needs; the app registers them with the
engine and activates them while the screen is visible. ``rows()`` and ``notes()`` read
snapshots through a :class:`DataView` and return plain data that the table model sorts,
filters and lays out — for the curses screen and the non-interactive output alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from proxytop.core import Collector, Snapshot, Source
from proxytop.metrics.history import FigureHistory
from proxytop.screens.keys import Binding
from proxytop.screens.table import Column, Row, TableState, arrange


NOT_RECORDED = "not in this recording: it was not read while recording"


class DataView:
    """Read-only access to the engine's snapshots for a screen's pure functions."""

    def __init__(self, engine, config=None, figures: Optional[FigureHistory] = None):
        self._engine = engine
        self.config = config
        # the figures kept over time for graphs (the controller keeps them; Trends reads them)
        self.figures = figures if figures is not None else FigureHistory()

    def latest(self, name: str) -> Optional[Snapshot]:
        return self._engine.latest(name)

    def pair(self, name: str) -> Tuple[Optional[Snapshot], Optional[Snapshot]]:
        return self._engine.last_two(name)

    def history(self, name: str) -> Tuple[Snapshot, ...]:
        return self._engine.history(name)

    def readings(self, name: str, after: Optional[float], until: float) -> Tuple[Snapshot, ...]:
        """The readings of ``name`` after ``after`` (None: as far back as known) up to ``until``,
        oldest first: live, those kept; in a replay, all the recording holds in the run
        (proxytop.engine_view)."""
        return self._engine.readings(name, after, until)

    def not_recorded(self, name: str) -> bool:
        """True in a replay whose recording holds no reading of ``name``: none will come
        (say NOT_RECORDED rather than wait for one)."""
        return self._engine.not_recorded(name)

    def error(self, name: str) -> Optional[str]:
        return self._engine.error(name)

    def state(self, source: str):
        return self._engine.state(source)

    def source(self, name: str) -> Optional[Source]:
        return self._engine.source(name)

    def now(self) -> float:
        return self._engine.now()

    def wall_now(self) -> float:
        """The wall-clock time now (a replay's: where it plays)."""
        return self._engine.wall_now()

    def wall_span(self) -> Optional[Tuple[float, float]]:
        """A replay's first and last wall-clock times (None live)."""
        return self._engine.wall_span()

    def interval_in_force(self, name: str) -> Optional[float]:
        """Seconds between a collector's readings now: its interval, or its minimum when
        that has grown since (None when the collector is not registered)."""
        collector = self._engine.collector(name)
        if collector is None:
            return None
        return max(self._engine.interval(name), collector.min_interval)


def seconds_between(previous: Optional[Snapshot], current: Optional[Snapshot]) -> Optional[float]:
    """Δt between two snapshots, from their monotonic stamps."""
    if previous is None or current is None:
        return None
    elapsed = current.taken_at - previous.taken_at
    return elapsed if elapsed > 0 else None


class Cells(tuple):
    """A note line laid out in columns (segments padded to line up with the lines below it):
    a narrow terminal cuts it, with '…', where a sentence would be wrapped."""


@dataclass(frozen=True)
class Detail:
    """A drill-down view: a title and lines of (text, style) segments, scrollable."""

    title: str
    lines: Tuple[Tuple[Tuple[str, Optional[str]], ...], ...]


@dataclass(frozen=True)
class Confirm:
    """A yes/no question; ``action`` runs (on the engine's source thread) only on yes."""

    question: Tuple[str, ...]
    source: str
    action: Callable[[Any], Any]
    done_message: str = "done"


class Screen:
    """Base class. Subclasses declare the class attributes and override what they need."""

    key = "screen"  # --screen NAME
    title = "Screen"  # tab title
    short_title = ""  # the tab's title on a narrow terminal (the title when not set)
    columns: Sequence[Column] = ()
    default_sort: Tuple[str, bool] = ("", False)  # (column key, descending)
    tiebreak: Sequence[str] = ()
    group_key: Optional[str] = None
    bindings: Sequence[Binding] = ()  # screen-only keys; actions are methods named action_<name>
    default_interval = 1.0
    built = True

    def __init__(self, config=None):
        self.config = config
        self.options: Dict[str, Any] = {}  # per-screen toggles (e.g. show idle sessions)

    # --- what the app asks once -------------------------------------------------------------
    def sources(self) -> List[Source]:
        """Sources this screen needs beyond the ProxySQL admin connection and the host."""
        return []

    def collectors(self) -> List[Collector]:
        return []

    def attach(self, engine) -> None:
        """Called once after the collectors are registered (e.g. to add sources later)."""

    def all_collectors(self) -> List[Collector]:
        """Every collector to register with the engine (both sides' of a sided screen), made once."""
        return self._collector_cache()

    # --- what the app asks every refresh ----------------------------------------------------
    def active_collectors(self) -> List[str]:
        """Names of the collectors that must poll while this screen is visible."""
        return [c.name for c in self._collector_cache()]

    def _collector_cache(self) -> List[Collector]:
        if not hasattr(self, "_collectors_made"):
            self._collectors_made = self.collectors()
        return self._collectors_made

    def rows(self, view: DataView) -> List[Row]:
        return []

    def complete_rows(self, rows: Sequence[Row], view: DataView) -> None:
        """Fill in, in place, what ``rows()`` left to be worked out, for the rows about to be
        shown or written out. Most screens make whole rows: nothing to do. Queries makes its
        20,000 digests' rows whole only here (a reading took 424 ms with every row made, 289 ms
        so, against a 300 ms budget: tests/bench_queries.py)."""

    def rows_token(self, view: DataView) -> Any:
        """What, besides the snapshots, changes ``rows()`` (a source's connection state, a
        retry countdown): the controller recomputes the rows when this value changes."""
        return None

    def notes(self, view: DataView) -> List[Sequence[Tuple[str, Optional[str]]]]:
        """Lines shown above the table (summaries, what needs an admin user)."""
        return []

    def subtotal_label(self, group) -> Tuple[str, str]:
        return (self.columns[0].key, f"{group} total")

    def arrange(self, rows: Sequence[Row], state: TableState) -> List[Row]:
        return arrange(rows, self.columns, state, self.group_key,
                       self.subtotal_label if self.group_key else None, self.tiebreak)

    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        """Enter on a row: a drill-down, or None when the screen has none."""
        return None

    def detail_collectors(self, row: Row) -> List[str]:
        """Collectors that poll only while the drill-down of ``row`` is open (besides
        ``active_collectors()``); the table view stops them again."""
        return []

    def on_show(self, selected: Mapping[str, Any]) -> None:
        """The screen is about to be shown; ``selected`` is every screen's selected row ``_id``
        by screen key (a screen about one server follows the Servers screen's cursor)."""

    def mysql_server(self, row: Row) -> Optional[str]:
        """The MySQL server a row is about (host:port, as the fleet names it), or None: M on
        such a row opens the Servers screen on it."""
        return None

    def mysql_hostgroups(self, row: Row) -> Tuple[int, ...]:
        """The hostgroups a row's queries went to (a digest's), when it names no one server:
        M on it opens the Servers screen on their first server and names them all."""
        return ()

    def batch_extra(self, view: DataView) -> Dict[str, Any]:
        """Values --batch's JSON adds to this screen's record besides its rows and notes."""
        return {}

    def alarm_readings(self, view: DataView) -> Tuple[Tuple[str, float], ...]:
        """The readings this screen's header alarm (``alarm(view)``, when it has one) takes on
        every screen, each with its pace: (collector name, seconds)."""
        return ()

    def initial_state(self) -> TableState:
        key, descending = self.default_sort
        return TableState(sort_key=key or (self.columns[0].key if self.columns else ""), descending=descending)

    def status(self, view: DataView) -> Optional[str]:
        """A one-line problem with this screen's data (e.g. a collector's error)."""
        for collector in self._collector_cache():
            message = view.error(collector.name)
            if message:
                return message
        return None


class Placeholder(Screen):
    """A screen that is not built yet says so instead of pretending."""

    built = False

    def __init__(self, key: str, title: str, config=None):
        super().__init__(config)
        self.key = key
        self.title = title

    def notes(self, view: DataView):
        return [((f"The {self.title} screen is not available in this version of proxytop.", "dim"),)]
