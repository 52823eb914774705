"""GloStat's PostgreSQL side: what proxytop knows of stats_pgsql_global (ProxySQL 3.0).

Its variables are named differently from stats_mysql_global (PgHGM_pgconnpoll_* for
MyHGM_myconnpoll_*, PgSQL_Monitor_* for MySQL_Monitor_*, Commit / Rollback instead of the
Com_* counters), so it has rules of its own in the same sections; a variable not known here
is shown as text, without a rate, as on the MySQL side.
"""
from __future__ import annotations

from typing import Tuple

from proxytop.screens.glostat import BYTES, COUNTER, GAUGE, SECONDS, UNKNOWN, Rule, _rule

PGSQL_RULES: Tuple[Rule, ...] = (
    _rule(r"Query_Cache_(Memory_bytes)", "Query cache", GAUGE, BYTES),
    _rule(r"Query_Cache_Entries", "Query cache", GAUGE),
    _rule(r"Query_Cache_bytes_(IN|OUT)", "Query cache", COUNTER, BYTES),
    _rule(r"Query_Cache_(count_GET|count_GET_OK|count_SET|Purged)", "Query cache", COUNTER),
    _rule(r"PgSQL_Monitor_Workers(_Aux|_Started)?", "Monitor", GAUGE),
    _rule(r"PgSQL_Monitor_\w+", "Monitor", COUNTER),
    _rule(r"Queries_(backends|frontends)_bytes_(recv|sent)", "Traffic", COUNTER, BYTES),
    _rule(r"(Client|Server)_Connections_(connected|non_idle|hostgroup_locked)|Active_Transactions",
          "Connections", GAUGE),
    _rule(r"(Client|Server)_Connections_(aborted|created|delayed)|Access_Denied_\w+|PgHGM_pgconnpoll_\w+"
          r"|new_req_conns_count|pgsql_killed_backend_\w+|client_host_error_killed_connections"
          r"|max_connect_timeouts|Backend_reset_connection",
          "Connections", COUNTER),
    _rule(r"Mirror_(concurrency|queue_length)", "Commands", GAUGE),
    _rule(r"Questions|Slow_queries|Commit(_filtered)?|Rollback(_filtered)?|Selects_for_update__autocommit0"
          r"|(Backend|Frontend)_set_client_encoding|generated_error_packets|backend_offline_during_query",
          "Commands", COUNTER),
    _rule(r"\w+_bytes", "Memory", GAUGE, BYTES),
    _rule(r"ProxySQL_Uptime", "Other", GAUGE, SECONDS),
    _rule(r"PgSQL_Thread_Workers|Servers_table_version", "Other", GAUGE),
)


def classify_pgsql(name: str) -> Rule:
    """Section, kind and unit of a stats_pgsql_global variable.

    >>> [(r.section, r.kind) for r in map(classify_pgsql, ("PgHGM_pgconnpoll_get", "Commit", "PgSQL_Monitor_ping_check_ERR"))]
    [('Connections', 'counter'), ('Commands', 'counter'), ('Monitor', 'counter')]
    >>> [(r.section, r.kind, r.unit) for r in map(classify_pgsql, ("pgsql_backend_buffers_bytes", "PgSQL_Thread_Workers"))]
    [('Memory', 'gauge', 'bytes'), ('Other', 'gauge', 'count')]
    """
    for rule in PGSQL_RULES:
        if rule.pattern.match(name):
            return rule
    return UNKNOWN
