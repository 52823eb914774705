"""Collectors for the QueryRules, GloStat, ProcList and ComCount screens.

Same rules as collectors.proxysql: one table per query, its name in lower case, never a
``*_reset`` table, values kept as the text ProxySQL sends. Tables that are expensive to read
(the processlist locks every worker thread, the memory metrics take the digest lock) have a
minimum interval of their own; configuration tables change rarely and keep their own, slow pace.
"""
from __future__ import annotations

import time
from array import array
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple

from proxytop.core import Collector, Table, unconcatenated
from proxytop.collectors.proxysql import PROXYSQL, GlobalStatus, HeaderStatus, TableCollector
from proxytop.metrics.rates import COUNTER_REFRESH, RATE_WINDOW, counter_total

__all__ = [
    "GlobalStatus", "HeaderStatus", "RuleHits", "QueryRuleHits", "RuntimeQueryRules", "ConfigQueryRules", "ProcessList",
    "CommandCounters", "MemoryMetrics", "MySQLVariables",
]


@dataclass(frozen=True, eq=False)
class RuleHits:
    """An older reading of stats_mysql_query_rules, kept for the hits/s sparkline only.

    5,000 rules take about 40 KB instead of about 1 MB as a Table: ``position`` (rule_id as
    sent -> index) is one dict shared by all readings of an unchanged rule set, ``hits`` an
    array of integers with -1 where no number was sent.

    >>> older = RuleHits.of(Table(("rule_id", "hits"), (("1", "10"), ("2", None))))
    >>> older.get("1"), older.get("2"), older.get("3", "absent")
    (10, None, 'absent')
    """

    position: Mapping[str, int]
    hits: array

    @classmethod
    def of(cls, table: Table, position: Optional[Mapping[str, int]] = None) -> "RuleHits":
        id_at, hits_at = table.columns.index("rule_id"), table.columns.index("hits")
        ids = [row[id_at] for row in table.rows]
        if position is None or len(position) != len(ids) or any(position.get(i) != n for n, i in enumerate(ids)):
            position = {rule_id: n for n, rule_id in enumerate(ids)}
        counts = array("q", (_count(row[hits_at]) for row in table.rows))
        return cls(position, counts)

    def get(self, rule_id: str, default: Any = None) -> Any:
        at = self.position.get(rule_id)
        if at is None:
            return default
        count = self.hits[at]
        return None if count < 0 else count

    def items(self) -> Iterator[Tuple[str, Optional[int]]]:
        for rule_id, at in self.position.items():
            yield rule_id, (None if self.hits[at] < 0 else self.hits[at])


def _count(value: Any) -> int:
    try:
        count = int(value)
    except (TypeError, ValueError):
        return -1
    return count if 0 <= count < 2 ** 63 else -1


class QueryRuleHits(TableCollector):
    """stats_mysql_query_rules: rule_id, hits. Cheap; readable by the stats user. A longer
    history feeds the hits/s sparkline of the rule drill-down: its 60 points need 61 readings,
    all but the last two kept as :class:`RuleHits`."""

    name = "proxysql.query_rule_hits"
    table = "stats_mysql_query_rules"
    default_interval = 1.0
    min_interval = 0.5
    history = 61

    def __init__(self):
        super().__init__()
        self._position: Optional[Mapping[str, int]] = None

    def collect(self, session) -> Optional[Table]:
        """Every rule's id and hits as two texts, one row for the whole table, split here in C:
        the same values as ``select *`` without a row packet per rule to decode (5,000 rules
        took about 15 ms a reading). ``count(*)`` tells a value group_concat left out (NULL);
        a ProxySQL that refuses the query is read plainly from then on."""
        table = self.ask_unless_refused(session, lambda session: session.query(self.concatenated_sql()))
        if table is not None:
            rules = split_concatenated(table)
            if rules is not None:
                return rules
        return super().collect(session)

    def concatenated_sql(self) -> str:
        """
        >>> QueryRuleHits().concatenated_sql()
        'select group_concat(rule_id), group_concat(hits), count(*) from stats_mysql_query_rules'
        """
        return f"select group_concat(rule_id), group_concat(hits), count(*) from {self.table}"

    def shrink(self, data: Any) -> Any:
        if not isinstance(data, Table) or not (data.has("rule_id") and data.has("hits")):
            return data
        older = RuleHits.of(data, self._position)
        self._position = older.position
        return older


def split_concatenated(table: Table) -> Optional[Table]:
    """The rules' (rule_id, hits) from the one row of :meth:`QueryRuleHits.concatenated_sql`;
    None when a value is missing (group_concat leaves NULLs out) or the row is not that.

    >>> split_concatenated(Table(("a", "b", "c"), (("1,2", "10,0", "2"),)))
    Table(columns=('rule_id', 'hits'), rows=(('1', '10'), ('2', '0')))
    >>> split_concatenated(Table(("a", "b", "c"), ((None, None, "0"),))).rows
    ()
    >>> split_concatenated(Table(("a", "b", "c"), (("1,2", "10", "2"),))) is None
    True
    """
    if len(table.rows) != 1 or len(table.rows[0]) != 3:
        return None
    ids, hits, count = table.rows[0]
    return unconcatenated(("rule_id", "hits"), count, (ids, hits))


