"""proxytop --demo: the recording shipped with the package (tests/make_demo_recording.py) shows
every screen populated, in the terminal and in batch, and holds no password."""
from __future__ import annotations

import json
import os
import re
import subprocess

from proxytop.metrics import digests
from proxytop.recordings.recording import loads, scan
from proxytop.recordings.replay import DEMO_FILE, RecordingIndex
from proxytop.screens import HALVES, MYSQL_HALF, PROXYSQL_HALF, all_screens, screen_key
from tests.mariadb import ROOT_PASSWORD
from tests.terminal import proxytop_command

SCREENS = [s for s in all_screens() if s.built]
# Screens whose rows need servers the demo did not record, and the line they show instead: the
# demo's MySQL servers are no Galera nodes.
NOT_IN_THE_DEMO = {"galera": "No Galera node"}


def test_the_demo_records_every_screen():
    """A screen added without making the demo again (tests/make_demo_recording.py) fails here."""
    recorded = set(RecordingIndex(DEMO_FILE).snapshots)
    missing = [s.key for s in SCREENS if s.active_collectors() and s.active_collectors()[0] not in recorded]
    assert not missing, f"the demo has no readings for {missing}: run python -m tests.make_demo_recording"


def test_the_demo_recording_is_shipped_small_and_complete():
    assert os.path.getsize(DEMO_FILE) < 1024 * 1024
    index = RecordingIndex(DEMO_FILE)
    assert index.complete and len(index.segments) == 1
    assert 50 <= index.end - index.start <= 120
    assert any(name.startswith("innodb.engine.") for name in index.snapshots)


def test_the_demo_holds_no_password():
    found = scan(DEMO_FILE)
    text = "\n".join(f"{envelope}\t{data}" for envelope, data in found.records)
    assert ROOT_PASSWORD not in text  # the MariaDB servers' password, given to proxytop when recording
    for envelope, data in found.records:
        if envelope["k"] == "src":
            endpoint = loads(data).get("endpoint")
            assert endpoint is None or endpoint.password == ""
        if envelope.get("c") == "innodb.discovery":
            assert loads(data).monitor_password in ("", None)
    options = found.records[0][0]["options"]
    assert not any("password" in key for key in options)


def test_the_demo_shows_the_ports_of_a_real_setup_and_a_neutral_disk():
    found = scan(DEMO_FILE)
    header = found.records[0][0]
    assert header["target"] == "127.0.0.1:6032"
    sources = {envelope["name"] for envelope, _ in found.records if envelope["k"] == "src"}
    assert {"mysql:127.0.0.1:3311", "mysql:127.0.0.1:3312", "mysql:127.0.0.1:3313"} <= sources
    disks = [loads(data) for envelope, data in found.records if envelope.get("c") == "host.diskstats"]
    assert disks and all("sda" in d.devices for d in disks)
    assert disks[-1].roles.get("sda")  # the MySQL servers' files are on it (once their variables are read)
    machine = {name for d in disks for name, kind in d.kinds.items() if kind in ("disk", "partition")}
    assert all(re.fullmatch(r"sda\d*", name) for name in machine), machine
    assert all(d.state_file in (None, "~/.local/state/proxytop/disk-baselines.json") for d in disks)
    text = "\n".join(f"{envelope}\t{data}" for envelope, data in found.records)
    assert "/tmp/proxytop-" not in text  # the test servers' folders are shown where a real server keeps them


