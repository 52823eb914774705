"""The types every layer shares: what a collector returns and how the polling engine talks to it.

A collector knows one data source (a ProxySQL admin table, a MySQL server, /proc/diskstats)
and nothing of the UI. ``collect(handle)`` returns plain, immutable data; the engine wraps it
in a :class:`Snapshot` stamped with the monotonic time it was taken and how long it took.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Tuple


@dataclass(frozen=True)
class Snapshot:
    """One reading of one collector."""

    collector: str
    data: Any
    taken_at: float  # time.monotonic() when the reading started (when the server took its figures)
    duration: float  # seconds the reading took
    wall_time: float = field(default_factory=time.time)
    error: Optional[str] = None  # a query-level error in one plain line (the source may be fine)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Table:
    """Rows of a query result, mapped by column name (never by position: versions differ)."""

    columns: Tuple[str, ...]
    rows: Tuple[tuple, ...]

    def dicts(self):
        return [dict(zip(self.columns, row)) for row in self.rows]

    def has(self, column: str) -> bool:
        return column in self.columns


def unconcatenated(names: Sequence[str], count: Any, joined: Sequence[Optional[str]]) -> Optional[Table]:
    """A table ProxySQL sent as one row: ``count`` rows, and each column's values joined by
    commas (``group_concat``), split here in C instead of a row packet decoded per row. None when
    ``count`` is no number or a column has another number of values (group_concat leaves NULLs
    out): then the table is read plainly.

    >>> unconcatenated(("id", "hits"), "2", ("1,2", "10,0"))
    Table(columns=('id', 'hits'), rows=(('1', '10'), ('2', '0')))
    >>> unconcatenated(("id",), "0", (None,)).rows, unconcatenated(("id", "hits"), "2", ("1,2", "10"))
    ((), None)
    """
    try:
        count = int(count)
    except (TypeError, ValueError):
        return None
    if count == 0:
        return Table(tuple(names), ())
    columns = []
    for text in joined:
        values = text.split(",") if text is not None else ()
        if len(values) != count:
            return None
        columns.append(values)
    return Table(tuple(names), tuple(zip(*columns)))


class CollectorError(Exception):
    """A reading failed in a way that concerns only this collector (not the connection)."""


class Source:
    """Something collectors read from: a connection, or the local host.

    ``connect()`` returns the handle given to each collector's ``collect``; it raises on
    failure and the engine retries with backoff. ``is_connection_error(exc)`` tells a broken
    connection (reconnect) from a failed query (report it, keep the connection).
    """

    name = "source"
    description = ""

    def connect(self) -> Any:
        return None

    def close(self, handle: Any) -> None:
        pass

    def is_connection_error(self, exc: BaseException) -> bool:
        return False

    def describe_error(self, exc: BaseException) -> str:
        return str(exc) or exc.__class__.__name__


class HostSource(Source):
    """The machine proxytop runs on: nothing to connect to."""

    name = "host"
    description = "this host"


class Collector:
    """Base of all collectors.

    Subclasses set ``name``, ``source`` (a Source name), the intervals, and implement
    ``collect``. ``history`` is how many snapshots the engine keeps (2 are enough for rates;
    more for sparklines; 1 for tables only ever shown as they are now).

    A reading whose data was asked for before ``collect`` ran (by another collector's query,
    see proxytop.collectors.folded) sets ``served_at`` to (monotonic, wall) time of the
    asking, and the engine stamps its snapshot with it.
    """

    name = "collector"
    source = "host"
    default_interval = 1.0
    min_interval = 0.5
    history = 2
    # True for slow sources (configuration tables, memory metrics): they keep their own,
    # longer interval instead of following the screen's.
    own_pace = False

    def collect(self, handle: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def shrink(self, data: Any) -> Any:
        """A reading's data once it is older than the last two (the ones rates use): what a
        long ``history`` keeps of it. Everything, unless a collector says less will do."""
        return data


MYSQL_SOURCE_PREFIX = "mysql:"  # a MySQL server's engine source is named "mysql:host:port"


def mysql_source_server(source_name: str) -> Optional[str]:
    """The server (host:port) a MySQL server's source name names; None for another source.

    >>> mysql_source_server("mysql:127.0.0.1:3306"), mysql_source_server("proxysql")
    ('127.0.0.1:3306', None)
    """
    return source_name[len(MYSQL_SOURCE_PREFIX):] if source_name.startswith(MYSQL_SOURCE_PREFIX) else None


_SECRET_NAME = re.compile(r"passw(or)?d|credentials|secret", re.IGNORECASE)
# Names that mention a password but hold a count or a setting, never one (ProxySQL's
# Access_Denied_Wrong_Password counter, MySQL's password_history, ...).
_NOT_SECRET_NAME = re.compile(r"wrong|denied|fail|error|count|expire|lifetime|history|reuse|require|policy"
                              r"|validat|length|plugin|hash|check|_time|lock|rsa|public", re.IGNORECASE)


def is_secret_name(name: Any) -> bool:
    """Whether a key, field, column or variable of that name holds a secret (a recording
    scrubs it, an event hides it).

    >>> [is_secret_name(n) for n in ("mysql-monitor_password", "Password", "admin-admin_credentials")]
    [True, True, True]
    >>> [is_secret_name(n) for n in ("user", "Access_Denied_Wrong_Password", "password_history")]
    [False, False, False]
    """
    return (isinstance(name, str) and _SECRET_NAME.search(name) is not None
            and _NOT_SECRET_NAME.search(name) is None)
