"""Recordings: the codec, what is never written (passwords), crash-truncated files, appending.

The live part records the real program's engine — every screen's collectors, as built for the
command line — against the ProxySQL admin test double and the test MariaDB, so a collector
whose data can't be recorded fails here, whichever screen it belongs to.
"""
from __future__ import annotations

import collections
import gzip
import json
import os
import re
import shutil
import subprocess
import threading
import time
import zlib
from typing import Dict, List

import pytest

from proxytop.cli import build
from proxytop.core import Snapshot, Table
from proxytop.collectors.diskstats import DiskSnapshot
from proxytop.collectors.filesystems import FilesystemUsage, Holding, SpaceSnapshot
from proxytop.collectors.mysql_space import LargestTable, ServerSpaceReading
from proxytop.collectors.innodb import DiscoveredServer, Discovery
from proxytop.collectors.mysql_locks import AlarmReading
from proxytop.collectors.mysql_sessions import COLUMNS, SessionsReading
from proxytop import options
from proxytop.metrics.innodb import EngineReading, Metric, StatusText, detect_flavour
from proxytop.metrics.iostat import Baseline, DiskCounters
from proxytop.collectors.mysql_statements import StatementsReading
from proxytop.metrics.statements import COLUMNS as STATEMENT_COLUMNS
from proxytop.metrics.lock_chains import LongestWait
from proxytop.polling.connection import Endpoint
from proxytop.polling.devices import QueueSettings
from proxytop.polling.engine import SourceState
from proxytop.recordings import recording
from proxytop.recordings.recording import Recorder, RecordingError, RecordingWriter, decode, encode, scan
from proxytop.recordings.replay import RecordingIndex, ReplayEngine
from tests import proxysql_double
from tests.proxysql_double import ProxySQLDouble, Recording
from tests.terminal import proxytop_command

ADMIN_SECRET = "Adm1n-S3cret-pw"
MONITOR_SECRET = "M0nitor-S3cret-pw"
QUERY_SECRET = "Q-S3cret-pw"
SECRETS = (ADMIN_SECRET, MONITOR_SECRET, QUERY_SECRET)


def plain_text(path: str) -> bytes:
    """Everything a recording holds, decompressed (what a reader of the file could see)."""
    out = b""
    for line in recording.iter_lines(path):
        out += line + b"\n"
    return out


# ----- the codec ------------------------------------------------------------------------------

SAMPLES = [
    None, True, 0, -7, 2 ** 70, 1.5, "text é", b"\x00\xff", (1, (2, 3)), [1, [2]], {"a": {"b": (1,)}},
    {1: "int key", (2, 3): "tuple key", "__x": "reserved-looking key"}, frozenset({"a", "b"}), {3, 4},
    Table(("a", "b"), (("1", None), ("x", "y"))),
    SessionsReading(Table(COLUMNS, ((7, "app", "10.0.0.9:5123", "shop", "Sleep", 9000, "", 8743, None, 0, "RUNNING",
                                     9, 2, 1),)), own_id=10, local=True, threads=((7, 8743, 25, 4096, None),)),
    StatementsReading(Table(STATEMENT_COLUMNS, (("sb", "9f3c", "SELECT ?", 12, 3 * 10 ** 12, 40, 12, 0, 3, 0, 1,
                                                 10 ** 9, 1795211580, 1795211590, None),)), own_hidden=2),
    Discovery(admin=True, servers=(DiscoveredServer("db1", 3306, (10, 20), ("ONLINE", "SHUNNED"), "w"),),
              monitor_user="monitor"),
    EngineReading(text=StatusText(lsn=123, checkpoint_lsn=100), metrics={"m": Metric(5, True)}, text_denied=False),
    DiskSnapshot(devices={"sda": DiskCounters("sda", 8, 0, 17, rd_ios=5)}, kinds={"sda": "disk"},
                 cpu={"user": 1.5}, baselines={"sda": (Baseline(0.1, 30, 30, "learned"), Baseline(None))},
                 roles={"sda": frozenset({"data"})}, role_servers=("db1:3306",),
                 queues={"sda": QueueSettings("sda", "mq-deadline", ("none", "mq-deadline"), 64, 128, True, 512,
                                              "write back")}),
    SpaceSnapshot(filesystems=(FilesystemUsage("/var/lib/mysql", "ext4", "/dev/sda1", "sda1", 10 ** 11, 9 * 10 ** 10,
                                               10 ** 10, 6553600, 6000000, (Holding("db1:3306", "data", "/var/lib/mysql"),),
                                               5000.0, 1400.0, 8 * 10 ** 10),),
                  servers=("db1:3306",), notes=("undo /x: Permission denied",)),
    ServerSpaceReading(binlog_files=3, binlog_bytes=3 * 10 ** 9, written_first=(1400.0, 0), written_now=(5000.0, 10 ** 8),
                       largest=LargestTable("shop", "orders", "InnoDB", 12 * 10 ** 9), largest_at=1400.0),
    SourceState("proxysql", connected=False, connecting=False, error="connection refused", retry_at=5.0, failures=2),
    detect_flavour("10.11.6-MariaDB-0+deb12u1-log", "Debian 12"),
    AlarmReading(LongestWait(42, 16, 15, 300, True)),  # the header's lock-wait alarm, on every screen
]


