"""ProcList: ProxySQL's client sessions (stats_mysql_processlist), longest-running first.

Listing sessions locks every ProxySQL worker thread while it runs, so the list is read every
2 s at the most (the header shows the minimum). Idle sessions (command Sleep) are hidden until
``i`` shows them. ``k`` kills the selected session with ``KILL CONNECTION`` after a yes/no
confirmation: the only write proxytop ever makes (ProxySQL has no ``KILL QUERY``).
"""
from __future__ import annotations

import argparse
import json
import textwrap
from collections import Counter
from operator import itemgetter
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from proxytop.config.option_types import seconds
from proxytop.collectors.proxysql_stats import ProcessList
from proxytop.metrics import units
from proxytop.screens.asks import asks_line
from proxytop.screens.base import Confirm, DataView, Detail, Screen
from proxytop.screens.sided import SidedScreen
from proxytop.screens.filters import Filter
from proxytop.screens.keys import Binding
from proxytop.screens.table import Column, Row, TableState, filter_rows, sort_rows

IDLE = "Sleep"
MIN_INTERVAL = ProcessList.min_interval
QUERY_PREVIEW = 1000  # characters of a query looked at for the one-line preview
WRAP = 76

Segment = Tuple[str, Optional[str]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("ProcList screen")
    group.add_argument("--proclist-min-interval", type=min_interval, metavar="SECONDS",
                       help=f"shortest interval between two readings of the processlist (default "
                            f"{MIN_INTERVAL:g}; each reading locks every ProxySQL worker thread)")


min_interval = seconds(0.5, 3600, "the processlist interval")  # --proclist-min-interval


def _int(value: Any) -> Any:
    """ProxySQL's text numbers as ints; anything else unchanged."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def _address(host: Any, port: Any) -> Optional[str]:
    if not host:
        return None
    return f"{host}:{port}" if port not in (None, "", "0", 0) else str(host)


def column_texts(table, name: str) -> List[Any]:
    """Column ``name`` of a processlist Table (None for a column this version lacks)."""
    if name not in table.columns:
        return [None] * len(table.rows)
    return list(map(itemgetter(table.columns.index(name)), table.rows))


def column_ints(table, name: str) -> List[Any]:
    """Column ``name`` with ProxySQL's text numbers as ints (anything else unchanged)."""
    return [_int(v) for v in column_texts(table, name)]


def session_rows(table, show_idle: bool = False, extra: Sequence[str] = ()) -> List[Row]:
    """Pure: a processlist Table -> one row per session (idle ones only with ``show_idle``);
    ``extra``: columns of the PostgreSQL side (backend_pid, backend_state) read as ints."""
    if table is None:
        return []
    columns = tuple(table.columns)
    db_name = "db" if "db" in columns or "database" not in columns else "database"
    at = {name: i for i, name in enumerate(columns)}
    missing = len(columns)  # a column this version lacks reads the None appended to the row
    pick = itemgetter(*(at.get(name, missing) for name in ("SessionID", "user", db_name, "cli_host", "cli_port",
                                                           "hostgroup", "srv_host", "srv_port", "command", "time_ms",
                                                           "info")))
    rows = []
    for raw in table.rows:
        raw = tuple(raw)
        sid, user, db, cli_host, cli_port, hostgroup, srv_host, srv_port, command, time_ms, info = pick(raw + (None,))
        if command == IDLE and not show_idle:
            continue
        sid = _int(sid)
        row = {
            "_id": sid,
            "id": sid,
            "user": user,
            "db": db,
            "client": (f"{cli_host}:{cli_port}" if cli_port else cli_host) if cli_host else None,
            "hostgroup": _int(hostgroup),
            "backend": (f"{srv_host}:{srv_port}" if srv_port and srv_port != "0" else srv_host) if srv_host else None,
            "command": command,
            "time_ms": _int(time_ms),
            "info": info,
            "_raw": raw,
            "_columns": columns,
        }
        for key in extra:  # the PostgreSQL side's backend_pid, backend_state
            row[key] = _int(raw_field(row, key))
        rows.append(row)
    return rows


def sort_sessions(rows: Sequence[Row], key: str, descending: bool) -> List[Row]:
    """The order of ``table.sort_rows(rows, key, descending, ("id",))``, without its per-value
    conversions when the sort column and the ids are plain ints (time, hostgroup, session).

    >>> rows = [{"id": 3, "time_ms": 5}, {"id": 1, "time_ms": 5}, {"id": 2, "time_ms": None}, {"id": 4, "time_ms": 9}]
    >>> [r["id"] for r in sort_sessions(rows, "time_ms", True)]
    [4, 1, 3, 2]
    """
    if not all(type(r.get(key)) is int or r.get(key) is None for r in rows) or \
            not all(type(r.get("id")) is int for r in rows):
        return sort_rows(rows, key, descending, ("id",))
    by_id = sorted(rows, key=itemgetter("id"))
    present = [r for r in by_id if r.get(key) is not None]
    present.sort(key=itemgetter(key), reverse=descending)
    return present + [r for r in by_id if r.get(key) is None]


TIME_CHARS = frozenset("0123456789.\u00b5msdh" + units.MISSING)  # all time_text() can print


def search_text(row: Mapping, with_time: bool = True) -> str:
    """The short cells a free-text filter term may match, lower case: each column's cell
    text and raw value as filters.matches looks at them (the query is searched separately;
    the formatted time only when a term could match it)."""
    m = units.MISSING
    sid, user, db, client = row.get("id"), row.get("user"), row.get("db"), row.get("client")
    hostgroup, backend, command, ms = row.get("hostgroup"), row.get("backend"), row.get("command"), row.get("time_ms")
    text = (f"{m if sid is None else sid}\x00{m if user is None else user}\x00{m if db is None else db}\x00"
            f"{m if client is None else client}\x00{m if hostgroup is None else hostgroup}\x00"
            f"{m if backend is None else backend}\x00{m if command is None else command}\x00"
            f"{'' if ms is None else ms}")
    if with_time:
        text += "\x00" + time_text(ms)
    return text.lower()


def filter_sessions(rows: Sequence[Row], columns: Sequence[Column], flt: Filter) -> List[Row]:
    """The rows ``table.filter_rows`` keeps, with free-text terms matched against one string of
    short cells per row, then the query text: a text filter over 10,000 sessions stays cheap."""
    if flt.empty:
        return list(rows)
    words = [t.value for t in flt.terms if t.kind == "text"]
    others = tuple(t for t in flt.terms if t.kind != "text")
    kept = filter_rows(rows, columns, Filter(flt.text, others)) if others else list(rows)
    if not words:
        return kept
    with_time = any(set(word) <= TIME_CHARS for word in words)
    # A quoted term with a space may match the one-line preview (whitespace runs collapsed).
    spaced = any(any(ch.isspace() for ch in word) for word in words)
    found = []
    for row in kept:
        short = search_text(row, with_time)
        query = None
        for word in words:
            if word in short:
                continue
            if query is None:
                info = row.get("info")
                query = "" if info is None else str(info).lower()
            if word in query or (spaced and word in one_line(row.get("info")).lower()):
                continue
            break
        else:
            found.append(row)
    return found


def one_line(text: Any) -> str:
    """A query on one line (whitespace runs collapsed), looking only at its beginning.

    >>> one_line("SELECT *\\n  FROM t\\tWHERE id = 1"), one_line(None)
    ('SELECT * FROM t WHERE id = 1', '')
    """
    if text is None:
        return ""
    return " ".join(str(text)[:QUERY_PREVIEW].split())


def time_text(ms: Any) -> str:
    """time_ms for people, as every duration.

    >>> time_text(0), time_text(850), time_text(5873), time_text(185000), time_text(None)
    ('0s', '850ms', '5.87s', '3m05s', '—')
    """
    if not isinstance(ms, (int, float)):
        return units.MISSING
    return units.milliseconds(ms)


def time_style(row: Mapping) -> Optional[str]:
    ms = row.get("time_ms")
    if row.get("command") == IDLE or not isinstance(ms, (int, float)):
        return None
    return "danger" if ms >= 10_000 else "warning" if ms >= 1_000 else None


def summary(table) -> Tuple[Counter, Counter]:
    """(sessions by command, sessions by hostgroup) over every session, idle ones included."""
    if table is None:
        return Counter(), Counter()
    return Counter(column_texts(table, "command")), Counter(column_ints(table, "hostgroup"))


def summary_text(by_command: Mapping, by_hostgroup: Mapping) -> str:
    """One line: how many sessions, by command (most first) and by hostgroup.

    >>> summary_text(Counter({"Query": 8, "Sleep": 3}), Counter({10: 9, 20: 2}))
    '11 sessions   Query 8  Sleep 3   by hostgroup: 10: 9  20: 2'
    >>> summary_text(Counter(), Counter())
    'no client sessions'
    """
    total = sum(by_command.values())
    if not total:
        return "no client sessions"
    commands = "  ".join(f"{name or '?'} {units.number(count)}" for name, count in
                         sorted(by_command.items(), key=lambda item: (-item[1], str(item[0]))))
    groups = "  ".join(f"{'none' if group in (None, -1) else group}: {units.number(count)}" for group, count in
                       sorted(by_hostgroup.items(), key=lambda item: (str(type(item[0])), item[0] if item[0] is not None else 0)))
    noun = "session" if total == 1 else "sessions"
    return f"{units.number(total)} {noun}   {commands}   by hostgroup: {groups}"


def wrapped(text: str, width: int = WRAP, indent: str = "  ") -> List[str]:
    """A long text wrapped for the detail view, keeping its own line breaks."""
    lines: List[str] = []
    for part in str(text).splitlines() or [""]:
        lines.extend(textwrap.wrap(part, width, initial_indent=indent, subsequent_indent=indent,
                                   break_long_words=True, replace_whitespace=False) or [indent])
    return lines


def pretty_json(text: Any) -> List[str]:
    """extended_info pretty-printed (it is JSON); shown as it is when it isn't."""
    try:
        parsed = json.loads(text)
    except (TypeError, ValueError):
        return wrapped(str(text))
    return ["  " + line for line in json.dumps(parsed, indent=2, sort_keys=True).splitlines()]


def raw_field(row: Mapping, name: str) -> Any:
    columns: Sequence[str] = row.get("_columns") or ()
    raw = row.get("_raw")
    if raw is None or name not in columns:
        return None
    return raw[columns.index(name)]


def session_detail(row: Row, database_label: str = "schema") -> Detail:
    """Enter on a session: who, where, how long, the whole query and extended_info."""
    local = _address(raw_field(row, "l_srv_host"), raw_field(row, "l_srv_port"))
    fields = [
        ("user", row.get("user")),
        (database_label, row.get("db")),
        ("client", row.get("client")),
        ("hostgroup", row.get("hostgroup")),
        ("backend", (row.get("backend") or "none") + (f"  (from {local})" if local and row.get("backend") else "")),
        ("command", row.get("command")),
        ("time", time_text(row.get("time_ms"))),
        ("thread", raw_field(row, "ThreadID")),
        ("status_flags", raw_field(row, "status_flags")),
        ("backend_pid", raw_field(row, "backend_pid")),  # newer 3.x, PostgreSQL side
        ("backend_state", raw_field(row, "backend_state")),
    ]
    lines: List[List[Segment]] = [[(f"{label:<13}", "label"), (str(value), None)]
                                  for label, value in fields if value not in (None, "")]
    lines.append([])
    info = row.get("info")
    lines.append([("Query", "header")])
    if info in (None, ""):
        lines.append([("  (none: the session is not running a query)", "dim")])
    else:
        lines += [[(line, None)] for line in wrapped(info)]
    extended = raw_field(row, "extended_info")
    if extended not in (None, ""):
        lines += [[], [("extended_info", "header")]]
        lines += [[(line, None)] for line in pretty_json(extended)]
    return Detail(f"Session {row.get('id')}", tuple(tuple(line) for line in lines))


def kill_question(row: Row) -> Tuple[str, ...]:
    """The confirmation shown before a KILL CONNECTION: the session and its query."""
    sid = row.get("id")
    query = one_line(row.get("info"))
    if len(query) > 300:
        query = query[:299] + "\u2026"
    return (
        f"Kill ProxySQL session {sid}?",
        "",
        f"  user {row.get('user')}  schema {row.get('db')}  client {row.get('client')}",
        f"  hostgroup {row.get('hostgroup')}  backend {row.get('backend') or 'none'}  "
        f"{row.get('command')} for {time_text(row.get('time_ms'))}",
        f"  query: {query or '(none)'}",
        "",
        f"This sends KILL CONNECTION {sid} to ProxySQL's admin interface: the client's connection",
        "is closed (ProxySQL has no KILL QUERY), and a transaction it has open is lost.",
    )


# ProxySQL's admin runs KILL CONNECTION through its MySQL threads only (Admin_Handler.cpp,
# 3.0.x: GloMTH->kill_session): a PostgreSQL session can't be killed there, and its id may
# name a MySQL session instead.
NO_PGSQL_KILL = ("killing is not available on the PostgreSQL side: ProxySQL's KILL CONNECTION "
                 "only reaches MySQL sessions")


class ProcListScreen(SidedScreen, Screen):
    key = "proclist"
    title = "ProcList"
    short_title = "Proc"
    default_sort = ("time_ms", True)
    tiebreak = ("id",)
    default_interval = ProcessList.default_interval
    columns = (
        Column("id", "Session", 8, priority=0, graphed=False, help="SessionID (what KILL CONNECTION takes)"),
        Column("user", "User", 12, "<", numeric=False, priority=1),
        Column("db", "Schema", 12, "<", numeric=False, priority=4),
        Column("client", "Client", 21, "<", numeric=False, priority=5, help="client host:port"),
        Column("hostgroup", "HG", 4, priority=2, graphed=False, help="hostgroup of the session"),
        Column("backend", "Backend", 18, "<", numeric=False, priority=3, help="backend server host:port"),
        Column("command", "Command", 7, "<", numeric=False, priority=1),
        Column("time_ms", "Time", 7, unit="ms", fmt=time_text, style=time_style, priority=0,
               help="time in the current command (time_ms); filter in ms, e.g. time>1000"),
        Column("info", "Query", 20, "<", fmt=one_line, numeric=False, priority=0, flexible=True),
    )
    pgsql_titles = {"db": ("Database", "")}
    pgsql_columns = (
        Column("backend_pid", "PID", 7, priority=6, help="backend_pid: the PostgreSQL backend process (newer 3.x)"),
        Column("backend_state", "State", 10, "<", numeric=False, priority=6,
               help="backend_state: the PostgreSQL backend's state (newer 3.x)"),
    )
    bindings = (
        Binding(("i",), "toggle_idle", "show / hide idle sessions (command Sleep)", "i idle"),
        Binding(("k",), "kill", "kill the selected session (KILL CONNECTION, asks first; admin user; MySQL side only)", "k kill"),
    )

    def __init__(self, config=None):
        super().__init__(config)
        self._summary_of: Optional[Tuple[Any, str, int]] = None  # (reading's time, text, idle count)

    asks = (ProcessList,)  # what this screen asks of ProxySQL (screens.asks)

    def collectors(self):
        collector = ProcessList()
        chosen = getattr(getattr(self.config, "args", None), "proclist_min_interval", None)
        if chosen:
            collector.min_interval = chosen
            collector.default_interval = chosen
        return [collector]

    def _table(self, view: DataView):
        snapshot = view.latest(self.on_side(ProcessList.name))
        return snapshot, (snapshot.data if snapshot is not None else None)

    def rows(self, view: DataView) -> List[Row]:
        _snapshot, table = self._table(view)
        present: Tuple[str, ...] = ()
        if self.side.key == "pgsql":
            present = tuple(c.key for c in self.pgsql_columns if table is not None and c.key in table.columns)
            self.columns = self.columns_for(self.side, present)
        return session_rows(table, bool(self.options.get("idle")), present)

    def notes(self, view: DataView):
        snapshot, table = self._table(view)
        if snapshot is None:
            return []
        if self._summary_of is None or self._summary_of[0] != snapshot.taken_at:  # once per reading
            by_command, by_hostgroup = summary(table)
            self._summary_of = (snapshot.taken_at, summary_text(by_command, by_hostgroup), by_command.get(IDLE, 0))
        _key, text, idle = self._summary_of
        lines = [(("Sessions  ", "label"), (text, None))]
        # Read every 2 s at most (it locks ProxySQL's threads): Time is as of this reading.
        age = max(0.0, view.now() - snapshot.taken_at)
        lines.append(((f"as of the reading {units.duration(age)} ago: Time is each session's time then", "dim"),))
        if idle and not self.options.get("idle"):
            lines.append(((f"{idle} idle sessions hidden (i shows them)", "dim"),))
        session = getattr(view.source("proxysql"), "session", None)
        if self.side.key == "pgsql":
            lines.append((("Killing (k) is not available here: ProxySQL's KILL CONNECTION only reaches MySQL sessions.",
                           "dim"),))
        elif session is not None and not session.is_admin:
            lines.append((("Killing a session (k) needs an admin user.", "dim"),))
        lines.append(asks_line(self, view, self.asks))
        return lines

    def arrange(self, rows: Sequence[Row], state: TableState) -> List[Row]:
        visible = filter_sessions(rows, self.columns, state.filter)
        return sort_sessions(visible, state.sort_key, state.descending)

    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        return session_detail(row, "database" if self.side.key == "pgsql" else "schema")

    def action_toggle_idle(self, controller) -> None:
        self.options["idle"] = not self.options.get("idle")
        controller.say("showing idle sessions" if self.options["idle"] else "hiding idle sessions")

    def action_kill(self, controller) -> None:
        row = controller.selected_row()
        if row is None or row.get("_kind") == "subtotal" or not isinstance(row.get("id"), int):
            controller.say("no session selected", "error")
            return
        if self.side.key == "pgsql":
            controller.say(NO_PGSQL_KILL, "error")
            return
        session = getattr(controller.view.source("proxysql"), "session", None)
        if session is None:
            controller.say("not connected to ProxySQL: nothing to kill", "error")
            return
        if not session.is_admin:
            controller.say("killing a session needs an admin user: the stats user can't run KILL CONNECTION", "error")
            return
        session_id = int(row["id"])
        controller.ask(Confirm(
            question=kill_question(row),
            source="proxysql",
            action=lambda admin: admin.execute(f"KILL CONNECTION {int(session_id)}"),
            done_message=f"session {session_id} killed (KILL CONNECTION {session_id} sent)",
        ))


SCREEN = ProcListScreen
