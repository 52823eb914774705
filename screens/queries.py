"""Queries: which queries cost ProxySQL's backends the most time right now, from the query
digest (stats_mysql_query_digest), and the query rules that route them.

One row per digest (``b`` groups by digest + hostgroup, + user or + schema instead), sorted
by Time/s: the milliseconds of query time per second the digest took over the last interval.
Enter opens a digest: its full text, latency, the split of the last interval by hostgroup,
user, schema and client, a Time/s sparkline, and its route through the runtime query rules
(proxytop.metrics.route), compared with the hostgroups that actually served it.

The digest table is expensive to read: it is read only while this screen (or QueryRules'
drill-down) is visible, every 5 s at the most and never sooner than 20 times the last read
took; the notes line shows what that costs.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from operator import itemgetter
import textwrap
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from proxytop.config.option_types import seconds
from proxytop.metrics import digests, units
from proxytop.screens import sparkline
from proxytop.collectors.digest import DEFAULT_FLOOR, MYSQL_TABLES, DigestVariables, QueryDigest, RuntimeUsers
from proxytop.core import Table
from proxytop.collectors.proxysql_stats import RuntimeQueryRules
from proxytop.collectors.sides import twin_name
from proxytop.metrics.rates import to_number
from proxytop.metrics.route import Query, Route, compile_rules, evaluate, parse_digest
from proxytop.metrics.sides import MYSQL, Side
from proxytop.screens.base import DataView, Detail, Screen, seconds_between
from proxytop.screens.backends import BackendsLink, hostgroup_figures
from proxytop.screens.sided import SidedScreen
from proxytop.screens.keys import Binding
from proxytop.screens.table import Column, Row, filter_rows

Segment = Tuple[str, Optional[str]]
WRAP = 100  # characters per line of the digest text in the drill-down
TEXT_IN_DETAIL = 16 * 1024  # characters of a digest text shown in the drill-down at most (160 lines)
SPARK_WIDTH = 60
ROUTES_SHOWN = 6  # (user, schema, client) combinations whose route the drill-down shows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Queries screen")
    group.add_argument("--digest-min-interval", type=min_interval, metavar="SECONDS",
                       help=f"shortest interval between two reads of the query digest (default {DEFAULT_FLOOR:g}; "
                            "each read copies ProxySQL's whole digest map, and it is never read sooner than 20 "
                            "times the last read took)")


min_interval = seconds(1, 3600, "the digest interval")  # --digest-min-interval


def per_second_ms(value: Any) -> str:
    """Time/s: milliseconds of query time per second (1,000 = one connection busy all the time).

    >>> per_second_ms(350.0), per_second_ms(2500), per_second_ms(None)
    ('350ms', '2.5s', '—')
    """
    return units.milliseconds(value)


def age(value: Any) -> str:
    """Since last seen: ProxySQL's last_seen is whole seconds."""
    return units.age(value)


def text_cell(value: Any) -> str:
    return "(no digest text)" if value is None else str(value)


COLUMNS = (
    Column("text", "Digest text", 44, "<", fmt=text_cell, numeric=False, priority=0, flexible=True,
           help="the query with its literals replaced by ?, one line"),
    Column("hg", "HG", 11, "<", numeric=False, priority=1, help="hostgroups that served it; cache = the query cache (-1)"),
    Column("count_s", "Count/s", 8, fmt=units.number, priority=0, help="executions per second over the interval"),
    Column("time_s", "Time/s", 8, unit="ms/s", fmt=per_second_ms, priority=0,
           help="ms of query time per second over the interval (Δsum_time/Δt; 1000 = one connection busy)"),
    Column("share", "Share", 6, fmt=units.percent, priority=1, help="share of all digests' Time/s"),
    Column("avg_ms", "Avg", 7, unit="ms", fmt=units.milliseconds, priority=1, help="average latency over the interval (Δsum_time/Δcount)"),
    Column("avg_life_ms", "AvgAll", 7, unit="ms", fmt=units.milliseconds, priority=3, help="average latency since first seen"),
    Column("max_ms", "Max", 7, unit="ms", fmt=units.milliseconds, priority=3, help="longest execution since first seen"),
    Column("sent_s", "Rows/s", 7, fmt=units.number, priority=4, help="rows sent per second over the interval"),
    Column("affected_s", "Aff/s", 7, fmt=units.number, priority=4, help="rows affected per second over the interval"),
    Column("seen_ago", "Last", 6, unit="s", fmt=age, priority=5, help="seconds since last seen (last_seen)"),
    Column("count", "Count", 8, fmt=units.number, priority=2, help="executions since first seen (count_star)"),
    Column("user", "User", 10, "<", numeric=False, priority=6, help="users that sent it"),
    Column("schema", "Schema", 10, "<", numeric=False, priority=7, help="schemas it ran in"),
    Column("digest", "Digest", 18, "<", numeric=False, priority=9, help="digest hash"),
)