@pytest.mark.parametrize("value", SAMPLES, ids=[type(v).__name__ for v in SAMPLES])
def test_values_come_back_equal_and_of_the_same_type(value):
    text = recording.dumps(value)
    back = recording.loads(text)
    assert back == value and type(back) is type(value)
    json.loads(text)  # plain JSON


def test_floats_that_json_has_no_words_for():
    back = decode(encode([float("inf"), float("-inf"), float("nan")]))
    assert back[0] == float("inf") and back[1] == float("-inf") and back[2] != back[2]


@pytest.mark.parametrize("name", ["os:system", "builtins:eval", "proxytop.core:Table",
                                  "proxytop.innodb:Metric", "Snapshot", "NoSuchType", 7])
def test_only_the_types_a_recording_may_hold_are_rebuilt(name):
    with pytest.raises(RecordingError, match="knows no recorded type"):
        decode({"__dc": name, "f": {}})


def test_types_are_named_by_their_stable_names_not_their_modules():
    text = recording.dumps(EngineReading(text=StatusText(lsn=1), metrics={"m": Metric(5, True)}, text_denied=False))
    assert '"InnoDBReading"' in text and '"InnoDBMetric"' in text and "proxytop" not in text


@pytest.mark.parametrize("value", [Snapshot("c", 1, 0.0, 0.0), 0.5j, collections.namedtuple("Pair", "a b")(1, 2)],
                         ids=["an unlisted dataclass", "complex", "a named tuple"])
def test_values_of_other_types_are_not_recorded(value):
    with pytest.raises(RecordingError, match="not among recording.TYPES"):
        encode({"v": value})


def test_a_field_added_later_takes_its_default():
    encoded = encode(SourceState("x", connected=True))
    del encoded["f"]["failures"]
    assert decode(encoded).failures == 0


def test_an_unrecordable_value_is_refused_or_blanked_when_lenient():
    with pytest.raises(RecordingError, match="type object can't be recorded"):
        encode({"conn": object()})
    assert encode({"conn": object()}, lenient=True) == {"conn": None}


# ----- passwords ------------------------------------------------------------------------------

def test_password_columns_keys_fields_and_pairs_are_blanked():
    users = Table(("username", "password", "active"), (("app", "*ABC123", "1"),))
    variables = Table(("variable_name", "variable_value"),
                      (("mysql-monitor_password", "m0n"), ("admin-admin_credentials", "admin:adm;radmin:r"),
                       ("mysql-monitor_username", "monitor")))
    value = {"users": users, "variables": variables, "Password": "p", "nested": {"monitor_password": "x"},
             "pairs": [("cluster_password", "c"), ("name", "keep")],
             "endpoint": Endpoint(user="u", password="ep"),
             "discovery": Discovery(admin=True, monitor_user="monitor", monitor_password="mp")}
    back = recording.loads(recording.dumps(value))
    assert back["users"].rows == (("app", "", "1"),)
    assert back["variables"].rows == (("mysql-monitor_password", ""), ("admin-admin_credentials", ""),
                                      ("mysql-monitor_username", "monitor"))
    assert back["Password"] == "" and back["nested"]["monitor_password"] == ""
    assert back["pairs"] == [("cluster_password", ""), ("name", "keep")]
    assert back["endpoint"].password == "" and back["endpoint"].user == "u"
    assert back["discovery"].monitor_password == "" and back["discovery"].monitor_user == "monitor"


def test_counters_named_after_passwords_are_kept():
    stats = {"Access_Denied_Wrong_Password": "3", "Questions": "10"}
    assert recording.loads(recording.dumps(stats)) == stats


