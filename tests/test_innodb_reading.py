"""What one server reading sends and decodes, against the real MariaDB: on MariaDB a reading is
one statement (the status variables, INNODB_METRICS and the buffer pool's pending writes
together) once the user is known to read the InnoDB tables, and the figures it gives are the
ones the separate statements and SHOW ENGINE INNODB STATUS give on the same server.
"""
from __future__ import annotations

from proxytop.collectors.innodb import (ENGINE_SQL_MARIADB, STATUS_SQL, InnoDBEngine, InnoDBStatus, MySQLSource,
                                        split_reading, status_values)
from proxytop.metrics.innodb import Flavour, assess, parse_status_text
from proxytop.polling.connection import Endpoint


def open_source(server, user=None, password=None):
    source = MySQLSource(Endpoint(host=server.host, port=server.port, user=user or server.user,
                                  password=password if password is not None else server.password))
    return source, source.connect()


def status_text(session):
    return parse_status_text(session.query("SHOW ENGINE INNODB STATUS").rows[0][2])


def test_after_the_first_reading_a_mariadb_reading_is_one_statement(mariadb):
    source, session = open_source(mariadb)
    status, engine = InnoDBStatus(source.endpoint), InnoDBEngine(source.endpoint)
    try:
        sent = session.queries
        first_status, first_engine = status.collect(session), engine.collect(session)
        assert session.queries == sent + 2  # PROCESS not known yet: the status variables alone first
        assert session.engine_readable is True
        for _ in range(3):
            sent = session.queries
            together, prefetched = status.collect(session), engine.collect(session)
            assert session.queries == sent + 1
            # the same variables and counters as the statements read one by one
            assert set(together) == set(first_status) == set(status_values(session.query(STATUS_SQL)))
            assert {n: m.enabled for n, m in prefetched.metrics.items()} == \
                {n: m.enabled for n, m in first_engine.metrics.items()}
            assert prefetched.pool_pending is not None and prefetched.text is None and not prefetched.needs_process
        # taken once: the next engine reading without a status reading before it asks itself
        sent = session.queries
        alone = engine.collect(session)
        assert session.queries == sent + 1 and alone.pool_pending is not None
    finally:
        source.close(session)


def compared_while_still(session, read, check, wanted: int = 3) -> int:
    """Reads the status text between two ``read()``s that agree (nothing moved in between)
    and ``check(text, figures)``s it, until ``wanted`` such comparisons; how many were made."""
    compared = 0
    for _ in range(30):
        before = read()
        text = status_text(session)
        if read() != before:
            continue  # the server wrote meanwhile: try again
        check(text, before)
        compared += 1
        if compared >= wanted:
            break
    return compared


def test_the_lsns_of_the_status_variables_are_the_status_texts(mariadb):
    """Read between two readings of the status variables that agree, the status text shows the
    same LSN, flushed LSN and last checkpoint (nothing was written in between)."""
    source, session = open_source(mariadb)
    status = InnoDBStatus(source.endpoint)
    names = ("Innodb_lsn_current", "Innodb_lsn_flushed", "Innodb_lsn_last_checkpoint", "Innodb_checkpoint_age")

    def check(text, figures):
        assert (text.lsn, text.flushed_lsn, text.checkpoint_lsn, text.age) == tuple(int(v) for v in figures)

    try:
        compared = compared_while_still(session, lambda: tuple(status.collect(session)[n] for n in names), check)
    finally:
        source.close(session)
    assert compared >= 3


def test_the_pools_pending_writes_are_the_status_texts(mariadb):
    source, session = open_source(mariadb)

    def check(text, pending):
        assert (text.pending_lru, text.pending_flush_list) == pending

    try:
        compared = compared_while_still(session, lambda: split_reading(session.query(ENGINE_SQL_MARIADB).rows)[2],
                                        check)
    finally:
        source.close(session)
    assert compared >= 3


