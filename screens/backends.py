"""The Queries screen's link to the MySQL servers (key S): a ProxySQL digest beside the same
statement on each backend its hostgroups route to, as that server's performance_schema digest
sees it.

ProxySQL's digest is per hostgroup, not per backend: each hostgroup's line has ProxySQL's
figures for the interval (count, time, average, rows sent per call), and under it each of the
hostgroup's servers (the fleet knows them from runtime_mysql_servers) with its own: the
statement's rows on that server, found by their normalised text
(proxytop.metrics.statements.statement_key), added up over the schemas it ran in. Only what the
readings already hold is shown: while this view is open the servers' statement digests are
read (every 10 s at the most), and a server not read yet, down, or with performance_schema off
says so on its line.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from proxytop.collectors.innodb import DISCOVERY
from proxytop.collectors.innodb_fleet import Fleet, Server
from proxytop.metrics import digests, statements, units
from proxytop.metrics.rates import to_number
from proxytop.screens.base import DataView, Detail
from proxytop.screens.statements import reading_of, statement_rows, taken_at

Segment = Tuple[str, Optional[str]]
Figures = Dict[str, Any]
NAME_WIDTH = 24
# (key, title, width, format) of the figures both sides have, and those only the server has
SHARED = (("count_s", "Count/s", 9, units.number), ("time_s", "Time/s", 9, units.milliseconds),
          ("avg_ms", "Avg", 8, units.milliseconds), ("sent_per_call", "Sent/call", 10, units.number))
SERVER_ONLY = (("examined_per_call", "Exam/call", 10, units.number), ("no_index_s", "NoIdx/s", 8, units.number),
               ("errors_s", "Err/s", 7, units.number), ("p95_ms", "P95", 8, units.milliseconds),
               ("max_ms", "Max", 8, units.milliseconds))


def hostgroup_figures(previous: Optional[digests.Reading], current: digests.Reading, seconds: Optional[float],
                      digest: str, group: Any = None, fields: Sequence[str] = ()) -> Dict[str, Figures]:
    """ProxySQL's figures of one digest (of the row's group) per hostgroup that served it over
    the last interval, the query cache (-1) aside: count_s, time_s, avg_ms, sent_per_call
    (None without two readings or across a reset).

    >>> cols = ("hostgroup", "digest", "count_star", "sum_time", "first_seen", "sum_rows_sent")
    >>> a = digests.parse(cols, [("10", "0x1", "4", "2000", "100", "4"), ("-1", "0x1", "9", "9", "100", "9")], 165.0)
    >>> b = digests.parse(cols, [("10", "0x1", "8", "6000", "100", "8"), ("-1", "0x1", "19", "19", "100", "19")], 170.0)
    >>> hostgroup_figures(a, b, 2.0, "0x1")
    {'10': {'count_s': 2.0, 'time_s': 2.0, 'avg_ms': 1.0, 'sent_per_call': 1.0}}
    """
    sums: Dict[str, List[float]] = {}
    rated: Dict[str, bool] = {}
    for key, now in current.entries.items():
        if key[4] != digest or key[0] == "-1" or (fields and digests.group_of(key, fields) != group):
            continue
        sums.setdefault(key[0], [0.0, 0.0, 0.0])
        delta = digests.row_delta(previous.entries.get(key), now, previous.wall_time) \
            if previous is not None and seconds else None
        if delta is not None:
            rated[key[0]] = True
            for at, value in enumerate((delta[0], delta[1], delta[3])):
                sums[key[0]][at] += value or 0
    made: Dict[str, Figures] = {}
    for hostgroup, (count, time_us, sent) in sums.items():
        if not rated.get(hostgroup):
            made[hostgroup] = {"count_s": None, "time_s": None, "avg_ms": None, "sent_per_call": None}
            continue
        made[hostgroup] = {"count_s": count / seconds, "time_s": time_us / 1000.0 / seconds,
                           "avg_ms": time_us / count / 1000.0 if count else None,
                           "sent_per_call": sent / count if count else None}
    return made


def routed_servers(fleet: Optional[Fleet], hostgroups: Sequence[str]) -> Dict[str, List[Server]]:
    """The fleet's servers in each hostgroup, as ProxySQL's runtime_mysql_servers lists them."""
    listed = fleet.listed() if fleet is not None else []
    found: Dict[str, List[Server]] = {}
    for hostgroup in hostgroups:
        number = to_number(hostgroup)
        found[hostgroup] = [server for server in listed
                            if server.discovered is not None and number in server.discovered.hostgroups]
    return found


def figure_cells(figures: Optional[Figures], names) -> str:
    return "".join(f"{fmt(figures.get(key) if figures else None):>{width}}" for key, _title, width, fmt in names)


def header_line() -> Tuple[Segment, ...]:
    titles = "".join(f"{title:>{width}}" for _key, title, width, _fmt in SHARED + SERVER_ONLY)
    return ((f"{'':<{NAME_WIDTH}}{titles}", "label"),)


class BackendsLink:
    """What the link shows, worked out once per reading of each server (the detail view is
    drawn ten times a second); each server's rows keyed once per reading."""

    def __init__(self):
        self._keyed: Dict[str, Tuple[Any, List[Tuple[str, Optional[str], Figures]]]] = {}
        self._keys: Dict[str, statements.KeptKeys] = {}  # each server's

    def collectors(self, fleet: Optional[Fleet], hostgroups: Sequence[str]) -> List[str]:
        """What the view needs read: ProxySQL's backends and their statement digests."""
        names = [DISCOVERY] if fleet is not None and fleet.discover else []
        for servers in routed_servers(fleet, hostgroups).values():
            names += [server.statements_name for server in servers if server.statements_name not in names]
        return names

    def server_figures(self, view: DataView, server: Server, key: str) -> Tuple[Optional[Figures], str]:
        """(the statement's figures on ``server``, None and why not)."""
        state = view.state(server.source)
        if state is not None and not state.connected and state.error:
            return None, f"down: {state.error}"
        previous, current = view.pair(server.statements_name)
        reading = reading_of(current)
        if reading is None:
            return None, view.error(server.statements_name) or "reading its statement digest\u2026 (every 10 s)"
        if not reading.enabled:
            return None, "performance_schema is off: set performance_schema=ON and restart the server"
        if reading.denied:
            return None, "SELECT on performance_schema refused"
        if reading.error:
            return None, reading.error
        token = (taken_at(previous), taken_at(current))
        kept = self._keyed.get(server.key)
        if kept is None or kept[0] != token:
            rows = statement_rows(previous, current)
            keys = self._keys.setdefault(server.key, statements.KeptKeys())
            # a text performance_schema cut matches the statements it starts
            kept = (token, [(row_key, statements.truncated_key(row["full_text"]), row) for row_key, row in
                            zip(keys.of((row["digest"], row["full_text"]) for row in rows), rows)])
            self._keyed[server.key] = kept
        matched = [row for row_key, prefix, row in kept[1] if row_key == key or (prefix and key.startswith(prefix))]
        if not matched:
            return None, f"not among its {reading.limit} heaviest digests"
        return statements.combine(matched), ""

    def detail(self, row: Dict[str, Any], text: Optional[str], figures: Dict[str, Figures], fleet: Optional[Fleet],
               view: DataView) -> Detail:
        """The digest's hostgroups, ProxySQL's figures of each beside its servers'."""
        digest = row.get("digest")
        key = statements.statement_key(text)
        lines: List[Tuple[Segment, ...]] = [(("ProxySQL digest  ", "label"), (digests.one_line(text) or "(no digest text)",
                                                                            None)), ()]
        if not figures:
            lines.append((("No backend served it (the query cache answered, or no row for it yet).", "dim"),))
        lines.append(header_line())
        servers = routed_servers(fleet, sorted(figures, key=lambda h: to_number(h) or 0))
        for hostgroup, members in servers.items():
            lines.append(((f"{'HG ' + hostgroup + ' ProxySQL':<{NAME_WIDTH}}", "header"),
                          (figure_cells(figures[hostgroup], SHARED), None)))
            if not members:
                lines.append(((f"  no server of hostgroup {hostgroup} known: the fleet learns them from "
                               "runtime_mysql_servers (an admin user, and not --no-discover)", "dim"),))
            for server in members:
                found, why = self.server_figures(view, server, key)
                name = f"  {server.key}"[:NAME_WIDTH]
                if found is None:
                    lines.append(((f"{name:<{NAME_WIDTH}}", None), (why, "dim")))
                else:
                    schemas = ",".join(s for s in found["schemas"] if s)
                    lines.append(((f"{name:<{NAME_WIDTH}}", None), (figure_cells(found, SHARED + SERVER_ONLY), None),
                                  (f"  {schemas}" if schemas else "", "dim")))
        lines += [(), (("ProxySQL's figures are per hostgroup (it keeps no digest per backend), over its last "
                        "interval; each server's over its last two", "dim"),),
                  (("readings of performance_schema, 10 s apart: the intervals differ. Statements are matched by "
                    "their normalised text.", "dim"),)]
        return Detail(f"Digest {digest} on its backends", tuple(lines))
