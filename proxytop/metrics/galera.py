"""Pure figures of a Galera cluster: the flow-control paused fraction, which nodes are split
from their cluster, what the header alarm says, and why ProxySQL's Galera monitor put a node
where it is (its verdict, in the order ProxySQL's MySQL_Monitor.cpp decides it)."""
from __future__ import annotations

from collections import Counter
from typing import Dict, List, Mapping, Optional, Set, Tuple

from proxytop.metrics.rates import delta, to_number

PAUSED_ALARM = 0.10  # flow control paused more than this fraction of the interval: the header says so
SYNCED = "Synced"
PRIMARY = "Primary"
LOCAL_STATE_SYNCED = 4
LOCAL_STATE_DONOR = 2


def paused_fraction(before_ns, after_ns, seconds: Optional[float]) -> Optional[float]:
    """The fraction of the interval replication was paused by flow control, from
    wsrep_flow_control_paused_ns (wsrep_flow_control_paused covers the time since the last
    FLUSH STATUS, not the interval). None without two readings or after a reset.

    >>> paused_fraction(1_000_000_000, 1_500_000_000, 2.0), paused_fraction(5, 1, 2.0), paused_fraction(1, 2, None)
    (0.25, None, None)
    """
    grown = delta(before_ns, after_ns)
    if grown is None or not seconds:
        return None
    return min(1.0, grown / 1e9 / seconds)


def split_nodes(views: Mapping[str, Tuple[str, object, object, str]]) -> Set[str]:
    """The nodes split from their cluster. ``views``: node -> (cluster name, cluster state
    UUID, conf_id, cluster status). A node is split when its status is not Primary, or when
    its (UUID, conf_id) differs from the one most nodes of its cluster report; when no view
    has more nodes than every other, each node's is in doubt: all are split.

    >>> split_nodes({"a": ("c", "u", 7, "Primary"), "b": ("c", "u", 7, "Primary"), "x": ("c", "u", 5, "Primary")})
    {'x'}
    >>> sorted(split_nodes({"a": ("c", "u", 7, "Primary"), "b": ("c", "u", 8, "Primary")}))
    ['a', 'b']
    >>> split_nodes({"a": ("c", "u", 7, "Primary"), "z": ("other", "w", 1, "Primary")})
    set()
    >>> split_nodes({"a": ("c", "u", 18446744073709551615, "non-Primary")})
    {'a'}
    """
    split = {node for node, view in views.items() if view[3] != PRIMARY}
    clusters: Dict[str, Dict[str, Tuple[object, object]]] = {}
    for node, (cluster, uuid, conf_id, _status) in views.items():
        clusters.setdefault(cluster, {})[node] = (uuid, str(conf_id))
    for members in clusters.values():
        counts = Counter(members.values()).most_common()
        if len(counts) < 2:
            continue
        majority = counts[0][0] if counts[0][1] > counts[1][1] else None
        split |= {node for node, view in members.items() if view != majority}
    return split


def node_alarms(name: str, state: Optional[str], split: bool, cluster_status: Optional[str],
                paused: Optional[float]) -> List[str]:
    """The header alarm's phrases for one node: not Synced, split, flow control paused above
    PAUSED_ALARM of the interval.

    >>> node_alarms("db2:3306", "Donor/Desynced", False, "Primary", 0.25)
    ['galera db2:3306 Donor/Desynced', 'galera db2:3306 flow control paused 25%']
    >>> node_alarms("db3:3306", "Synced", True, "non-Primary", 0.0), node_alarms("db1:3306", "Synced", False, "Primary", 0.05)
    (['galera db3:3306 split (non-Primary)'], [])
    """
    alarms = []
    if state != SYNCED:
        alarms.append(f"galera {name} {state or 'state unknown'}")
    if split:
        alarms.append(f"galera {name} split" + (f" ({cluster_status})" if cluster_status != PRIMARY else ""))
    if paused is not None and paused > PAUSED_ALARM:
        alarms.append(f"galera {name} flow control paused {paused:.0%}")
    return alarms


def _yes(value) -> bool:
    return str(value if value is not None else "").strip().upper() not in ("", "NO", "NONE", "0", "OFF", "FALSE",
                                                                          "DISABLED")


def proxysql_verdict(check: Mapping[str, object], max_transactions_behind) -> Tuple[str, str]:
    """Where ProxySQL's Galera monitor put a node after one check (a row of
    monitor.mysql_server_galera_log), and why: ('offline' | 'reader' | 'writer', reason).

    >>> check = {"primary_partition": "YES", "read_only": "YES", "wsrep_local_recv_queue": "312",
    ...          "wsrep_local_state": "4", "wsrep_desync": "NO", "wsrep_reject_queries": "NO",
    ...          "wsrep_sst_donor_rejects_queries": "NO", "pxc_maint_mode": "NO", "error": None}
    >>> proxysql_verdict(check, "100")
    ('offline', 'wsrep_local_recv_queue 312 > max_transactions_behind 100')
    >>> proxysql_verdict(dict(check, wsrep_local_recv_queue="3"), "100")
    ('reader', 'read_only=YES')
    >>> proxysql_verdict(dict(check, wsrep_desync="YES"), "100"), proxysql_verdict(dict(check, read_only="NO"), 0)
    (('offline', 'wsrep_desync=YES'), ('writer', 'writable (read_only=NO)'))
    >>> proxysql_verdict(dict(check, wsrep_local_state="2", wsrep_sst_donor_rejects_queries="YES"), 0)
    ('offline', 'wsrep_local_state=2 (2 is allowed only while wsrep_sst_donor_rejects_queries is off)')
    """
    if check.get("error"):
        return "offline", f"check failed: {check['error']} (a timeout counts after several in a row)"
    if not _yes(check.get("primary_partition")):
        return "offline", "primary_partition=NO (not in the primary component)"
    if _yes(check.get("wsrep_desync")):
        return "offline", "wsrep_desync=YES"
    state = to_number(check.get("wsrep_local_state"))
    donor_rejects = _yes(check.get("wsrep_sst_donor_rejects_queries"))
    if state != LOCAL_STATE_SYNCED and (state != LOCAL_STATE_DONOR or donor_rejects):
        why = " (2 is allowed only while wsrep_sst_donor_rejects_queries is off)" if state == LOCAL_STATE_DONOR else ""
        return "offline", f"wsrep_local_state={check.get('wsrep_local_state')}{why}"
    if _yes(check.get("wsrep_reject_queries")):
        return "offline", "wsrep_reject_queries is set"
    if _yes(check.get("pxc_maint_mode")):
        return "offline", "pxc_maint_mode=YES"
    if _yes(check.get("read_only")):
        queue, most = to_number(check.get("wsrep_local_recv_queue")), to_number(max_transactions_behind)
        if queue is not None and most is not None and queue > most:
            return "offline", f"wsrep_local_recv_queue {queue} > max_transactions_behind {most}"
        return "reader", "read_only=YES"
    return "writer", "writable (read_only=NO)"