def digest_collector(config) -> QueryDigest:
    """The digest collector with the floor --digest-min-interval chose (every screen that
    reads the digest makes it this way: the engine keeps the first one registered)."""
    floor = getattr(getattr(config, "args", None), "digest_min_interval", None)
    return QueryDigest(floor or DEFAULT_FLOOR)


# ----- what the screen computes from snapshots (pure, given the snapshots) ---------------------

def reading_of(snapshot) -> Optional[digests.Reading]:
    data = snapshot.data if snapshot is not None else None
    return data if isinstance(data, digests.Reading) else None


@dataclass(frozen=True)
class Frame:
    """What the Queries screen shows of the last two digest readings, worked out once per
    reading and grouping (notes and an open drill-down are drawn ten times a second)."""

    key: tuple  # (digest collector, grouping, when the two readings were taken)
    previous: Any  # the snapshots
    current: Any
    before: Optional[digests.Reading]
    now: Optional[digests.Reading]
    seconds: Optional[float]
    figures: List[tuple]  # each group's digests.FIGURES, heaviest first
    mass_reset: bool


def frame_of(view: DataView, name: str, fields: Sequence[str], kept: Optional[Frame]) -> Frame:
    """The Frame of collector ``name``'s last two readings: ``kept`` when it is theirs."""
    previous, current = view.pair(name)
    key = (name, tuple(fields), taken_at(previous), taken_at(current))
    if kept is not None and kept.key == key:
        return kept
    before, now = reading_of(previous), reading_of(current)
    seconds = seconds_between(previous, current)
    figures = digests.group_figures(before, now, seconds, fields)
    reset = before is not None and now is not None and digests.mass_reset(before, now)
    return Frame(key, previous, current, before, now, seconds, figures, reset)


def variables_of(view: DataView, name: str = DigestVariables.name) -> Optional[Mapping[str, Any]]:
    snapshot = view.latest(name)
    return snapshot.data if snapshot is not None else None


def users_of(snapshot) -> Optional[Dict[str, Mapping[str, Any]]]:
    """{username: its runtime_mysql_users row} (frontend rows), None when not read (stats user)."""
    if snapshot is None or not isinstance(snapshot.data, Table):
        return None
    users: Dict[str, Mapping[str, Any]] = {}
    for row in snapshot.data.dicts():
        if str(row.get("frontend", "1")) != "0" or row.get("username") not in users:
            users[row.get("username")] = row
    return users


def rules_of(snapshot):
    """The rules ProxySQL evaluates (active, by rule_id); None when they can't be read."""
    if snapshot is None or not isinstance(snapshot.data, Table):
        return None
    return compile_rules(snapshot.data.dicts())


def query_of(key: digests.RowKey, texts: Mapping[str, Optional[str]]) -> Query:
    return Query(digest=parse_digest(key[4]), digest_text=texts.get(key[4]), username=key[2],
                 schemaname=key[1], client_address=key[3])


def routes(current: digests.Reading, rules, iterations: int = 0, digest: Optional[str] = None) \
        -> Dict[Tuple[str, str, str, str], Route]:
    """The route of every (digest, user, schema, client) in a reading (or of one digest)."""
    found: Dict[Tuple[str, str, str, str], Route] = {}
    for key in current.entries:
        if digest is not None and key[4] != digest:
            continue
        who = (key[4], key[2], key[1], key[3])
        if who not in found:
            found[who] = evaluate(rules, query_of(key, current.texts), iterations)
    return found