@pytest.mark.parametrize("sql, secret", [
    ("ALTER USER 'app'@'%' IDENTIFIED BY 'hunter2'", "hunter2"),
    ("CREATE USER x IDENTIFIED WITH mysql_native_password BY \"hunter2\"", "hunter2"),
    ("SET PASSWORD FOR 'app'@'%' = PASSWORD('hunter2')", "hunter2"),
    ("set password = 'hunter2'", "hunter2"),
    ("CHANGE MASTER TO MASTER_HOST='h', MASTER_PASSWORD='hunter2'", "hunter2"),
    ("GRANT ALL ON *.* TO u IDENTIFIED BY 'it''s hunter2'", "hunter2"),
])
def test_statement_texts_lose_their_quoted_secrets(sql, secret):
    table = Table(("info",), ((sql,),))
    text = recording.dumps(table)
    assert secret not in text and "***" in text


def test_recorded_options_leave_passwords_and_modes_out():
    config = options.parse(["-p", "pw1", "--mysql", "db1:3307", "--mysql-password", "pw2", "--batch",
                            "--record", "f.gz"], {})
    recorded = recording.recorded_options(config.args)
    assert recorded["mysql"] == [["db1", 3307]]
    assert "pw1" not in json.dumps(recorded) and "pw2" not in json.dumps(recorded)
    assert not {"record", "batch", "password", "mysql_password"} & set(recorded)


# ----- a live recording of every screen's collectors ------------------------------------------------

def _with_secrets(double: ProxySQLDouble) -> None:
    def monitor_password(columns, rows):
        for row in rows:
            if row[0] == "mysql-monitor_password":
                row[1] = MONITOR_SECRET
        return columns, rows

    def statement_with_password(columns, rows):
        if rows:
            rows[0][columns.index("info")] = f"ALTER USER 'app'@'%' IDENTIFIED BY '{QUERY_SECRET}'"
        return columns, rows

    def backend_error(columns, rows):  # the 2.7 recording has none: one, so the Errors screen has a row
        return columns, rows + [["20", "127.0.0.1", "3312", "sbtest", "127.0.0.1", "sbtest", "1146", "3",
                                 "1795211580", "1795211590", "Table 'sbtest.nope' doesn't exist"]]

    double.transforms["global_variables"] = monitor_password
    double.transforms["stats_mysql_errors"] = backend_error
    double.transforms["stats_mysql_processlist"] = statement_with_password


def ready(engine, name: str) -> bool:
    """Two readings (one for slow own-pace collectors), or a reason why not."""
    collector = engine.collector(name)
    state = engine.state(collector.source)
    if engine.error(name) or (state is not None and state.error and not state.connected):
        return True
    return len(engine.history(name)) >= (1 if collector.own_pace else 2)


def record_live(path: str, argv: List[str], seconds: float = 8.0) -> Dict[str, List[Snapshot]]:
    """Run the engine as proxytop builds it with every screen's collectors active, recording
    into ``path``, until each collector has two readings (or ``seconds``). Returns the live
    snapshots by collector, in the order they were taken."""
    config = options.parse(argv, {})
    engine, controller = build(config)
    live: Dict[str, List[Snapshot]] = {}
    engine.add_observer(lambda kind, value: live.setdefault(value.collector, []).append(value)
                        if kind == "snapshot" else None)
    writer = RecordingWriter(path, options=recording.recorded_options(config.args), target=config.endpoint.label)
    recorder = Recorder(engine, writer).attach()

    def names() -> List[str]:
        found = ["proxysql.global"]
        for screen in controller.screens:
            found += [n for n in screen.active_collectors() if n not in found]
        return found

    engine.set_active(names())
    for name in names():
        engine.set_interval(name, engine.collector(name).min_interval)
    engine.start()
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            active = names()
            engine.set_active(active)
            if all(ready(engine, n) for n in active) and time.monotonic() > deadline - seconds + 3:
                break
            time.sleep(0.1)
    finally:
        engine.stop()
        recorder.close()
    assert writer.skipped == 0, "a collector returned data that can't be recorded"
    assert writer.snapshots == sum(len(v) for v in live.values())
    return live


def _wait_quietly(conn, sql: str) -> None:
    try:
        with conn.cursor() as cursor:
            cursor.execute(sql)
    except Exception:  # the server went away first: nothing to wait for any more
        pass


