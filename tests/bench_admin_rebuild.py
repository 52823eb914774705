"""What ProxySQL's admin module does to answer a query that names a stats table, replayed in
SQLite: how the cost of each table proxytop reads compares.

    python3 -m tests.bench_admin_rebuild

ProxySQL 2.7 answers every admin query from an in-memory SQLite database. Before running a
query whose text names a stats table, ProxySQL_Admin::GenericRefreshStatistics rebuilds that
table (stats___mysql_commands_counters, stats___mysql_global, ...: BEGIN, DELETE, one INSERT per
row, COMMIT), and after it, with admin-vacuum_stats on (the default), ProxySQL_Admin::vacuum_stats
deletes 13 stats tables and runs VACUUM on the stats schema. The statements below are the ones
those functions send, with the row counts of a recorded ProxySQL 2.7.2
(tests/data/proxysql-2.7.2.jsonl.gz): 54 commands, 108 global variables, 3 backends, 11
sessions. Python's sqlite3 module adds about a microsecond per statement, and the SQLite here is
not ProxySQL's build, so only the proportions carry over, not the milliseconds; what ProxySQL
spends gathering the figures (the worker threads' counters, the pool's lock) is not in them.
"""
from __future__ import annotations

import sqlite3
import time
from typing import Callable, Dict, List

# The definitions of ProxySQL_Admin.cpp (STATS_SQLITE_TABLE_*), as sent by ProxySQL 2.7.2.
TABLES = {
    "stats_mysql_commands_counters": "CREATE TABLE stats_mysql_commands_counters (Command VARCHAR NOT NULL PRIMARY KEY , Total_Time_us INT NOT NULL , Total_cnt INT NOT NULL , cnt_100us INT NOT NULL , cnt_500us INT NOT NULL , cnt_1ms INT NOT NULL , cnt_5ms INT NOT NULL , cnt_10ms INT NOT NULL , cnt_50ms INT NOT NULL , cnt_100ms INT NOT NULL , cnt_500ms INT NOT NULL , cnt_1s INT NOT NULL , cnt_5s INT NOT NULL , cnt_10s INT NOT NULL , cnt_INFs)",
    "stats_mysql_global": "CREATE TABLE stats_mysql_global (Variable_Name VARCHAR NOT NULL PRIMARY KEY , Variable_Value VARCHAR NOT NULL)",
    "stats_mysql_connection_pool": "CREATE TABLE stats_mysql_connection_pool (hostgroup INT , srv_host VARCHAR , srv_port INT , status VARCHAR , ConnUsed INT , ConnFree INT , ConnOK INT , ConnERR INT , MaxConnUsed INT , Queries INT , Queries_GTID_sync INT , Bytes_data_sent INT , Bytes_data_recv INT , Latency_us INT)",
    "stats_mysql_processlist": "CREATE TABLE stats_mysql_processlist (ThreadID INT NOT NULL , SessionID INTEGER PRIMARY KEY , user VARCHAR , db VARCHAR , cli_host VARCHAR , cli_port INT , hostgroup INT , l_srv_host VARCHAR , l_srv_port INT , srv_host VARCHAR , srv_port INT , command VARCHAR , time_ms INT NOT NULL , info VARCHAR , status_flags INT , extended_info VARCHAR)",
    "stats_mysql_query_rules": "CREATE TABLE stats_mysql_query_rules (rule_id INTEGER PRIMARY KEY , hits INT NOT NULL)",
    "stats_memory_metrics": "CREATE TABLE stats_memory_metrics (Variable_Name VARCHAR NOT NULL PRIMARY KEY , Variable_Value VARCHAR NOT NULL)",
    "stats_mysql_errors": "CREATE TABLE stats_mysql_errors (hostgroup INT NOT NULL , hostname VARCHAR NOT NULL , port INT NOT NULL , username VARCHAR NOT NULL , client_address VARCHAR NOT NULL , schemaname VARCHAR NOT NULL , errno INT NOT NULL , count_star INTEGER NOT NULL , first_seen INTEGER NOT NULL , last_seen INTEGER NOT NULL , last_error VARCHAR NOT NULL DEFAULT '' , PRIMARY KEY (hostgroup, hostname, port, username, schemaname, errno) )",
    "stats_mysql_users": "CREATE TABLE stats_mysql_users (username VARCHAR PRIMARY KEY , frontend_connections INT NOT NULL , frontend_max_connections INT NOT NULL)",
}
# The tables ProxySQL_Admin::vacuum_stats empties after each such query (those not defined above
# are left out: DELETE of a table that is not there fails at once).
VACUUMED = ("stats_mysql_commands_counters", "stats_mysql_free_connections", "stats_mysql_connection_pool",
            "stats_mysql_connection_pool_reset", "stats_mysql_prepared_statements_info", "stats_mysql_processlist",
            "stats_mysql_query_digest", "stats_mysql_query_digest_reset", "stats_mysql_query_rules",
            "stats_mysql_users", "stats_proxysql_servers_checksums", "stats_proxysql_servers_metrics",
            "stats_proxysql_servers_status")