class KeptRoutes:
    """:func:`routes` of every reading, each (digest, user, schema, client)'s route evaluated
    once and kept while the rules, the iterations and its digest text stay the same: at
    20,000 digests every route takes about 300 ms, the new rows' of a reading about 14 ms."""

    def __init__(self):
        self._rules: Any = None
        self._iterations = 0
        self._kept: Dict[Tuple[str, str, str, str], Tuple[Optional[str], Route]] = {}

    def routes(self, current: digests.Reading, rules, iterations: int = 0) -> Dict[Tuple[str, str, str, str], Route]:
        if rules != self._rules or iterations != self._iterations:
            self._rules, self._iterations, self._kept = rules, iterations, {}
        found: Dict[Tuple[str, str, str, str], Route] = {}
        kept: Dict[Tuple[str, str, str, str], Tuple[Optional[str], Route]] = {}
        for key in current.entries:
            who = (key[4], key[2], key[1], key[3])
            if who in found:
                continue
            text = current.texts.get(key[4])
            route = self._kept.get(who)
            if route is None or route[0] != text:
                route = (text, evaluate(rules, query_of(key, current.texts), iterations))
            kept[who] = route
            found[who] = route[1]
        self._kept = kept
        return found


def caught(rule_id: Any, previous: Optional[digests.Reading], current: digests.Reading, seconds: Optional[float],
           found: Mapping[Tuple[str, str, str, str], Route]) -> Tuple[List[Row], set]:
    """(The rows of the digests whose route passes ``rule_id`` (matched, not merely undecided),
    by Time/s; the digests that reach it undecided)."""
    matched, undecided = passing(rule_id, found)
    figures = digests.group_figures(previous, current, seconds, digests=matched)
    time_s = digests.FIGURES.index("time_s")
    figures.sort(key=lambda f: (f[time_s] is None, -(f[time_s] or 0.0)))
    return [digests.row(f) for f in figures], undecided


def passing(rule_id: Any, found: Mapping[Tuple[str, str, str, str], Route]) -> Tuple[set, set]:
    """(digests whose route passes the rule, digests that reach it undecided)."""
    wanted = to_number(rule_id)
    matched: set = set()
    undecided: set = set()
    for who, route in found.items():
        for step in route.steps:
            if step.rule.rule_id == wanted:
                (matched if step.matched else undecided).add(who[0])
    return matched, undecided


def explain(route: Route, served: Sequence[str], user: Optional[Mapping[str, Any]], username: str) -> List[List[Segment]]:
    """Why the hostgroups that served a query differ from its route's destination."""
    expected = route.destination
    where = f"hostgroup {expected} (rule {_setter(route)})" if expected is not None else None
    if expected is None:
        default = user.get("default_hostgroup") if user else None
        where = f"default hostgroup of user {username}: {default}" if default is not None else \
            f"default hostgroup of user {username} (not known)"
        expected = to_number(default) if default is not None else None
    lines: List[List[Segment]] = [[("    destination ", "label"), (where, "header")]]
    if route.answered_by_proxysql:
        lines.append([("    answered by ProxySQL itself (error_msg / OK_msg): ", "warning"),
                      (route.answered_by_proxysql, None)])
    others = []
    for hostgroup in served:
        number = to_number(hostgroup)
        if expected is not None and number == expected:
            continue
        if str(hostgroup) == "-1":
            reason = f"the query cache answered it (cache_ttl {units.milliseconds(route.cache_ttl)})" if route.cache_ttl else \
                "the query cache answered it (a rule set cache_ttl when it ran)"
            others.append(("cache", reason))
            continue
        maybe = [s.rule.rule_id for s in route.undecided if s.rule.destination == number]
        if maybe:
            reason = f"rule {', '.join(map(str, maybe))} sends it there when it matches (proxytop can't decide it)"
        elif user is not None and str(user.get("transaction_persistent")) == "1":
            reason = (f"inside a transaction: transaction_persistent=1 for {username} keeps a transaction on the "
                      "hostgroup where it began")
        else:
            reason = "not explained by the current rules (changed since it ran? mirroring or fast routing?)"
        others.append((str(hostgroup), reason))
    served_text = digests.hostgroups_text(served) if served else "(not in the last reading)"
    lines.append([("    served by   ", "label"), (served_text, None)])
    for hostgroup, reason in others:
        lines.append([(f"      {hostgroup}: ", "warning"), (reason, None)])
    return lines


