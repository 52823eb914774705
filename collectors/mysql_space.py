"""What a MySQL server itself says about its space, for the IOstat screen's space view: the
binary log's files and how much it has written since proxytop watches (SHOW BINARY LOGS), and
its largest table (information_schema.TABLES), for the "room for a rebuild" check. For a
server on another host this is all proxytop can say; nothing is guessed about its disks.

``mysql.space.<server>``, read only while the space view is shown, every minute; the largest
table at most every 10 minutes, with the server's own time limit on the statement, and only
when the user holds a global SELECT (information_schema.TABLES lists only the tables a user may
see: a partial answer would name the wrong table). Nothing here writes to the server.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Deque, Optional, Tuple

import pymysql

from proxytop.collectors.innodb import MySQLSession, describe_mysql_error, server_label, source_name
from proxytop.collectors.mysql_locks import timed
from proxytop.core import Collector
from proxytop.metrics.space import WINDOW, Sample, binlog_written
from proxytop.polling.connection import Endpoint
from proxytop import errors

TABLES_EVERY = 600.0  # seconds between two readings of information_schema.TABLES
TABLES_SECONDS = 10  # the server's time limit on that statement
NO_BINLOG = 1381  # ER_NO_BINARY_LOGGING

BINLOGS_SQL = "SHOW BINARY LOGS"
GRANT_SQL = "SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES WHERE PRIVILEGE_TYPE = 'SELECT'"
LARGEST_SQL = ("SELECT TABLE_SCHEMA, TABLE_NAME, ENGINE, COALESCE(DATA_LENGTH, 0) + COALESCE(INDEX_LENGTH, 0) AS bytes "
               "FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "
               "AND TABLE_SCHEMA NOT IN ('information_schema', 'performance_schema') "
               "ORDER BY bytes DESC LIMIT 1")
NEEDS_SELECT = "largest table: needs a global SELECT (GRANT SELECT ON *.*) to see every table's size"


@dataclass(frozen=True)
class LargestTable:
    schema: str
    name: str
    engine: str
    bytes: int  # data + index length, as information_schema.TABLES estimates them

    @property
    def label(self) -> str:
        return f"{self.schema}.{self.name}"


@dataclass(frozen=True)
class ServerSpaceReading:
    binlog_files: Optional[int] = None
    binlog_bytes: Optional[int] = None  # every binary log file's size, added up
    binlog_note: Optional[str] = None  # off, not permitted, an error
    written_first: Optional[Tuple[float, int]] = None  # (monotonic, bytes written) at the first kept reading
    written_now: Optional[Tuple[float, int]] = None
    largest: Optional[LargestTable] = None
    largest_at: Optional[float] = None  # monotonic time it was read
    largest_note: Optional[str] = None


def space_name(key: str) -> str:
    return f"mysql.space.{key}"


class ServerSpace(Collector):
    """``mysql.space.<server>``: a :class:`ServerSpaceReading`."""

    default_interval = 60.0
    min_interval = 10.0
    own_pace = True
    history = 1

    def __init__(self, endpoint: Endpoint, clock=time.monotonic, tables_every: float = TABLES_EVERY):
        self.server = server_label(endpoint)
        self.name = space_name(self.server)
        self.source = source_name(endpoint)
        self.clock = clock
        self.tables_every = tables_every
        self._files: Optional[Tuple[Tuple[str, int], ...]] = None
        self._written = 0
        self._samples: Deque[Sample] = deque()
        self._largest: Optional[LargestTable] = None
        self._largest_at: Optional[float] = None
        self._largest_note: Optional[str] = None
        self._tables_due = 0.0

    def _binlogs(self, session: MySQLSession, now: float):
        try:
            table = session.query(BINLOGS_SQL)
        except pymysql.err.MySQLError as exc:
            if errors.is_connection_error(exc):
                raise
            code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
            if code == NO_BINLOG:
                return None, None, "binary log off"
            return None, None, "binary logs: " + describe_mysql_error(exc, session.endpoint.password)
        files = tuple((str(row[0]), int(row[1] or 0)) for row in table.rows)
        self._written += binlog_written(self._files, files)
        self._files = files
        samples = self._samples
        samples.append((now, self._written))
        while len(samples) > 2 and samples[1][0] <= now - WINDOW:
            samples.popleft()
        if len(samples) > 400:  # at the fastest pace: keep every other reading
            del samples[1]
        return len(files), sum(size for _name, size in files), None

    def _largest_table(self, session: MySQLSession, now: float) -> None:
        if now < self._tables_due:
            return
        self._tables_due = now + self.tables_every
        mariadb = session.flavour is not None and session.flavour.is_mariadb
        try:
            granted = session.query(GRANT_SQL).rows
            if not granted or not int(granted[0][0] or 0):
                self._largest, self._largest_note = None, NEEDS_SELECT
                return
            rows = session.query(timed(LARGEST_SQL, mariadb, TABLES_SECONDS)).rows
        except pymysql.err.MySQLError as exc:
            if errors.is_connection_error(exc):
                raise
            self._largest_note = "largest table: " + describe_mysql_error(exc, session.endpoint.password)
            return
        self._largest_at = now
        if rows:
            schema, name, engine, size = rows[0]
            self._largest = LargestTable(str(schema), str(name), str(engine or ""), int(size or 0))
            self._largest_note = None
        else:
            self._largest, self._largest_note = None, "largest table: the server lists no table"

    def collect(self, session: MySQLSession) -> ServerSpaceReading:
        now = self.clock()
        files, size, note = self._binlogs(session, now)
        self._largest_table(session, now)
        written = self._samples
        return ServerSpaceReading(
            binlog_files=files, binlog_bytes=size, binlog_note=note,
            written_first=written[0] if note is None and written else None,
            written_now=written[-1] if note is None and written else None,
            largest=self._largest, largest_at=self._largest_at, largest_note=self._largest_note)