def rebuild_by_text(db: sqlite3.Connection, table: str, rows: List[tuple]) -> None:
    """stats___mysql_commands_counters, stats___mysql_global, stats___mysql_connection_pool: each
    row an INSERT of its own, its values written into the text in double quotes (parsed anew)."""
    db.execute("BEGIN")
    db.execute(f"DELETE FROM {table}")
    for row in rows:
        db.execute(f"INSERT INTO {table} VALUES (" + ",".join(f'"{v}"' for v in row) + ")")
    db.execute("COMMIT")


def rebuild_prepared(db: sqlite3.Connection, table: str, rows: List[tuple]) -> None:
    """stats___mysql_processlist: one prepared INSERT, its values bound."""
    db.execute("BEGIN")
    db.execute(f"DELETE FROM {table}")
    marks = ",".join("?" * len(rows[0]))
    db.executemany(f"INSERT OR IGNORE INTO {table} VALUES ({marks})", rows)
    db.execute("COMMIT")


def vacuum(db: sqlite3.Connection) -> None:
    for table in VACUUMED:
        if table in TABLES:
            db.execute(f"DELETE FROM {table}")
    db.execute("VACUUM")


def timed(work: Callable[[], None], rounds: int = 300) -> float:
    """Median milliseconds of ``work``."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    times.sort()
    return 1000 * times[len(times) // 2]


def main() -> None:
    # no statement cache: ProxySQL parses each INSERT anew (sqlite3_exec of a new text)
    db = sqlite3.connect(":memory:", isolation_level=None, cached_statements=0)
    for ddl in TABLES.values():
        db.execute(ddl)
    commands = [(f"COMMAND{i}", 123456789, 1234567) + (12345,) * 12 for i in range(54)]
    variables = [(f"Variable_{i}", 123456) for i in range(108)]
    pool = [(10, "10.0.0.1", 3306, "ONLINE") + (1234,) * 10 for _ in range(3)]
    sessions = [(i, i, "app", "db", "10.0.0.9", 40000 + i, 10, "10.0.0.2", 50000 + i, "10.0.0.1", 3306,
                 "Query", 5, "SELECT 1", 0, None) for i in range(11)]
    rebuild_by_text(db, "stats_mysql_global", variables)  # stays between queries: VACUUM copies it
    costs: Dict[str, float] = {
        "stats_mysql_commands_counters rebuild (54 rows x 15)":
            timed(lambda: rebuild_by_text(db, "stats_mysql_commands_counters", commands)),
        "stats_mysql_global rebuild (108 rows x 2)":
            timed(lambda: rebuild_by_text(db, "stats_mysql_global", variables)),
        "stats_mysql_connection_pool rebuild (3 rows x 14)":
            timed(lambda: rebuild_by_text(db, "stats_mysql_connection_pool", pool)),
        "stats_mysql_processlist rebuild (11 rows, prepared)":
            timed(lambda: rebuild_prepared(db, "stats_mysql_processlist", sessions)),
        "vacuum_stats after any of them (13 DELETE + VACUUM)": timed(lambda: vacuum(db)),
    }
    rebuild_by_text(db, "stats_mysql_commands_counters", commands)
    costs["select * from stats_mysql_commands_counters"] = timed(
        lambda: db.execute("select * from stats_mysql_commands_counters").fetchall())
    costs["select Command, Total_cnt from stats_mysql_commands_counters"] = timed(
        lambda: db.execute("select Command, Total_cnt from stats_mysql_commands_counters").fetchall())
    for what, ms in costs.items():
        print(f"{ms:7.3f} ms  {what}")


if __name__ == "__main__":
    main()
