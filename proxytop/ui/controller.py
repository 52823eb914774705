"""The UI's state and what each key does to it. No curses here, no I/O: handlers change the
state, tell the engine what to poll, or hand a confirmed task to the engine's worker threads.

The state the keys change is one UIState. The key table (proxytop.screens.keys) names each
global key's handler, a ``do_<action>`` method here; a screen's own keys call its
``action_<name>(controller)``. While a mode other than the table is on (typed input, the
help, detail and confirmation panels) its ``<mode>_key`` method takes every key."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from functools import partialmethod
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from proxytop.collectors.innodb import DISCOVERY
from proxytop.metrics.events import PULL_BUDGET
from proxytop.metrics.history import FigureHistory
from proxytop.polling import nodes
from proxytop.screens.base import Confirm, DataView, Detail, Screen
from proxytop.screens.connpool import alarm_collectors
from proxytop.screens.sided import header_collector, switch_side
from proxytop.screens import HALVES, MYSQL_HALF, PROXYSQL_HALF, allnodes, figures, filters, keys, table
from proxytop.screens import chart
from proxytop.screens import trends as trends_module
from proxytop.ui import graph_view

INTERVAL_LADDER = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)  # the intervals + and - step through


def step_interval(current: float, direction: int, minimum: float = 0.0) -> float:
    """Next interval along the ladder (direction -1 faster, +1 slower), never below minimum.

    >>> step_interval(1.0, -1), step_interval(1.0, +1), step_interval(60, +1), step_interval(0.5, -1, 2.0)
    (0.5, 2.0, 60.0, 2.0)
    >>> step_interval(3.0, +1), step_interval(3.0, -1)
    (5.0, 2.0)
    """
    ladder = list(INTERVAL_LADDER)
    if direction > 0:
        candidates = [v for v in ladder if v > current + 1e-9]
        value = candidates[0] if candidates else ladder[-1]
    else:
        candidates = [v for v in ladder if v < current - 1e-9]
        value = candidates[-1] if candidates else ladder[0]
    return max(value, minimum)


# The screens whose rows' figures are kept while they are hidden, from the readings Trends
# takes anyway: a backend's and a replica's graphs have a past before their screen was shown.
# (ComCount's 54 commands and IOstat's devices are not: keeping them cost more than a
# millisecond a second on every screen.)
PAST_KEPT = frozenset(("connpool", "replication"))
MESSAGE_SECONDS = 5.0  # a message on the bottom line goes after this, or on a screen switch


@dataclass
class UIState:
    """What the keys change, in one place: the handlers change it, the renderer
    (proxytop.ui.view) reads it. What the engine polls and the rows computed from it are the
    controller's, not kept here."""

    index: int  # the screen shown (of Controller.screens)
    tables: Dict[str, table.TableState]  # per screen: sort and filter
    cursor: Dict[str, int]  # per screen: the selected row
    scroll: Dict[str, int]  # per screen: the first row shown
    half: str = PROXYSQL_HALF  # the half of tabs shown (proxytop.screens.HALVES)
    cursor_id: Dict[str, object] = field(default_factory=dict)  # per screen: the selected row's _id
    left_in: Dict[str, int] = field(default_factory=dict)  # per half: the screen shown when it was left
    # per screen: a row the cursor goes to once it shows (M on a backend: its server, which
    # the Servers screen may list only after its next discovery reading)
    sought: Dict[str, object] = field(default_factory=dict)
    sought_hostgroups: Tuple[int, ...] = ()  # M on a digest: the Servers screen seeks their servers
    intervals: Dict[str, float] = field(default_factory=dict)  # per screen: seconds between readings
    mode: str = "table"  # table | filter | prompt | help | detail | confirm | graph
    input: str = ""  # the filter or prompt text typed
    prompt_label: str = ""
    prompt_hint: str = ""
    prompt_done: Optional[Callable[[str], Optional[str]]] = None  # takes the text, or says why not
    message: Optional[Tuple[str, str, float]] = None  # (text, style, monotonic time it expires)
    detail: Optional[Detail] = None  # the detail panel shown
    detail_row: Optional[dict] = None  # the row a live detail panel follows
    detail_scroll: int = 0
    help_scroll: int = 0
    confirm: Optional[Confirm] = None  # the write waiting for 'y'
    graph: Optional[graph_view.Graph] = None  # the row graphed (g)
    quit_requested: bool = False
    repaint: bool = False  # ^L asked the shell to send every cell again


def halves_of(screens: Sequence[Screen], with_proxysql: bool = True) -> Dict[str, List[int]]:
    """Each half's screens (their indices in ``screens``), in its tab order; a half with no
    screen is left out, the ProxySQL half when no ProxySQL is watched, and a screen no half
    names is a ProxySQL one.

    >>> halves_of([Screen(), Screen()])
    {'proxysql': [0, 1]}
    """
    index = {screen.key: i for i, screen in enumerate(screens)}
    halves = {half: [index[key] for key in keys if key in index] for half, keys in HALVES.items()}
    named = {i for shown in halves.values() for i in shown}
    halves[PROXYSQL_HALF] += [i for i in range(len(screens)) if i not in named]
    if not with_proxysql:
        del halves[PROXYSQL_HALF]
    return {half: shown for half, shown in halves.items() if shown}


