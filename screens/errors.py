"""Errors: what the backends answered with errors, and which users are near their connection cap.

One row per stats_mysql_errors row (hostgroup, server, user, schema, client, errno) with
errors/s from count_star, the errno's name (on the PostgreSQL side, stats_pgsql_errors: the
SQLSTATE and its class, proxytop.metrics.sqlstates), the last error text and how long ago it was last
seen; busiest first. The notes give the refused logins per second (Access_Denied_* in
stats_mysql_global) and the Users table: stats_mysql_users frontend connections against each
user's max_connections, highlighted from 90%. Enter on a row: the whole last error, first and
last seen, and the same errno on the other servers.
"""
from __future__ import annotations

import operator
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from proxytop.collectors.errors import MYSQL_ERRORS, MYSQL_USERS, PGSQL_ERRORS, BackendErrors, FrontendUsers
from proxytop.metrics import errnames, health, sqlstates, units
from proxytop.metrics.rates import rate, to_number
from proxytop.metrics.sides import PGSQL
from proxytop.screens.base import DataView, Detail, Screen, seconds_between
from proxytop.screens.sided import SidedScreen, header_readings
from proxytop.screens.table import Column, Row

USERS_SHOWN = 6  # users in the notes (the fullest first)
USED_WARNING = 90.0  # Used% from which a user is highlighted
REFUSED = ("Access_Denied_Wrong_Password", "Access_Denied_Max_Connections",
           "Access_Denied_Max_User_Connections")

Segment = Tuple[str, Optional[str]]


def key_columns(e) -> Tuple[str, ...]:
    return (e.hostgroup, e.host, e.port, e.user, e.client, e.schema, e.errno)


KEY_COLUMNS = key_columns(MYSQL_ERRORS)


def error_code(value: Any, e=MYSQL_ERRORS) -> Tuple[Any, Optional[str]]:
    """An error's code as shown and its name: an errno is a number named by proxytop.metrics.errnames,
    a SQLSTATE stays text (``08006``, ``57P01``) and is named by its class.

    >>> error_code("1045"), error_code("08006", PGSQL_ERRORS), error_code("57P01", PGSQL_ERRORS)
    ((1045, 'ER_ACCESS_DENIED_ERROR'), ('08006', 'connection_exception'), ('57P01', 'operator_intervention'))
    >>> error_code("oops"), error_code("XY123", PGSQL_ERRORS)
    (('oops', None), ('XY123', None))
    """
    if e.errno == PGSQL_ERRORS.errno:
        return value, sqlstates.class_name(value) or None
    number = to_number(value)
    return (number if number is not None else value), errnames.name(value) or None


def _getter(table, names: Sequence[str]):
    """A function row -> the values of ``names`` (None for a column the table lacks)."""
    positions = [table.columns.index(n) if table.has(n) else None for n in names]
    if all(p is not None for p in positions) and len(positions) > 1:
        return operator.itemgetter(*positions)
    return lambda row: tuple(row[p] if p is not None else None for p in positions)


def parsed(snapshot, e=MYSQL_ERRORS) -> Dict[Tuple, Tuple]:
    """{key: (count, hostgroup, server, errno, errno name, first_seen, last_seen, last_error)} of
    one stats_mysql_errors reading, numbers converted."""
    table = snapshot.data
    key_of = _getter(table, key_columns(e))
    values_of = _getter(table, (e.count, e.first_seen, e.last_seen, e.last_error))
    names: Dict[Any, Tuple[Any, Optional[str]]] = {}
    places: Dict[Tuple, Tuple[Any, str]] = {}  # few hostgroups and servers, many rows
    rows: Dict[Tuple, Tuple] = {}
    for row in table.rows:
        key = key_of(row)
        hostgroup, host, port, _user, _client, _schema, errno = key
        count, first_seen, last_seen, last_error = values_of(row)
        if errno not in names:
            names[errno] = error_code(errno, e)
        place = places.get(key[:3])
        if place is None:
            place = places[key[:3]] = (to_number(hostgroup), f"{host}:{port}")
        rows[key] = (to_number(count), *place, *names[errno], first_seen, to_number(last_seen), last_error)
    return rows