class KeptUntilChanged(TableCollector):
    """A table of definitions read whole only when ProxySQL says it changed. 5,000 query rules
    are some 3 MB of text, which ProxySQL dumps (the runtime table under its query processor's
    lock) and proxytop decodes in 42-50 ms, every 10 s, for rules that change a few times a day.
    Each reading first asks :meth:`fingerprint`, a one-row question whose answer changes
    whenever the table does; the same answer on the same connection gives the table read
    before, the same object, so that what the screens made of it is kept too. None (a version
    that can't tell): the table is read whole every time, as before."""

    _kept: Optional[Tuple[Any, Any, Optional[Table]]] = None  # (session, fingerprint, table)

    def fingerprint(self, session) -> Any:
        return None

    def collect(self, session) -> Optional[Table]:
        if self.needs_admin and not session.is_admin:
            return None
        # Asked before the table is read: a change between the two leaves an older fingerprint
        # with the newer table, and the next reading reads the table again (never the reverse).
        # Refused (a build without the command, say): read whole from then on.
        mark = self.ask_unless_refused(session, self.fingerprint)
        kept = self._kept
        if mark is not None and kept is not None and kept[0] is session and kept[1] == mark:
            return kept[2]
        table = session.query(f"select * from {self.table}")
        self._kept = (session, mark, table) if mark is not None else None
        return table


# ProxySQL 2.5.3 made the runtime checksums unconditional (admin-checksum_mysql_query_rules was
# deprecated): before it, that setting could leave the checksum of the rules unchanged by a load.
CHECKSUMS_ALWAYS_KEPT = (2, 5, 3)
RULES_CHECKSUM_SQL = "select version, epoch, checksum from runtime_checksums_values where name = 'mysql_query_rules'"
CONFIG_RULES_CHECKSUM_SQL = "CHECKSUM MEMORY MYSQL QUERY RULES"


class RuntimeQueryRules(KeptUntilChanged):
    """runtime_mysql_query_rules: the rules in effect (admin users only). Read whole when
    runtime_checksums_values shows another load of the rules (each LOAD MYSQL QUERY RULES TO
    RUNTIME, by hand or by a cluster peer, raises their version; a restart is a new
    connection). The PostgreSQL side's rules are read whole every time: the checksums of
    its modules were not seen in a recording."""

    name = "proxysql.runtime_query_rules"
    table = "runtime_mysql_query_rules"
    needs_admin = True
    default_interval = 10.0
    min_interval = 5.0
    own_pace = True
    history = 1  # no rates: the latest definitions are all the screen needs (5,000 rules: ~3 MB each)

    def fingerprint(self, session) -> Any:
        if self.table != "runtime_mysql_query_rules" or (session.version or (0, 0, 0)) < CHECKSUMS_ALWAYS_KEPT:
            return None
        rows = session.query(RULES_CHECKSUM_SQL).rows
        return tuple(rows[0]) if rows else None


class ConfigQueryRules(KeptUntilChanged):
    """mysql_query_rules: the configuration, including inactive rules and edits not yet
    loaded to runtime (admin users only). Read whole when ``CHECKSUM MEMORY MYSQL QUERY RULES``
    (ProxySQL 1.4 and later: a hash of every row, made in ProxySQL) gives another checksum."""

    name = "proxysql.config_query_rules"
    table = "mysql_query_rules"
    needs_admin = True
    default_interval = 10.0
    min_interval = 5.0
    own_pace = True
    history = 1  # no rates: the latest definitions are all the screen needs (5,000 rules: ~3 MB each)

    def fingerprint(self, session) -> Any:
        if self.table != "mysql_query_rules":
            return None
        rows = session.query(CONFIG_RULES_CHECKSUM_SQL).rows
        return rows[0][-1] if rows and rows[0] else None


class ProcessList(TableCollector):
    """stats_mysql_processlist. Listing sessions locks every ProxySQL worker thread while it
    runs, so it never polls more often than every 2 s."""

    name = "proxysql.processlist"
    table = "stats_mysql_processlist"
    default_interval = 2.0
    min_interval = 2.0
    counted = ("command",)  # read for every session, as text
    sorted_on = ("SessionID", "hostgroup", "time_ms")  # read for every session, as ints when they all are