@pytest.fixture(scope="session")
def live_recording(tmp_path_factory, mariadb):
    """(path, live snapshots by collector): the real collectors of every screen, recorded."""
    path = str(tmp_path_factory.mktemp("rec") / "live.rec.gz")
    proxysql_double.USERS["secretadmin"] = (ADMIN_SECRET, "admin")
    double = ProxySQLDouble(recording=Recording.load())
    _with_secrets(double)
    double.start()
    # a session idle in an open transaction: one the Sessions screen always shows; another
    # waits for the row it locked (the Locks screen's chain)
    mariadb.query("CREATE DATABASE IF NOT EXISTS recording_test")
    mariadb.query("CREATE TABLE IF NOT EXISTS recording_test.t (id INT PRIMARY KEY) ENGINE=InnoDB")
    mariadb.query("REPLACE INTO recording_test.t VALUES (1)")
    idle_in_transaction = mariadb.connect()
    with idle_in_transaction.cursor() as cursor:
        cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cursor.execute("SELECT id FROM recording_test.t WHERE id = 1 FOR UPDATE")
    waiter = mariadb.connect()
    with waiter.cursor() as cursor:
        cursor.execute("SET SESSION innodb_lock_wait_timeout = 300")
    waiting = threading.Thread(target=_wait_quietly, args=(waiter, "DELETE FROM recording_test.t WHERE id = 1"),
                               daemon=True)
    waiting.start()
    try:
        live = record_live(path, ["-P", str(double.port), "-u", "secretadmin", "-p", ADMIN_SECRET,
                                  "--mysql", mariadb.address, "--mysql-user", mariadb.user,
                                  "--mysql-password", mariadb.password])
    finally:
        idle_in_transaction.close()  # the waiter gets its row: its connection can be closed
        waiting.join(30)
        waiter.close()
        double.stop()
        proxysql_double.USERS.pop("secretadmin", None)
    return path, live, mariadb.password


def test_every_screen_collector_is_recorded(live_recording):
    path, live, _ = live_recording
    index = RecordingIndex(path)
    assert index.complete
    # ProxySQL tables, the InnoDB reading of the real MariaDB, the host's disks
    for name in ("proxysql.global", "proxysql.connection_pool", "proxysql.processlist", "innodb.discovery",
                 "host.diskstats"):
        assert name in live and len(index.snapshots[name]) == len(live[name])
    assert any(n.startswith("innodb.engine.") for n in index.snapshots)
    assert set(index.snapshots) == set(live)
    assert not re.search(rb"proxytop\.\w+(\.\w+)*:", plain_text(path))  # types by TYPES' names, never by module


def test_no_password_reaches_the_file(live_recording):
    path, live, mysql_password = live_recording
    # the secrets were there to be recorded (ProxySQL's monitor password is not even read when
    # MySQL credentials are given; its Discovery field is dropped as a secret, see above) ...
    discovery = live["innodb.discovery"][-1].data
    assert discovery.monitor_password is None
    assert any(QUERY_SECRET in str(s.data) for s in live["proxysql.processlist"])
    # ... and none of them is in the file, compressed or not
    text = plain_text(path)
    with open(path, "rb") as handle:
        raw = handle.read()
    for secret in SECRETS + (mysql_password,):
        assert secret.encode() not in text and secret.encode() not in raw
    assert b"secretadmin" in text  # the user name is fine


# ----- crashes, truncation and appending --------------------------------------------------------

class FakeClock:
    def __init__(self, start: float = 1000.0):
        self.now = start

    def __call__(self) -> float:
        return self.now


def synthetic(path: str, count: int = 40, start: float = 1000.0, close: bool = True) -> RecordingWriter:
    clock = FakeClock(start)
    writer = RecordingWriter(path, clock=clock, wall=lambda: 1_700_000_000.0 + clock.now - start)
    for i in range(count):
        clock.now += 1.0
        writer.snapshot(Snapshot("c", {"n": i, "pad": "x" * (i % 7)}, taken_at=clock.now, duration=0.01,
                                 wall_time=1_700_000_000.0 + clock.now - start))
    if close:
        writer.close()
    return writer


def test_a_file_cut_anywhere_reads_up_to_its_last_complete_snapshot(tmp_path):
    full = str(tmp_path / "full.gz")
    synthetic(full, 40)
    whole = scan(full)
    snapshots = [r for r in whole.records if r[0]["k"] == "s"]
    assert len(snapshots) == 40 and whole.complete
    data = open(full, "rb").read()
    cut_path = str(tmp_path / "cut.gz")
    seen = []
    for size in range(0, len(data) + 1, 23):
        with open(cut_path, "wb") as handle:
            handle.write(data[:size])
        if size < 10:  # not even a gzip header
            with pytest.raises(RecordingError):
                scan(cut_path)
            continue
        try:
            found = scan(cut_path)
        except RecordingError as exc:
            assert "empty" in str(exc)
            continue
        assert found.records == whole.records[:len(found.records)]  # always a prefix
        seen.append(len(found.records))
    assert seen == sorted(seen) and seen[-1] >= len(whole.records) - 2