def errors_rows(previous, current, now_wall: Optional[float] = None, e=MYSQL_ERRORS) -> List[Row]:
    """Pure: two stats_mysql_errors readings -> screen rows with errors/s and last-seen age.

    Ages are measured at ``now_wall`` (default: the reading's own time) and never negative:
    a last_seen ahead of the clock is 'now'. A counter that went down (the table was reset)
    has no rate for that interval."""
    if current is None or current.data is None:
        return []
    seconds = seconds_between(previous, current)
    before = parsed(previous, e) if previous is not None and previous.data is not None else {}
    now = current.wall_time if now_wall is None else now_wall
    rows = []
    for key, (count, hostgroup, server, errno, name, first_seen, last_seen, last_error) in parsed(current, e).items():
        old = before.get(key)
        if old is not None:
            old_count = old[0]
        else:  # a row that appeared since the last reading: all its errors are new
            old_count = 0 if previous is not None else None
        per_second = None
        if seconds and old_count is not None and count is not None and count >= old_count:
            per_second = (count - old_count) / seconds
        rows.append({
            "_id": key,
            "errors_s": per_second,
            "count": count,
            "errno": errno,
            "errno_name": name,
            "hostgroup": hostgroup,
            "server": server,
            "user": key[3],
            "schema": key[5],
            "client": key[4],
            "last_seen_age": None if last_seen is None else max(0.0, now - last_seen),
            "first_seen": first_seen,  # as sent (epoch seconds): only the detail shows it
            "last_seen": last_seen,
            "last_error": last_error,
        })
    return rows


def user_rows(snapshot) -> List[Dict[str, Any]]:
    """Pure: stats_mysql_users -> [{user, connections, limit, used_pct}], fullest first.

    >>> from proxytop.core import Snapshot, Table
    >>> t = Table(("username", "frontend_connections", "frontend_max_connections"),
    ...           (("sbtest", "2", "500"), ("reporting", "5", "5")))
    >>> [(u["user"], u["used_pct"]) for u in user_rows(Snapshot("u", t, 0.0, 0.0))]
    [('reporting', 100.0), ('sbtest', 0.4)]
    """
    if snapshot is None or snapshot.data is None:
        return []
    u = MYSQL_USERS
    users = []
    for r in snapshot.data.dicts():
        used = to_number(r.get(u.connections))
        limit = to_number(r.get(u.limit))
        users.append({"user": r.get(u.user), "connections": used, "limit": limit,
                      "used_pct": (100.0 * used / limit) if used is not None and limit else None})
    users.sort(key=lambda x: (-(x["used_pct"] if x["used_pct"] is not None else -1), str(x["user"])))
    return users


def refused_per_second(previous, current) -> Optional[Dict[str, Optional[float]]]:
    """Refused logins per second from stats_mysql_global, by reason."""
    if previous is None or current is None or not previous.data or not current.data:
        return None
    seconds = seconds_between(previous, current)
    return {name: rate(previous.data.get(name), current.data.get(name), seconds) for name in REFUSED
            if name in current.data}


def errno_text(value: Any) -> str:
    return units.plain(value)


def rate_style(row: Mapping) -> Optional[str]:
    return "danger" if to_number(row.get("errors_s")) else None


def age_text(value: Any) -> str:
    return health.ago(to_number(value)) if value is not None else units.MISSING


