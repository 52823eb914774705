"""ConnPool's pure row building on recorded snapshots."""
from proxytop.core import Snapshot, Table
from proxytop.screens.connpool import pool_rows

COLUMNS = ("hostgroup", "srv_host", "srv_port", "status", "ConnUsed", "ConnFree", "ConnOK", "ConnERR",
           "MaxConnUsed", "Queries", "Queries_GTID_sync", "Bytes_data_sent", "Bytes_data_recv", "Latency_us")


def snap(rows, at, columns=COLUMNS):
    return Snapshot("proxysql.connection_pool", Table(columns, tuple(tuple(r) for r in rows)), at, 0.001)


ROW_A = ["10", "127.0.0.1", "3311", "ONLINE", "8", "0", "8", "0", "8", "691854", "0", "45398171", "2072691395", "1046"]
ROW_B = ["10", "127.0.0.1", "3311", "ONLINE", "8", "0", "8", "0", "8", "703734", "0", "46173040", "2107809915", "804"]


def test_rates_from_two_snapshots():
    rows = pool_rows(snap([ROW_A], 10.0), snap([ROW_B], 12.0), None)
    row = rows[0]
    assert row["queries_s"] == (703734 - 691854) / 2.0
    assert row["sent_s"] == (46173040 - 45398171) / 2.0
    assert row["latency_ms"] == 0.804
    assert row["used_pct"] is None  # no runtime_mysql_servers (stats user)


def test_first_sample_has_no_rates_and_reset_gives_none():
    assert pool_rows(None, snap([ROW_A], 1.0), None)[0]["queries_s"] is None
    restarted = list(ROW_A)
    restarted[9] = "12"
    assert pool_rows(snap([ROW_A], 1.0), snap([restarted], 2.0), None)[0]["queries_s"] is None


def test_runtime_servers_enrich_rows():
    servers = Snapshot("s", Table(("hostgroup_id", "hostname", "port", "weight", "max_connections", "comment"),
                                  (("10", "127.0.0.1", "3311", "1", "200", "writer"),)), 1.0, 0.0)
    row = pool_rows(None, snap([ROW_A], 1.0), servers)[0]
    assert (row["weight"], row["max_connections"], row["comment"]) == (1, 200, "writer")
    assert row["used_pct"] == 4.0


def test_proxysql_1_4_columns_and_old_latency_ms():
    columns = tuple(c for c in COLUMNS if c not in ("MaxConnUsed", "Queries_GTID_sync", "Latency_us")) + ("Latency_ms",)
    values = dict(zip(COLUMNS, ROW_A))
    row14 = [values.get(c, "3") for c in columns]
    row = pool_rows(None, snap([row14], 1.0, columns), None)[0]
    assert row["max_conn_used"] is None and row["latency_ms"] == 3
