"""Why a backend is out: pure functions over the connection pool, the runtime configuration and
the monitor logs (collectors.monitor). No I/O, no curses: ConnPool, the health view and the
header alarm are built from these.

Times in the monitor logs are ProxySQL's clock in microseconds (time_start_us); "ago" is
measured against ProxySQL's clock too (MonitorReadings.server_now_us), so a skewed clock on
the proxytop host doesn't make entries look old or from the future.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple

from proxytop.metrics import units
from proxytop.metrics.rates import to_number

# time_start_us, success time in µs (0 or NULL on error), error text, value (read_only, repl_lag)
Entry = Tuple[int, Optional[int], Optional[str], Optional[str]]


@dataclass(frozen=True)
class ServerMonitor:
    """The latest monitor entries of one backend (host:port), oldest first, per kind."""

    ping: Tuple[Entry, ...] = ()
    connect: Tuple[Entry, ...] = ()
    read_only: Tuple[Entry, ...] = ()
    lag: Tuple[Entry, ...] = ()

    def entries(self, kind: str) -> Tuple[Entry, ...]:
        return getattr(self, kind)


@dataclass(frozen=True)
class MonitorReadings:
    """What the monitor logs say, as of this reading."""

    servers: Mapping[str, ServerMonitor] = field(default_factory=dict)  # "host:port" -> entries
    unavailable: Tuple[Tuple[str, str], ...] = ()  # (kind, why): logs left out, why in a few words
    new_rows: int = 0  # rows this reading brought
    server_now_us: Optional[int] = None  # ProxySQL's clock when it answered

    def server(self, host: str, port) -> Optional[ServerMonitor]:
        return self.servers.get(f"{host}:{port}")


NULL_LAG = "NULL"  # a replication-lag check that ran but got no number (Seconds_Behind_Master NULL)

ServerKey = Tuple[str, str, str]  # (hostgroup, host, port) as ProxySQL sends them


def ago(seconds: Optional[float]) -> str:
    """A short age: '3s', '4m05s' (never negative: a row from the future is 'now').

    >>> ago(3.2), ago(245), ago(-5), ago(None)
    ('3s', '4m05s', 'now', '—')
    """
    if seconds is None:
        return units.MISSING
    if seconds < 0.5:
        return "now"
    return units.age(seconds)


def clock(time_us: Optional[int]) -> str:
    """A monitor timestamp as the local time of day, HH:MM:SS."""
    if time_us is None:
        return units.MISSING
    return time.strftime("%H:%M:%S", time.localtime(time_us / 1e6))


def first_line(text: Any, width: int = 80) -> str:
    """An error message on one line, cut to ``width`` characters.

    >>> first_line("Can't connect\\nto server", 12)
    "Can't conne…"
    """
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "\u2026"


# ----- the latest monitor entries ------------------------------------------------------------

def is_error(entry: Entry) -> bool:
    return bool(entry[2])


def latest_lag(monitor: Optional[ServerMonitor]) -> Tuple[Any, Optional[int]]:
    """(lag, time_us) of the newest replication-lag check: seconds as a number, NULL_LAG when
    the check ran without a number, "error" when it failed, None when lag is not monitored.

    >>> latest_lag(ServerMonitor(lag=((1, 100, None, "3"), (2, 90, None, "12"))))
    (12, 2)
    >>> latest_lag(ServerMonitor(lag=((5, 100, None, None),)))
    ('NULL', 5)
    >>> latest_lag(None)
    (None, None)
    """
    if monitor is None or not monitor.lag:
        return None, None
    start, _success, error, value = monitor.lag[-1]
    if error:
        return "error", start
    number = to_number(value)
    return (NULL_LAG if number is None else number), start


def lag_series(monitor: Optional[ServerMonitor]) -> List[Optional[float]]:
    """The lag of each recent check (None for NULL or failed checks), for a sparkline."""
    if monitor is None:
        return []
    return [None if error else to_number(value) for _start, _success, error, value in monitor.lag]


def latest_read_only(monitor: Optional[ServerMonitor]) -> Optional[str]:
    """'yes', 'no' or 'error' from the newest read_only check; None when not monitored.

    >>> latest_read_only(ServerMonitor(read_only=((1, 300, None, "1"),)))
    'yes'
    """
    if monitor is None or not monitor.read_only:
        return None
    _start, _success, error, value = monitor.read_only[-1]
    if error:
        return "error"
    number = to_number(value)
    return None if number is None else ("yes" if number else "no")


def has_result(entry: Entry) -> bool:
    """A check that ended: an error, or a time taken. ProxySQL 3.0.1 wrote PostgreSQL pings
    with neither (0 µs, no error) when the backend went down: they say nothing.

    >>> has_result((1, 250, None, None)), has_result((1, 0, "timeout", None)), has_result((1, 0, None, None))
    (True, True, False)
    """
    return bool(entry[2]) or bool(entry[1])


def latest_check(monitor: Optional[ServerMonitor]) -> Optional[Tuple[str, Entry]]:
    """The newest of the ping and connect checks that ended: (kind, entry)."""
    if monitor is None:
        return None
    candidates = []
    for kind in ("ping", "connect"):
        ended = next((entry for entry in reversed(monitor.entries(kind)) if has_result(entry)), None)
        if ended is not None:
            candidates.append((kind, ended))
    if not candidates:
        return None
    return max(candidates, key=lambda item: item[1][0])


def monitor_cell(monitor: Optional[ServerMonitor], now_us: Optional[float]) -> Any:
    """The Monitor column: the newest ping/connect latency in ms (a number), or the text
    'ping err 3s ago' when that check failed; None when the monitor has no entry.

    >>> monitor_cell(ServerMonitor(ping=((1_000_000, 250, None, None),)), 2e6)
    0.25
    >>> monitor_cell(ServerMonitor(ping=((1_000_000, 0, "timeout", None),)), 4e6)
    'ping err 3s ago'
    """
    latest = latest_check(monitor)
    if latest is None:
        return None
    kind, (start, success, error, _value) = latest
    if error:
        age = None if now_us is None else (now_us - start) / 1e6
        return f"{kind} err {ago(age)} ago"
    return None if success is None else success / 1000.0


def failure_run(entries: Sequence[Entry]) -> Tuple[int, Optional[int], Optional[str]]:
    """The failed checks at the end of a log: (how many in a row, when the first of them
    started, the latest error text).

    >>> failure_run(((1, 10, None, None), (2, 0, "down", None), (3, 0, "still down", None)))
    (2, 2, 'still down')
    >>> failure_run(((1, 10, None, None),))
    (0, None, None)
    """
    count, since, message = 0, None, None
    for start, _success, error, _value in reversed(entries):
        if not error:
            break
        count += 1
        since = start
        message = message or error
    return count, since, message


# ----- reasons ------------------------------------------------------------------------------

def _lag_text(value: Any) -> str:
    number = to_number(value)
    return units.duration(number) if number is not None else str(value)


def lag_excess(lag: Any, max_lag: Any) -> Optional[str]:
    """'lag 12s > 5s' when a measured lag is past its threshold (0 = not checked).

    >>> lag_excess(12, "5"), lag_excess(3, "5"), lag_excess(12, "0"), lag_excess("NULL", "5")
    ('lag 12s > 5s', None, None, None)
    """
    limit = to_number(max_lag)
    value = to_number(lag)
    if not limit or value is None or value <= limit:
        return None
    return f"lag {_lag_text(value)} > {_lag_text(limit)}"


def reason(status: Any, settings: Optional[Mapping], monitor: Optional[ServerMonitor],
           conn_err_s: Optional[float] = None) -> str:
    """One plain-language line: why this backend has its status.

    >>> m = ServerMonitor(ping=((10**15, 0, "Can't connect to MySQL server", None),) * 3)
    >>> reason("SHUNNED", None, m) == f"SHUNNED: 3 failed pings since {clock(10**15)}: Can't connect to MySQL server"
    True
    >>> recovered = ServerMonitor(ping=((10**15, 0, "Lost connection", None), (10**15 + 2, 300, None, None)))
    >>> reason("SHUNNED", None, recovered) == (f"SHUNNED: last failed ping at {clock(10**15)} (Lost connection), "
    ...     "the checks since pass; ProxySQL retries it after mysql-shun_recovery_time_sec")
    True
    >>> reason("SHUNNED", None, ServerMonitor(ping=((1, 300, None, None),)))[:47]
    'SHUNNED: every ping and connect check listed pa'
    >>> reason("SHUNNED_REPLICATION_LAG", {"max_replication_lag": "5"},
    ...        ServerMonitor(lag=((1, 1, None, "12"),)))
    'SHUNNED_REPLICATION_LAG: lag 12s > 5s'
    """
    status = str(status or "").upper()
    max_lag = settings.get("max_replication_lag") if settings else None
    lag, _when = latest_lag(monitor)
    if status == "ONLINE":
        excess = lag_excess(lag, max_lag)
        if excess:
            return f"ONLINE, but {excess}: ProxySQL shuns it at its next lag check"
        return "ONLINE: taking traffic"
    if status == "SHUNNED_REPLICATION_LAG":
        threshold = f"{_lag_text(max_lag)}" if to_number(max_lag) else "max_replication_lag (needs an admin user)"
        if lag == NULL_LAG:
            return (f"SHUNNED_REPLICATION_LAG: lag unknown (Seconds_Behind_Master NULL: replication stopped?), "
                    f"counted as mysql-monitor_slave_lag_when_null > {threshold}")
        if lag is None:
            return f"SHUNNED_REPLICATION_LAG: replication lag past {threshold} (no lag check read yet)"
        if lag == "error":
            return f"SHUNNED_REPLICATION_LAG: the last lag check failed: {first_line(monitor.lag[-1][2])}"
        return f"SHUNNED_REPLICATION_LAG: lag {_lag_text(lag)} > {threshold}"
    if status == "SHUNNED":
        for kind, label in (("ping", "pings"), ("connect", "connection checks")):
            count, since, message = failure_run(monitor.entries(kind) if monitor else ())
            if count:
                return f"SHUNNED: {count} failed {label if count > 1 else label[:-1]} since {clock(since)}: " \
                       f"{first_line(message)}"
        if conn_err_s:
            return f"SHUNNED: {conn_err_s:.1f} backend connection errors/s (mysql-shun_on_failures in a second)"
        # The monitor's latest checks pass: ProxySQL keeps a server shunned until
        # mysql-shun_recovery_time_sec has passed, whatever its checks say meanwhile.
        failed = [(entry[0], kind, entry[2]) for kind in ("ping", "connect")
                  for entry in (monitor.entries(kind) if monitor else ()) if entry[2]]
        if failed:
            start, kind, message = max(failed)
            return (f"SHUNNED: last failed {kind} at {clock(start)} ({first_line(message)}), the checks since pass; "
                    "ProxySQL retries it after mysql-shun_recovery_time_sec")
        if monitor is not None and (monitor.entries("ping") or monitor.entries("connect")):
            return ("SHUNNED: every ping and connect check listed passes: shunned for connection errors of its "
                    "traffic (mysql-shun_on_failures); ProxySQL retries it after mysql-shun_recovery_time_sec")
        return ("SHUNNED: too many connection errors (mysql-shun_on_failures) or failed pings; "
                "ProxySQL retries it after mysql-shun_recovery_time_sec")
    if status == "OFFLINE_SOFT":
        return "OFFLINE_SOFT: draining (set in mysql_servers, or moved by a read_only change); no new connections"
    if status == "OFFLINE_HARD":
        return "OFFLINE_HARD: out of use (removed from mysql_servers, or moved to another hostgroup)"
    return f"{status or 'unknown status'}"


def alarm(status: Any, settings: Optional[Mapping], monitor: Optional[ServerMonitor], server: str) -> Optional[str]:
    """The header alarm for one backend, or None while it is ONLINE within its lag.

    >>> alarm("SHUNNED_REPLICATION_LAG", {"max_replication_lag": "5"},
    ...       ServerMonitor(lag=((1, 1, None, "12"),)), "127.0.0.1:3313")
    '127.0.0.1:3313 SHUNNED_REPLICATION_LAG (lag 12s > 5s)'
    >>> alarm("ONLINE", {"max_replication_lag": "5"}, ServerMonitor(lag=((1, 1, None, "2"),)), "h:1") is None
    True
    >>> alarm("SHUNNED", None, ServerMonitor(ping=((1, 0, None, None),), connect=((2, 0, "Connection refused", None),)),
    ...       "PgSQL 127.0.0.1:5442")
    'PgSQL 127.0.0.1:5442 SHUNNED (1 failed connection check)'
    """
    status = str(status or "").upper()
    lag, _when = latest_lag(monitor)
    excess = lag_excess(lag, settings.get("max_replication_lag") if settings else None)
    if status == "ONLINE":
        return f"{server} ONLINE, {excess}" if excess else None
    detail = excess or ("lag NULL" if lag == NULL_LAG and status == "SHUNNED_REPLICATION_LAG" else None)
    if detail is None and status == "SHUNNED" and monitor is not None:
        # pings first; a PostgreSQL backend's ping log may say nothing (ProxySQL 3.0.1 stamped
        # its pings in the future during an outage) while its connect checks fail
        for kind, label in (("ping", "pings"), ("connect", "connection checks")):
            count, _since, _message = failure_run(monitor.entries(kind))
            if count:
                detail = f"{count} failed {label if count > 1 else label[:-1]}"
                break
    return f"{server} {status}" + (f" ({detail})" if detail else "")


# ----- state changes ------------------------------------------------------------------------

@dataclass(frozen=True)
class StatusChange:
    at: float  # wall-clock seconds of the reading that showed it
    key: ServerKey
    old: str
    new: str


@dataclass(frozen=True)
class StatusLog:
    """Each backend's status and since when (wall clock), and the changes proxytop has seen.

    ``since`` holds (status, since, seen): ``seen`` is False while the status is the one the
    backend had when proxytop first read it (its start is unknown: 'at least')."""

    since: Mapping[ServerKey, Tuple[str, float, bool]] = field(default_factory=dict)
    changes: Tuple[StatusChange, ...] = ()
    readings: Tuple[float, ...] = ()  # stamps of the readings folded in (each is folded once)


KEEP_CHANGES = 200


def track(log: StatusLog, statuses: Iterable[Tuple[ServerKey, str]], at: float, reading_id: float = 0.0) -> StatusLog:
    """Fold one reading of the connection pool into the status log.

    >>> log = track(StatusLog(), [(("20", "h", "1"), "ONLINE")], 100.0, 1)
    >>> log = track(log, [(("20", "h", "1"), "SHUNNED")], 105.0, 2)
    >>> log.since[("20", "h", "1")], [(c.old, c.new) for c in log.changes]
    (('SHUNNED', 105.0, True), [('ONLINE', 'SHUNNED')])
    >>> track(log, [(("20", "h", "1"), "ONLINE")], 110.0, 2) is log  # the same reading again
    True
    """
    if reading_id and log.readings and reading_id <= max(log.readings):
        return log  # folded already, or older than one that was (never a change backwards)
    since = dict(log.since)
    changes = list(log.changes)
    for key, status in statuses:
        status = str(status or "")
        before = since.get(key)
        if before is None:
            since[key] = (status, at, False)
        elif before[0] != status:
            since[key] = (status, at, True)
            changes.append(StatusChange(at, key, before[0], status))
    return StatusLog(since=since, changes=tuple(changes[-KEEP_CHANGES:]), readings=(log.readings + (reading_id,))[-4:])
