"""Commands: one MySQL / MariaDB server's Com_* counters, ComCount's table with the server as
its subject.

The counters come from the Status screen's reading of SHOW GLOBAL STATUS (no statement of its
own): each Com_<name> counts the statements of that kind since the server started (or FLUSH
STATUS). They are put in the shape of ProxySQL's stats_mysql_commands_counters (Command,
Total_cnt) and go through ComCount's rows: Total, Count/s over the last interval and the share
of all commands per second. The status has no time per command, so there is no latency here:
that is performance_schema's (statement digests), which this screen does not read.
"""
from __future__ import annotations

from dataclasses import replace
from typing import List, Mapping, Optional, Tuple

from proxytop.collectors.innodb_fleet import Fleet, Server
from proxytop.core import Snapshot, Table
from proxytop.metrics import units
from proxytop.metrics.rates import to_number
from proxytop.screens.base import DataView, Detail, Screen, seconds_between
from proxytop.screens.comcount import ComCountScreen, command_rows
from proxytop.screens.one_server import OneServer, server_bindings
from proxytop.screens.table import Column, Row

PREFIX = "com_"
NO_LATENCY = ("Latency per statement is in performance_schema (events_statements_summary_by_digest), "
              "not read here")


def commands_table(status: Mapping[str, object]) -> Table:
    """The Com_* counters of a global status reading as (Command, Total_cnt) rows, the name
    without its prefix.

    >>> commands_table({"Com_select": "12", "Questions": "40", "Com_show_status": "3"}).rows
    (('select', '12'), ('show_status', '3'))
    """
    return Table(("Command", "Total_cnt"),
                 tuple((name[len(PREFIX):], value) for name, value in status.items()
                       if name[:len(PREFIX)].lower() == PREFIX))


def as_commands(snapshot: Optional[Snapshot]) -> Optional[Snapshot]:
    """The same reading with its Com_* counters as a commands table (None stays None)."""
    if snapshot is None or not isinstance(snapshot.data, Mapping):
        return None
    return replace(snapshot, data=commands_table(snapshot.data))


def _kept(keys: Tuple[str, ...]) -> Tuple[Column, ...]:
    return tuple(column for column in ComCountScreen.columns if column.key in keys)


class CommandsScreen(OneServer, Screen):
    key = "commands"
    title = "Commands"
    short_title = "Cmds"
    shows = "commands"
    default_sort = ComCountScreen.default_sort
    tiebreak = ComCountScreen.tiebreak
    columns = (_kept(("command",))
               + (Column("total", "Total", 8, fmt=units.number, priority=3,
                         help="statements of this kind since the server started (or FLUSH STATUS)"),)
               + _kept(("rate", "share")))
    bindings = ComCountScreen.bindings + server_bindings("the commands")
    action_toggle_unused = ComCountScreen.action_toggle_unused

    def __init__(self, config=None, fleet: Optional[Fleet] = None):
        super().__init__(config, fleet)
        self._summary: Tuple[Optional[float], int, Optional[float]] = (None, 0, None)  # all/s, unused, seconds

    def reading_name(self, server: Server) -> str:
        return server.global_status_name

    def rows(self, view: DataView) -> List[Row]:
        previous, current = (as_commands(snapshot) for snapshot in self.readings(view))
        every = command_rows(previous, current, show_unused=True)
        rates = [row["rate"] for row in every if row.get("rate") is not None]
        self._summary = (sum(rates) if rates else None, sum(1 for row in every if not to_number(row.get("total"))),
                         seconds_between(previous, current))
        return every if self.options.get("unused") else [row for row in every if row.get("total")]

    def notes(self, view: DataView):
        current = self.readings(view)[1]
        reading = current.data if current is not None and current.data else None
        lines = self.server_lines(view, reading)
        if reading is None:
            return lines
        total, unused, seconds = self._summary
        lines.append((("all commands ", "label"),
                      (f"{units.number(total)}/s" if total is not None else units.MISSING, "header"),
                      (f"   over the last {units.duration(seconds)}" if seconds else "   from the second reading",
                       "dim")))
        if unused and not self.options.get("unused"):
            lines.append(((f"{unused} commands never executed are hidden (i shows them)", "dim"),))
        lines.append(((NO_LATENCY, "dim"),))
        return lines

    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        server = self.server()
        return command_detail(row, self._summary[2], server.key if server is not None else "?")


def command_detail(row: Row, seconds: Optional[float], server: str) -> Detail:
    """Enter on a command: its figures; no histogram (the status has no time per command).

    >>> detail = command_detail({"command": "select", "total": 1200, "rate": 40.0, "share": 80.0}, 2.0, "db1:3306")
    >>> detail.title, detail.lines[1]
    ('Com_select of db1:3306', (('per second   ', 'label'), ('40 over the last 2s', None)))
    """
    interval = f"the last {units.duration(seconds)}" if seconds else "the interval"
    lines = (
        (("executions   ", "label"), (f"{units.number(row.get('total'))} since the server started (or FLUSH STATUS)",
                                      None)),
        (("per second   ", "label"), (f"{units.number(row.get('rate'))} over {interval}", None)),
        (("share        ", "label"), (f"{units.percent(row.get('share'))} of all commands per second", None)),
        (),
        ((NO_LATENCY + ".", "dim"),),
    )
    return Detail(f"Com_{row.get('command')} of {server}", lines)


SCREEN = CommandsScreen
