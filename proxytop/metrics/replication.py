"""Replication arithmetic: how far a replica is behind by its GTIDs and binary log positions,
whether its lag heads past ProxySQL's max_replication_lag, and whether ProxySQL's measured
lag and the replica's own can both be right. Pure functions, worked numbers in doctests.
"""
from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Tuple

Intervals = List[Tuple[int, int]]  # closed ranges of transaction numbers, sorted, disjoint


def parse_gtid_set(text: Optional[str]) -> Optional[Dict[str, Intervals]]:
    """A MySQL GTID set ('uuid:1-5:7,uuid2:1-3', 8.3's tagged 'uuid:tag:1-5' too) as
    {source (uuid, or uuid:tag): intervals}; None when it can't be read.

    >>> parse_gtid_set("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7,\\n4f22-aa:1-3")
    {'3e11fa47-71ca-11e1-9e33-c80aa9429562': [(1, 5), (7, 7)], '4f22-aa': [(1, 3)]}
    >>> parse_gtid_set("u1:1-3:blue:4-6"), parse_gtid_set(""), parse_gtid_set("u1:x-y")
    ({'u1': [(1, 3)], 'u1:blue': [(4, 6)]}, {}, None)
    """
    if text is None:
        return None
    sets: Dict[str, Intervals] = {}
    for part in "".join(str(text).split()).split(","):
        if not part:
            continue
        uuid, *pieces = part.split(":")
        source = uuid
        for piece in pieces:
            low, _, high = piece.partition("-")
            if not low.isdigit():
                if "-" in piece or not piece.replace("_", "").isalnum():
                    return None
                source = f"{uuid}:{piece}"  # a tag: the intervals after it are its own
                continue
            if high and not high.isdigit():
                return None
            sets.setdefault(source, []).append((int(low), int(high or low)))
    return {source: sorted(intervals) for source, intervals in sets.items()}


def _count_missing(wanted: Intervals, have: Intervals) -> int:
    """How many numbers of ``wanted`` are not in ``have``.

    >>> _count_missing([(1, 10)], [(1, 4), (8, 8)])
    5
    """
    missing = 0
    for low, high in wanted:
        count = high - low + 1
        for h_low, h_high in have:
            overlap = min(high, h_high) - max(low, h_low) + 1
            if overlap > 0:
                count -= overlap
        missing += count
    return missing


def gtid_set_behind(retrieved: Optional[str], executed: Optional[str]) -> Optional[int]:
    """MySQL: transactions the replica received (Retrieved_Gtid_Set) but has not applied yet
    (not in Executed_Gtid_Set); None when a set can't be read or nothing was retrieved.

    >>> gtid_set_behind("6c1f:1-902211", "6c1f:1-901977,7d2e:1-5520")
    234
    >>> gtid_set_behind("6c1f:1-10", "6c1f:1-10"), gtid_set_behind("", "6c1f:1-10"), gtid_set_behind(None, "")
    (0, None, None)
    """
    wanted, have = parse_gtid_set(retrieved), parse_gtid_set(executed)
    if not wanted or have is None:
        return None
    return sum(_count_missing(intervals, have.get(source, [])) for source, intervals in wanted.items())


def parse_mariadb_gtids(text: Optional[str]) -> Optional[Dict[int, int]]:
    """A MariaDB GTID position ('0-1-25,1-2-7': domain-server-sequence) as {domain: sequence}.

    >>> parse_mariadb_gtids("0-1-25, 1-2-7"), parse_mariadb_gtids(""), parse_mariadb_gtids("0-1")
    ({0: 25, 1: 7}, {}, None)
    """
    if text is None:
        return None
    position: Dict[int, int] = {}
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        fields = part.split("-")
        if len(fields) != 3 or not all(f.isdigit() for f in fields):
            return None
        position[int(fields[0])] = int(fields[2])
    return position


def mariadb_gtid_behind(io_pos: Optional[str], slave_pos: Optional[str]) -> Optional[int]:
    """MariaDB: transactions a connection received (its Gtid_IO_Pos) ahead of what the server
    applied (gtid_slave_pos), summed over the domains the connection received: sequence
    numbers grow by one a transaction within a domain. None without GTIDs (Using_Gtid No:
    an empty Gtid_IO_Pos) or when a received domain was never applied here.

    >>> mariadb_gtid_behind("0-1-25", "0-1-20,5-9-3"), mariadb_gtid_behind("0-1-25", "0-1-25")
    (5, 0)
    >>> mariadb_gtid_behind("", "0-1-20"), mariadb_gtid_behind("2-3-9", "0-1-20")
    (None, None)
    """
    received, applied = parse_mariadb_gtids(io_pos), parse_mariadb_gtids(slave_pos)
    if not received or applied is None or any(domain not in applied for domain in received):
        return None
    return sum(max(0, sequence - applied[domain]) for domain, sequence in received.items())


def field(row: Mapping[str, object], *names: str) -> object:
    """The first of ``names`` the row has (the products name the same column differently)."""
    for name in names:
        if name in row:
            return row[name]
    return None