def _setter(route: Route) -> str:
    for step in reversed(route.steps):
        if step.matched and step.rule.destination is not None:
            return str(step.rule.rule_id)
    return "?"


def route_lines(route: Route) -> List[List[Segment]]:
    lines: List[List[Segment]] = []
    if not route.steps:
        lines.append([("    no rule matches", "dim")])
    for step in route.steps:
        rule = step.rule
        head = f"    rule {rule.rule_id:<5} flagIN {step.flag_in:<4}"
        if step.matched:
            effects = []
            if rule.flag_out is not None:
                effects.append(f"flagOUT {rule.flag_out}")
            if rule.destination is not None:
                effects.append(f"\u2192 HG {rule.destination}")
            if rule.cache_ttl:
                effects.append(f"cache {units.milliseconds(rule.cache_ttl)}")
            effects.append("apply: ends here" if rule.apply else "apply=0: continues")
            line: List[Segment] = [(head, "label"), ("matched ", "good"), (", ".join(step.fields), None),
                                   ("   " + ", ".join(effects), "header")]
        else:
            line = [(head, "label"), ("can't decide ", "warning_bold"), ("; ".join(step.fields), "warning")]
            if rule.destination is not None:
                line.append((f"   (\u2192 HG {rule.destination} if it matches)", "dim"))
        if rule.comment:
            line.append((f"   {rule.comment}", "dim"))
        lines.append(line)
    if route.ended_by is None and route.steps:
        lines.append([("    no rule with apply=1 matched: the walk ended after the last rule", "dim")])
    return lines


def digest_detail(row: Row, previous: Optional[digests.Reading], current: Optional[digests.Reading],
                  seconds: Optional[float], history: Sequence, rules, rules_problem: Optional[str],
                  users: Optional[Mapping[str, Mapping[str, Any]]], iterations: int, fields: Sequence[str]) -> Detail:
    digest = row.get("digest")
    text = current.texts.get(digest) if current is not None else None
    lines: List[List[Segment]] = []
    if text is None:
        lines.append([("(no digest text: ProxySQL sent it NULL or empty)", "dim")])
    else:
        shown = text[:TEXT_IN_DETAIL]
        if len(text) > TEXT_IN_DETAIL:
            lines.append([(f"  ({units.number(len(text))} characters; the first {units.number(TEXT_IN_DETAIL)} are shown)", "warning")])
        for paragraph in shown.splitlines() or [""]:
            for piece in textwrap.wrap(paragraph, WRAP, break_long_words=True, replace_whitespace=True) or [""]:
                lines.append([("  " + piece, None)])
    lines.append([])
    lines.append([("digest       ", "label"), (str(digest), None),
                  ("   hostgroups ", "label"), (row.get("hg") or units.MISSING, None)])
    lines.append([("first seen   ", "label"), (_clock(row.get("first_seen")), None),
                  ("   last seen ", "label"), (_clock(row.get("last_seen")), None)])
    lines.append([("latency      ", "label"),
                  (f"min {units.milliseconds(row.get('min_ms'))}  avg {units.milliseconds(row.get('avg_life_ms'))}"
                   f"  max {units.milliseconds(row.get('max_ms'))} since first seen;  "
                   f"last interval avg {units.milliseconds(row.get('avg_ms'))}", None)])
    lines.append([("now          ", "label"),
                  (f"{units.number(row.get('count_s'))}/s, Time/s {per_second_ms(row.get('time_s'))}"
                   f" ({units.percent(row.get('share'))} of all), {units.number(row.get('count'))} in total", None)])
    series = digests.time_series([(s.taken_at, _totals(s)) for s in history], digest)
    if any(v is not None for v in series):
        shown_series = series[-SPARK_WIDTH:]
        peak = max((v for v in shown_series if v is not None), default=None)
        lines.append([("Time/s       ", "label"), (sparkline.sparkline(shown_series), "header"),
                      (f"  max {per_second_ms(peak)}", "dim")])
    else:
        lines.append([("Time/s       ", "label"), ("(the sparkline fills as readings arrive)", "dim")])
    lines.append([])
    lines.append([("Last interval by hostgroup, user, schema, client", "header")])
    if current is not None:
        parts = digests.split(previous, current, digest, seconds)
        if not any(parts.values()):
            lines.append([("  (no rate yet: two readings are needed, and none across a reset)", "dim")])
        for name, values in parts.items():
            for value, count_s, time_s in values[:8]:
                lines.append([(f"  {name:<15}", "label"), (f"{value:<24}", None),
                              (f"{units.number(count_s):>10}/s  Time/s {per_second_ms(time_s):>9}", None)])
    lines.append([])
    lines += route_section(row, current, rules, rules_problem, users, iterations, fields)
    return Detail(f"Digest {digest}", tuple(tuple(line) for line in lines))


