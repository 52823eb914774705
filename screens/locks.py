"""Locks: the InnoDB lock waits of one MySQL / MariaDB server as chains, and its latest deadlock.

Each chain starts with the transaction that blocks and waits for none (often a session idle in
its transaction); under it each waiter, with its wait, the lock it waits for (mode, table,
index), and under a waiter the transactions that wait for it in turn. Chains stay together
whatever the sort: they are ordered by the sort column's largest value in each (by default
their longest wait). Enter shows a row's and its blocker's whole statements; ``b`` opens the
Sessions screen on the chain's head, where k / K kill it after a yes; ``d`` shows the latest
deadlock parsed. Metadata-lock waits are lines above the table. The server is chosen as on the
Sessions screen (n / N).

Cost: while shown, one statement every 2 s (InnoDB copies its transaction and lock lists for
it) and, only when sessions wait, a second for their processlist rows; the metadata locks every
2 s (one statement, two with the plugin); the deadlock counter
every 10 s and SHOW ENGINE INNODB STATUS only when it moved. On every screen, for the header's
alarm, one narrow statement per watched server every 5 s (``--lock-wait-alarm 0``: none).
"""
from __future__ import annotations

import argparse
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from proxytop.config.option_types import seconds
from proxytop.collectors.innodb_fleet import Fleet, Server
from proxytop.collectors.mysql_locks import (PERFORMANCE_SCHEMA, AlarmReading, DeadlockReading, LockAlarm,
                                             LocksReading, MetadataLocksReading)
from proxytop.metrics import units
from proxytop.metrics.deadlock import Deadlock, parse
from proxytop.metrics.lock_chains import alarm_text, chains, tree_label
from proxytop.screens.base import DataView, Detail, Screen
from proxytop.screens.keys import Binding
from proxytop.screens.proclist import one_line, wrapped
from proxytop.screens.one_server import OneServer, server_bindings
from proxytop.screens.table import Column, Row, TableState, filter_rows, sort_value