def _int(value: object) -> Optional[int]:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def sql_behind_io(row: Mapping[str, object]) -> Optional[int]:
    """Bytes of the source's binary log the IO thread has read but the SQL thread has not
    applied yet: Read_Master_Log_Pos − Exec_Master_Log_Pos while both are in the same file
    (Master_Log_File = Relay_Master_Log_File); None across files (sizes unknown).

    >>> sql_behind_io({"Master_Log_File": "b.000212", "Read_Master_Log_Pos": "4410221",
    ...                "Relay_Master_Log_File": "b.000212", "Exec_Master_Log_Pos": "3901112"})
    509109
    >>> sql_behind_io({"Source_Log_File": "b.2", "Read_Source_Log_Pos": 9, "Relay_Source_Log_File": "b.1",
    ...                "Exec_Source_Log_Pos": 5}) is None
    True
    """
    read_file = field(row, "Master_Log_File", "Source_Log_File")
    exec_file = field(row, "Relay_Master_Log_File", "Relay_Source_Log_File")
    read = _int(field(row, "Read_Master_Log_Pos", "Read_Source_Log_Pos"))
    done = _int(field(row, "Exec_Master_Log_Pos", "Exec_Source_Log_Pos"))
    if not read_file or read_file != exec_file or read is None or done is None:
        return None
    return max(0, read - done)


HEADING = 0.8  # of max_replication_lag: a rising lag past this share is heading past it


def lag_alarm(lag: Optional[float], before: Optional[float], max_lag: Optional[float]) -> Optional[str]:
    """'lag 4.2 s of 5 s, rising' while a rising lag nears ProxySQL's max_replication_lag (past
    80 % of it), 'lag 7 s past max_replication_lag 5 s' once beyond (ProxySQL then shuns the
    server); None otherwise, or when ProxySQL checks no lag (0).

    >>> lag_alarm(4.2, 3.0, 5), lag_alarm(7, 7, 5), lag_alarm(4.2, 4.5, 5), lag_alarm(9, 1, 0)
    ('lag 4.2 s of 5 s, rising', 'lag 7 s past max_replication_lag 5 s', None, None)
    """
    if lag is None or not max_lag:
        return None
    if lag > max_lag:
        return f"lag {lag:g} s past max_replication_lag {max_lag:g} s"
    if lag >= HEADING * max_lag and before is not None and lag > before:
        return f"lag {lag:g} s of {max_lag:g} s, rising"
    return None


def views_disagree(replica_lag: Optional[float], proxysql_lag: object, check_age: Optional[float],
                   check_interval: Optional[float], reading_interval: float) -> Optional[str]:
    """Why ProxySQL's last measured lag and the replica's own Seconds_Behind_Source can't both
    be right, or None. They may differ by the time lag grows between ProxySQL's check and the
    replica's reading: the check's age plus the replica's reading interval (lag grows a second
    a second at most), and a second of rounding. ``proxysql_lag`` is the monitor's value: a
    number, 'NULL' (checked, no number) or 'error'.

    >>> views_disagree(30, 0, 2.0, 10.0, 1.0)[:52]
    'ProxySQL measured 0 s 2 s ago, the replica says 30 s'
    >>> views_disagree(30, 25, 4.0, 10.0, 1.0) is None, views_disagree(0, 0, 1, 10, 1) is None
    (True, True)
    >>> views_disagree(3, "NULL", 1.0, 10.0, 1.0)[:40]
    'ProxySQL measures no lag (NULL) while th'
    >>> views_disagree(3, 3, 70.0, 30.0, 1.0)[:60]
    'ProxySQL last measured the lag 70 s ago: its check interval '
    >>> views_disagree(0, 60, -0.2, 2.0, 1.0)[:33]
    'ProxySQL measured 60 s 0 s ago, t'
    """
    if replica_lag is None or proxysql_lag is None:
        return None
    if proxysql_lag in ("NULL", "error"):
        return (f"ProxySQL measures no lag ({proxysql_lag}) while the replica says {replica_lag:g} s: its "
                "monitor user may lack REPLICATION CLIENT (MySQL) / SLAVE MONITOR (MariaDB)")
    try:
        measured = float(str(proxysql_lag))
    except ValueError:
        return None
    # A check stamped a moment after the reading (ProxySQL's clock runs a little ahead) is a
    # check made just now, not one made "-0 s ago".
    age = max(0.0, check_age) if check_age is not None else 0.0
    if check_interval is not None and age > 2 * check_interval and age > 10:
        return (f"ProxySQL last measured the lag {age:.0f} s ago: its check interval "
                "(mysql-monitor_replication_lag_interval) is long, or its checks stopped")
    explained = age + reading_interval + 1.0
    if abs(measured - replica_lag) <= explained:
        return None
    return (f"ProxySQL measured {measured:g} s {age:.0f} s ago, the replica says {replica_lag:g} s: more than "
            f"the {explained:.0f} s between them explains (a monitor user without REPLICATION CLIENT / "
            "SLAVE MONITOR, or mysql-monitor_replication_lag_interval too long)")


def check_interval(times_us: Sequence[int]) -> Optional[float]:
    """ProxySQL's lag check interval, seconds, from its last checks' start times (µs).

    >>> check_interval([1_000_000, 11_000_000, 21_000_000]), check_interval([5])
    (10.0, None)
    """
    if len(times_us) < 2:
        return None
    return (times_us[-1] - times_us[-2]) / 1e6