def count_data_rows(rows: Sequence[dict]) -> int:
    """The rows that are not subtotal lines."""
    return sum(1 for row in rows if row.get("_kind") != "subtotal")


class Controller:
    def __init__(self, engine, screens: Sequence[Screen], config, clock=time.monotonic):
        self.engine, self.screens, self.config, self.clock = engine, list(screens), config, clock
        # every figure a graph can show: the numbers of the rows of each screen shown, kept from
        # its readings (the top rows of its order: GRAPHED_ROWS)
        self.figures = FigureHistory()
        self.view = DataView(engine, config, figures=self.figures)
        self.graph_figures = 0  # set by the renderer: how many figures the graphed row has
        # A replay's figures over its whole recording, made on a thread of its own: an object with
        # request(screen keys) and take() (proxytop.recordings.replay_figures), set by the cli.
        self.scanner = None
        start = next((i for i, s in enumerate(self.screens) if s.key == (config.screen if config else "connpool")), 0)
        self.halves = halves_of(self.screens, with_proxysql=getattr(config, "proxysql", True))
        self.ui = UIState(index=start, half=next((h for h, shown in self.halves.items() if start in shown), PROXYSQL_HALF),
                          tables={s.key: s.initial_state() for s in self.screens},
                          cursor={s.key: 0 for s in self.screens}, scroll={s.key: 0 for s in self.screens})
        self.page_rows = 10  # set by the renderer from the terminal height
        self.visible_keys: List[str] = []  # set by the renderer: the columns that fit
        self.total_rows = 0  # the screen's rows before the filter
        self.shown_rows = 0  # the arranged rows, subtotals not counted
        self._rows: List[dict] = []
        self._rows_token = None  # what self._rows were made of
        # A screen left keeps its rows for its return: 5,000 rules, 500 servers took 40-60 ms (README).
        self._parked: Dict[str, tuple] = {}
        self._activated: Tuple[str, ...] = ()
        self._asked_early: List[str] = []  # names asked for before their collector was registered
        self._followed: frozenset = frozenset()  # the changes the screen's rows are made of
        self._alarm_plan: Tuple[Tuple[str, float], ...] = ()
        # Extra keys of a mode (a replay): an object with ``title``, ``bindings`` and
        # ``action_<name>(controller)`` methods, looked up after the screen's keys.
        self.overlay = None
        for screen in self.screens:
            self.ui.intervals[screen.key] = max(config.delay if config else 1.0, self.minimum_interval(screen))
        self._trend_made: Dict[str, tuple] = {}  # per screen trends come from: the readings its rows were made of
        for screen in self.screens:
            if hasattr(screen, "watch"):  # Trends: the screens its figures come from
                screen.watch(self.screens)
        if self.screens:
            self.screen.on_show(self.ui.cursor_id)

    # ----- messages -------------------------------------------------------------------------
    def say(self, text: str, style: str = "message") -> None:
        self.ui.message = (" ".join(str(text).split()), style, self.clock() + MESSAGE_SECONDS)

    def current_message(self) -> Optional[Tuple[str, str]]:
        message = self.ui.message
        return message[:2] if message and message[2] > self.clock() else None

    # ----- keys -----------------------------------------------------------------------------
    def bindings(self) -> List[keys.Binding]:
        """Screen keys first (they may override a global one), then the overlay's, then the
        global table without the bindings whose keys are all taken by the former."""
        first = list(self.screen.bindings) + list(self.overlay.bindings if self.overlay else ())
        taken = {k for b in first for k in b.keys}
        return first + [b for b in keys.GLOBAL_BINDINGS if not set(b.keys) <= taken]

    def offers(self, binding: keys.Binding) -> bool:
        """Whether a key can do anything now: the footer names only those. Stepping through
        ProxySQL nodes needs several, watched live; watching another node needs a live view."""
        if binding.action in ("next_node", "previous_node"):
            node_set = nodes.nodes_of(self.view)
            return not self.engine.replaying and node_set is not None and node_set.several
        if binding.action == "watch":
            return not self.engine.replaying
        if binding.action == "switch_half":
            return len(self.halves) > 1
        return True

    def handle_key(self, ch) -> bool:
        name = keys.key_name(ch)
        if self.ui.mode != "table":  # a mode takes every key until it ends
            getattr(self, self.ui.mode + "_key")(name, ch)
            return True
        for owner in (self.screen, self.overlay):  # the screen's keys, then a replay's
            binding = keys.lookup(owner.bindings, name) if owner is not None else None
            if binding is not None:
                getattr(owner, "action_" + binding.action)(self)
                self._rows_token = None
                return True
        binding = keys.lookup(keys.GLOBAL_BINDINGS, name)
        if binding is None:
            return False
        if binding.action == "goto_screen":
            self.do_goto_screen((int(name) - 1) % 10)  # "0" is the tenth screen of the half
        elif binding.action == "goto_tab":
            self.do_goto_tab(name)
        else:
            getattr(self, "do_" + binding.action)()
        return True

    def do_quit(self):
        self.ui.quit_requested = True

    def do_redraw(self):
        self._rows_token = None
        self.ui.repaint = True  # the shell sends every cell again (a garbled terminal is repaired)

    # ----- screens shown: tabs, ProxySQL nodes, the MySQL/PostgreSQL side ----------------------
    @property
    def screen(self) -> Screen:
        return self.screens[self.ui.index]

    @property
    def state(self) -> table.TableState:
        return self.ui.tables[self.screen.key]

    @property
    def tabs(self) -> List[int]:
        """The screens of the half shown, in tab order (indices of ``screens``)."""
        return self.halves.get(self.ui.half, [])

    def _step_screen(self, step: int) -> None:
        tabs = self.tabs
        if tabs:
            here = tabs.index(self.ui.index) if self.ui.index in tabs else 0
            self.switch(tabs[(here + step) % len(tabs)])

    do_next_screen, do_previous_screen = partialmethod(_step_screen, +1), partialmethod(_step_screen, -1)

    def do_goto_screen(self, tab: int):
        """The screen of the tab numbered tab + 1 in the half shown (the lettered tabs aside)."""
        numbered = [i for i in self.tabs if self.screens[i].key not in keys.TAB_LETTERS]
        if 0 <= tab < len(numbered):
            self.switch(numbered[tab])

    def do_goto_tab(self, letter: str):
        """The screen of a lettered tab (keys.TAB_LETTERS) in the half shown."""
        key = keys.letter_tab(letter)
        if key is not None:
            self.show_screen(key)

    def do_switch_half(self):
        """From the ProxySQL screens to the MySQL servers' and back, each half showing the
        screen it showed when it was left. On a row that names a MySQL server (a ConnPool
        backend, its health view), the Servers screen opens on that server."""
        others = [half for half in self.halves if half != self.ui.half]
        if not others:
            found = getattr(self.engine.source("proxysql"), "found_mysql", None)
            self.say(("only the MySQL servers are watched: " + ("-H/-P named a MySQL server" if found
                                                                else "no ProxySQL was named (-H, -P)"))
                     if self.ui.half == MYSQL_HALF
                     else "no MySQL server is watched: add one with --mysql HOST[:PORT]")
            return
        row = self.ui.detail_row if self.ui.mode == "detail" else self.selected_row()
        server = self.screen.mysql_server(row) if row is not None else None
        # a digest: the servers of the hostgroups that served it, once the fleet knows them
        self.ui.sought_hostgroups = self.screen.mysql_hostgroups(row) if row is not None and server is None else ()
        self.ui.left_in[self.ui.half] = self.ui.index
        self.ui.half = others[0]
        target = self.ui.left_in.get(self.ui.half, self.tabs[0])
        servers = next((i for i in self.tabs if self.screens[i].key == "servers"), None)
        if servers is not None and (server is not None or self.ui.sought_hostgroups):
            target = servers
            if server is not None:
                self.ui.cursor_id["servers"] = self.ui.sought["servers"] = server
        self.ui.mode = "table"
        self.switch(target)
        self._rows_token = None

    def land_on_hostgroups(self) -> None:
        """After M on a digest: the cursor on the first server of the hostgroups that served it,
        and all of them named, as soon as the fleet knows them (ProxySQL's runtime_mysql_servers
        is read when the MySQL screens show)."""
        hostgroups = self.ui.sought_hostgroups
        fleet = getattr(self.screen, "fleet", None)
        if not hostgroups or self.screen.key != "servers" or fleet is None:
            return
        fleet.sync_discovered()  # the latest discovery reading's servers (no I/O)
        found = [s.key for s in fleet.listed() if s.discovered and set(s.discovered.hostgroups) & set(hostgroups)]
        named = "hostgroup" + ("s " if len(hostgroups) > 1 else " ") + ",".join(map(str, hostgroups))
        if found:
            self.ui.cursor_id["servers"] = self.ui.sought["servers"] = found[0]
            self.say(f"{named}: {', '.join(found)}")
        elif fleet.discover and self.engine.latest(DISCOVERY) is None:
            return  # not read yet: the next frame looks again
        else:
            self.say(f"{named}: no MySQL server of it is known (ProxySQL's runtime_mysql_servers, an admin user)")
        self.ui.sought_hostgroups = ()

    def switch(self, index: int) -> None:
        if index != self.ui.index:
            if self._rows_token is not None and self._rows_token[0] == self.screen.key:
                self._parked[self.screen.key] = (self._rows_token, self.total_rows, self._rows, self.shown_rows)
            self.ui.index = index
            self.visible_keys = []
            self.ui.mode = "table"
            self.ui.message = None  # what was said belongs to the screen left
            self.screen.on_show(self.ui.cursor_id)
            self.activate()

    def show_screen(self, key: str) -> None:
        """Show the screen ``key`` of the half shown (a screen's key that leads to another)."""
        index = next((i for i in self.tabs if self.screens[i].key == key), None)
        if index is None:
            self.say(f"no {key} screen here")
        else:
            self.switch(index)

    def _step_node(self, step: int) -> None:
        self.say(nodes.step(self, step))

    do_next_node, do_previous_node = partialmethod(_step_node, +1), partialmethod(_step_node, -1)

    def do_all_nodes(self):
        self.say(allnodes.toggle(self))
        self.activate()

    def do_switch_side(self):
        switch_side(self)

    # ----- polling: what the engine reads for the visible screen, and how often ----------------
    def minimum_interval(self, screen: Screen) -> float:
        collectors = [self.engine.collector(n) for n in screen.active_collectors()]
        return max([c.min_interval for c in collectors if c is not None and not c.own_pace], default=0.5)

    def interval(self) -> float:
        return self.ui.intervals[self.screen.key]

    def alarm_plan(self) -> Tuple[Tuple[str, float], ...]:
        """The readings the header's alarms take on every screen: the pools (screens.connpool),
        when a ProxySQL is watched, and each screen's own (the MySQL servers' replication
        threads, lock waits and Galera nodes)."""
        plan: Tuple[Tuple[str, float], ...] = ()
        if PROXYSQL_HALF in self.halves:  # else no ProxySQL is watched (or it was a MySQL server)
            plan = alarm_collectors(getattr(self.view.source("proxysql"), "session", None), self.engine.latest)
        for screen in self.screens:
            plan += screen.alarm_readings(self.view)
        return plan

    def activate(self, align: bool = True) -> None:
        """Poll only what the visible screen needs, plus the header's and the alarm's readings.
        ``align``: start the ProxySQL readings in one batch (a screen shown); not when only the
        alarms' set changed (servers found), which would read the screen's own again early."""
        engine, screen = self.engine, self.screen
        own = list(screen.active_collectors())
        names = list(own)
        if self.ui.mode == "detail" and self.ui.detail_row is not None:
            # an open drill-down may need more (QueryRules' "queries this rule catches"); back
            # on the table, rows() sees the set differ and stops them
            names += [n for n in screen.detail_collectors(self.ui.detail_row) if n not in names]
        self._activated = tuple(names)
        self._asked_early = [n for n in names if engine.collector(n) is None]  # polled once registered
        # The screen's rows change with its readings and with its sources' states (a server
        # going down changes its row without a new reading).
        sources = {getattr(engine.collector(n), "source", None) for n in own}
        self._followed = frozenset(own) | {("state", s) for s in sources if s is not None}
        # A screen's minimum may have grown (e.g. a large fleet found at runtime).
        self.ui.intervals[screen.key] = interval = max(self.interval(), self.minimum_interval(screen))
        for name in names:
            collector = engine.collector(name)
            if collector is not None:
                engine.set_interval(name, max(collector.default_interval, interval) if collector.own_pace else interval)
        header = header_collector(screen, names)
        if PROXYSQL_HALF in self.halves and engine.collector(header) is not None:
            engine.set_interval(header, interval)
            names.append(header)
        self._alarm_plan = self.alarm_plan()
        for name, pace in self._alarm_plan:
            if engine.collector(name) is not None and name not in names:
                # the header's alarms, on every screen: each side's pool, each server's lock
                # waits, at a slower pace (a collector's own may be slower still: a large fleet)
                engine.set_interval(name, max(interval, pace, engine.collector(name).default_interval))
                names.append(name)
        # The ProxySQL readings start in one batch (the slower ones then stay in step with it):
        # after a switch the header's (read anew) and the pool's (kept at the alarm's pace)
        # were a fraction of a second apart for good, two wake-ups and two frames an interval.
        engine.set_active(names, together=[n for n in names if align
                                           and getattr(engine.collector(n), "source", None) == "proxysql"])
        self._rows_token = None

    def _step_interval(self, direction: int) -> None:
        minimum = self.minimum_interval(self.screen)
        new = self.ui.intervals[self.screen.key] = step_interval(self.interval(), direction, minimum)
        self.activate()
        if direction < 0 and new == minimum and minimum > 0.5:
            self.say(f"interval {new:g}s: the minimum for this screen")
        else:
            self.say(f"interval {new:g}s")

    do_faster, do_slower = partialmethod(_step_interval, -1), partialmethod(_step_interval, +1)

    def do_pause(self):
        if self.engine.paused:
            self.engine.resume()
            self.say("resumed")
        else:
            self.engine.pause()
            self.say("paused: data frozen, press p to resume")

    # ----- the screen's rows: made again when a reading, the sort, the filter or the screen's
    # own token changed (a frame without news draws the rows made before) --------------------
    def _registered_since(self) -> bool:
        """A name asked for before its collector was registered has one now (the engine polls
        only registered collectors): ask again."""
        return not self.engine.replaying and any(self.engine.collector(n) is not None for n in self._asked_early)

    def watch_mysql_found(self) -> None:
        """The address given for ProxySQL answered as a MySQL server: from now on proxytop
        watches it as one (its MySQL screens alone), and says what it found."""
        source = self.engine.source("proxysql")
        found = getattr(source, "found_mysql", None)
        several = getattr(getattr(source, "nodes", None), "several", False)  # -H a,b: one of several
        if not found or several or PROXYSQL_HALF not in self.halves or MYSQL_HALF not in self.halves:
            return
        fleet = next((s.fleet for s in self.screens if getattr(s, "fleet", None) is not None), None)
        if fleet is None:
            return
        fleet.watch(source.endpoint)
        del self.halves[PROXYSQL_HALF]
        self.ui.half = MYSQL_HALF
        self.switch(self.tabs[0])
        self.activate()
        self.say(f"{source.endpoint.label} is a MySQL server, not a ProxySQL admin interface ({found}): "
                 f"showing its MySQL screens")

    def rows(self) -> List[dict]:
        """The visible screen's rows, sorted and filtered (and the Trends figures kept)."""
        rows = self._screen_rows()
        self.keep_trends()
        scanned = self.scanner.take() if self.scanner is not None else None
        if scanned is not None:
            self.figures.take_from(scanned)
        return rows

    def _screen_rows(self) -> List[dict]:
        self.watch_mysql_found()
        self.land_on_hostgroups()
        screen = self.screen
        names = tuple(screen.active_collectors())
        if names != self._activated or self.alarm_plan() != self._alarm_plan or self._registered_since():
            # The screen's set changed (e.g. servers discovered at runtime), or the alarm's (a
            # PostgreSQL side learnt on connecting, a pool read empty), or a collector it asked
            # for has been registered since (a node found by --cluster): poll the new set.
            self.activate(align=names != self._activated)
        if not self.engine.replaying:  # a live engine numbers every change
            data = self.engine.last_changed(self._followed)
        else:  # a replay: which readings are shown
            data = tuple(s and s.taken_at for s in map(self.engine.latest, names))
        token = (screen.key, self.state, tuple(sorted(screen.options.items())), data, screen.rows_token(self.view))
        if token == self._rows_token:
            return self._rows
        parked = self._parked.pop(screen.key, None)
        if parked is not None and parked[0][:3] == token[:3]:
            # Back on a screen: its rows as they were. If a reading arrived since (just before
            # the switch), the next frame makes them again: the new screen shows first.
            made_of, self.total_rows, self._rows, self.shown_rows = parked
            token = token if made_of == token else None
        else:
            raw = screen.rows(self.view)
            self.total_rows = len(raw)
            self._rows = screen.arrange(raw, self.state)
            self.shown_rows = count_data_rows(self._rows)
            self.keep_figures(screen, self._rows)
        self._rows_token = token
        self._follow_cursor()
        return self._rows

    def keep_trends(self) -> None:
        """The Trends figures: each group made again when its readings (taken on every screen at
        Trends' pace) are new; a hidden ConnPool's or Replication's own rows' figures are kept
        too, so a graph of a backend has a past before its screen was shown."""
        trends = next((s for s in self.screens if s.key == "trends"), None)
        if trends is None or not trends.built:
            return
        screens = {screen.key: screen for screen in trends.from_screens}
        for key, at in trends.new_inputs(self.engine.latest, self._trend_made):
            rows = trends.rows_of(key, self.view)
            trends_module.keep_trend_values(self.figures, {key: rows}, at)
            screen = screens.get(key)
            if key in PAST_KEPT and screen is not self.screen:  # a hidden screen's figures: its graphs have a past
                # (Replication's trend rows are its screen's own; ConnPool's trends read fixed readings)
                own = screen.rows(self.view) if key in trends_module.FIXED_READINGS else rows
                self.keep_figures(screen, screen.arrange(own, self.ui.tables[key]))

    def keep_figures(self, screen: Screen, rows: Sequence[dict]) -> None:
        """The numbers of the screen's top rows, at the time of its newest reading (rows made
        again for a new sort or filter add nothing new: the same time replaces the same value)."""
        newest = figures.newest_reading(self.engine.latest, screen.active_collectors())
        if newest is not None:
            figures.keep_rows(self.figures, screen, rows, newest.wall_time, self.view)

    def newest_of_screen(self):
        """The newest reading of the visible screen's collectors (the header's "data N s old"),
        or None before the first."""
        return figures.newest_reading(self.engine.latest, self.screen.active_collectors())

    def forget_rows(self) -> None:
        """Another node is watched: no screen may show rows computed from the previous one."""
        self._parked.clear()
        self._rows_token = None
        if self.ui.mode == "detail":
            self.ui.mode = "table"
            self.ui.detail = None

    # ----- the cursor: kept on the same row (by its ``_id``) when rows move ----------------------
    def selected_row(self) -> Optional[dict]:
        rows = self.rows()
        index = self.ui.cursor[self.screen.key]
        return rows[index] if 0 <= index < len(rows) else None

    def _follow_cursor(self) -> None:
        key = self.screen.key
        wanted = self.ui.cursor_id.get(key)
        if wanted is not None:
            for i, row in enumerate(self._rows):
                if row.get("_id") == wanted:
                    self.ui.cursor[key] = i
                    self.ui.sought.pop(key, None)
                    return
        self.ui.cursor[key] = min(self.ui.cursor[key], max(0, len(self._rows) - 1))
        if key not in self.ui.sought:
            self._remember_cursor()

    def _remember_cursor(self) -> None:
        key = self.screen.key
        if 0 <= self.ui.cursor[key] < len(self._rows):
            self.ui.cursor_id[key] = self._rows[self.ui.cursor[key]].get("_id")

    def _move(self, rows_down: int, pages_down: int = 0) -> None:
        rows = self.rows()
        self.ui.sought.pop(self.screen.key, None)  # the user moves the cursor: no row is sought any more
        if rows:
            key, delta = self.screen.key, rows_down + pages_down * self.page_rows
            self.ui.cursor[key] = max(0, min(len(rows) - 1, self.ui.cursor[key] + delta))
            self._remember_cursor()

    do_up, do_down = partialmethod(_move, -1), partialmethod(_move, +1)
    do_page_up, do_page_down = partialmethod(_move, 0, -1), partialmethod(_move, 0, +1)
    do_top, do_bottom = partialmethod(_move, -10**9), partialmethod(_move, +10**9)

    # ----- sorting and filtering the current table -----------------------------------------------
    def _set_state(self, state: table.TableState) -> None:
        self.ui.tables[self.screen.key] = state
        self._rows_token = None

    def _sort_step(self, step: int) -> None:
        # every column, those a narrow terminal hides too: the sort column always shows
        columns = list(self.screen.columns)
        if columns:
            key = table.next_sort_key(columns, self.state.sort_key, step)
            # Numbers read best largest first; text columns A to Z.
            descending = next(c.numeric for c in columns if c.key == key)
            self._set_state(self.state.with_sort(key, descending))
            self.say(f"sorted by {self.column_title(key)}")

    do_sort_next, do_sort_previous = partialmethod(_sort_step, +1), partialmethod(_sort_step, -1)

    def do_sort_reverse(self):
        self._set_state(self.state.with_sort(self.state.sort_key, not self.state.descending))

    def column_title(self, key: str) -> str:
        return next((c.title for c in self.screen.columns if c.key == key), key)

    def do_filter(self):
        """The filter typed before is kept, a space after it: what is typed is one more term
        (AND-ed); ^U empties it."""
        self.ui.mode = "filter"
        text = self.state.filter.text
        self.ui.input = text + " " if text else ""

    def do_clear_filter(self):
        self._set_state(replace(self.state, filter=filters.EMPTY))
        self.say("filter cleared")

    # ----- typed input: the filter (/) and the prompts screens ask for --------------------------
    def prompt(self, label: str, done, hint: str = "") -> None:
        """Ask for one line of text; ``done(text)`` returns None when it took it, or a
        one-line problem (shown, the input kept)."""
        self.ui.prompt_label, self.ui.prompt_hint, self.ui.prompt_done = label, hint, done
        self.ui.input = ""
        self.ui.mode = "prompt"

    def filter_key(self, name: str, ch) -> None:
        if name == "ESC":
            self.ui.mode = "table"
            self.say("filter unchanged")
        elif name == "ENTER":
            try:
                parsed = filters.parse(self.ui.input, self.screen.columns)
            except filters.FilterError as exc:
                self.say(str(exc), "error")  # stay in the input: nothing typed is lost
                return
            self._set_state(replace(self.state, filter=parsed))
            self.ui.mode = "table"
            self.ui.cursor[self.screen.key] = 0
            self.ui.message = None  # what an earlier filter said (unchanged, an error) is past
            if parsed.described != parsed.text:  # a figure read in a unit: say which
                self.say(f"filter: {parsed.described}")
        else:
            self._edit_input(name, ch)

    def prompt_key(self, name: str, ch) -> None:
        if name == "ESC":
            self.ui.mode = "table"
        elif name == "ENTER":
            problem = self.ui.prompt_done(self.ui.input) if self.ui.prompt_done is not None else None
            if problem:
                self.say(problem, "error")
                return
            self.ui.mode = "table"
            self._rows_token = None
        else:
            self._edit_input(name, ch)

    def _edit_input(self, name: str, ch) -> None:
        if name in ("BACKSPACE", "KEY_BACKSPACE", "KEY_DC"):
            self.ui.input = self.ui.input[:-1]
        elif name == "^U":
            self.ui.input = ""
        elif name == "^C":
            self.ui.quit_requested = True
        else:
            text = ch if isinstance(ch, str) else (chr(ch) if isinstance(ch, int) and 32 <= ch < 127 else "")
            if text and text.isprintable():
                self.ui.input += text

    # ----- the help panel (?) ----------------------------------------------------------------------
    def do_help(self):
        self.ui.mode = "help"
        self.ui.help_scroll = 0
        self.ui.message = None  # (a message naming a key: any key but the arrows closes the help)

    def help_key(self, name: str, ch=None) -> None:
        scroll = {"KEY_DOWN": 1, "KEY_UP": -1, "KEY_NPAGE": self.page_rows, "KEY_PPAGE": -self.page_rows}
        if name in scroll:
            self.ui.help_scroll = max(0, self.ui.help_scroll + scroll[name])  # (the renderer caps it)
        elif name in ("q", "^C"):
            self.ui.quit_requested = True
        else:
            self.ui.mode = "table"

    # ----- a row's detail panel (Enter), which may read more while it is open ------------------------
    def do_open(self):
        row = self.selected_row()
        if row is None or row.get("_kind") == "subtotal":
            return
        detail = self.screen.detail(row, self.view)
        if detail is None:
            self.say("this screen has no detail view")
            return
        self.ui.detail, self.ui.detail_row, self.ui.detail_scroll = detail, row, 0
        self.ui.mode = "detail"
        if self.screen.detail_collectors(row) or tuple(self.screen.active_collectors()) != self._activated:
            self.activate()

    def show_detail(self, detail: Detail) -> None:
        """Show a detail panel a screen made later (an EXPLAIN that ran on a source's thread):
        over the table or another detail view, never over typed input or a question."""
        if self.ui.mode in ("table", "detail"):
            self.ui.detail, self.ui.detail_row, self.ui.detail_scroll = detail, None, 0
            self.ui.mode = "detail"
        else:
            self.say(f"{detail.title}: ready, but not shown while another view is open")

    def do_back(self):
        self.ui.mode = "table"

    def refresh_detail(self) -> None:
        """Screens with ``live_detail`` rebuild their detail panel from the latest readings."""
        if self.ui.detail_row is not None and getattr(self.screen, "live_detail", False):
            self.ui.detail = self.screen.detail(self.ui.detail_row, self.view) or self.ui.detail
            # what the drill-down needs read can grow while it is open (Queries' link: the servers
            # of a hostgroup, once discovered): poll the new set
            wanted = self.screen.detail_collectors(self.ui.detail_row) if self.ui.mode == "detail" else []
            if wanted:
                names = list(self.screen.active_collectors())
                names += [n for n in wanted if n not in names]
                if tuple(names) != self._activated or self._registered_since():
                    self.activate()

    def detail_key(self, name: str, ch=None) -> None:
        scroll = {"KEY_DOWN": 1, "KEY_UP": -1, "KEY_NPAGE": self.page_rows, "KEY_PPAGE": -self.page_rows}
        if name in ("ESC", "BACKSPACE", "KEY_LEFT"):
            self.ui.mode = "table"
            self.ui.detail = None
            getattr(self.screen, "detail_closed", lambda: None)()  # (ConnPool's health view)
        elif name in scroll:
            self.ui.detail_scroll = max(0, self.ui.detail_scroll + scroll[name])
        elif name in ("KEY_HOME", "g"):
            self.ui.detail_scroll = 0
        elif name in ("q", "^C"):
            self.ui.quit_requested = True
        else:  # pausing, the interval, a replay's speed and steps (keys.DETAIL_ACTIONS)
            binding = keys.lookup(self.detail_bindings(), name)
            if binding is None:
                return
            if self.overlay is not None and binding in self.overlay.bindings:
                getattr(self.overlay, "action_" + binding.action)(self)
            else:
                getattr(self, "do_" + binding.action)()
            self._rows_token = None

    def detail_bindings(self) -> List[keys.Binding]:
        """The keys of a replay and of the key table that work in a detail view too
        (keys.DETAIL_ACTIONS): the detail view's footer names them."""
        first = list(self.overlay.bindings) if self.overlay else []
        taken = {k for b in first for k in b.keys}
        bindings = first + [b for b in keys.GLOBAL_BINDINGS if not set(b.keys) <= taken]
        return [b for b in bindings if b.action in keys.DETAIL_ACTIONS]

    # ----- the graph of a row (g): its figures over time --------------------------------------
    def do_graph(self):
        row = self.selected_row()
        if row is None or row.get("_id") is None:
            self.say("no row to graph here")
            return
        screen = self.screen
        if self.scanner is not None and self.scanner.request([screen.key]):
            self.say("graph: reading the whole recording for it\u2026")
        self.ui.graph = graph_view.Graph(screen.key, row["_id"], f"{screen.title}: {graph_view.row_label(screen.columns, row)}",
                                         window=graph_view.WHOLE if self.engine.replaying else 0,
                                         siblings=graph_view.siblings(screen.columns, self.rows(), row))
        self.ui.mode = "graph"

    def graph_key(self, name: str, ch=None) -> None:
        graph = self.ui.graph
        binding = keys.lookup(keys.GRAPH_BINDINGS, name)
        if binding is not None and graph is not None:
            getattr(self, "do_" + binding.action)()
        elif name in ("q", "^C"):
            self.ui.quit_requested = True
        elif name not in ("ESC", "BACKSPACE", "KEY_LEFT", "KEY_HOME"):
            # pausing, the interval, a replay's speed and steps (keys.DETAIL_ACTIONS); not the
            # detail view's own keys (closing it, scrolling to its top)
            self.detail_key(name, ch)

    def do_graph_together(self):
        graph = self.ui.graph
        if len(graph.siblings) < 2:
            self.say(f"no other row shares this one's {self.screen.columns[0].title.strip()}")
            return
        self.ui.graph = replace(graph, together=not graph.together)
        self.say(f"graph: every row of its {self.screen.columns[0].title.strip()}" if self.ui.graph.together
                 else "graph: this row alone")

    def do_graph_close(self):
        self.ui.mode, self.ui.graph = "table", None

    def do_graph_window(self):
        graph = self.ui.graph
        self.ui.graph = replace(graph, window=(graph.window + 1) % len(graph_view.WINDOWS), cursor=None)
        self.say(f"graph: {graph_view.window_name(self.ui.graph, self.engine.wall_span())}")

    def _graph_scroll(self, step: int) -> None:
        graph = self.ui.graph
        self.ui.graph = replace(graph, first=max(0, min(self.graph_figures - 1, graph.first + step)))

    do_graph_down, do_graph_up = partialmethod(_graph_scroll, +1), partialmethod(_graph_scroll, -1)

    def events_screen(self):
        """The Events tab (its log marks the charts), or None where it is not built."""
        return next((s for s in self.screens if s.key == "events" and s.built), None)

    def events_behind(self) -> bool:
        """A replay's Events log still folding the readings up to the position (after a jump)."""
        events = self.events_screen()
        if events is None or events.log.caught_up:
            return False
        events.log.events(budget=PULL_BUDGET)  # a frame's worth more, whichever screen is shown
        return not events.log.caught_up

    def event_markers(self, start: float, end: float) -> List[chart.Marker]:
        """The events between two wall times as marks under a chart (the Events tab's log)."""
        events = self.events_screen()
        if events is None:
            return []
        return [chart.Marker(t, mark, "warning") for t, mark, _label in events.log.between(start, end)]

    def graph_span(self) -> Tuple[float, float]:
        graph = self.ui.graph
        columns = self.screens[[s.key for s in self.screens].index(graph.screen)].columns
        keys_of_row = [figures.figure_key(graph.screen, graph.row, c.key) for c in columns]
        return graph_view.span(graph, self.figures, keys_of_row, self.engine.wall_now(), self.engine.wall_span())

    def _graph_cursor(self, step: int) -> None:
        graph = self.ui.graph
        start, end = self.graph_span()
        at = graph.cursor if graph.cursor is not None else end
        at = max(start, min(end, at + step * (end - start) / graph_view.CURSOR_STEPS))
        self.ui.graph = replace(graph, cursor=at)

    do_graph_earlier, do_graph_later = partialmethod(_graph_cursor, -1), partialmethod(_graph_cursor, +1)

    def do_graph_jump(self):
        graph = self.ui.graph
        if not self.engine.replaying or self.overlay is None:
            self.say("Enter jumps to the cursor's time in a replay (--replay); live, the graph follows now")
            return
        if graph.cursor is None:
            self.say("move the time cursor with \u2190 / \u2192 first")
            return
        self.overlay.jump_to(self, graph.cursor)
        self.ui.graph = replace(graph, cursor=None)

    # ----- the confirmation of the one write proxytop makes (a kill): nothing is sent until 'y' --
    def ask(self, confirm: Confirm) -> None:
        if self.engine.refuses_writes:  # a replay: nothing to send anything to
            self.say(self.engine.refuses_writes, "error")
            return
        self.ui.confirm = confirm
        self.ui.mode = "confirm"

    def confirm_key(self, name: str, ch=None) -> None:
        confirm = self.ui.confirm
        if name in ("y", "Y") and confirm is not None:
            self.say("sending\u2026")
            self.engine.submit(confirm.source, confirm.action,
                               lambda error: self.say(error, "error") if error else self.say(confirm.done_message))
        elif name == "^C":
            self.ui.quit_requested = True
        else:
            self.say("cancelled: nothing was sent")
        self.ui.confirm = None
        self.ui.mode = "table"
