"""QueryRules: which query rules match how much traffic, and where they send it.

One row per rule: the runtime definition (runtime_mysql_query_rules) joined with its hits
(stats_mysql_query_rules), plus the rules only the configuration (mysql_query_rules) holds —
inactive ones, or edits not loaded to runtime — dimmed. Enter opens a rule: every column of
its definition, hits/s over the last minutes, and whether the configuration differs from
runtime. The read-only stats user sees only rule ids and hits.

``LOAD MYSQL QUERY RULES TO RUNTIME`` sets every rule's hits back to 0: that interval has no
rate (never a negative one).
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from proxytop.collectors.digest import QueryDigest
from proxytop.collectors.proxysql_stats import ConfigQueryRules, QueryRuleHits, RuleHits, RuntimeQueryRules
from proxytop.metrics import units
from proxytop.metrics.rates import COUNTER_REFRESH, SteadyPair, counter_total, rate, to_number, whole_numbers
from proxytop.screens.asks import asks_line
from proxytop.screens.base import DataView, Detail, Screen, seconds_between
from proxytop.screens.queries import CaughtQueries, caught_section, digest_collector, taken_at
from proxytop.screens.sided import SidedScreen
from proxytop.screens import sparkline
from proxytop.screens.table import Column, Row

SPARK_WIDTH = 60

Segment = Tuple[str, Optional[str]]


def _key(value: Any) -> Any:
    number = to_number(value)
    return int(number) if number is not None and number == int(number) else value


def _keys(values: Sequence[Any]) -> List[Any]:
    """_key of each value: rule ids as sent are texts of digits, turned into ints in one pass."""
    numbers = whole_numbers(values)
    return numbers if numbers is not None else [_key(value) for value in values]


def _empty(value: Any) -> bool:
    return value is None or value == ""


def _yes(value: Any) -> Optional[str]:
    number = to_number(value)
    if number is None:
        return None
    return "yes" if number else "no"


def hits_by_rule(snapshot) -> Dict[Any, Any]:
    """{rule_id: hits} of one reading."""
    if snapshot is None or snapshot.data is None:
        return {}
    if isinstance(snapshot.data, RuleHits):  # an older reading, kept small for the sparkline
        pairs = list(snapshot.data.items())
        return dict(zip(_keys([rule_id for rule_id, _ in pairs]), (hits for _, hits in pairs)))
    table = snapshot.data
    if not table.has("rule_id"):
        return {}
    id_at = table.columns.index("rule_id")
    keys = _keys([row[id_at] for row in table.rows])
    if not table.has("hits"):
        return dict.fromkeys(keys)
    hits_at = table.columns.index("hits")
    hits = [row[hits_at] for row in table.rows]
    return dict(zip(keys, whole_numbers(hits) or hits))  # counts as ints when all are plain


def definitions(snapshot) -> Optional[Dict[Any, Mapping]]:
    """{rule_id: definition} from a rules table snapshot; None when unknown (no reading yet,
    or the stats user, who can't read the rule tables)."""
    if snapshot is None or snapshot.data is None:
        return None
    # NULL columns left out (most of a rule's 35 are): thousands of rules are held as these,
    # and .get() answers None for them just the same.
    table = snapshot.data
    if not table.has("rule_id"):
        return {}
    id_at = table.columns.index("rule_id")
    return {_key(row[id_at]): {c: v for c, v in zip(table.columns, row) if v is not None} for row in table.rows}


def match_text(rule: Mapping) -> str:
    """What a rule matches, in one cell: match_digest as is, match_pattern marked ``query~``,
    a digest marked ``digest=``, negation as ``NOT``; ``(any)`` when nothing is matched on.

    >>> match_text({"match_digest": "^SELECT", "negate_match_pattern": "0"})
    '^SELECT'
    >>> match_text({"match_pattern": "^DELETE", "negate_match_pattern": "1"})
    'NOT query~ ^DELETE'
    >>> match_text({"digest": "0x3A2B", "match_digest": None}), match_text({"username": "reporting"})
    ('digest=0x3A2B', '(any)')
    """
    negate = bool(to_number(rule.get("negate_match_pattern")))
    parts = []
    if not _empty(rule.get("digest")):
        parts.append(f"digest={rule.get('digest')}")
    if not _empty(rule.get("match_digest")):
        parts.append(("NOT " if negate else "") + str(rule.get("match_digest")))
    if not _empty(rule.get("match_pattern")):
        parts.append(("NOT " if negate else "") + "query~ " + str(rule.get("match_pattern")))
    return " & ".join(parts) if parts else "(any)"


def flags_text(rule: Mapping) -> Optional[str]:
    """flagIN → flagOUT (flagIN alone when the rule sets no flagOUT).

    >>> flags_text({"flagIN": "0", "flagOUT": "100"}), flags_text({"flagIN": "100", "flagOUT": None})
    ('0\u2192100', '100')
    """
    flag_in, flag_out = rule.get("flagIN"), rule.get("flagOUT")
    if _empty(flag_in) and _empty(flag_out):
        return None
    text = "0" if _empty(flag_in) else str(flag_in)
    return text if _empty(flag_out) else f"{text}\u2192{flag_out}"


def differences(runtime: Mapping, config: Mapping) -> List[Tuple[str, Any, Any]]:
    """Columns whose value differs between runtime and configuration: (column, runtime, config).

    >>> differences({"rule_id": "1", "cache_ttl": None}, {"rule_id": "1", "cache_ttl": "500"})
    [('cache_ttl', None, '500')]
    """
    if runtime == config:  # the usual case, decided in one comparison (thousands of rules)
        return []
    found = []
    for column in list(runtime) + [c for c in config if c not in runtime]:
        old, new = runtime.get(column), config.get(column)
        if (None if _empty(old) else str(old)) != (None if _empty(new) else str(new)):
            found.append((column, old, new))
    return found


def definition_fields(runtime: Optional[Dict[Any, Mapping]], config: Optional[Dict[Any, Mapping]]) -> Dict[Any, Row]:
    """Pure: the part of each rule's row that depends only on the definitions (runtime and
    configuration), by rule_id. Definitions change every few seconds at most, hits every
    interval: with thousands of rules this is computed once per reading of the definitions."""
    runtime = runtime or {}
    config = config or {}
    fields: Dict[Any, Row] = {}
    for rule_id in list(runtime) + [i for i in config if i not in runtime]:
        at_runtime = rule_id in runtime
        definition = runtime.get(rule_id) or config.get(rule_id) or {}
        in_config = config.get(rule_id)
        differs = bool(at_runtime and config and (in_config is None or differences(runtime[rule_id], in_config)))
        active = _yes(definition.get("active")) if definition else None
        if active and differs:
            active += "*"
        row: Row = {
            "active": active,
            "match": match_text(definition) if definition else None,
            "dest": _key(definition.get("destination_hostgroup")) if definition else None,
            "apply": _yes(definition.get("apply")) if definition else None,
            "flags": flags_text(definition) if definition else None,
            "cache_ttl": to_number(definition.get("cache_ttl")) if definition else None,
            "user": definition.get("username") or None,
            "schema": definition.get("schemaname") or definition.get("database") or None,
            "comment": definition.get("comment") or None,
            "_at_runtime": at_runtime,
            "_differs": differs,
        }
        if definition and not at_runtime:
            row["_style"] = "dim"
        fields[rule_id] = row
    return fields


_NO_DEFINITION: Row = {"active": None, "match": None, "dest": None, "apply": None, "flags": None,
                       "cache_ttl": None, "user": None, "schema": None, "comment": None,
                       "_at_runtime": False, "_differs": False}


def rule_rows(previous, current, runtime: Optional[Dict[Any, Mapping]],
              config: Optional[Dict[Any, Mapping]], fields: Optional[Dict[Any, Row]] = None,
              seconds: Optional[float] = None) -> List[Row]:
    """Pure: hits snapshots + rule definitions -> one row per rule.

    ``runtime`` / ``config`` map rule_id to the definition (None when unknown). Rules only in
    the configuration are dimmed; a rule whose configuration differs from runtime is marked.
    ``fields`` is ``definition_fields(runtime, config)`` when the caller keeps it. ``seconds``
    is the time the hits' difference covers (by default the time between the readings).
    """
    if seconds is None:
        seconds = seconds_between(previous, current)
    now, before = hits_by_rule(current), hits_by_rule(previous)
    runtime = runtime or {}
    config = config or {}
    if fields is None:
        fields = definition_fields(runtime, config)
    ids = list(runtime) + [i for i in now if i not in runtime] + \
        [i for i in config if i not in runtime and i not in now]
    rows: List[Row] = []
    for rule_id in ids:
        hits = now.get(rule_id)
        row: Row = {
            "_id": rule_id,
            "rule_id": rule_id,
            "hits": to_number(hits),
            "hits_s": rate(before.get(rule_id), hits, seconds) if rule_id in before else None,
            "share": None,
        }
        row.update(fields.get(rule_id, _NO_DEFINITION))
        rows.append(row)
    total = sum(r["hits_s"] for r in rows if r["hits_s"] is not None)
    for row in rows:
        if row["hits_s"] is not None and total > 0:
            row["share"] = 100.0 * row["hits_s"] / total
    return rows


def total_hits(data) -> Any:
    """What tells two readings of stats_mysql_query_rules apart: the sum of all hits (ProxySQL
    adds each worker thread's hits about once a second; between updates nothing moves).

    >>> from proxytop.core import Table
    >>> total_hits(Table(("rule_id", "hits"), (("1", "10"), ("2", "5"))))
    15
    """
    if isinstance(data, RuleHits):
        return sum(count for count in data.hits if count > 0)
    if not data.has("hits"):
        return data.rows
    at = data.columns.index("hits")
    return counter_total([row[at] for row in data.rows])


def hits_series(history: Sequence, rule_id: Any) -> List[Optional[float]]:
    """hits/s of one rule for each interval between consecutive readings (None across a reset
    or a gap). A reading in which no rule's hits moved saw no update from ProxySQL (it adds
    its threads' hits about once a second), not an interval without traffic: the rate of the
    update that follows is spread over it; readings unchanged for longer than
    proxytop.metrics.rates.COUNTER_REFRESH are an interval without traffic.

    Readings 1 s apart whose hits went 10, 10, 30 (no update at 1 s): 10/s for both intervals.

    >>> from proxytop.core import Snapshot, Table
    >>> readings = [Snapshot("h", Table(("rule_id", "hits"), ((i, str(n)),)), float(t), 0.0)
    ...             for t, (i, n) in enumerate((("1", 10), ("1", 10), ("1", 30)))]
    >>> hits_series(readings, 1)
    [10.0, 10.0]
    """
    counts = [_hits_of(snapshot, rule_id) for snapshot in history]
    keys = [total_hits(s.data) if s is not None and s.data is not None else None for s in history]
    series: List[Optional[float]] = []
    n = 0
    while n < len(history) - 1:
        end = n + 1  # the next reading that shows an update (or the last one)
        while end < len(history) - 1 and keys[end] == keys[n] and keys[end] is not None:
            end += 1
        before, now = counts[n], counts[end]
        if keys[end] == keys[n] and keys[n] is not None and end == len(history) - 1:
            # no update up to the latest reading: no traffic once that lasted long enough
            quiet = history[end].taken_at - history[n].taken_at > COUNTER_REFRESH
            value = 0.0 if quiet and before is not _ABSENT else None
            series.extend([value] * (end - n))
            break
        if before is _ABSENT or now is _ABSENT:
            value = None
        else:
            value = rate(before, now, seconds_between(history[n], history[end]))
        series.extend([value] * (end - n))
        n = end
    return series


_ABSENT = object()


def _hits_of(snapshot, rule_id: Any) -> Any:
    """One rule's hits in one reading (_ABSENT when the rule isn't in it)."""
    data = snapshot.data if snapshot is not None else None
    if data is None:
        return _ABSENT
    if isinstance(data, RuleHits):
        return data.get(str(rule_id), _ABSENT)
    id_at, hits_at = data.columns.index("rule_id"), data.columns.index("hits")
    for row in data.rows:
        if _key(row[id_at]) == rule_id:
            return row[hits_at]
    return _ABSENT


def runtime_state(rule_id: Any, runtime: Optional[Dict[Any, Mapping]],
                  config: Optional[Dict[Any, Mapping]]) -> List[Segment]:
    """One line: does the configuration (mysql_query_rules) match runtime for this rule?"""
    if runtime is None or config is None:
        return [("configuration vs runtime: not read yet", "dim")]
    at_runtime, in_config = runtime.get(rule_id), config.get(rule_id)
    if at_runtime is not None and in_config is not None:
        changed = differences(at_runtime, in_config)
        if not changed:
            return [("runtime matches the configuration (mysql_query_rules)", "good")]
        names = ", ".join(column for column, _old, _new in changed)
        return [("mysql_query_rules differs from runtime: not loaded to runtime", "warning_bold"),
                (f" ({names})", "warning")]
    if at_runtime is not None:
        return [("deleted from mysql_query_rules but still at runtime: not loaded to runtime", "warning_bold")]
    if in_config is not None:
        if not to_number(in_config.get("active")):
            return [("inactive (active=0): only in mysql_query_rules, not at runtime", "dim")]
        return [("in mysql_query_rules but not at runtime: not loaded to runtime", "warning_bold")]
    return [("not in runtime_mysql_query_rules nor mysql_query_rules (deleted and reloaded?)", "dim")]


def rule_detail(row: Row, history: Sequence, runtime: Optional[Dict[Any, Mapping]],
                config: Optional[Dict[Any, Mapping]], admin: bool) -> Detail:
    """Enter on a rule: hits, hits/s sparkline, runtime vs configuration, every set column."""
    rule_id = row.get("rule_id")
    series = hits_series(history, rule_id)
    lines: List[List[Segment]] = [
        [("hits         ", "label"), (f"{units.number(row.get('hits'))} since the rules were last loaded", None),
         ("   hits/s ", "label"), (units.number(row.get("hits_s")), "header")],
    ]
    if series:
        span = history[-1].taken_at - history[0].taken_at if len(history) > 1 else 0.0
        shown = series[-SPARK_WIDTH:]
        peak = max((v for v in shown if v is not None), default=None)
        lines.append([("hits/s       ", "label"), (sparkline.sparkline(shown), "header"),
                      (f"  last {units.duration(span if len(shown) == len(series) else span * len(shown) / len(series))}"
                       f", max {units.number(peak)}/s", "dim")])
    else:
        lines.append([("hits/s       ", "label"), ("(the sparkline fills as readings arrive)", "dim")])
    if not admin:
        lines += [[], [("Rule definitions need an admin user: the stats user can't read "
                        "runtime_mysql_query_rules or mysql_query_rules.", "dim")]]
        return Detail(f"Query rule {rule_id}", tuple(tuple(line) for line in lines))
    lines.append([("state        ", "label")] + runtime_state(rule_id, runtime, config))
    lines.append([])
    definition = (runtime or {}).get(rule_id)
    source = "Runtime definition (runtime_mysql_query_rules)"
    if definition is None:
        definition = (config or {}).get(rule_id)
        source = "Configuration (mysql_query_rules)"
    if definition is None:
        lines.append([("no definition read yet", "dim")])
    else:
        lines.append([(source, "header")])
        in_config = (config or {}).get(rule_id)
        changed = {c for c, _o, _n in differences(definition, in_config)} if (in_config and runtime and rule_id in runtime) else set()
        for column, value in definition.items():
            if _empty(value):
                continue
            line: List[Segment] = [(f"  {column:<22}", "label"), (str(value), None)]
            if column in changed:
                line.append((f"   configuration: {in_config.get(column)}", "warning"))
            lines.append(line)
        for column in sorted(changed - {c for c, v in definition.items() if not _empty(v)}):
            lines.append([(f"  {column:<22}", "label"), ("(empty)", "dim"),
                          (f"   configuration: {in_config.get(column)}", "warning")])
    return Detail(f"Query rule {rule_id}", tuple(tuple(line) for line in lines))


ADMIN_COLUMNS = (
    Column("rule_id", "Rule", 5, priority=0, graphed=False),
    Column("hits_s", "Hits/s", 8, fmt=units.number, priority=0, help="hits per second over the interval"),
    Column("hits", "Hits", 8, fmt=units.number, priority=1, help="hits since the rules were last loaded to runtime"),
    Column("share", "Share", 6, fmt=units.percent, priority=2, help="share of all rule hits in the interval"),
    Column("active", "Active", 6, "<", numeric=False, priority=3,
           help="no = inactive (only in mysql_query_rules, dimmed); * = mysql_query_rules differs from runtime"),
    Column("match", "Match", 30, "<", numeric=False, priority=0, flexible=True,
           help="match_digest; query~ = match_pattern; digest= = digest; NOT = negate_match_pattern"),
    Column("dest", "HG", 4, priority=1, help="destination_hostgroup"),
    Column("apply", "Apply", 5, "<", numeric=False, priority=4),
    Column("flags", "Flags", 9, "<", numeric=False, priority=5, help="flagIN \u2192 flagOUT"),
    Column("cache_ttl", "Cache", 7, unit="ms", fmt=units.milliseconds, priority=5, help="cache_ttl"),
    Column("user", "User", 10, "<", numeric=False, priority=6, help="username the rule applies to"),
    Column("schema", "Schema", 10, "<", numeric=False, priority=7, help="schemaname the rule applies to"),
    Column("comment", "Comment", 20, "<", numeric=False, priority=5),
)
STATS_COLUMNS = tuple(c for c in ADMIN_COLUMNS if c.key in ("rule_id", "hits_s", "hits", "share"))


class QueryRulesScreen(SidedScreen, Screen):
    key = "queryrules"
    title = "QueryRules"
    short_title = "Rules"
    default_sort = ("rule_id", False)
    pgsql_titles = {"schema": ("Database", "database the rule applies to")}

    def __init__(self, config=None):
        super().__init__(config)
        self.admin = True  # until the connection says otherwise
        self._caught = CaughtQueries()
        self._memo: Dict[str, Tuple[Any, Any]] = {}

    def _cached(self, name: str, key: Tuple, compute):
        """``compute()`` once per key (when the snapshots were taken, and the rule shown): notes
        are drawn ten times a second, the data changes once per interval, and a proxy may have
        thousands of rules."""
        entry = self._memo.get(name)
        if entry is None or entry[0] != key:
            entry = (key, compute())
            self._memo[name] = entry
        return entry[1]

    @property
    def columns(self):
        """The stats user can't read rule definitions: only ids and hits are shown then."""
        return self.columns_for(self.side, base=ADMIN_COLUMNS if self.admin else STATS_COLUMNS)

    asks = (QueryRuleHits,)  # what this screen asks of ProxySQL each refresh (screens.asks)

    def collectors(self):
        return [QueryRuleHits(), RuntimeQueryRules(), ConfigQueryRules(), digest_collector(self.config)]

    # The query digest is expensive to read: only while a rule's drill-down is open.
    live_detail = True  # "queries this rule catches" fills in as the digest is read

    def active_collectors(self):
        return [name for name in super().active_collectors() if name != self.on_side(QueryDigest.name)]

    def detail_collectors(self, row: Row) -> List[str]:
        return [self.on_side(QueryDigest.name)] if self.admin else []

    def _learn_user(self, view: DataView) -> None:
        session = getattr(view.source("proxysql"), "session", None)
        if session is not None:
            self.admin = session.is_admin

    def _definitions_taken(self, view: DataView) -> Tuple[Optional[float], Optional[float]]:
        return (taken_at(view.latest(self.on_side(RuntimeQueryRules.name))),
                taken_at(view.latest(self.on_side(ConfigQueryRules.name))))

    def _definitions(self, view: DataView):
        runtime = view.latest(self.on_side(RuntimeQueryRules.name))
        config = view.latest(self.on_side(ConfigQueryRules.name))
        return (self._cached("runtime", (taken_at(runtime),), lambda: definitions(runtime)),
                self._cached("config", (taken_at(config),), lambda: definitions(config)))

    def rows(self, view: DataView) -> List[Row]:
        self._learn_user(view)
        name = self.on_side(QueryRuleHits.name)
        steady = self.__dict__.setdefault("_steady", {})
        if name not in steady:
            steady[name] = SteadyPair(total_hits)
        # hits/s spans whole updates of the hits (proxytop.metrics.rates.update_span), not one interval
        history = view.history(name)
        previous, current, seconds = steady[name](history)
        self._covers = units.covers_text([seconds], seconds_between(*view.pair(name))) if history else None
        runtime, config = self._definitions(view)
        fields = self._cached("fields", self._definitions_taken(view), lambda: definition_fields(runtime, config))
        return rule_rows(previous, current, runtime, config, fields, seconds)

    def notes(self, view: DataView):
        covers = getattr(self, "_covers", None)  # set by rows(): what span hits/s covers
        extra = [((covers + " (ProxySQL updates rule hits about once a second)", "dim"),)] if covers else []
        return self._notes(view) + extra + [asks_line(self, view, self.asks)]

    def _notes(self, view: DataView):
        self._learn_user(view)
        if not self.admin:
            return [(("Rule definitions need an admin user (the stats user can't read runtime_mysql_query_rules).",
                      "dim"),)]
        runtime, config = self._definitions(view)
        if runtime is None:
            return [(("reading the rule definitions\u2026", "dim"),)]
        return self._cached("notes", self._definitions_taken(view), lambda: self._rules_line(runtime, config))

    @staticmethod
    def _rules_line(runtime: Dict[Any, Mapping], config: Optional[Dict[Any, Mapping]]):
        parts: List[Segment] = [("Rules  ", "label"), (f"{len(runtime)} at runtime", None)]
        if config is not None:
            inactive = [i for i, r in config.items() if i not in runtime and not to_number(r.get("active"))]
            pending = [i for i, r in config.items() if i not in runtime and to_number(r.get("active"))]
            changed = [i for i in runtime if i not in config or differences(runtime[i], config[i])]
            if inactive:
                parts.append((f", {len(inactive)} inactive (dimmed)", "dim"))
            if changed or pending:
                ids = ", ".join(str(i) for i in sorted(changed + pending, key=str))
                parts.append((f"  mysql_query_rules differs from runtime for rule {ids}: not loaded to runtime (*)",
                              "warning_bold"))
        return [tuple(parts)]

    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        self._learn_user(view)
        runtime, config = self._definitions(view)
        side = self.on_side(QueryRuleHits.name)
        key = (row.get("_id"), taken_at(view.latest(side)), self._definitions_taken(view),
               taken_at(view.latest(self.on_side(QueryDigest.name))))
        return self._cached("detail", key, lambda: self._detail(row, view, runtime, config))

    def _detail(self, row: Row, view: DataView, runtime, config) -> Detail:
        detail = rule_detail(row, view.history(self.on_side(QueryRuleHits.name)), runtime, config, self.admin)
        if not self.admin:
            return detail
        return Detail(detail.title, detail.lines + caught_section(row.get("rule_id"), view, self._caught, self.side))


SCREEN = QueryRulesScreen
