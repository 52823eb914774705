"""The query rules' tables are read whole only when ProxySQL says they changed: the runtime
rules after each load (runtime_checksums_values), the configuration when CHECKSUM MEMORY MYSQL
QUERY RULES gives another checksum. Against the ProxySQL double, over the real protocol."""
from __future__ import annotations

import re

import pymysql
import pytest

from proxytop.core import Table
from proxytop.collectors.proxysql_stats import (CONFIG_RULES_CHECKSUM_SQL, RULES_CHECKSUM_SQL, ConfigQueryRules,
                                                 RuntimeQueryRules)
from proxytop.collectors.sides import for_side
from proxytop.metrics.sides import PGSQL
from proxytop.polling.connection import Endpoint, open_admin
from tests.proxysql_double import ProxySQLDouble


def admin_session(double):
    return open_admin(Endpoint(port=double.port, user="admin", password="admin", timeout=30))


def whole_reads(double, table: str) -> int:
    return sum(1 for sql in double.queries() if sql.strip().lower() == f"select * from {table}")


def edited(rows, rule_id: str, column: str, value, columns):
    at, where = columns.index("rule_id"), columns.index(column)
    return [row[:where] + [value] + row[where + 1:] if row[at] == rule_id else list(row) for row in rows]


def test_runtime_rules_are_read_whole_only_after_a_load(proxysql_double):
    double, rules = proxysql_double, RuntimeQueryRules()
    session = admin_session(double)
    first = rules.collect(session)
    assert len(first.rows) == 7 and whole_reads(double, "runtime_mysql_query_rules") == 1
    assert rules.collect(session) is first and rules.collect(session) is first
    assert whole_reads(double, "runtime_mysql_query_rules") == 1
    assert sum(sql == RULES_CHECKSUM_SQL for sql in double.queries()) == 3

    columns, rows = double.first_frame("runtime_mysql_query_rules")
    double.replace_table("runtime_mysql_query_rules", rows[:-1])  # LOAD ... TO RUNTIME without rule 7
    after = rules.collect(session)
    assert [row[0] for row in after.rows] == ["1", "2", "3", "4", "5", "6"]
    assert whole_reads(double, "runtime_mysql_query_rules") == 2
    assert rules.collect(session) is after

    # The same rules loaded again: another version, so read again (a load may change what the
    # checksum covers in ways proxytop can't see from here).
    double.replace_table("runtime_mysql_query_rules", rows[:-1])
    assert rules.collect(session) is not after
    assert whole_reads(double, "runtime_mysql_query_rules") == 3

    # A new connection (a restarted ProxySQL, say) starts over with a whole read.
    assert rules.collect(admin_session(double)) is not after
    assert whole_reads(double, "runtime_mysql_query_rules") == 4


def test_configuration_rules_are_read_whole_only_when_their_checksum_changes(proxysql_double):
    double, config = proxysql_double, ConfigQueryRules()
    session = admin_session(double)
    first = config.collect(session)
    assert len(first.rows) == 8 and config.collect(session) is first
    assert whole_reads(double, "mysql_query_rules") == 1
    assert sum(sql == CONFIG_RULES_CHECKSUM_SQL for sql in double.queries()) == 2

    columns, rows = double.first_frame("mysql_query_rules")
    double.replace_table("mysql_query_rules", edited(rows, "4", "destination_hostgroup", "10", columns))
    after = config.collect(session)
    row_4 = [row for row in after.rows if row[0] == "4"][0]
    assert row_4[after.columns.index("destination_hostgroup")] == "10"
    assert whole_reads(double, "mysql_query_rules") == 2 and config.collect(session) is after