def test_a_crashed_recording_replays(tmp_path):
    path = str(tmp_path / "crash.gz")
    writer = synthetic(path, 30, close=False)  # as if proxytop was killed: no gzip trailer
    crashed = str(tmp_path / "crashed.gz")
    shutil.copy(path, crashed)
    writer.close()
    with pytest.raises((EOFError, OSError)):
        with gzip.open(crashed) as handle:  # what gzip itself makes of it
            handle.read()
    engine = ReplayEngine.open(crashed)
    assert not engine.index.complete
    assert len(engine.index.snapshots["c"]) == 30
    engine.seek(engine.index.end)
    assert engine.latest("c").data == {"n": 29, "pad": "x"}


def test_recording_again_appends_a_run_and_repairs_a_crashed_one(tmp_path):
    path = str(tmp_path / "runs.gz")
    writer = synthetic(path, 5, close=False)
    crashed = str(tmp_path / "crashed.gz")
    shutil.copy(path, crashed)
    writer.close()
    synthetic(crashed, 7, start=50_000.0)  # appends (after repairing the unfinished run)
    found = scan(crashed)
    assert found.complete
    assert [r[0]["k"] for r in found.records].count("h") == 2
    assert len([r for r in found.records if r[0]["k"] == "s"]) == 12
    with gzip.open(crashed, "rt") as handle:  # an ordinary multi-member gzip file now
        assert sum(1 for _ in handle) == len(found.records)
    index = RecordingIndex(crashed)
    assert len(index.segments) == 2


def test_records_are_flushed_as_they_are_written(tmp_path):
    path = str(tmp_path / "live.gz")
    writer = synthetic(path, 3, close=False)
    assert len([r for r in scan(path).records if r[0]["k"] == "s"]) == 3  # readable while still open
    writer.close()


@pytest.mark.parametrize("content, message", [
    (b"just some text\n", "not a proxytop recording"),
    (b"", "empty"),
    (gzip.compress(b'{"k":"s","c":"x","t":1}\n'), "not a proxytop recording"),
])
def test_files_that_are_not_recordings(tmp_path, content, message):
    path = tmp_path / "bad"
    path.write_bytes(content)
    with pytest.raises(RecordingError, match=message):
        scan(str(path))
    if content:
        with pytest.raises(RecordingError, match=message):
            RecordingWriter(str(path))  # never appended to


@pytest.mark.parametrize("version, advice", [(1, "record it again"), (recording.VERSION + 1, "a newer proxytop")])
def test_another_format_is_refused_naming_the_proxytop_that_made_it(tmp_path, version, advice):
    path = tmp_path / "other.gz"
    header = {"k": "h", "format": recording.FORMAT, "version": version, "proxytop": "0.0.7"}
    path.write_bytes(gzip.compress((json.dumps(header) + "\n").encode()))
    for read in (scan, RecordingIndex, RecordingWriter):  # nor is a run appended to it
        with pytest.raises(RecordingError) as refused:
            read(str(path))
        message = str(refused.value)
        assert f"recorded by proxytop 0.0.7 (format {version}); this proxytop reads format {recording.VERSION}" \
            in message and message.endswith(advice) and "\n" not in message


def test_the_program_says_in_one_line_that_an_old_recording_cannot_be_replayed(tmp_path):
    path = tmp_path / "old.rec.gz"
    header = {"k": "h", "format": recording.FORMAT, "version": 1, "proxytop": "0.1.0"}
    path.write_bytes(gzip.compress((json.dumps(header) + "\n").encode()))
    result = subprocess.run(list(proxytop_command()) + ["--replay", str(path), "--batch"], capture_output=True,
                            text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert result.stderr == (f"proxytop: error: {path} was recorded by proxytop 0.1.0 (format 1); "
                             f"this proxytop reads format {recording.VERSION}: record it again\n")


def test_compression_keeps_a_minute_of_readings_small(tmp_path):
    path = str(tmp_path / "size.gz")
    table = Table(tuple(f"col{i}" for i in range(15)), tuple(tuple(str(i * j) for j in range(15)) for i in range(20)))
    clock = FakeClock()
    writer = RecordingWriter(path, clock=clock)
    for i in range(60):
        clock.now += 1
        writer.snapshot(Snapshot("t", table, taken_at=clock.now, duration=0.001))
    writer.close()
    raw = len(recording.dumps(table)) * 60
    assert os.path.getsize(path) < raw / 10
    assert zlib.decompress(open(path, "rb").read(), 31)  # a valid gzip stream


def test_worked_examples_in_the_docstrings():
    import doctest

    import proxytop.recordings.recording as module

    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
