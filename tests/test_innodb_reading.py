"""What one server reading sends and decodes, against the real MariaDB: on MariaDB a reading is
one statement (the status variables, INNODB_METRICS and the buffer pool's pending writes
together) once the user is known to read the InnoDB tables, and the figures it gives are the
ones the separate statements and SHOW ENGINE INNODB STATUS give on the same server.
"""
from __future__ import annotations

from proxytop.collectors.innodb import (ENGINE_SQL_MARIADB, STATUS_SQL, InnoDBEngine, InnoDBStatus, MySQLSource,
                                        split_reading, status_values)
from proxytop.metrics.innodb import Flavour, assess, parse_status_text
from proxytop.core import Table
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


def test_variables_only_a_restart_changes_are_read_once_per_connection(mariadb):
    from proxytop.collectors.innodb import DYNAMIC_VARIABLES_SQL, STATIC_VARIABLES, InnoDBVariables

    source, session = open_source(mariadb)
    variables = InnoDBVariables(source.endpoint)
    original = mariadb.query("SELECT @@innodb_io_capacity")[0][0]
    try:
        first = variables.collect(session)
        assert {"version", "datadir", "innodb_page_size", "log_bin_basename"} <= set(first) & STATIC_VARIABLES
        mariadb.query("SET GLOBAL innodb_io_capacity = 321")
        sent = session.queries
        again = variables.collect(session)
        assert session.queries == sent + 1
        assert again["innodb_io_capacity"] == "321"  # a setting changed meanwhile is seen
        assert {k: v for k, v in again.items() if k != "innodb_io_capacity"} == \
            {k: v for k, v in first.items() if k != "innodb_io_capacity"}  # the rest as first read
        assert "datadir" not in DYNAMIC_VARIABLES_SQL and "innodb_io_capacity" in DYNAMIC_VARIABLES_SQL
        fresh = source.connect()  # a new connection (after a restart, say) reads everything again
        try:
            assert fresh.static_variables is None and variables.collect(fresh)["datadir"] == first["datadir"]
        finally:
            source.close(fresh)
    finally:
        mariadb.query(f"SET GLOBAL innodb_io_capacity = {original}")
        source.close(session)


def test_a_packed_reading_brings_what_the_rows_bring(mariadb):
    """The one-row reading (lists the server packs, Python splits) gives the same variables,
    counters and pending writes as the row-per-value statement on the same server."""
    from proxytop.collectors.innodb import READING_SQL_MARIADB

    source, session = open_source(mariadb)
    status, engine = InnoDBStatus(source.endpoint), InnoDBEngine(source.endpoint)
    try:
        status.collect(session), engine.collect(session)
        assert session.packed_reading and session.reads_together
        names = ("Innodb_buffer_pool_pages_total", "Innodb_checkpoint_max_age", "Innodb_lsn_current")

        def read():
            packed = status.collect(session)
            return ({name: packed[name] for name in names}, set(packed),
                    {n: m.count for n, m in engine.collect(session).metrics.items()})

        for _ in range(30):  # until nothing moved between the two ways of reading
            before = read()
            rows_status, rows_metrics, rows_pending = split_reading(session.query(READING_SQL_MARIADB).rows)
            if read() == before:
                break
        assert session.packed_reading  # every packed reading held its count of pairs
        assert before[1] == set(rows_status) and {n: rows_status[n] for n in names} == before[0]
        assert before[2] == {n: m.count for n, m in rows_metrics.items()}
        assert rows_pending is not None and engine.collect(session).pool_pending is not None
        assert all(isinstance(rows_status[n], int) for n in names)
    finally:
        source.close(session)


def test_a_server_that_cuts_group_concat_short_is_read_row_by_row(mariadb):
    """With group_concat_max_len below the longest packed list, connections read the rows:
    the same variables, nothing cut off."""
    from proxytop.collectors.innodb import PACKED_LIST_LIMIT

    original = mariadb.query("SELECT @@global.group_concat_max_len")[0][0]
    mariadb.query(f"SET GLOBAL group_concat_max_len = {PACKED_LIST_LIMIT // 2}")
    try:
        source, session = open_source(mariadb)
    finally:
        mariadb.query(f"SET GLOBAL group_concat_max_len = {original}")
    status, engine = InnoDBStatus(source.endpoint), InnoDBEngine(source.endpoint)
    try:
        first = status.collect(session)
        engine.collect(session)
        assert not session.packed_reading and session.reads_together
        sent = session.queries
        again, metrics = status.collect(session), engine.collect(session).metrics
        assert session.queries == sent + 1 and set(again) == set(first) and metrics
    finally:
        source.close(session)


def test_a_packed_reading_that_does_not_add_up_is_read_again_row_by_row(mariadb):
    """A list that does not hold its count of pairs (a value with a space, say): the reading
    is taken from the rows instead, and so are the next ones on that connection."""
    import proxytop.collectors.innodb as innodb

    source, session = open_source(mariadb)
    status, engine = InnoDBStatus(source.endpoint), InnoDBEngine(source.endpoint)
    try:
        status.collect(session), engine.collect(session)
        whole = set(status.collect(session))
        asked = []
        real_query = session.query

        def query(sql):
            asked.append(sql)
            found = real_query(sql)
            if sql != innodb.PACKED_READING_SQL_MARIADB:
                return found
            first = found.rows[0]
            return Table(found.columns, ((first[0].replace(" ", "  ", 1),) + tuple(first[1:]),))  # one pair too many

        session.query = query
        assert set(status.collect(session)) == whole
        assert asked == [innodb.PACKED_READING_SQL_MARIADB, innodb.READING_SQL_MARIADB]
        assert not session.packed_reading
        assert set(status.collect(session)) == whole and asked[2:] == [innodb.READING_SQL_MARIADB]
    finally:
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