def route_section(row: Row, current: Optional[digests.Reading], rules, rules_problem: Optional[str],
                  users, iterations: int, fields: Sequence[str]) -> List[List[Segment]]:
    lines: List[List[Segment]] = [[("Route through the runtime query rules", "header")]]
    if rules_problem:
        lines.append([("  " + rules_problem, "dim")])
        return lines
    if rules is None or current is None:
        lines.append([("  reading the rules\u2026", "dim")])
        return lines
    digest = row.get("digest")
    group = row.get("_id")
    served: Dict[Tuple[str, str, str], List[str]] = {}
    texts = current.texts
    for key in current.entries:
        if key[4] != digest or (fields and digests.group_of(key, fields) != group):
            continue
        served.setdefault((key[2], key[1], key[3]), []).append(key[0])
    for n, ((username, schemaname, client), hostgroups) in enumerate(sorted(served.items())):
        if n >= ROUTES_SHOWN:
            lines.append([(f"  \u2026 and {len(served) - ROUTES_SHOWN} more (user, schema, client) combinations", "dim")])
            break
        route = evaluate(rules, Query(parse_digest(digest), texts.get(digest), username, schemaname, client), iterations)
        who = f"  user {username or '(none)'}, schema {schemaname or '(none)'}" + (f", client {client}" if client else "")
        lines.append([(who, "label"), (f"   ({len(rules)} active rules, in rule_id order)", "dim")])
        lines += route_lines(route)
        lines += explain(route, hostgroups, (users or {}).get(username), username or "(none)")
    return lines


def _totals(snapshot) -> Optional[digests.DigestTotals]:
    data = snapshot.data if snapshot is not None else None
    if isinstance(data, digests.Reading):  # the two newest readings are kept whole
        return digests.totals(data)
    return data if isinstance(data, digests.DigestTotals) else None


def _clock(epoch: Any) -> str:
    number = to_number(epoch)
    if not number:
        return units.MISSING
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(number))


# ----- the screen ---------------------------------------------------------------------------------

