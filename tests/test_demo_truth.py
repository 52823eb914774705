"""proxytop --demo tells the truth: its monitor checks are on the recording's clock and follow
the pool's statuses, its Cluster screen agrees with the header, and the detail views say what
a replay is (no other node to watch, no baseline file written) and where a server came from."""
from __future__ import annotations

import re

from proxytop.metrics import health
from proxytop.recordings.recording import loads, scan
from proxytop.recordings.replay import DEMO_FILE
from proxytop.screens import all_screens, screen_key

KEYS = {s.key: screen_key(i) for i, s in enumerate(all_screens())}
DOWN = "\x1b[B"


def readings(collector: str):
    """[(wall time, data)] of the demo's readings of ``collector``."""
    return [(envelope["w"], loads(data)) for envelope, data in scan(DEMO_FILE).records
            if envelope.get("k") == "s" and envelope.get("c") == collector]


def test_the_demo_monitor_checks_are_on_the_recordings_clock():
    """ProxySQL's clock at each reading is the reading's wall time, and the newest check is a
    few seconds older (the monitor pings every 2 s): never days, never in the future."""
    found = readings("proxysql.monitor_logs")
    assert len(found) >= 10
    for wall, data in found:
        assert data.server_now_us is not None and abs(data.server_now_us / 1e6 - wall) < 5, (wall, data.server_now_us)
        newest = max(entry[0] for monitor in data.servers.values()
                     for kind in ("ping", "connect") for entry in monitor.entries(kind))
        assert -1.5 <= (data.server_now_us - newest) / 1e6 <= 15, (wall, newest)


def test_a_failed_check_in_the_demo_is_beside_a_server_that_is_not_online():
    """The monitor never runs ahead of the pool: while the newest ping of a server fails, the
    pool read at about the same moment does not show it ONLINE. (The demo used to serve the
    monitor logs five times as fast as the pool: pings of 3313 failed beside its ONLINE row.)"""
    pools = readings("proxysql.connection_pool")
    for wall, data in readings("proxysql.monitor_logs"):
        for server, monitor in data.servers.items():
            pings = monitor.entries("ping")
            if not pings or not pings[-1][2]:
                continue
            pool = min(pools, key=lambda reading: abs(reading[0] - wall) if reading[0] >= wall - 1 else 1e9)[1]
            statuses = {f"{row['srv_host']}:{row['srv_port']}": row["status"] for row in pool.dicts()}
            later = [reading for reading in pools if wall <= reading[0] <= wall + 4]
            assert any({f"{r['srv_host']}:{r['srv_port']}": r["status"] for r in d.dicts()}.get(server) != "ONLINE"
                       for _, d in later) or statuses.get(server) != "ONLINE", (wall, server)


def duration_s(text: str) -> float:
    """'1m32s', '39s', '2h05m' -> seconds."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    return sum(int(n) * units[u] for n, u in re.findall(r"(\d+)([dhms])", text))


def test_the_demo_cluster_screen_agrees_with_the_header(proxytop_term):
    """The watched node's Uptime and Queries/s on the Cluster screen are the header's (as
    last reported, every ~10 s); Enter on another node says why a replay cannot watch it; the
    arrow beside a climbing checksum is explained."""
    header = re.compile(r"up (\S+)\s+Q/s ([\d.]+k?)")
    node = re.compile(r"127\.0\.0\.1:6032\s+node-1\s+\S+\s+\S+\s+(\d\S*)\s+(?:\S+ ago\s+)?([\d.]+k?)\s")
    term = proxytop_term("--demo", cols=160, rows=45)
    term.wait_until(lambda s: "playing 1x" in s.splitlines()[1], timeout=15, what="the demo playing")
    term.send(KEYS["cluster"])
    term.wait_until(lambda s: node.search(s) is not None, timeout=30, what="node 1's Uptime and Queries/s")
    term.send("p")

    def both(text: str) -> bool:
        return bool(header.search(text) and node.search(text)) and "paused" in text.splitlines()[1]

    screen = term.wait_until(both, timeout=20, what="the header and node 1's row, paused")
    up, qps = header.search(screen).groups()
    uptime, queries = node.search(screen).groups()
    assert abs(duration_s(up) - duration_s(uptime)) <= 15, (up, uptime)
    qps = float(qps[:-1]) * 1000 if qps.endswith("k") else float(qps)
    queries = float(queries[:-1]) * 1000 if queries.endswith("k") else float(queries)
    assert qps / 3 <= queries <= qps * 3, (qps, queries)
    if "\u2191" in screen:
        assert "\u2191N: diff_check" in screen
    term.send(DOWN)
    term.send("\r")
    term.wait_for("a replay shows the node it recorded")
    term.send("q")
    assert term.wait_exit(5) == 0


def test_the_demo_details_say_what_a_replay_is(proxytop_term):
    term = proxytop_term("--demo", cols=160, rows=60)
    term.wait_until(lambda s: "playing 1x" in s.splitlines()[1], timeout=15, what="the demo playing")
    term.send(KEYS["innodb"])
    term.wait_until(lambda s: re.search(r"3311.*\n.*3312.*\n.*3313", s) is not None, timeout=20,
                    what="the three servers")
    term.send("\r")
    detail = term.wait_until(lambda s: "Sources" in s and "Server " in s, timeout=20, what="the InnoDB detail")
    assert "given on the command line" not in detail
    assert "from runtime_mysql_servers" in detail
    assert "SHOW ENGINE INNODB STATUS" not in detail  # never asked of MariaDB
    term.send("\x1b")
    term.wait_until(lambda s: "Sources" not in s, timeout=10, what="the detail closed")
    term.send(KEYS["iostat"])
    term.wait_until(lambda s: re.search(r"^\s*sda\s", s, re.MULTILINE) is not None, timeout=20, what="the disk")
    term.send("\r")
    term.wait_for("a replay writes no file", timeout=20)
    term.send("q")
    assert term.wait_exit(5) == 0


def test_a_shunned_server_whose_checks_pass_again_says_so():
    recovered = health.ServerMonitor(ping=((10**15, 0, "Lost connection", None), (10**15 + 2 * 10**6, 300, None, None)))
    assert "last failed ping at" in health.reason("SHUNNED", None, recovered)
    assert "every ping and connect check listed passes" in \
        health.reason("SHUNNED", None, health.ServerMonitor(ping=((1, 300, None, None),)))