def test_the_demo_shows_saturation_from_its_first_reading():
    # the baselines ship with the recording (learned, or measured, before the recorded minute)
    found = scan(DEMO_FILE)
    disks = [loads(data) for envelope, data in found.records if envelope.get("c") == "host.diskstats"]
    for snapshot in disks:
        read, write = snapshot.baselines["sda"]
        assert read.known and write.known and "learning" not in (read.source, write.source)
    result = subprocess.run(list(proxytop_command()) + ["--demo", "--batch", "--count", "3", "--screen", "iostat",
                                                         "--format", "json"],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    rows = [row for report in map(json.loads, result.stdout.splitlines()) for row in report["rows"]
            if row.get("device") == "sda"]
    assert rows and all(row.get("w_sat") != "learning" and row.get("r_sat") != "learning" for row in rows), rows
    assert any(isinstance(row.get("w_sat"), (int, float)) for row in rows), rows


def test_every_screen_has_rows_in_batch():
    result = subprocess.run(list(proxytop_command()) + ["--demo", "--batch", "--count", "1", "--screen", "all",
                                                         "--format", "json"],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    reports = {r["screen"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert set(reports) >= {s.key for s in SCREENS}
    for key in (s.key for s in SCREENS):
        if key in NOT_IN_THE_DEMO:
            assert any(NOT_IN_THE_DEMO[key] in note for note in reports[key]["notes"]), reports[key]["notes"]
            continue
        if key == "events" and not reports[key]["rows"]:  # nothing changed yet: it says what it watches
            assert reports[key]["notes"][0] == "Nothing has changed yet. Watched:", reports[key]
            continue
        assert reports[key]["rows"], f"{key} has no rows in the demo"


def test_demo_starts_in_the_terminal_and_every_screen_shows_rows(proxytop_term):
    term = proxytop_term("--demo", cols=140, rows=40)
    term.wait_until(lambda s: s.splitlines()[0].startswith("proxytop REPLAY ") and "playing 1x" in s.splitlines()[1],
                    timeout=15, what="the demo playing")
    half = PROXYSQL_HALF
    for expected in SCREENS:
        wanted = PROXYSQL_HALF if expected.key in HALVES[PROXYSQL_HALF] else MYSQL_HALF
        if wanted != half:  # M: the other half's tabs
            term.send("M")
            half = wanted
        term.send(screen_key(HALVES[half].index(expected.key), expected.key))
        if hasattr(expected, "canvas"):  # a page of charts (Trends): its first chart with a value
            term.wait_until(lambda s: re.search(r"^Queries/s \d", s, re.M) is not None, timeout=30,
                            what=f"a chart on {expected.title}")
            continue
        state = expected.initial_state()
        sort_title = next(c.title.strip() for c in expected.columns if c.key == state.sort_key)
        status = re.compile(rf"^sort {re.escape(sort_title)} [\u2191\u2193]  (?:filter .*  )?(\d+)(?:/\d+)? rows?",
                            re.MULTILINE)

        def populated(text: str) -> bool:  # this screen's status line, with rows
            found = status.search(text)
            if expected.key in NOT_IN_THE_DEMO:
                return bool(found) and NOT_IN_THE_DEMO[expected.key] in text
            return bool(found) and int(found.group(1)) > 0

        screen = term.wait_until(populated, timeout=20, what=f"rows on {expected.title}")
        assert "no readings of this screen" not in screen
    term.send("q")
    assert term.wait_exit(5) == 0


def newest_seen(collector: str):
    """[(wall time of the reading, its newest last_seen)] of the demo's readings of a table."""
    found = []
    for envelope, data in scan(DEMO_FILE).records:
        if envelope.get("c") == collector:
            data = loads(data)
            if hasattr(data, "entries"):  # the digest, parsed as read (proxytop.metrics.digests.Reading)
                seen = [entry[digests.LAST] for entry in data.entries.values() if entry[digests.LAST] is not None]
            else:
                at = data.columns.index("last_seen")
                seen = [int(row[at]) for row in data.rows if row[at] is not None]
            if seen:
                found.append((envelope["w"], max(seen)))
    return found


def test_the_demo_digests_and_errors_keep_the_replay_clock():
    """The digests' and errors' last_seen advance as the demo's own clock does: never ahead of
    the reading that shows them (a last seen in the future), never twice as fast (the test double
    serves one recorded reading per query, so the maker must read each table at its recorded pace)."""
    for collector, most_apart in (("proxysql.query_digest", 12.0), ("proxysql.errors", 8.0)):
        readings = newest_seen(collector)
        assert len(readings) >= 5, collector
        for wall, seen in readings:
            assert seen <= wall + 1.5, (collector, wall, seen)  # whole seconds, shifted to now
            assert wall - seen <= most_apart, (collector, wall, seen)
        (first_wall, first_seen), (last_wall, last_seen) = readings[0], readings[-1]
        pace = (last_seen - first_seen) / (last_wall - first_wall)
        assert 0.75 <= pace <= 1.25, (collector, pace, readings)