DEFAULT_ALARM = 10.0
Segment = Tuple[str, Optional[str]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Locks screen")
    group.add_argument("--lock-wait-alarm", type=alarm_seconds, metavar="SECONDS",
                       help=f"the header warns of a lock wait longer than this on a watched MySQL server, on "
                            f"every screen (default {DEFAULT_ALARM:g}; 0: no alarm, and no reading for it)")


alarm_seconds = seconds(0, 86400, "the lock-wait alarm")  # --lock-wait-alarm (0: off)


def lock_rows(reading: Optional[LocksReading]) -> List[Row]:
    """One row per transaction in a lock wait, in chains (``_chain``, ``_order``, ``_depth``).

    >>> from proxytop.collectors.mysql_locks import EDGE_COLUMNS, EMPTY_SESSIONS
    >>> from proxytop.core import Table
    >>> blocker = ("23", 15, "RUNNING", None, 300, 2, 1, None)
    >>> edge = ("24", 16, "LOCK WAIT", 42, 43, 1, 0, "UPDATE t SET v=2 WHERE id=1", "X", "RECORD", "`test`.`t`",
    ...         "PRIMARY", "1") + blocker
    >>> rows = lock_rows(LocksReading(Table(EDGE_COLUMNS, (edge,)), EMPTY_SESSIONS))
    >>> [(r["session"], r["state"], r["wait_s"], r["lock_table"]) for r in rows]
    [('15', 'idle in trx', None, None), ('\u2514 16', 'LOCK WAIT', 42, '`test`.`t`')]
    """
    if reading is None:
        return []
    sessions = {row["id"]: row for row in reading.sessions.dicts()}
    transactions: Dict[str, Dict[str, Any]] = {}
    locks: Dict[str, Dict[str, Any]] = {}
    pairs = []
    for edge in reading.waits.dicts():
        waiter, blocker = str(edge["w_trx"]), str(edge["b_trx"])
        pairs.append((waiter, blocker))
        transactions[waiter] = {k[2:]: v for k, v in edge.items() if k.startswith("w_")}
        transactions.setdefault(blocker, {k[2:]: v for k, v in edge.items() if k.startswith("b_")})
        locks.setdefault(waiter, {k: edge[k] for k in ("lock_mode", "lock_type", "lock_table", "lock_index",
                                                        "lock_data")})
    rows: List[Row] = []
    waits = {trx: info.get("wait_s") for trx, info in transactions.items()}
    for chain in chains(pairs, waits):
        for node in chain:
            info = transactions[node.trx]
            thread = info.get("thread")
            process = sessions.get(thread, {})
            statement = process.get("info") or info.get("query")
            lock = locks.get(node.trx, {})
            waiting = info.get("state") == "LOCK WAIT"
            if waiting:
                state = "LOCK WAIT"
            elif statement:
                state = "running"
            else:
                state = "idle in trx"
            rows.append({
                "_id": node.trx, "_chain": node.chain, "_order": node.order, "_depth": node.depth,
                "_thread": thread, "_head": chain[0].trx, "_head_thread": transactions[chain[0].trx].get("thread"),
                "_blocked_by": node.blocked_by, "_also": node.also_blocked_by, "_cycle": node.in_cycle,
                "session": tree_label(node.depth, str(thread)), "trx": node.trx,
                "wait_s": info.get("wait_s") if waiting else None, "trx_age": info.get("age"), "state": state,
                "rows_locked": info.get("rows_locked"), "rows_modified": info.get("rows_modified"),
                "lock_mode": lock.get("lock_mode"), "lock_type": lock.get("lock_type"),
                "lock_table": lock.get("lock_table"), "lock_index": lock.get("lock_index"),
                "lock_data": lock.get("lock_data"), "user": process.get("user"), "host": process.get("host"),
                "db": process.get("db"), "command": process.get("command"), "idle_s": process.get("time"),
                "info": statement})
    return rows


def arrange_chains(rows: Sequence[Row], columns: Sequence[Column], state: TableState) -> List[Row]:
    """Filter, then order the chains by the sort column's largest value in each (smallest when
    ascending), each chain kept whole and in its tree order: a chain shows when any of its rows
    matches the filter.

    >>> rows = [{"_chain": 0, "_order": 0, "wait_s": None}, {"_chain": 0, "_order": 1, "wait_s": 5},
    ...         {"_chain": 1, "_order": 0, "wait_s": None}, {"_chain": 1, "_order": 1, "wait_s": 9}]
    >>> [(r["_chain"], r["_order"]) for r in arrange_chains(rows, [], TableState("wait_s", True))]
    [(1, 0), (1, 1), (0, 0), (0, 1)]
    """
    shown = {row["_chain"] for row in filter_rows(rows, columns, state.filter)}
    members: Dict[int, List[Row]] = {}
    for row in rows:
        if row["_chain"] in shown:
            members.setdefault(row["_chain"], []).append(row)
    key = state.sort_key

    def chain_key(chain: int):
        values = [sort_value(r.get(key)) for r in members[chain] if r.get(key) is not None]
        if not values:
            return (1, chain)  # nothing to sort by: last, in their own order
        best = max(values) if state.descending else min(values)
        return (0, best, -chain) if state.descending else (0, best, chain)

    present = [c for c in members if chain_key(c)[0] == 0]
    missing = [c for c in members if chain_key(c)[0] == 1]
    present.sort(key=chain_key, reverse=state.descending)
    arranged: List[Row] = []
    for chain in present + sorted(missing):
        arranged += sorted(members[chain], key=lambda r: r["_order"])
    return arranged


def wait_style(row: Mapping) -> Optional[str]:
    wait = row.get("wait_s")
    if not isinstance(wait, (int, float)):
        return None
    return "danger" if wait >= 10 else "warning"


def state_style(row: Mapping) -> Optional[str]:
    return {"idle in trx": "warning", "LOCK WAIT": "danger"}.get(str(row.get("state")))


def transaction_lines(title: str, row: Mapping) -> List[List[Segment]]:
    """One transaction of a chain: who, how long, what it holds and waits for, its statement."""
    fields = [("session", row.get("_thread")), ("transaction", row.get("trx")), ("state", row.get("state")),
              ("user", row.get("user")), ("host", row.get("host")), ("schema", row.get("db")),
              ("trx age", units.duration(row.get("trx_age")) if row.get("trx_age") is not None else None),
              ("waiting", units.duration(row.get("wait_s")) if row.get("wait_s") is not None else None),
              ("rows locked", row.get("rows_locked")), ("rows modified", row.get("rows_modified"))]
    if row.get("lock_mode"):
        fields.append(("waits for", f"{row.get('lock_type')} {row.get('lock_mode')} on {row.get('lock_table')}"
                                    + (f" index {row.get('lock_index')}" if row.get("lock_index") else "")
                                    + (f" ({row.get('lock_data')})" if row.get("lock_data") else "")))
    if row.get("_also"):
        fields.append(("also blocked by", "transactions " + ", ".join(row["_also"])))
    lines: List[List[Segment]] = [[(title, "header")]]
    lines += [[(f"  {label:<16}", "label"), (str(value), None)] for label, value in fields if value not in (None, "")]
    info = row.get("info")
    if info:
        lines += [[(line, None)] for line in wrapped(info)]
    else:
        lines.append([("  (no statement running: idle in its transaction; its last statement is not kept "
                       "by the server)", "dim")])
    return lines


def chain_detail(row: Row, rows: Sequence[Row], server: str) -> Detail:
    """Enter on a chain's row: its transaction, what blocks it, and the chain's head."""
    by_trx = {r["_id"]: r for r in rows}
    lines = transaction_lines("This transaction", row)
    blocker = by_trx.get(row.get("_blocked_by"))
    if blocker is not None:
        lines += [[]] + transaction_lines("Blocked by", blocker)
    head = by_trx.get(row.get("_head"))
    if head is not None and head is not row and head is not blocker:
        lines += [[]] + transaction_lines("Head of the chain", head)
    if row.get("_cycle"):
        lines += [[], [("These transactions wait for each other (a deadlock InnoDB does not break: "
                        "innodb_deadlock_detect is off): one must be killed.", "danger")]]
    what = "Lock wait of session" if row.get("_blocked_by") is not None or row.get("wait_s") is not None \
        else "Locks held by session"  # the head of a chain waits for nothing
    return Detail(f"{what} {row.get('_thread')} on {server}", tuple(tuple(line) for line in lines))


def deadlock_detail(deadlock: Deadlock, reading: DeadlockReading, server: str) -> Detail:
    """d: the latest deadlock, each transaction with its statement and locks."""
    lines: List[List[Segment]] = [[("When  ", "label"), (deadlock.when or "?", None),
                                   ("  (the server's clock)", "dim")]]
    if reading.count is not None:
        lines.append([("Deadlocks  ", "label"), (f"{reading.count} since the server started, "
                                                 f"{reading.noticed} while proxytop watched", None)])
    for trx in deadlock.transactions:
        lines += [[], [(f"Transaction ({trx.number})", "header")]
                  + ([("  ROLLED BACK", "danger")] if trx.rolled_back else [])]
        fields = [("session", trx.thread), ("transaction", trx.trx),
                  ("active", units.duration(trx.active_s) if trx.active_s is not None else None),
                  ("user@host", f"{trx.user}@{trx.host}" if trx.user else None),
                  ("waited for", trx.waits_for.text if trx.waits_for else None)]
        lines += [[(f"  {label:<12}", "label"), (str(value), None)] for label, value in fields if value is not None]
        lines += [[("  held        ", "label"), (lock.text, None)] for lock in trx.holds]
        lines += [[(line, None)] for line in wrapped(trx.statement or "(statement not shown)")]
    return Detail(f"Latest deadlock on {server}", tuple(tuple(line) for line in lines))


def deadlock_note(reading: Optional[DeadlockReading]) -> List[Segment]:
    """The notes' deadlock line.

    >>> deadlock_note(DeadlockReading(None, 0, None))
    [('Deadlocks  ', 'label'), ('none since the server started', 'dim')]
    """
    if reading is None:
        return [("Deadlocks  ", "label"), ("not read yet", "dim")]
    if reading.denied:
        return [("Deadlocks  ", "label"), (f"the latest deadlock {reading.denied}", "warning")]
    counted = f"{reading.count} since the server started, " if reading.count is not None else ""
    noticed = [(f"{reading.noticed} new while watched", "danger" if reading.noticed else None)]
    if reading.section is None:
        return [("Deadlocks  ", "label"), ("none since the server started", "dim")] if not reading.count \
            else [("Deadlocks  ", "label"), (counted, None)] + noticed
    deadlock = parse(reading.section)
    victim = next((t for t in deadlock.transactions if t.rolled_back), None)
    latest = f";  latest {deadlock.when or '?'}" + (f", session {victim.thread} rolled back" if victim else "")
    return [("Deadlocks  ", "label"), (counted, None)] + noticed + [(latest + "  (d: details)", None)]


MDL_SHOWN = 5  # waits listed in the notes, at most


def mdl_lines(reading: Optional[MetadataLocksReading]) -> List[List[Segment]]:
    """The notes' metadata-lock lines: each waiting session with what it waits for and who
    holds it (performance_schema), or the waiting sessions and the granted locks (the plugin,
    which lists granted locks only), or how to see them.

    >>> from proxytop.collectors.mysql_locks import MDL_COLUMNS
    >>> from proxytop.core import Table
    >>> locks = Table(MDL_COLUMNS, ((9, "TABLE", "d", "t", "SHARED_READ", "TRANSACTION", "GRANTED"),
    ...                              (12, "TABLE", "d", "t", "EXCLUSIVE", "TRANSACTION", "PENDING")))
    >>> [text for line in mdl_lines(MetadataLocksReading(PERFORMANCE_SCHEMA, locks)) for text, _ in line]
    ['Metadata locks  ', 'session 12 waits for EXCLUSIVE on `d`.`t`, held by session 9 (SHARED_READ)']
    """
    label: Segment = ("Metadata locks  ", "label")
    if reading is None:
        return [[label, ("not read yet", "dim")]]
    if reading.source is None or reading.note:
        return [[label, (reading.note or reading.error or "?", "dim" if reading.source is None else "warning")]]
    rows = reading.locks.dicts()
    if reading.source == PERFORMANCE_SCHEMA:
        texts = []
        for wait in (r for r in rows if r["lock_status"] == "PENDING"):
            where = f"`{wait['schema_name']}`.`{wait['object_name']}`"
            holders = [f"session {r['session']} ({r['lock_type']})" for r in rows
                       if r["lock_status"] == "GRANTED" and r["session"] != wait["session"]
                       and (r["schema_name"], r["object_name"]) == (wait["schema_name"], wait["object_name"])]
            texts.append(f"session {wait['session']} waits for {wait['lock_type']} on {where}"
                         + (f", held by {', '.join(holders[:3])}" if holders else ""))
    else:
        texts = [f"session {w['session']} waits ({w['state']}: {one_line(w['info'])[:60]}); which lock and who holds "
                 "it, METADATA_LOCK_INFO does not say (it lists granted locks only)" for w in reading.waiting.dicts()]
        if texts:
            granted = [f"session {r['session']} {r['lock_type']} on {r['schema_name']}.{r['object_name']}"
                       for r in rows if r["object_name"]]
            texts.append("granted: " + ("; ".join(granted[:6]) or "none on a table"))
    if not texts:
        return [[label, (f"no session waits ({reading.source})", "dim")]]
    lines = [[label if i == 0 else ("  " * 8, None), (text, "danger")] for i, text in enumerate(texts[:MDL_SHOWN])]
    if len(texts) > MDL_SHOWN:
        lines.append([("  " * 8, None), (f"+{len(texts) - MDL_SHOWN} more", "dim")])
    return lines


STALE_ALARM_READINGS = 3  # a lock wait read longer ago than three readings is not said as current


class LocksScreen(OneServer, Screen):
    key = "locks"
    title = "Locks"
    shows = "locks"
    default_sort = ("wait_s", True)
    default_interval = 2.0
    columns = (
        Column("session", "Session", 10, "<", numeric=False, priority=0,
               help="the session (connection id); a waiter is indented under the transaction it waits for"),
        Column("wait_s", "Wait", 6, unit="s", fmt=units.age, style=wait_style, priority=0,
               help="how long it has waited for its lock (seconds, measured by the server)"),
        Column("trx_age", "TrxAge", 6, unit="s", fmt=units.duration, priority=1, help="seconds since its transaction started"),
        Column("state", "State", 11, "<", numeric=False, style=state_style, priority=1,
               help="LOCK WAIT, running (a statement), idle in trx (holds its locks doing nothing)"),
        Column("rows_locked", "Locked", 6, fmt=units.number, priority=2, help="rows its transaction locks"),
        Column("lock_mode", "Mode", 6, "<", numeric=False, priority=2, help="the mode of the lock waited for"),
        Column("lock_table", "Table", 16, "<", numeric=False, priority=1, help="the table of the lock waited for"),
        Column("lock_index", "Index", 10, "<", numeric=False, priority=3, help="the index of the lock waited for"),
        Column("user", "User", 10, "<", numeric=False, priority=4),
        Column("info", "Statement", 20, "<", fmt=one_line, numeric=False, priority=0, flexible=True,
               help="the statement running (none: idle in its transaction)"),
    )
    bindings = (
        Binding(("b",), "blocker", "the Sessions screen on the head of the selected chain (kill it there with k/K)",
                "b blocker"),
        Binding(("d",), "deadlock", "the latest deadlock: its transactions, statements, locks, which was rolled back",
                "d deadlock"),
    ) + server_bindings("the locks")

    def __init__(self, config=None, fleet: Optional[Fleet] = None):
        super().__init__(config, fleet)
        self._reading: Optional[LocksReading] = None
        self._rows: List[Row] = []
        chosen = getattr(getattr(config, "args", None), "lock_wait_alarm", None)
        self.threshold = DEFAULT_ALARM if chosen is None else chosen

    def reading_name(self, server: Server) -> str:
        return server.locks_name

    # --- readings and rows -----------------------------------------------------------------------
    def active_collectors(self) -> List[str]:
        server = self.server()
        return [server.locks_name, server.mdl_name, server.deadlock_name] if server is not None else []

    def alarm_readings(self, view: DataView) -> Tuple[Tuple[str, float], ...]:
        """The header's lock-wait alarm: every watched server's narrow reading, on every screen."""
        if not self.threshold:
            return ()
        return tuple((server.lockalarm_name, LockAlarm.default_interval) for server in self.fleet.listed())

    def alarm(self, view: DataView) -> Optional[str]:
        texts = []
        for server in self.fleet.listed():
            latest = view.latest(server.lockalarm_name)
            state = view.state(server.source)
            if latest is None or (state is not None and not state.connected) \
                    or view.now() - latest.taken_at > STALE_ALARM_READINGS * LockAlarm.default_interval:
                continue  # a server down, or not answering: its last lock wait is no news (the header says why)
            reading = latest.data if isinstance(latest.data, AlarmReading) else None
            text = alarm_text(server.key, reading.longest if reading else None, self.threshold)
            if text:
                texts.append((reading.longest.wait_s, text))
        if not texts:
            return None
        texts.sort(key=lambda pair: -(pair[0] or 0))
        return texts[0][1] + (f"  (+{len(texts) - 1} more)" if len(texts) > 1 else "")

    def rows(self, view: DataView) -> List[Row]:
        self.fleet.sync_discovered()
        server = self.server()
        snapshot = view.latest(server.locks_name) if server is not None else None
        self._reading = snapshot.data if snapshot is not None and isinstance(snapshot.data, LocksReading) else None
        self._rows = lock_rows(self._reading)
        return self._rows

    def arrange(self, rows: Sequence[Row], state: TableState) -> List[Row]:
        return arrange_chains(rows, self.columns, state)

    def _deadlocks(self, view: DataView) -> Optional[DeadlockReading]:
        server = self.server()
        snapshot = view.latest(server.deadlock_name) if server is not None else None
        return snapshot.data if snapshot is not None and isinstance(snapshot.data, DeadlockReading) else None

    def notes(self, view: DataView):
        server = self.server()
        reading = self._reading
        lines = self.server_lines(view, reading)
        if server is None:
            return lines
        if reading is None:
            pass
        elif reading.denied:
            lines.append(((f"Lock waits: {reading.denied}", "warning"),))
        else:
            waiting = sum(1 for row in self._rows if row["state"] == "LOCK WAIT")
            heads = len({row["_chain"] for row in self._rows})
            longest = max((row["wait_s"] or 0 for row in self._rows), default=0)
            summary = (f"{waiting} session{'s' if waiting != 1 else ''} waiting in {heads} chain"
                       f"{'s' if heads != 1 else ''}, the longest for {units.age(longest)}   "
                       "Enter: statements  b: the head in Sessions") if waiting else "no session waits for a lock"
            lines.append((("Lock waits  ", "label"), (summary, "danger" if waiting else None)))
            if reading.error:
                lines.append(((reading.error, "warning"),))
        mdl = view.latest(server.mdl_name)
        lines += [tuple(line) for line in
                  mdl_lines(mdl.data if mdl is not None and isinstance(mdl.data, MetadataLocksReading) else None)]
        lines.append(tuple(deadlock_note(self._deadlocks(view))))
        lines.append(self._asks(view, server))
        return lines

    def _asks(self, view: DataView, server: Server) -> Tuple[Segment, ...]:
        """What this screen asks the server, and how often (each lock reading makes InnoDB copy
        its transaction and lock lists)."""
        every = {name: units.interval(view.interval_in_force(name))
                 for name in (server.locks_name, server.mdl_name, server.deadlock_name, server.lockalarm_name)}
        text = (f"reads: lock waits every {every[server.locks_name]}, metadata locks every {every[server.mdl_name]}, "
                f"deadlock count every {every[server.deadlock_name]} (the InnoDB status text when it moves)")
        if self.threshold:
            text += f", alarm every {every[server.lockalarm_name]}"
        return ((text, "dim"),)

    def status(self, view: DataView) -> Optional[str]:
        server = self.server()
        if server is None:
            return None
        return view.error(server.locks_name) or view.error(server.mdl_name) or view.error(server.deadlock_name)

    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        server = self.server()
        return chain_detail(row, self._rows, server.key if server is not None else "?")

    # --- keys --------------------------------------------------------------------------------------
    def action_blocker(self, controller) -> None:
        row = controller.selected_row()
        server = self.server()
        if row is None or server is None or row.get("_head_thread") is None:
            controller.say("no lock wait selected", "error")
            return
        head = row["_head_thread"]
        # The Sessions screen shows the server the Servers screen's cursor is on, and its
        # cursor lands on the head's session once it is listed.
        controller.ui.cursor_id["servers"] = server.key
        controller.ui.cursor_id["sessions"] = controller.ui.sought["sessions"] = head
        controller.show_screen("sessions")
        controller.say(f"session {head}: the head of the chain (k/K kill it, after a yes)")

    def action_deadlock(self, controller) -> None:
        reading = self._deadlocks(controller.view)
        server = self.server()
        if reading is None or server is None:
            controller.say("the deadlock reading has not come yet", "error")
        elif reading.section is None:
            controller.say(reading.denied and f"the latest deadlock {reading.denied}"
                           or "no deadlock since the server started")
        else:
            controller.show_detail(deadlock_detail(parse(reading.section), reading, server.key))


SCREEN = LocksScreen