class ErrorsScreen(SidedScreen, Screen):
    key = "errors"
    title = "Errors"
    short_title = "Err"
    default_sort = ("errors_s", True)
    tiebreak = ("last_seen_age",)  # then the most recently seen
    default_interval = 1.0
    live_detail = True
    columns = (
        Column("errors_s", "Errors/s", 9, fmt=units.number, style=rate_style, summable=True, priority=0,
               help="errors per second (from count_star)"),
        Column("count", "Count", 7, fmt=units.number, summable=True, priority=4, help="count_star: errors since the row appeared"),
        Column("errno", "Errno", 8, fmt=errno_text, priority=0, graphed=False),  # 8: the title SQLSTATE on the PostgreSQL side
        Column("errno_name", "Name", 22, "<", numeric=False, priority=2, help="the error number's symbolic name"),
        Column("hostgroup", "HG", 4, fmt=units.plain, priority=1, graphed=False),
        Column("server", "Server", 18, "<", numeric=False, priority=1),
        Column("user", "User", 10, "<", numeric=False, priority=2),
        Column("schema", "Schema", 10, "<", numeric=False, priority=5),
        Column("client", "Client", 15, "<", numeric=False, priority=6, help="client_address"),
        Column("last_seen_age", "Seen", 6, unit="s", fmt=age_text, priority=1, help="how long ago the error was last seen"),
        Column("last_error", "Last error", 30, "<", numeric=False, priority=3, flexible=True),
    )
    # stats_pgsql_errors: a SQLSTATE (text) for the errno, named by its class; keys unchanged
    pgsql_titles = {"errno": ("SQLSTATE", "the five-character SQLSTATE PostgreSQL answered"),
                    "errno_name": ("Class", "the SQLSTATE's class (its first two characters)"),
                    "schema": ("Database", "the database the client was using")}

    @property
    def errors_table(self):
        return PGSQL_ERRORS if self.side is PGSQL else MYSQL_ERRORS

    def collectors(self):
        return [BackendErrors(), FrontendUsers()]

    def rows(self, view: DataView) -> List[Row]:
        previous, current = view.pair(self.on_side(BackendErrors.name))
        if current is None:
            return []
        return errors_rows(previous, current, e=self.errors_table)  # ages as of the reading: a replay shows the same rows

    def notes(self, view: DataView) -> List[Sequence[Segment]]:
        lines: List[Sequence[Segment]] = []
        refused = refused_per_second(*header_readings(view.pair, self))
        if refused is not None:
            line: List[Segment] = [("refused logins/s ", "label")]
            for name, value in refused.items():
                short = name.replace("Access_Denied_", "").replace("_", " ").lower()
                line += [(f"{short} ", "label"), (units.number(value), "danger" if value else "header"), ("  ", None)]
            lines.append(tuple(line))
        users = user_rows(view.latest(self.on_side(FrontendUsers.name)))
        if users:
            line = [("users ", "label")]
            for user in users[:USERS_SHOWN]:
                pct = user["used_pct"]
                style = "danger" if pct is not None and pct >= USED_WARNING else "header"
                line += [(f"{user['user']} ", None),
                         (f"{units.number(user['connections'])}/{units.plain(user['limit'])} "
                          f"({units.percent(pct, 0)})", style), ("  ", None)]
            if len(users) > USERS_SHOWN:
                line.append((f"+{len(users) - USERS_SHOWN} more", "dim"))
            lines.append(tuple(line))
        previous, current = view.pair(self.on_side(BackendErrors.name))
        if current is not None and current.data is not None and not current.data.rows:
            lines.append((("No backend errors recorded since ProxySQL started (or since stats_mysql_errors "
                           "was last reset).", "dim"),))
        return lines

    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        rows = errors_rows(*view.pair(self.on_side(BackendErrors.name)), e=self.errors_table)
        return error_detail(row, rows, "SQLSTATE" if self.side is PGSQL else "errno")


def error_detail(row: Mapping, all_rows: Sequence[Mapping], code: str = "errno") -> Detail:
    """The whole last error, first/last seen, and the same ``code`` (errno, or SQLSTATE on the
    PostgreSQL side) on the other servers."""
    def when(epoch: Any) -> str:
        number = to_number(epoch)
        return units.MISSING if number is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(number))

    current = next((r for r in all_rows if r["_id"] == row["_id"]), row)
    name = current.get("errno_name") or ""
    if code == "SQLSTATE":
        name = sqlstates.describe(current.get("errno")) or name
    lines: List[Tuple[Segment, ...]] = [
        ((f"{code} ", "label"), (f"{current.get('errno')} {name}", "header")),
        (("where ", "label"), (f"hostgroup {units.plain(current.get('hostgroup'))}  {current.get('server')}  "
                               f"user {current.get('user')}  {'database' if code == 'SQLSTATE' else 'schema'} {current.get('schema')}  "
                               f"client {current.get('client')}", None)),
        (("count ", "label"), (units.number(current.get("count")), "header"),
         ("  errors/s ", "label"), (units.number(current.get("errors_s")), "danger" if current.get("errors_s") else None)),
        (("first seen ", "label"), (when(current.get("first_seen")), None),
         ("  last seen ", "label"), (when(current.get("last_seen")), None),
         (f"  ({age_text(current.get('last_seen_age'))} ago)", "dim")),
        (),
        (("Last error", "header_title"),),
    ]
    text = str(current.get("last_error") or "")
    for paragraph in text.splitlines() or [""]:
        while len(paragraph) > 100:
            lines.append(((paragraph[:100], None),))
            paragraph = paragraph[100:]
        lines.append(((paragraph, None),))
    others = [r for r in all_rows if r.get("errno") == current.get("errno") and r["_id"] != current["_id"]]
    lines += [(), ((f"Same {code} elsewhere", "header_title"),)]
    if not others:
        lines.append((("  none", "dim"),))
    for r in sorted(others, key=lambda r: -(to_number(r.get("count")) or 0)):
        lines.append(((f"  hostgroup {units.plain(r.get('hostgroup'))} {r.get('server')} ", None),
                      (f"{r.get('user')}@{r.get('schema')}  ", "label"),
                      (f"x{units.number(r.get('count'))}  {units.number(r.get('errors_s'))}/s  ", "header"),
                      (f"last {age_text(r.get('last_seen_age'))} ago", "dim")))
    return Detail(title=f"Error {current.get('errno')} on {current.get('server')}", lines=tuple(lines))


SCREEN = ErrorsScreen
