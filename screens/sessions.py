"""Sessions: the processlist of one MySQL / MariaDB server, longest-running first, each session
with its InnoDB transaction (state, age, rows locked and modified) and, when proxytop runs on the
server's host, its OS thread's CPU and I/O.

The server is the one the Servers screen's cursor is on (Enter there opens this screen), else
the first one; n / N step to the next / previous server. Idle sessions (Sleep with no
transaction) are hidden until ``i`` shows them; a sleeping session with an open transaction is
always shown: it is the usual blocker. proxytop's own session is hidden. Enter shows a session's
every field and its whole statement; ``k`` sends KILL QUERY, ``K`` KILL CONNECTION, each after a
yes; ``e`` EXPLAINs the selected SELECT on a connection of its own, with a time limit.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any, Dict, List, Mapping, Optional, Tuple

from proxytop.collectors.innodb_fleet import Fleet, Server
from proxytop.collectors.mysql_sessions import IDLE, INFO_CHARS, SessionsReading, explain, kill
from proxytop.core import Table
from proxytop.metrics import units
from proxytop.screens.base import Confirm, DataView, Detail, Screen, seconds_between
from proxytop.screens.keys import Binding
from proxytop.screens.one_server import OneServer, server_bindings
from proxytop.screens.proclist import one_line, time_text, wrapped
from proxytop.screens.table import Column, Row

NOT_LOCAL = "CPU and I/O per session only when proxytop runs on the server's host"
THREAD_KEYS = ("cpu_pct", "read_s", "write_s")  # the columns only a server on this host has
Segment = Tuple[str, Optional[str]]
Counters = Tuple[int, int, Optional[int], Optional[int]]  # (OS thread id, CPU ticks, read bytes, write bytes)


def thread_rates(before: Optional[Counters], after: Optional[Counters], seconds: Optional[float],
                 clock_ticks: int) -> Tuple[Optional[float], Optional[float], Optional[float]]:
    """(CPU %, read bytes/s, write bytes/s) of a session's OS thread between two readings of its
    counters; None where there is no pair (a thread read once, another thread since, a counter
    that went back) or no readable I/O. 100% is one core busy all the time.

    >>> thread_rates((8743, 100, 0, 4096), (8743, 150, 8192, 4096), 2.0, 100)
    (25.0, 4096.0, 0.0)
    >>> thread_rates((8743, 100, None, None), (8743, 300, None, None), 2.0, 100)
    (100.0, None, None)
    >>> thread_rates(None, (8743, 150, 0, 0), 2.0, 100), thread_rates((1, 100, 0, 0), (2, 150, 0, 0), 2.0, 100)
    ((None, None, None), (None, None, None))
    """
    if before is None or after is None or not seconds or seconds <= 0 or before[0] != after[0]:
        return None, None, None
    ticks = after[1] - before[1]
    cpu = 100.0 * ticks / clock_ticks / seconds if ticks >= 0 else None
    return cpu, _per_second(before[2], after[2], seconds), _per_second(before[3], after[3], seconds)


def _per_second(before: Optional[int], after: Optional[int], seconds: float) -> Optional[float]:
    if before is None or after is None or after < before:
        return None
    return (after - before) / seconds


_COMMENT = re.compile(r"\s+|/\*.*?\*/|(--\s|#)[^\n]*(\n|$)", re.DOTALL)


def statement_kind(sql: Optional[str]) -> str:
    """The first keyword of a statement, upper case, after comments and opening parentheses
    ('' for none).

    >>> statement_kind("/* app */ (SELECT 1)"), statement_kind("-- x\\nupdate t set v=1"), statement_kind(None)
    ('SELECT', 'UPDATE', '')
    """
    text = sql or ""
    at = 0
    while at < len(text):
        match = _COMMENT.match(text, at)
        if match and match.end() > at:
            at = match.end()
        elif text[at] == "(":
            at += 1
        else:
            break
    word = re.match(r"[A-Za-z_]+", text[at:])
    return word.group(0).upper() if word else ""


def explain_refusal(row: Mapping) -> Optional[str]:
    """Why the selected session's statement can't be EXPLAINed (one line), or None.

    >>> explain_refusal({"info": "UPDATE t SET v = 1"})
    'EXPLAIN only for a SELECT (this is an UPDATE)'
    >>> explain_refusal({"info": "SELECT 1", "_cut": True})
    'the statement is cut (its first 4096 characters are all the server shows): nothing to EXPLAIN'
    >>> explain_refusal({"info": "SELECT 1; SELECT 2"}), explain_refusal({"info": "SELECT 1;"}) is None
    ('EXPLAIN only for a single statement', True)
    """
    info = row.get("info")
    if not info:
        return "the session is not running a statement: nothing to EXPLAIN"
    kind = statement_kind(info)
    if kind != "SELECT":
        article = "an" if kind[:1] in tuple("AEIOU") else "a"
        return f"EXPLAIN only for a SELECT (this is {article} {kind or 'statement without a keyword'})"
    if row.get("_cut"):
        return f"the statement is cut (its first {INFO_CHARS} characters are all the server shows): nothing to EXPLAIN"
    # One statement only; a ';' inside a quoted literal is refused too (rare, and safe).
    if ";" in str(info).strip().rstrip(";"):
        return "EXPLAIN only for a single statement"
    return None


def session_rows(reading: Optional[SessionsReading], previous: Optional[SessionsReading] = None,
                 seconds: Optional[float] = None, show_idle: bool = False) -> Tuple[List[Row], Counter, int, int]:
    """(rows, sessions by command over every session but proxytop's own, idle sessions hidden,
    proxytop's own hidden): one row per session but proxytop's own, idle ones (Sleep with no
    transaction) only with ``show_idle``.

    >>> from proxytop.collectors.mysql_sessions import COLUMNS
    >>> table = Table(COLUMNS, ((5, "app", "h:1", "shop", "Sleep", 9000, "", 77, None, 0, "RUNNING", 9, 2, 1),
    ...                         (6, "app", "h:2", "shop", "Sleep", 4000, "", 78, None, 0, None, None, None, None),
    ...                         (7, "px", "h:3", None, "Query", 0, "Filling schema table", 79, "SELECT", 0,
    ...                          None, None, None, None)))
    >>> rows, commands, idle, own = session_rows(SessionsReading(table, own_id=7))
    >>> [(r["id"], r["trx_state"], r["trx_age"], r["rows_locked"]) for r in rows], commands["Sleep"], idle, own
    ([(5, 'RUNNING', 9, 2)], 2, 1, 1)
    """
    if reading is None:
        return [], Counter(), 0, 0
    before: Dict[int, Counters] = {t[0]: t[1:] for t in previous.threads} if previous is not None else {}
    now: Dict[int, Counters] = {t[0]: t[1:] for t in reading.threads}
    rows: List[Row] = []
    commands: Counter = Counter()
    idle = own_hidden = 0
    own = reading.own_id
    for (sid, user, host, db, command, time_ms, state, tid, info, cut, trx_state, trx_age, locked,
         modified) in reading.sessions.rows:
        if sid == own:
            own_hidden += 1
            continue
        commands[command] += 1
        if command == IDLE and trx_state is None and not show_idle:
            idle += 1
            continue
        row = {"_id": sid, "id": sid, "user": user, "host": host, "db": db, "command": command,
               "time_ms": time_ms, "state": state or None, "tid": tid, "info": info, "_cut": bool(cut),
               "trx_state": trx_state, "trx_age": trx_age, "rows_locked": locked, "rows_modified": modified}
        if reading.local:
            row["cpu_pct"], row["read_s"], row["write_s"] = thread_rates(before.get(sid), now.get(sid), seconds,
                                                                          reading.clock_ticks)
        rows.append(row)
    return rows, commands, idle, own_hidden


def summary_text(commands: Mapping[str, int]) -> str:
    """Sessions by command, most first.

    >>> summary_text(Counter({"Sleep": 40, "Query": 3})), summary_text(Counter())
    ('43 sessions   Sleep 40  Query 3', 'no sessions')
    """
    total = sum(commands.values())
    if not total:
        return "no sessions"
    by_command = "  ".join(f"{name or '?'} {count}" for name, count in
                           sorted(commands.items(), key=lambda item: (-item[1], str(item[0]))))
    return f"{total} session{'s' if total != 1 else ''}   {by_command}"


def trx_style(row: Mapping) -> Optional[str]:
    return "danger" if row.get("trx_state") == "LOCK WAIT" else None


def age_style(row: Mapping) -> Optional[str]:
    age = row.get("trx_age")
    if not isinstance(age, (int, float)):
        return None
    return "danger" if age >= 60 else "warning" if age >= 10 else None


def command_style(row: Mapping) -> Optional[str]:
    """Idle in a transaction: the session that holds locks and blocks others, doing nothing."""
    return "warning" if row.get("command") == IDLE and row.get("trx_state") is not None else None


def time_style(row: Mapping) -> Optional[str]:
    ms = row.get("time_ms")
    if row.get("command") == IDLE or not isinstance(ms, (int, float)):
        return None
    return "danger" if ms >= 10_000 else "warning" if ms >= 1_000 else None


def session_detail(row: Row, server: str) -> Detail:
    """Enter on a session: every field and the whole statement (as much as the server shows)."""
    fields = [("server", server), ("user", row.get("user")), ("host", row.get("host")), ("schema", row.get("db")),
              ("command", row.get("command")), ("time", time_text(row.get("time_ms"))), ("state", row.get("state")),
              ("OS thread", row.get("tid")), ("transaction", row.get("trx_state") or "none"),
              ("trx age", units.duration(row.get("trx_age")) if row.get("trx_state") else None),
              ("rows locked", row.get("rows_locked")), ("rows modified", row.get("rows_modified"))]
    if "cpu_pct" in row:
        fields += [("CPU", units.percent(row.get("cpu_pct"))), ("read", units.size_rate(row.get("read_s"))),
                   ("write", units.size_rate(row.get("write_s")))]
    lines: List[List[Segment]] = [[(f"{label:<14}", "label"), (str(value), None)]
                                  for label, value in fields if value not in (None, "")]
    if row.get("command") == IDLE and row.get("trx_state"):
        lines.append([("Idle in a transaction: its locks are held until it commits, rolls back or is killed.",
                       "warning")])
    lines += [[], [("Statement", "header")]]
    info = row.get("info")
    if info in (None, ""):
        lines.append([("  (none: the session is not running a statement)", "dim")])
    else:
        lines += [[(line, None)] for line in wrapped(info)]
        if row.get("_cut"):
            lines.append([(f"  (cut: the server shows its first {INFO_CHARS} characters here)", "dim")])
    return Detail(f"Session {row.get('id')} of {server}", tuple(tuple(line) for line in lines))


def kill_question(row: Row, server: str, query_only: bool) -> Tuple[str, ...]:
    """The confirmation shown before a KILL QUERY or KILL CONNECTION."""
    sid = row.get("id")
    statement = one_line(row.get("info"))
    if len(statement) > 300:
        statement = statement[:299] + "\u2026"
    trx = (f"  transaction {row.get('trx_state')} for {units.duration(row.get('trx_age'))}, "
           f"{row.get('rows_modified') or 0} row(s) modified" if row.get("trx_state") else "  no open transaction")
    if query_only:
        what = (f"This sends KILL QUERY {sid} to {server}: the statement stops with error 1317, the",
                "session stays connected (and its transaction open).")
    else:
        what = (f"This sends KILL CONNECTION {sid} to {server}: the client's connection is closed, and",
                "its open transaction is rolled back.")
    return (f"{'Kill the statement of' if query_only else 'Kill'} session {sid} on {server}?", "",
            f"  user {row.get('user')}  host {row.get('host')}  schema {row.get('db')}",
            f"  {row.get('command')} for {time_text(row.get('time_ms'))}  state {row.get('state') or '-'}",
            trx, f"  statement: {statement or '(none)'}", "") + what


def explain_detail(plan: Table, row: Row, server: str) -> Detail:
    """The EXPLAIN's rows, one block per row of the plan, and the statement explained."""
    lines: List[List[Segment]] = []
    for number, values in enumerate(plan.rows, 1):
        lines.append([(f"Row {number}", "header")])
        lines += [[(f"  {name:<15}", "label"), (units.MISSING if value is None else str(value), None)]
                  for name, value in zip(plan.columns, values)]
        lines.append([])
    lines.append([("Statement", "header")])
    lines += [[(line, None)] for line in wrapped(row.get("info") or "")]
    return Detail(f"EXPLAIN of session {row.get('id')} on {server}", tuple(tuple(line) for line in lines))


class SessionsScreen(OneServer, Screen):
    key = "sessions"
    title = "Sessions"
    short_title = "Sess"
    shows = "sessions"
    default_sort = ("time_ms", True)
    tiebreak = ("id",)
    default_interval = 2.0
    all_columns = (
        Column("id", "Id", 8, priority=0, graphed=False, help="the connection id (what KILL takes)"),
        Column("user", "User", 12, "<", numeric=False, priority=1),
        Column("host", "Host", 18, "<", numeric=False, priority=5, help="the client's host:port"),
        Column("db", "DB", 10, "<", numeric=False, priority=4, help="the session's default schema"),
        Column("command", "Command", 7, "<", numeric=False, style=command_style, priority=1,
               help="Query, Sleep (idle; yellow: idle in an open transaction), Binlog Dump, Daemon..."),
        Column("time_ms", "Time", 7, unit="ms", fmt=time_text, style=time_style, priority=0,
               help="time in the current command (an idle session: how long idle); filter in ms, e.g. time>1000"),
        Column("state", "State", 14, "<", numeric=False, priority=4, help="what the statement is doing"),
        Column("trx_state", "Trx", 9, "<", numeric=False, style=trx_style, priority=2,
               help="the InnoDB transaction's state (RUNNING, LOCK WAIT...): INNODB_TRX, needs PROCESS"),
        Column("trx_age", "TrxAge", 6, unit="s", fmt=units.duration, style=age_style, priority=2,
               help="seconds since the transaction started (measured by the server)"),
        Column("rows_locked", "Locked", 6, fmt=units.number, priority=3, help="rows the transaction locks (approximate)"),
        Column("rows_modified", "Modified", 8, fmt=units.number, priority=3,
               help="rows the transaction inserted, updated or deleted"),
        Column("cpu_pct", "CPU%", 6, fmt=units.percent_figure, priority=2,
               help="the session's OS thread's CPU over the interval (100% = one core); on the server's host "
                    "only, idle sessions not read"),
        Column("read_s", "Read/s", 8, unit="B/s", fmt=units.size, priority=4,
               help="bytes the session's thread read from storage per second (/proc/<pid>/task/<tid>/io)"),
        Column("write_s", "Write/s", 8, unit="B/s", fmt=units.size, priority=5,
               help="bytes the session's thread wrote to storage per second (most writes are background threads')"),
        Column("info", "Query", 20, "<", fmt=one_line, numeric=False, priority=0, flexible=True,
               help="the statement running (its first 4096 characters)"),
    )
    columns = all_columns
    bindings = (
        Binding(("i",), "toggle_idle", "show / hide idle sessions (Sleep with no open transaction)", "i idle"),
        Binding(("k",), "kill_query", "KILL QUERY the selected session: its statement stops (asks first)", "k/K kill"),
        Binding(("K",), "kill_connection", "KILL CONNECTION the selected session: it ends, its transaction "
                "rolled back (asks first)"),
        Binding(("e",), "explain", "EXPLAIN the selected session's SELECT (a connection of its own, 2 s limit)",
                "e explain"),
    ) + server_bindings("the sessions")

    def __init__(self, config=None, fleet: Optional[Fleet] = None):
        super().__init__(config, fleet)
        self._summary: Tuple[Counter, int, int] = (Counter(), 0, 0)  # by command, idle hidden, own hidden
        self._reading: Optional[SessionsReading] = None

    def reading_name(self, server: Server) -> str:
        return server.sessions_name

    # --- readings and rows -----------------------------------------------------------------------
    def rows(self, view: DataView) -> List[Row]:
        previous, current = self.readings(view)
        reading = current.data if current is not None and isinstance(current.data, SessionsReading) else None
        before = previous.data if previous is not None and isinstance(previous.data, SessionsReading) else None
        self._reading = reading
        rows, commands, idle, own = session_rows(reading, before, seconds_between(previous, current),
                                                 bool(self.options.get("idle")))
        self._summary = (commands, idle, own)
        # A server elsewhere has no CPU or I/O per session: no columns for them, not zeros.
        local = reading is not None and reading.local
        self.columns = self.all_columns if local else tuple(c for c in self.all_columns if c.key not in THREAD_KEYS)
        return rows

    def notes(self, view: DataView):
        reading = self._reading
        lines = self.server_lines(view, reading)
        if reading is None or self.server() is None:
            return lines
        commands, idle, own = self._summary
        lines.append((("Sessions  ", "label"), (summary_text(commands), None)))
        hidden = []
        if idle:
            hidden.append(f"{idle} idle session{'s' if idle != 1 else ''} hidden (i shows them)")
        if own:
            hidden.append("proxytop's own session hidden")
        if hidden:
            lines.append((("; ".join(hidden), "dim"),))
        if reading.denied:
            lines.append(((reading.denied + " (GRANT PROCESS ON *.* to the user proxytop reads as)", "warning"),))
        if not reading.local:
            lines.append(((reading.host_note + ": " + NOT_LOCAL if reading.host_note else NOT_LOCAL, "dim"),))
        elif reading.threads and all(t[3] is None for t in reading.threads):
            lines.append((("I/O per session: /proc/<pid>/task/<tid>/io is not readable by this user", "dim"),))
        if reading.error:
            lines.append(((reading.error, "warning"),))
        return lines

    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        server = self.server()
        return session_detail(row, server.key if server is not None else "?")

    # --- keys --------------------------------------------------------------------------------------
    def action_toggle_idle(self, controller) -> None:
        self.options["idle"] = not self.options.get("idle")
        controller.say("showing idle sessions" if self.options["idle"] else "hiding idle sessions")

    def _selected(self, controller) -> Tuple[Optional[Row], Optional[Server]]:
        row = controller.selected_row()
        server = self.server()
        if row is None or not isinstance(row.get("id"), int) or server is None:
            controller.say("no session selected", "error")
            return None, None
        return row, server

    def _kill(self, controller, query_only: bool) -> None:
        row, server = self._selected(controller)
        if row is None:
            return
        session_id = int(row["id"])
        statement = "KILL QUERY" if query_only else "KILL CONNECTION"
        controller.ask(Confirm(
            question=kill_question(row, server.key, query_only),
            source=server.source,
            action=lambda session: kill(session, session_id, query_only),
            done_message=f"{statement} {session_id} sent to {server.key}",
        ))

    def action_kill_query(self, controller) -> None:
        self._kill(controller, True)

    def action_kill_connection(self, controller) -> None:
        self._kill(controller, False)

    def action_explain(self, controller) -> None:
        row, server = self._selected(controller)
        if row is None:
            return
        refusal = explain_refusal(row)
        if refusal:
            controller.say(refusal, "error")
            return
        statement, database = str(row["info"]).strip().rstrip(";"), row.get("db")
        result: Dict[str, Any] = {}

        def task(session) -> None:  # on the server's source thread
            result["plan"], result["error"] = explain(session, database, statement)

        def done(error: Optional[str]) -> None:
            problem = error or result.get("error")
            if problem:
                controller.say(f"EXPLAIN failed: {problem}", "error")
            else:
                controller.show_detail(explain_detail(result["plan"], row, server.key))

        controller.say("EXPLAIN sent\u2026")
        controller.engine.submit(server.source, task, done)


SCREEN = SessionsScreen