class QueriesScreen(SidedScreen, Screen):
    key = "queries"
    title = "Queries"
    short_title = "Qry"
    columns = COLUMNS
    pgsql_titles = {"schema": ("Database", "databases it ran in")}
    default_sort = ("time_s", True)
    default_interval = DEFAULT_FLOOR
    uses_fleet = True  # the link (S) shows the MySQL servers' side of a digest
    bindings = (
        Binding(("b",), "by", "group by: digest, digest + hostgroup, digest + user, digest + schema", "b by"),
        Binding(("S",), "backends", "the selected digest on each backend its hostgroups route to, beside ProxySQL's "
                "figures (the servers' performance_schema, read while open)", "S backends"),
    )

    def __init__(self, config=None, fleet=None):
        super().__init__(config)
        self.options["by"] = 0
        self.fleet = fleet  # the MySQL servers (None: the link says it knows none)
        self._frame: Optional[Frame] = None
        self._detail: Tuple[Any, Optional[Detail]] = (None, None)
        self.link = BackendsLink()
        self.link_open = False  # the detail shown is the link's (S), not the digest's (Enter)
        self._served: Tuple[Any, Dict[str, dict]] = (None, {})

    def collectors(self):
        return [digest_collector(self.config), RuntimeQueryRules(), RuntimeUsers(), DigestVariables()]

    def arrange(self, rows: Sequence[Row], state) -> List[Row]:
        """The table model's arrange, with a faster sort on numeric columns: their values here
        are always numbers or None (20,000 digests sort in a few milliseconds, by the figures
        of rows not made whole yet)."""
        column = next((c for c in self.columns if c.key == state.sort_key), None)
        if column is None or not column.numeric or not state.filter.empty:
            self.complete_rows(rows, None)  # the cells' texts are sorted or filtered
        if column is None or not column.numeric:
            return super().arrange(rows, state)
        visible = filter_rows(rows, self.columns, state.filter)
        key = state.sort_key
        at = digests.FIGURES.index(key)
        value = itemgetter(key) if not visible or "_figures" not in visible[0] else lambda r: r["_figures"][at]
        present = [r for r in visible if value(r) is not None]
        present.sort(key=value, reverse=state.descending)  # stable: heaviest first among equals
        return present + [r for r in visible if value(r) is None]

    @property
    def grouping(self) -> Tuple[str, Tuple[str, ...]]:
        return digests.GROUPINGS[self.options.get("by", 0) % len(digests.GROUPINGS)]

    def frame(self, view: DataView) -> Frame:
        self._frame = frame_of(view, self.on_side(QueryDigest.name), self.grouping[1], self._frame)
        return self._frame

    def rows(self, view: DataView) -> List[Row]:
        """A row per group holding its figures; made whole (:meth:`complete_rows`) when shown."""
        return [{"_id": figures[0], "_figures": figures} for figures in self.frame(view).figures]

    def complete_rows(self, rows: Sequence[Row], view: Optional[DataView]) -> None:
        for row in rows:
            if "digest" not in row:
                row.update(digests.row(row["_figures"]))

    # --- notes -------------------------------------------------------------------------------
    def notes(self, view: DataView):
        frame = self.frame(view)
        variables = variables_of(view, self.on_side(DigestVariables.name))
        session = getattr(view.source("proxysql"), "session", None)
        if frame.current is None:
            return [(("reading the query digest\u2026 (it is read only while this screen is visible)", "dim"),)]
        if frame.current.data is None:
            return [((f"This ProxySQL has no {MYSQL_TABLES.digest} table.", "warning"),)]
        return [self._cost_line(view, frame)] + self._notes(frame, variables, session)

    def _cost_line(self, view: DataView, frame: Frame) -> Tuple[Segment, ...]:
        """What reading the digest costs ProxySQL: its size, the last read, the interval in force."""
        interval = view.interval_in_force(self.on_side(QueryDigest.name))
        current, now = frame.current, frame.now
        read_at = time.strftime("%H:%M:%S", time.localtime(current.wall_time))
        return (("Digest  ", "label"), (f"{units.number(len(now.entries))} rows, {units.number(len(now.texts))} digests", None),
                (f"   read at {read_at} in {units.milliseconds(current.duration * 1000.0)}", None),
                (f"   every {units.interval(interval)}" if interval else "", None),
                (f"   by {self.grouping[0]} (b)", "label"),
                ("   each read copies ProxySQL's digest map: read only here, \u2265 20\u00d7 the read time apart", "dim"))

    def _notes(self, frame: Frame, variables, session):
        lines = []
        now = frame.now
        read_at = time.strftime("%H:%M:%S", time.localtime(frame.current.wall_time))
        if frame.mass_reset:
            lines.append(((f"digest statistics were reset at {read_at}: no rates for this interval", "warning_bold"),))
        if variables is not None and str(variables.get(self.side.variable(MYSQL_TABLES.enabled_variable),
                                                       "true")).lower() in ("false", "0"):
            lines.append(((f"{MYSQL_TABLES.enabled_variable}=false: ProxySQL collects no query digests "
                           "(SET mysql-query_digests='true'; LOAD MYSQL VARIABLES TO RUNTIME)", "warning_bold"),))
        elif not now.entries:
            hint = "" if variables is not None else " (or mysql-query_digests=false: an admin user can tell)"
            lines.append(((f"The digest is empty: no queries since it was last reset{hint}.", "dim"),))
        # history_mysql_query_digest: the MySQL side's digest; ProxySQL 3.0 has no pgsql twin of the setting
        if self.side is MYSQL and variables is not None \
                and str(variables.get("admin-stats_mysql_query_digest_to_disk", "0")) not in ("0", ""):
            lines.append((("admin-stats_mysql_query_digest_to_disk is on: ProxySQL empties the digest periodically "
                           "(those intervals have no rates)", "dim"),))
        if now.null_counters:
            rows = "1 row" if now.null_counters == 1 else f"{now.null_counters} rows"
            lines.append(((f"{rows} with NULL or non-numeric counters: no rates for "
                           f"{'it' if now.null_counters == 1 else 'them'}", "warning"),))
        if session is not None and not session.is_admin:
            lines.append((("Routes (Enter) need an admin user: the stats user can't read runtime_mysql_query_rules.",
                           "dim"),))
        return lines

    # --- drill-down ----------------------------------------------------------------------------
    live_detail = True

    def mysql_hostgroups(self, row: Row) -> Tuple[int, ...]:
        """The hostgroups that served the digest (not the query cache's -1)."""
        if row.get("_kind") == "subtotal" or getattr(self, "side", MYSQL) != MYSQL:
            return ()
        return tuple(int(h) for h in str(row.get("hg") or "").split(",") if h.strip().isdigit())

    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        frame = self.frame(view)
        if self.link_open:
            return self._link_detail(row, frame, view)
        rules_snapshot = view.latest(self.on_side(RuntimeQueryRules.name))
        users_snapshot = view.latest(self.on_side(RuntimeUsers.name))
        variables = variables_of(view, self.on_side(DigestVariables.name)) or {}
        session = getattr(view.source("proxysql"), "session", None)
        admin = session is None or session.is_admin
        # rebuilt ten times a second while open (live_detail): worked out once per reading (about 20 ms
        # at 20,000 digests: the sparkline looks its digest up in 60 readings)
        key = (row.get("_id"), frame.key, taken_at(rules_snapshot), taken_at(users_snapshot), variables, admin)
        if self._detail[0] != key:
            problem = None if admin else "Routes need an admin user: the stats user can't read runtime_mysql_query_rules."
            iterations = int(to_number(variables.get(self.side.variable(MYSQL_TABLES.iterations_variable))) or 0)
            fresh = next((digests.row(f) for f in frame.figures if f[0] == row.get("_id")), row)  # it follows new readings
            self._detail = (key, digest_detail(fresh, frame.before, frame.now, frame.seconds,
                                               view.history(self.on_side(QueryDigest.name)), rules_of(rules_snapshot),
                                               problem, users_of(users_snapshot), iterations, self.grouping[1]))
        return self._detail[1]

    # --- the link to the MySQL servers (S) -----------------------------------------------------
    def _served_by(self, row: Row, frame: Frame) -> Dict[str, dict]:
        """ProxySQL's figures of the row's digest per hostgroup (the query cache aside)."""
        if frame.now is None:
            return {}
        key = (row.get("_id"), frame.key)
        if self._served[0] != key:  # once per reading: the view is drawn ten times a second
            self.complete_rows([row], None)
            self._served = (key, hostgroup_figures(frame.before, frame.now, frame.seconds, row.get("digest"),
                                                   row.get("_id"), self.grouping[1]))
        return self._served[1]

    def _link_detail(self, row: Row, frame: Frame, view: DataView) -> Detail:
        if self.fleet is not None:
            self.fleet.sync_discovered()  # backends discovered since (no I/O)
        self.complete_rows([row], view)
        text = frame.now.texts.get(row.get("digest")) if frame.now is not None else None
        return self.link.detail(row, text, self._served_by(row, frame), self.fleet, view)

    def detail_collectors(self, row: Row) -> List[str]:
        if not self.link_open or self._frame is None:
            return []
        return self.link.collectors(self.fleet, list(self._served_by(row, self._frame)))

    def detail_closed(self) -> None:
        self.link_open = False

    def on_show(self, selected) -> None:
        self.link_open = False  # a detail left by switching screens: Enter opens the digest's again

    def action_backends(self, controller) -> None:
        if self.side is not MYSQL:
            controller.say("the MySQL servers' statements are for the MySQL side's digests")
            return
        row = controller.selected_row()
        if row is None or ("digest" not in row and "_figures" not in row):
            controller.say("no digest selected", "error")
            return
        self.link_open = True
        controller.do_open()

    def action_by(self, controller) -> None:
        self.options["by"] = (self.options.get("by", 0) + 1) % len(digests.GROUPINGS)
        controller.say(self.side.text(f"grouped by {self.grouping[0]}"))  # by digest + database on PostgreSQL


