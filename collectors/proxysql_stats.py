"""Collectors for the QueryRules, GloStat, ProcList and ComCount screens.

Same rules as collectors.proxysql: one table per query, its name in lower case, never a
``*_reset`` table, values kept as the text ProxySQL sends. Tables that are expensive to read
(the processlist locks every worker thread, the memory metrics take the digest lock) have a
minimum interval of their own; configuration tables change rarely and keep their own, slow pace.
"""
from __future__ import annotations

from typing import Dict, Optional

from proxytop.collectors.base import Collector, Table
from proxytop.collectors.proxysql import PROXYSQL, GlobalStatus, TableCollector

__all__ = [
    "GlobalStatus", "QueryRuleHits", "RuntimeQueryRules", "ConfigQueryRules", "ProcessList",
    "CommandCounters", "MemoryMetrics", "MySQLVariables",
]


class QueryRuleHits(TableCollector):
    """stats_mysql_query_rules: rule_id, hits. Cheap; readable by the stats user. A longer
    history feeds the hits/s sparkline of the rule drill-down: its 60 points need 61 readings
    (each reading of 5,000 rules is about 1 MB)."""

    name = "proxysql.query_rule_hits"
    table = "stats_mysql_query_rules"
    default_interval = 1.0
    min_interval = 0.5
    history = 61


class RuntimeQueryRules(TableCollector):
    """runtime_mysql_query_rules: the rules in effect (admin users only)."""

    name = "proxysql.runtime_query_rules"
    table = "runtime_mysql_query_rules"
    needs_admin = True
    default_interval = 10.0
    min_interval = 5.0
    own_pace = True


class ConfigQueryRules(TableCollector):
    """mysql_query_rules: the configuration, including inactive rules and edits not yet
    loaded to runtime (admin users only)."""

    name = "proxysql.config_query_rules"
    table = "mysql_query_rules"
    needs_admin = True
    default_interval = 10.0
    min_interval = 5.0
    own_pace = True


class ProcessList(TableCollector):
    """stats_mysql_processlist. Listing sessions locks every ProxySQL worker thread while it
    runs, so it never polls more often than every 2 s."""

    name = "proxysql.processlist"
    table = "stats_mysql_processlist"
    default_interval = 2.0
    min_interval = 2.0


class CommandCounters(TableCollector):
    """stats_mysql_commands_counters: counts, total time and latency buckets per command."""

    name = "proxysql.commands_counters"
    table = "stats_mysql_commands_counters"
    default_interval = 1.0
    min_interval = 0.5


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