def test_before_2_5_3_the_runtime_rules_are_read_every_time(recording):
    """Before 2.5.3, admin-checksum_mysql_query_rules=false left the checksum as it was."""
    double = ProxySQLDouble(recording=recording, version="1.4").start()
    try:
        session = admin_session(double)
        assert session.version < (2, 5, 3)
        rules = RuntimeQueryRules()
        assert rules.collect(session) is not rules.collect(session)
        assert whole_reads(double, "runtime_mysql_query_rules") == 2
        assert not any("runtime_checksums_values" in sql for sql in double.queries())
    finally:
        double.stop()


def test_the_postgresql_rules_are_read_whole_every_time():
    """No recording shows the PostgreSQL modules' checksums: nothing is asked, nothing kept."""
    for collector in (RuntimeQueryRules(), ConfigQueryRules()):
        twin = for_side(collector, PGSQL)
        assert "pgsql" in twin.table and twin.fingerprint(session=None) is None


def test_the_stats_user_sends_no_checksum_question(proxysql_double):
    session = open_admin(Endpoint(port=proxysql_double.port, user="stats", password="stats", timeout=30))
    assert RuntimeQueryRules().collect(session) is None and ConfigQueryRules().collect(session) is None
    assert not any("checksum" in sql.lower() for sql in proxysql_double.queries("stats"))


def test_e2e_a_rule_loaded_while_watching_appears_on_queryrules(proxytop_term, proxysql_double):
    double = proxysql_double
    term = proxytop_term("-P", str(double.port), "--screen", "queryrules", "-d", "1", cols=140, rows=40)
    term.wait_for("Rules  7 at runtime, 1 inactive", timeout=30)
    for table in ("runtime_mysql_query_rules", "mysql_query_rules"):
        columns, rows = double.first_frame(table)
        new = edited([r for r in rows if r[0] == "3"], "3", "match_digest", "^SELECT NEW_RULE", columns)[0]
        new[columns.index("rule_id")] = "30"
        double.replace_table(table, list(rows) + [new])
    # The rules are read every 10 s: the load shows within one of their readings.
    screen = term.wait_until(lambda s: "Rules  8 at runtime" in s and re.search(r"^\s+30\s.*\^SELECT NEW_RULE", s, re.M)
                             is not None, timeout=40, what="rule 30 after the load")
    print("\n" + screen)


class RefusingSession:
    """A session whose ProxySQL answers the checksum question with an admin error (a build
    without the command), or says its admin database is locked (1205) the first time."""

    is_admin, version = True, (2, 7, 2)

    def __init__(self, error):
        self.error, self.sent = error, []

    def query(self, sql):
        self.sent.append(sql)
        if sql == CONFIG_RULES_CHECKSUM_SQL and self.error is not None:
            error, self.error = self.error, (self.error if self.error.args[0] == 1045 else None)
            raise error
        if sql == CONFIG_RULES_CHECKSUM_SQL:
            return Table(("table", "checksum"), (("MYSQL QUERY RULES", "0x1"),))
        return Table(("rule_id",), (("1",),))


def test_a_refused_checksum_question_leaves_the_table_read_whole_from_then_on():
    session, config = RefusingSession(pymysql.err.OperationalError(1045, "ProxySQL Admin Error: near \"CHECKSUM\"")), \
        ConfigQueryRules()
    assert [config.collect(session).rows for _ in range(3)] == [(("1",),)] * 3
    assert session.sent == [CONFIG_RULES_CHECKSUM_SQL, "select * from mysql_query_rules",
                            "select * from mysql_query_rules", "select * from mysql_query_rules"]


def test_a_locked_admin_database_fails_the_reading_and_the_question_is_asked_again():
    session, config = RefusingSession(pymysql.err.OperationalError(1205, "database is locked")), ConfigQueryRules()
    with pytest.raises(pymysql.err.OperationalError):
        config.collect(session)
    first = config.collect(session)
    assert config.collect(session) is first
    assert session.sent == [CONFIG_RULES_CHECKSUM_SQL, CONFIG_RULES_CHECKSUM_SQL, "select * from mysql_query_rules",
                            CONFIG_RULES_CHECKSUM_SQL]