SCREEN = QueriesScreen


def taken_at(snapshot) -> Optional[float]:
    return snapshot.taken_at if snapshot is not None else None


# ----- QueryRules' drill-down: the queries a rule catches ----------------------------------------
CAUGHT_SHOWN = 15


class CaughtQueries:
    """What QueryRules' drill-down shows of a side's digest for a rule, worked out once per
    digest reading; each (digest, user, schema, client)'s route is kept (see KeptRoutes)."""

    def __init__(self):
        self.kept_routes = KeptRoutes()
        self._kept: Tuple[Any, Any] = (None, None)

    def of(self, rule_id: Any, view: DataView, side: Side = MYSQL) -> Optional[Tuple[List[Row], set]]:
        """:func:`caught`, or None while the digest or the rules are not read."""
        previous, current = view.pair(twin_name(QueryDigest.name, side))
        rules_snapshot = view.latest(twin_name(RuntimeQueryRules.name, side))
        variables = variables_of(view, twin_name(DigestVariables.name, side)) or {}
        iterations = int(to_number(variables.get(side.variable(MYSQL_TABLES.iterations_variable))) or 0)
        key = (rule_id, taken_at(previous), taken_at(current), taken_at(rules_snapshot), iterations)
        if self._kept[0] != key:
            now, rules = reading_of(current), rules_of(rules_snapshot)
            found = None if now is None or rules is None else self.kept_routes.routes(now, rules, iterations)
            self._kept = (key, None if found is None else
                          caught(rule_id, reading_of(previous), now, seconds_between(previous, current), found))
        return self._kept[1]