class CommandCounters(TableCollector):
    """stats_mysql_commands_counters: counts, total time and latency buckets per command.

    Each read makes ProxySQL rebuild the whole table before answering
    (ProxySQL_Admin::stats___mysql_commands_counters: 54 rows of 15 values, each row an INSERT
    parsed anew, then the stats schema vacuumed), whatever columns or rows the query selects:
    reading less often is the only way to ask less of it. While no command runs (the counters'
    total has stood still for longer than ProxySQL takes to publish its threads' counts) the
    table is read every ``idle_steps`` steps of the screen's pace, and at that pace again from
    the first reading that shows a change. Two steps stay short of what
    proxytop.metrics.rates.is_gap takes for a gap in the readings (three), so the rates' spans
    run on through the slower readings, and they fall on the header's readings (one wake-up).

    It keeps its own pace (``own_pace``) only so that the controller does not take the idle
    pace for the screen's minimum; ``default_interval`` is the floor, so it follows the screen.
    """

    name = "proxysql.commands_counters"
    table = "stats_mysql_commands_counters"
    default_interval = 0.5
    floor = 0.5  # the minimum interval while commands run
    own_pace = True
    history = 2 + int(RATE_WINDOW / floor)  # rates span RATE_WINDOW seconds of readings
    idle_steps = 2  # while no command runs, one read every this many steps of the screen's pace
    rebuilt = "54 rows"  # what ProxySQL rebuilds for each read: one row per command it knows
    slower_while = "while no command runs"  # said of the idle pace (screens.asks)

    # What the pace is decided by. Class defaults: the all-nodes view's per-node collectors
    # don't run an __init__ here, and a PostgreSQL-side twin is a copy with state of its own.
    clock = staticmethod(time.monotonic)
    idle = False  # the counters' total has stood still: reading at the idle pace
    _total: Any = None  # the sum of Total_cnt in the last reading
    _still_since: Optional[float] = None  # when that sum was first read
    _last_read: Optional[float] = None
    _steps: Tuple[float, ...] = ()  # the last seconds between reads while commands ran

    @property
    def min_interval(self) -> float:  # type: ignore[override]
        """The floor while commands run; ``idle_steps`` of the screen's pace while none does
        (the shortest recent step is the pace: a step across a hidden spell is no pace; to a
        tenth of a second, as intervals are set)."""
        if self.idle and self._steps:
            return max(self.floor, self.idle_steps * round(min(self._steps), 1))
        return self.floor

    def collect(self, session) -> Optional[Table]:
        now = self.clock()
        table = super().collect(session)
        if not self.idle and self._last_read is not None:
            self._steps = self._steps[-4:] + (now - self._last_read,)
        self._last_read = now
        total = command_total(table)
        if total is None or total != self._total:
            self._total, self._still_since, self.idle = total, now, False
        else:
            # ProxySQL's worker threads add their counts to this table about once a second
            # (MySQL_Thread's maintenance loop): a total unchanged for longer is no traffic.
            self.idle = now - self._still_since > COUNTER_REFRESH
        return table


def command_total(table: Any) -> Any:
    """The sum of Total_cnt (every execution adds one); None without that column.

    >>> command_total(Table(("Command", "Total_cnt"), (("SELECT", "10"), ("COMMIT", "2"))))
    12
    """
    if not isinstance(table, Table) or not table.has("Total_cnt"):
        return None
    at = table.columns.index("Total_cnt")
    return counter_total([row[at] for row in table.rows])


class MemoryMetrics(Collector):
    """stats_memory_metrics as {Variable_Name: Variable_Value} (bytes). Reading it takes
    ProxySQL's query-digest lock, so it keeps its own pace: every 10 s at the most."""

    name = "proxysql.memory_metrics"
    source = PROXYSQL
    default_interval = 10.0
    min_interval = 10.0
    own_pace = True

    def collect(self, session) -> Optional[Dict[str, str]]:
        tables = getattr(session, "tables", None)
        if tables and "stats_memory_metrics" not in tables:
            return None  # an old ProxySQL without the table: the screen says so, no failing query
        return name_value(session.query("select * from stats_memory_metrics"))


class MySQLVariables(Collector):
    """The few mysql-* settings screens compare against (mysql-max_connections). The stats
    user has no real global_variables: None then, and the screen says an admin user is needed."""

    name = "proxysql.mysql_variables"
    source = PROXYSQL
    default_interval = 30.0
    min_interval = 10.0
    own_pace = True
    wanted = ("mysql-max_connections",)

    def collect(self, session) -> Optional[Dict[str, str]]:
        if not session.is_admin:
            return None
        names = ", ".join(f"'{name}'" for name in self.wanted)
        table = session.query(f"select * from global_variables where variable_name in ({names})")
        return name_value(table)


def name_value(table: Table) -> Dict[str, str]:
    """A two-column (name, value) result as a dict, whatever the columns' capitalisation.

    >>> name_value(Table(("Variable_Name", "Variable_Value"), (("a", "1"), ("b", None))))
    {'a': '1', 'b': None}
    """
    lowered = [c.lower() for c in table.columns]
    name_at = lowered.index("variable_name")
    value_at = lowered.index("variable_value")
    return {row[name_at]: row[value_at] for row in table.rows}