def test_assessed_from_one_statement_as_from_three(mariadb):
    """The screen's figures from a reading in one statement equal those from the separate
    statements with the status text (counters that moved in between aside)."""
    source, session = open_source(mariadb)
    status, engine = InnoDBStatus(source.endpoint), InnoDBEngine(source.endpoint)
    try:
        status.collect(session), engine.collect(session)
        together = assess(status.collect(session), None, None, {}, engine.collect(session), flavour=session.flavour)
        mysql_like = Flavour("MySQL", (8, 0, 36))
        separate_engine = InnoDBEngine(source.endpoint)
        session.flavour, flavour = mysql_like, session.flavour
        try:
            apart_engine = separate_engine.collect(session)  # the text and INNODB_METRICS, as on MySQL
        finally:
            session.flavour = flavour
        assert apart_engine.text is not None and apart_engine.text.lsn > 0 and apart_engine.pool_pending is None
        apart = assess(status_values(session.query(STATUS_SQL)), None, None, {}, apart_engine, flavour=flavour)
        for name in ("pending_lru", "pending_flush_list", "history_list_length", "needs_process", "total_pages"):
            assert getattr(together, name) == getattr(apart, name), name
        assert together.by_type_disabled == apart.by_type_disabled
        assert dict(together.sources)["pending writes"] == "INNODB_BUFFER_POOL_STATS"
        assert dict(apart.sources)["pending writes"] == "SHOW ENGINE INNODB STATUS"
    finally:
        source.close(session)


def test_without_process_the_status_variables_are_read_alone(mariadb):
    """A user that lost PROCESS (or never had it): the one statement is refused, the status
    variables are read alone in the same reading, and the engine collector says needs PROCESS."""
    mariadb.create_user("noproc3", "noproc3-pw", ["USAGE"])
    source, session = open_source(mariadb, "noproc3", "noproc3-pw")
    status, engine = InnoDBStatus(source.endpoint), InnoDBEngine(source.endpoint)
    try:
        session.engine_readable = True  # as if it could, a moment ago
        read = status.collect(session)
        assert "Innodb_lsn_current" in read and session.engine_readable is False and session.prefetched is None
        denied = engine.collect(session)
        assert denied.text_denied and denied.metrics_denied and denied.metrics is None
        sent = session.queries
        assert "Innodb_checkpoint_age" in status.collect(session) and session.queries == sent + 1
    finally:
        source.close(session)


def test_variables_a_set_global_changes_are_seen_by_the_next_reading(mariadb):
    from proxytop.collectors.innodb import InnoDBVariables

    source, session = open_source(mariadb)
    variables = InnoDBVariables(source.endpoint)
    original = mariadb.query("SELECT @@innodb_io_capacity")[0][0]
    try:
        first = variables.collect(session)
        assert {"version", "datadir", "innodb_page_size", "log_bin_basename"} <= set(first)
        mariadb.query("SET GLOBAL innodb_io_capacity = 321")
        again = variables.collect(session)
        assert again["innodb_io_capacity"] == "321"  # a setting changed meanwhile is seen
        assert {k: v for k, v in again.items() if k != "innodb_io_capacity"} == \
            {k: v for k, v in first.items() if k != "innodb_io_capacity"}
    finally:
        mariadb.query(f"SET GLOBAL innodb_io_capacity = {original}")
        source.close(session)


def test_a_connection_lost_between_readings_is_reported_by_the_next(mariadb):
    """The server closes the connection between two readings: the next reading gets a
    connection error (the engine reconnects), not a hang nor another statement's answer."""
    import pymysql
    import pytest

    source, session = open_source(mariadb)
    status, engine = InnoDBStatus(source.endpoint), InnoDBEngine(source.endpoint)
    try:
        status.collect(session), engine.collect(session)
        mariadb.query(f"KILL CONNECTION {session.conn.thread_id()}")
        with pytest.raises(pymysql.err.MySQLError) as raised:
            for _ in range(3):  # the first may still find the socket open
                status.collect(session)
        assert source.is_connection_error(raised.value)
    finally:
        source.close(session)
