"""The Statements screen's link to ProxySQL (key S): the ProxySQL digests that send a server's
statement, the reverse of the Queries screen's link (screens/backends.py).

A statement of the server's performance_schema digest is found in ProxySQL's
stats_mysql_query_digest by its normalised text (proxytop.metrics.statements.statement_key /
is_statement): one line per (hostgroup, user, schema) with ProxySQL's Count/s and Time/s over
its last interval, the hostgroups that served it marked where this server is one of theirs.
The digest is the Queries screen's own reading (collectors.digest): it is polled only while
this view is open, at its own floor, and each read copies ProxySQL's whole digest map.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from proxytop.collectors.digest import MYSQL_TABLES, QueryDigest
from proxytop.collectors.innodb import DISCOVERY
from proxytop.collectors.innodb_fleet import Fleet, Server
from proxytop.metrics import digests, statements, units
from proxytop.metrics.rates import to_number
from proxytop.screens.base import DataView, Detail, seconds_between

Segment = Tuple[str, Optional[str]]
Line = Tuple[Segment, ...]
NO_PROXYSQL = ("No ProxySQL is watched (--mysql alone): no ProxySQL digest to show; name one with -H/-P "
               "to see which of its digests send this statement.")
# words of a key that may stand for another word in a text (performance_schema's synonyms undone)
_SYNONYM_WORDS = frozenset(("database", "databases", "user", "distinct", "int", "char", "second", "minute", "hour",
                            "day", "week", "month", "quarter", "year"))
_WORD = re.compile(r"[a-z_][a-z0-9_$]*")


def _words(key: str) -> List[str]:
    """The longest names of a key, which any text of the same statement holds (lower-cased)."""
    found = [w for w in _WORD.findall(key) if len(w) >= 3 and w not in _SYNONYM_WORDS]
    return sorted(set(found), key=len, reverse=True)[:3]


def matching_digests(texts: Dict[str, Optional[str]], text: Optional[str],
                     kept: Optional[Dict[str, str]] = None) -> List[str]:
    """The ProxySQL digests (of ``texts``: digest -> digest_text) whose normalised text is the
    statement of the performance_schema ``text`` (or, for a text the server cut, starts so).
    Only the texts holding the statement's longest names are normalised (a key takes 80 µs:
    1.6 s for 20,000 digests); ``kept`` keeps their keys from one reading to the next.

    >>> texts = {"0x1": "SELECT c FROM sbtest1 WHERE id=?", "0x2": "SELECT c FROM sbtest2 WHERE id=?"}
    >>> matching_digests(texts, "SELECT `c` FROM `sbtest1` WHERE ID = ? ")
    ['0x1']
    """
    key = statements.statement_key(text)
    if not key:
        return []
    prefix = statements.truncated_key(text)
    words = _words(prefix or key)
    kept = {} if kept is None else kept
    found = []
    for digest, proxysql_text in texts.items():
        if not proxysql_text:
            continue
        lowered = proxysql_text.lower()
        if any(word not in lowered for word in words):
            continue
        proxysql_key = kept.get(proxysql_text)
        if proxysql_key is None:
            proxysql_key = kept[proxysql_text] = statements.statement_key(proxysql_text)
        if statements.is_statement(key, proxysql_key) or (prefix and proxysql_key.startswith(prefix)):
            found.append(digest)
    return found


def sender_figures(previous: Optional[digests.Reading], current: digests.Reading, seconds: Optional[float],
                   wanted: Sequence[str]) -> List[Dict[str, Any]]:
    """One line per (hostgroup, user, schema) of the ``wanted`` digests over ProxySQL's last
    interval, the query cache (-1) aside, clients added up: count_s, time_s, avg_ms (None
    without two readings or across a reset), heaviest first.

    >>> cols = ("hostgroup", "schemaname", "username", "digest", "count_star", "sum_time", "first_seen")
    >>> a = digests.parse(cols, [("10", "s", "u", "0x1", "4", "2000", "100")], 165.0)
    >>> b = digests.parse(cols, [("10", "s", "u", "0x1", "8", "6000", "100")], 170.0)
    >>> [(f["hostgroup"], f["count_s"], f["time_s"], f["avg_ms"]) for f in sender_figures(a, b, 2.0, ["0x1"])]
    [('10', 2.0, 2.0, 1.0)]
    """
    wanted = set(wanted)
    sums: Dict[Tuple[str, str, str, str], List[Any]] = {}
    for key, now in current.entries.items():
        if key[4] not in wanted or key[0] == "-1":
            continue
        line = sums.setdefault((key[0], key[2], key[1], key[4]), [0, 0, False, 0])
        delta = digests.row_delta(previous.entries.get(key), now, previous.wall_time) \
            if previous is not None and seconds else None
        line[3] += now[digests.COUNT] or 0
        if delta is not None:
            line[0] += delta[0] or 0
            line[1] += delta[1] or 0
            line[2] = True
    made = []
    for (hostgroup, user, schema, digest), (count, time_us, rated, total) in sums.items():
        made.append({"hostgroup": hostgroup, "user": user, "schema": schema, "digest": digest, "count": total,
                     "count_s": count / seconds if rated else None,
                     "time_s": time_us / 1000.0 / seconds if rated else None,
                     "avg_ms": time_us / count / 1000.0 if rated and count else None})
    made.sort(key=lambda f: (-(f["time_s"] or 0), to_number(f["hostgroup"]) or 0, f["user"], f["schema"]))
    return made


def server_hostgroups(server: Server) -> Optional[Tuple[int, ...]]:
    """The hostgroups runtime_mysql_servers lists the server in (None: ProxySQL doesn't list it)."""
    return tuple(server.discovered.hostgroups) if server.discovered is not None else None


COLUMNS = (("hostgroup", "HG", 5, str), ("user", "User", 12, str), ("schema", "Schema", 12, str),
           ("count_s", "Count/s", 9, units.number), ("time_s", "Time/s", 9, units.milliseconds),
           ("avg_ms", "Avg", 8, units.milliseconds), ("digest", "Digest", 20, str))


def _cells(values: Dict[str, Any]) -> str:
    out = ""
    for key, _title, width, fmt in COLUMNS:
        value = values.get(key)
        text = units.MISSING if value is None or value == "" and key not in ("user", "schema") else fmt(value)
        out += f"{str(text)[:width - 1]:<{width}}" if fmt is str else f"{text:>{width - 1}} "
    return out


class SendersLink:
    """What the view shows, worked out once per digest reading (it is drawn ten times a second)."""

    def __init__(self):
        self._kept: Dict[str, str] = {}  # ProxySQL digest text -> its key, for the last statement asked
        self._text: Optional[str] = None
        self._made: Tuple[Any, List[Dict[str, Any]]] = (None, [])

    @staticmethod
    def watched(config) -> bool:
        return bool(getattr(config, "proxysql", True))

    def collectors(self, config, fleet: Optional[Fleet]) -> List[str]:
        """What the view needs read: ProxySQL's digest, and its backends (to know the hostgroups)."""
        if not self.watched(config):
            return []
        return [QueryDigest.name] + ([DISCOVERY] if fleet is not None and fleet.discover else [])

    def senders(self, view: DataView, text: Optional[str]) -> Optional[List[Dict[str, Any]]]:
        previous, current = view.pair(QueryDigest.name)
        now = current.data if current is not None and isinstance(current.data, digests.Reading) else None
        if now is None:
            return None
        before = previous.data if previous is not None and isinstance(previous.data, digests.Reading) else None
        token = (text, current.taken_at, previous.taken_at if previous is not None else None)
        if self._made[0] != token:
            if text != self._text:
                self._kept, self._text = {}, text
            wanted = matching_digests(now.texts, text, self._kept)
            self._made = (token, sender_figures(before, now, seconds_between(previous, current), wanted))
        return self._made[1]

    def detail(self, row: Dict[str, Any], server: Server, fleet: Optional[Fleet], config, view: DataView) -> Detail:
        text = row.get("full_text")
        title = f"Statement {row.get('digest')} on {server.key}: the ProxySQL digests that send it"
        lines: List[Line] = [(("Statement  ", "label"), (statements.one_line(text) or "(no digest text)", None)),
                             (("This server ", "label"),
                              (f"{units.number(row.get('count_s'))}/s, Time/s {units.milliseconds(row.get('time_s'))}, "
                               f"avg {units.milliseconds(row.get('avg_ms'))}"
                               f"{', schema ' + str(row.get('schema')) if row.get('schema') else ''}", None)), ()]
        if not self.watched(config):
            return Detail(title, tuple(lines + [((NO_PROXYSQL, "warning"),)]))
        hostgroups = server_hostgroups(server)
        interval = view.interval_in_force(QueryDigest.name)
        floor = getattr(config, "args", None)
        floor = getattr(floor, "digest_min_interval", None) or QueryDigest.default_interval
        lines.append(((f"Reads ProxySQL's {MYSQL_TABLES.digest} while this view is open, every "
                       f"{units.interval(interval) if interval else units.MISSING} (at least {floor:g} s apart, as "
                       "the Queries screen: each read copies ProxySQL's digest map).", "dim"),))
        fleet_discovers = bool(getattr(fleet, "discover", False))
        if hostgroups is None and not fleet_discovers:
            lines.append(((f"Which hostgroups of ProxySQL hold {server.key} is not known: runtime_mysql_servers is "
                           "not read (--no-discover).", "dim"),))
        elif hostgroups is None and view.latest(DISCOVERY) is None:
            lines.append((("reading ProxySQL's runtime_mysql_servers\u2026 (which hostgroups hold this server)", "dim"),))
        elif hostgroups is None:
            lines.append(((f"{server.key} is in no hostgroup of ProxySQL (runtime_mysql_servers does not list it): "
                           "the digests below, if any, went to other servers.", "warning"),))
        else:
            named = ", ".join(str(h) for h in hostgroups)
            lines.append(((f"{server.key} is in hostgroup{'s' if len(hostgroups) > 1 else ''} {named} of ProxySQL "
                           "(* below: a hostgroup of this server).", "dim"),))
        error = view.error(QueryDigest.name)
        senders = self.senders(view, text)
        lines.append(())
        if senders is None:
            lines.append(((error or "reading ProxySQL's digest\u2026", "warning" if error else "dim"),))
            return Detail(title, tuple(lines))
        if not senders:
            lines.append((("No ProxySQL digest has this statement's text (ProxySQL did not send it since its "
                           "digest was last reset, or the text differs).", "dim"),))
            return Detail(title, tuple(lines))
        header = "".join(f"{t:<{w}}" if f is str else f"{t:>{w - 1}} " for _k, t, w, f in COLUMNS)
        lines.append(((f"  {header}", "label"),))
        mine = {str(h) for h in hostgroups or ()}
        for figures in senders:
            mark = "* " if figures["hostgroup"] in mine else "  "
            lines.append(((mark + _cells(figures), None),))
        served = sorted({f["hostgroup"] for f in senders if f["count_s"]}, key=lambda h: to_number(h) or 0)
        lines += [(), (("Served by hostgroups  ", "label"), (digests.hostgroups_text(served) if served else
                                                             "none over the last interval", None)),
                  (("ProxySQL's figures are per hostgroup, user and schema over its last interval (the query cache "
                    "aside); this server's over its last two readings: compare rates, not counts.", "dim"),)]
        return Detail(title, tuple(lines))