def rule_destination(rule_id: Any, rules: Optional[Any]) -> Optional[str]:
    """The rule's destination_hostgroup as the digest names hostgroups (None: it sets none).

    >>> rule_destination("2", type("S", (), {"data": Table(("rule_id", "destination_hostgroup"), (("1", "10"), ("2", "20")))}))
    '20'
    """
    table = rules.data if rules is not None else None
    if not isinstance(table, Table) or not table.has("rule_id") or not table.has("destination_hostgroup"):
        return None
    id_at, destination_at = table.columns.index("rule_id"), table.columns.index("destination_hostgroup")
    for row in table.rows:
        if str(row[id_at]) == str(rule_id):
            value = row[destination_at]
            return None if value in (None, "", "-1") else digests.hostgroups_text([str(value)])
    return None


def caught_section(rule_id: Any, view: DataView, caught: CaughtQueries, side: Side = MYSQL) \
        -> Tuple[Tuple[Segment, ...], ...]:
    """Lines for QueryRules' drill-down: the digests of ``side`` whose route passes this rule, by Time/s."""
    lines: List[Tuple[Segment, ...]] = [(), (("Queries this rule catches", "header"),
                                             ("  (from the query digest, read while this view is open; "
                                              "routes computed by proxytop)", "dim"))]
    found = caught.of(rule_id, view, side)
    if found is None:
        lines.append((("  reading the query digest\u2026", "dim"),))
        return tuple(lines)
    shown, undecided = found
    if not shown:
        lines.append((("  no digest in the digest table meets this rule", "dim"),))
    for row in shown[:CAUGHT_SHOWN]:
        lines.append(((f"  {per_second_ms(row.get('time_s')):>9} Time/s  {units.number(row.get('count_s')):>6}/s  ", None),
                      (f"HG {row.get('hg') or units.MISSING:<10} ", "label"), (row.get("text") or "(no digest text)", None)))
    if len(shown) > CAUGHT_SHOWN:
        lines.append(((f"  \u2026 and {len(shown) - CAUGHT_SHOWN} more digests", "dim"),))
    destination = rule_destination(rule_id, view.latest(twin_name(RuntimeQueryRules.name, side)))
    if destination is not None and any(row.get("hg") != destination for row in shown[:CAUGHT_SHOWN]):
        for text in (f"  HG is where ProxySQL served each query; it differs from this rule's destination_hostgroup {destination}",
                     "  when a later rule sends it elsewhere, the query cache answered it (cache), or a transaction that",
                     "  transaction_persistent=1 keeps where it began carried it there (Enter on it in Queries says which)"):
            lines.append(((text, "dim"),))
    if undecided:
        lines.append(((f"  {len(undecided)} more digests reach this rule, but proxytop can't decide whether it "
                       "matches them (match_pattern, proxy address or client address)", "warning"),))
    return tuple(lines)
