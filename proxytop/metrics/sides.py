"""ProxySQL's two sides: the MySQL side every version has, and the PostgreSQL side of 3.0+.

ProxySQL 3.0 proxies PostgreSQL as well as MySQL and shows both through the same admin port:
every ``stats_mysql_X`` / ``runtime_mysql_X`` / ``mysql_X`` table has a ``pgsql`` twin, and a
few columns are named differently (``database`` for ``schemaname``/``db``/``schema``,
``sqlstate`` for ``errno``). A side names the tables and settings of one of them; collectors
are made for a side by rewriting their table (collectors.sides.for_side), and the ProxySQL
screens (screens.sided.SidedScreen) poll the current side's collectors and declare the few
columns whose titles differ.

Whether a ProxySQL has a PostgreSQL side is learnt from what it says, never assumed: its
version (3.0 or newer) and its table list (``runtime_pgsql_servers``), and whether any
PostgreSQL server is configured there.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple


@dataclass(frozen=True)
class Side:
    key: str  # "mysql" | "pgsql": --side, batch JSON, recordings
    label: str  # what the header says
    server: str  # what its backends are called in messages

    def table(self, mysql_table: str) -> Optional[str]:
        """This side's twin of a MySQL-side table name; None for a table both sides share.

        >>> PGSQL.table("stats_mysql_connection_pool"), PGSQL.table("runtime_mysql_query_rules")
        ('stats_pgsql_connection_pool', 'runtime_pgsql_query_rules')
        >>> PGSQL.table("mysql_query_rules"), PGSQL.table("stats_memory_metrics"), MYSQL.table("mysql_servers")
        ('pgsql_query_rules', None, 'mysql_servers')
        """
        if _MYSQL_NAME.search(mysql_table) is None:
            return None
        return mysql_table if self is MYSQL else _MYSQL_NAME.sub(r"\1pgsql_", mysql_table)

    def variable(self, mysql_variable: str) -> str:
        """This side's name of a ``mysql-*`` global variable.

        >>> PGSQL.variable("mysql-max_connections"), MYSQL.variable("mysql-max_connections")
        ('pgsql-max_connections', 'mysql-max_connections')
        """
        if self is MYSQL or not mysql_variable.startswith("mysql-"):
            return mysql_variable
        return "pgsql-" + mysql_variable[len("mysql-"):]

    def text(self, text: str) -> str:
        """A message about MySQL-side tables and settings, said of this side: table and variable
        names are rewritten, and a schema is a database there (what ProxySQL's PostgreSQL
        tables call it); the rest of the prose is left alone. A padded label keeps its width.

        >>> PGSQL.text("Weight and Comment need an admin user (runtime_mysql_servers).")
        'Weight and Comment need an admin user (runtime_pgsql_servers).'
        >>> PGSQL.text("connections vs mysql-max_connections; mysql_query_rules differs from MySQL")
        'connections vs pgsql-max_connections; pgsql_query_rules differs from MySQL'
        >>> PGSQL.text("user app, schema (none); 3 more (user, schema, client) combinations")
        'user app, database (none); 3 more (user, database, client) combinations'
        >>> PGSQL.text("  schemaname     |"), MYSQL.text("by digest + schema")
        ('  database       |', 'by digest + schema')
        """
        if self is MYSQL:
            return text
        text = _MYSQL_WORD.sub(lambda m: (m.group(1) or "") + "pgsql" + m.group(2), text)
        return _SCHEMA_WORD.sub(_as_database, text)


# stats_mysql_X, runtime_mysql_X, mysql_X: a table of the MySQL side (not mysql-* variables).
_MYSQL_NAME = re.compile(r"^(stats_|runtime_)?mysql_")
_MYSQL_WORD = re.compile(r"\b(stats_|runtime_|monitor\.)?mysql([_-])(?=\w)")

_SCHEMA_WORD = re.compile(r"\b(schemaname|schemas|schema)\b( *)")


def _as_database(match) -> str:
    word = "databases" if match.group(1) == "schemas" else "database"
    spaces = match.group(2)
    if spaces:  # a padded label: as wide as before
        spaces = " " * max(1, len(spaces) + len(match.group(1)) - len(word))
    return word + spaces


MYSQL = Side("mysql", "MySQL", "MySQL")
PGSQL = Side("pgsql", "PgSQL", "PostgreSQL")
SIDES = {MYSQL.key: MYSQL, PGSQL.key: PGSQL}

# MySQL-side column -> its PostgreSQL-side name, where ProxySQL 3.0 names them differently.
PGSQL_COLUMNS: Mapping[str, str] = {"schemaname": "database", "db": "database", "schema": "database",
                                    "errno": "sqlstate"}

NO_PGSQL = "this ProxySQL has no PostgreSQL side (3.0 or newer)"
NO_PGSQL_SERVERS = "this ProxySQL has no PostgreSQL servers configured (runtime_pgsql_servers is empty)"


def side_of(key: Optional[str]) -> Side:
    return SIDES.get(key or "", MYSQL)


def column(side: Side, mysql_column: str) -> str:
    """The name of a MySQL-side column on ``side``.

    >>> column(PGSQL, "schemaname"), column(PGSQL, "hostgroup"), column(MYSQL, "db")
    ('database', 'hostgroup', 'db')
    """
    return PGSQL_COLUMNS.get(mysql_column, mysql_column) if side is PGSQL else mysql_column


def pick(row: Mapping[str, Any], side: Side, mysql_column: str) -> Any:
    """A row's value of a MySQL-side column, under the name it has on ``side``.

    >>> pick({"database": "sbtest"}, PGSQL, "schemaname"), pick({"schemaname": "app"}, MYSQL, "schemaname")
    ('sbtest', 'app')
    """
    return row.get(column(side, mysql_column))


def has_pgsql_tables(version: Optional[Tuple[int, ...]], tables) -> bool:
    """A ProxySQL 3.0+ that lists the PostgreSQL tables. Both must hold: the version alone
    says nothing of a build without PostgreSQL, the tables alone nothing of what they mean.

    >>> has_pgsql_tables((3, 0, 1), {"runtime_pgsql_servers", "stats_pgsql_global"})
    True
    >>> has_pgsql_tables((2, 7, 2), {"runtime_mysql_servers"}), has_pgsql_tables((3, 0, 1), {"runtime_mysql_servers"})
    (False, False)
    >>> has_pgsql_tables(None, {"runtime_pgsql_servers"})
    False
    """
    if not version or tuple(version)[:1] < (3,):
        return False
    tables = tables or ()
    return any(name in tables for name in ("runtime_pgsql_servers", "pgsql_servers", "stats_pgsql_global"))


def pgsql_problem(session) -> Optional[str]:
    """Why ``m`` can't show the PostgreSQL side of this admin session (None: it can).

    ``session`` is the connection's AdminSession (or a recorded one): its version, its tables
    and ``pgsql_servers``, the number of rows of runtime_pgsql_servers when it connected (None
    when unknown: the stats user can't read it)."""
    if session is None:
        return None  # not connected yet: the screens say so themselves
    if not has_pgsql_tables(getattr(session, "version", None), getattr(session, "tables", ())):
        return NO_PGSQL
    if getattr(session, "pgsql_servers", None) == 0:
        return NO_PGSQL_SERVERS
    return None


def digest_memory(metrics: Optional[Mapping[str, Any]], side: Side = MYSQL) -> Any:
    """A side's query-digest memory from stats_memory_metrics: 3.0 renamed the MySQL one
    ``query_digest_memory`` to ``mysql_query_digest_memory`` and added ``pgsql_query_digest_memory``.

    >>> digest_memory({"query_digest_memory": "9280"}), digest_memory({"mysql_query_digest_memory": "512"})
    ('9280', '512')
    >>> digest_memory({"mysql_query_digest_memory": "512", "pgsql_query_digest_memory": "64"}, PGSQL)
    '64'
    """
    metrics = metrics or {}
    if side is PGSQL:
        return metrics.get("pgsql_query_digest_memory")
    value = metrics.get("mysql_query_digest_memory")
    return metrics.get("query_digest_memory") if value is None else value
