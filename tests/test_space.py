"""Space before it runs out: IOstat's space view, the header's space alarm, and each disk's
queue settings.

A tmpfs the suite mounts (where mounting is permitted) holds a real MariaDB's datadir and
tmpdir; known numbers of bytes written there are checked against used %, growth and "full
in", the 90% alarm against a filled filesystem, the largest-table check against a table of
known size. The queue settings are read from a fake sysfs tree and from the real /sys.
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from proxytop import options
from proxytop.collectors.diskstats import DiskStats
from proxytop.collectors.filesystems import Filesystems, SpaceSnapshot
from proxytop.collectors.innodb import MySQLSource, VARIABLES_SQL
from proxytop.collectors.mysql_space import NEEDS_SELECT, ServerSpace
from proxytop.config.endpoints import Endpoint
from proxytop.metrics.space import queue_notes
from proxytop.polling.devices import BlockDevices, QueueSettings, space_role_paths
from proxytop.screens.base import DataView
from proxytop.screens.iostat import IOstatScreen
from proxytop.screens.space import server_lines, space_alarm, space_rows
from tests.mariadb import MariaDBServer, MariaDBStartError, MariaDBUnavailable
from tests.terminal import proxytop_command

MiB = 1024 * 1024
SIZE = 256 * MiB  # the tmpfs's size


class Clock:
    """The collectors' monotonic clock, moved by the test (growth needs a minute of readings;
    the bytes are real, only the time between two readings is given)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def write_bytes(path: str, count: int) -> None:
    with open(path, "wb") as handle:
        handle.write(b"\x5a" * count)  # real bytes: a tmpfs keeps what it is given, page by page
        handle.flush()
        os.fsync(handle.fileno())


# ----- a tmpfs with a real MariaDB on it -----------------------------------------------------

@pytest.fixture(scope="module")
def tmpfs():
    mount_point = tempfile.mkdtemp(prefix="proxytop-space-")
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", mount_point],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        os.rmdir(mount_point)
        pytest.skip(f"cannot mount a tmpfs here: {result.stdout.decode(errors='replace').strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", mount_point], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.rmdir(mount_point)


@pytest.fixture(scope="module")
def server_on_tmpfs(tmpfs):
    """A MariaDB whose base directory (datadir, tmpdir, binary logs) is on the tmpfs."""
    saved = tempfile.tempdir
    tempfile.tempdir = tmpfs  # the server makes its base directory with tempfile.mkdtemp
    try:
        server = MariaDBServer({"innodb_log_file_size": "16M", "innodb_flush_method": "fsync"},
                               name="space").start()
    except MariaDBUnavailable as exc:
        pytest.skip(str(exc))
    except MariaDBStartError as exc:
        pytest.fail(str(exc))
    finally:
        tempfile.tempdir = saved
    try:
        yield server
    finally:
        server.stop()


def endpoint_of(server, user=None, password=None) -> Endpoint:
    return Endpoint(host=server.host, port=server.port, user=user or server.user,
                    password=password if password is not None else server.password)


def server_paths(server):
    """role -> directories, from the server's own variables, as proxytop reads them."""
    session = MySQLSource(endpoint_of(server)).connect()
    try:
        variables = {str(k).lower(): v for k, v in session.query(VARIABLES_SQL).rows}
    finally:
        session.conn.close()
    return space_role_paths(variables)


def test_used_growth_and_full_in_follow_the_bytes_written(server_on_tmpfs, tmpfs):
    server = server_on_tmpfs
    paths = server_paths(server)
    assert paths["data"] == [os.path.normpath(server.datadir)] and paths["tmp"] == [server.tmpdir], paths
    clock = Clock()
    collector = Filesystems(paths=lambda: {server.address: paths}, clock=clock)
    first = collector.collect()
    assert [fs.mount for fs in first.filesystems] == [tmpfs], first
    fs = first.filesystems[0]
    assert fs.fstype == "tmpfs" and fs.total == SIZE, fs
    assert {h.role for h in fs.holds} >= {"data", "redo", "binlog", "tmp"}, fs.holds
    rows = space_rows(first, {})
    assert rows[0]["growth"] is None and rows[0]["full_in"] is None  # a minute of readings first

    written = 48 * MiB
    write_bytes(os.path.join(server.tmpdir, "filler-1"), written)
    clock.now += 120.0
    second = collector.collect().filesystems[0]
    grown = second.used - fs.used
    assert abs(grown - written) <= 2 * MiB, (grown, written)  # the idle server may write a little
    row = space_rows(SpaceSnapshot(filesystems=(second,)), {})[0]
    assert row["size"] == SIZE
    assert row["used_pct"] == pytest.approx(second.used / (second.used + second.free) * 100)
    assert row["used_pct"] == pytest.approx((SIZE - second.free) / SIZE * 100)  # a tmpfs reserves nothing
    assert row["growth"] == pytest.approx(grown / 120.0 * 3600.0)  # bytes an hour
    assert row["full_in"] == pytest.approx(second.free / row["growth"] * 3600.0)
    assert 24 * MiB * 30 < row["growth"] < 26 * MiB * 60  # 48 MiB in two minutes: about 1.4 GiB an hour
    # growth that fast on a filesystem this small: full in minutes, and the header says so
    alarm = space_alarm(SpaceSnapshot(filesystems=(second,)), 90.0, 60.0)
    assert alarm is not None and alarm.startswith(f"{tmpfs} ") and ", full in " in alarm, alarm
    assert "data" in alarm and "tmp" in alarm, alarm
    os.unlink(os.path.join(server.tmpdir, "filler-1"))


def test_alarm_at_90_percent_used(server_on_tmpfs, tmpfs):
    server = server_on_tmpfs
    paths = server_paths(server)
    collector = Filesystems(paths=lambda: {server.address: paths}, clock=Clock())
    before = collector.collect()
    assert space_alarm(before, 90.0, 60.0) is None, before  # growth unknown, far from full
    fs = before.filesystems[0]
    filler = os.path.join(server.tmpdir, "filler-2")
    to_write = int(fs.total * 0.93) - fs.used
    write_bytes(filler, to_write)
    try:
        after = collector.collect()  # the same moment: no growth known, the used share alone
        pct = space_rows(after, {})[0]["used_pct"]
        assert 92.0 <= pct <= 94.5, pct
        alarm = space_alarm(after, 90.0, 60.0)
        assert alarm == f"{tmpfs} {pct:.0f}% used ({','.join(after.filesystems[0].roles).replace(',', ', ')})", alarm
        assert space_alarm(after, 95.0, 60.0) is None  # a threshold is a setting
        assert space_alarm(after, 0, 0) is None
    finally:
        os.unlink(filler)


def test_largest_table_and_room_for_a_rebuild(server_on_tmpfs, tmpfs):
    server = server_on_tmpfs
    server.query("CREATE DATABASE IF NOT EXISTS shop")
    server.query("CREATE TABLE IF NOT EXISTS shop.orders (id INT PRIMARY KEY, pad VARCHAR(2000)) ENGINE=InnoDB")
    server.query("TRUNCATE TABLE shop.orders")
    for start in range(0, 6000, 500):  # about 6 MB of rows
        values = ", ".join(f"({i}, REPEAT('x', 1000))" for i in range(start, start + 500))
        server.query(f"INSERT INTO shop.orders VALUES {values}")
    server.query("ANALYZE TABLE shop.orders")
    expected = server.query("SELECT DATA_LENGTH + INDEX_LENGTH FROM information_schema.TABLES "
                            "WHERE TABLE_SCHEMA = 'shop' AND TABLE_NAME = 'orders'")[0][0]
    assert expected >= 6000 * 1000

    clock = Clock()
    endpoint = endpoint_of(server)
    session = MySQLSource(endpoint).connect()
    collector = ServerSpace(endpoint, clock=clock)
    try:
        reading = collector.collect(session)
        assert reading.largest is not None and reading.largest.label == "shop.orders", reading
        assert reading.largest.bytes == expected
        assert reading.largest_note is None
        # the binary log, from the server's own SHOW BINARY LOGS
        files = server.query("SHOW BINARY LOGS")
        assert reading.binlog_files == len(files) and reading.binlog_bytes == sum(int(f[1]) for f in files)
        server.query(f"INSERT INTO shop.orders VALUES (100000, '{'y' * 1900}')")  # the statement is logged
        clock.now += 60.0
        later = collector.collect(session)
        grown = sum(int(f[1]) for f in server.query("SHOW BINARY LOGS")) - reading.binlog_bytes
        assert grown > 1900 and later.written_now[1] - later.written_first[1] == grown
        assert later.largest_at == reading.largest_at  # TABLES is read at most every 10 minutes
    finally:
        session.conn.close()

    paths = server_paths(server)
    snapshot = Filesystems(paths=lambda: {server.address: paths}, clock=clock).collect()
    text = " ".join(t for line in server_lines(server.address, reading, snapshot, True) for t, _ in line)
    assert "largest table shop.orders" in text and "fits in the datadir" in text and "fits in the tmpdir" in text, text
    # on a filesystem with less room than the table: said plainly
    tight = SpaceSnapshot(filesystems=tuple(replace(fs, free=expected - 1) for fs in snapshot.filesystems))
    text = " ".join(t for line in server_lines(server.address, reading, tight, True) for t, _ in line)
    assert "does NOT fit in the datadir" in text, text
    # a server on another host: its own figures, marked as such, no verdict about disks
    text = " ".join(t for line in server_lines("db9:3306", reading, snapshot, False) for t, _ in line)
    assert "the server's own figures" in text and "fits" not in text, text


def test_without_a_global_select_the_tables_are_not_read(server_on_tmpfs):
    server = server_on_tmpfs
    server.create_user("spaceless", "spaceless-pw", grants=("USAGE",))
    endpoint = endpoint_of(server, "spaceless", "spaceless-pw")
    session = MySQLSource(endpoint).connect()
    try:
        reading = ServerSpace(endpoint).collect(session)
    finally:
        session.conn.close()
    assert reading.largest is None and reading.largest_note == NEEDS_SELECT, reading
    assert reading.binlog_note is not None and "binary logs:" in reading.binlog_note  # no BINLOG MONITOR


# ----- queue settings ----------------------------------------------------------------------

def fake_sysfs(root: Path) -> Path:
    """sda (rotational, scheduler none, partition sda1) and dm-0 on sda1."""
    def put(path: str, text: str) -> None:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text + "\n")

    disk = "devices/pci0000:00/0000:00:05.0/block/sda"
    for name, value in (("scheduler", "mq-deadline kyber bfq [none]"), ("nr_requests", "64"),
                        ("read_ahead_kb", "4096"), ("rotational", "1"), ("max_sectors_kb", "512"),
                        ("write_cache", "write back")):
        put(f"{disk}/queue/{name}", value)
    put(f"{disk}/sda1/partition", "1")
    put("devices/virtual/block/dm-0/dm/name", "vg-mysql")
    put("devices/virtual/block/dm-0/queue/scheduler", "none")
    put("devices/virtual/block/dm-0/queue/read_ahead_kb", "128")
    (root / "devices/virtual/block/dm-0/slaves").mkdir(parents=True)
    os.symlink(root / disk / "sda1", root / "devices/virtual/block/dm-0/slaves/sda1")
    (root / "class/block").mkdir(parents=True)
    for name, target in (("sda", disk), ("sda1", f"{disk}/sda1"), ("dm-0", "devices/virtual/block/dm-0")):
        os.symlink(root / target, root / "class/block" / name)
    return root


def test_queue_settings_from_a_fake_sysfs(tmp_path):
    devices = BlockDevices(sysfs=str(fake_sysfs(tmp_path)))
    sda = devices.queue_settings("sda")
    assert sda == QueueSettings("sda", scheduler="none", schedulers=("mq-deadline", "kyber", "bfq", "none"),
                                nr_requests=64, read_ahead_kb=4096, rotational=True, max_sectors_kb=512,
                                write_cache="write back")
    assert devices.queue_settings("sda1") is None  # a partition: its disk's apply
    dm = devices.queue_settings("dm-0")
    assert dm.scheduler == "none" and dm.read_ahead_kb == 128 and dm.rotational is None
    assert devices.beneath("dm-0") == ["dm-0", "sda1", "sda"]
    notes = queue_notes(sda, ["data"])
    assert len(notes) == 2 and "rotational disk with no I/O scheduler" in notes[0] and "4096 KiB" in notes[1]
    assert queue_notes(dm, ["data"]) == ()


def test_queue_settings_from_the_real_sys():
    names = sorted(os.listdir("/sys/block")) if os.path.isdir("/sys/block") else []
    if not names:
        pytest.skip("no /sys/block here")
    devices = BlockDevices()
    read = [devices.queue_settings(name) for name in names]
    assert any(r is not None for r in read), names
    for name, settings in zip(names, read):
        if settings is None:
            continue
        with open(f"/sys/block/{name}/queue/read_ahead_kb") as handle:
            assert settings.read_ahead_kb == int(handle.read())
        scheduler = f"/sys/block/{name}/queue/scheduler"
        if not os.path.exists(scheduler):  # zram has none
            assert settings.scheduler is None and settings.schedulers == ()
            continue
        with open(scheduler) as handle:
            text = handle.read()
        assert settings.scheduler in text and all(s in text for s in settings.schedulers), (settings, text)


def test_space_paths_of_a_server():
    paths = space_role_paths({"datadir": "/var/lib/mysql/", "log_bin_basename": "/binlogs/b",
                              "relay_log_basename": "/var/lib/mysql/r-relay-bin", "tmpdir": "/tmp",
                              "innodb_tmpdir": "/scratch", "innodb_undo_directory": "/undo"})
    assert paths == {"data": ["/var/lib/mysql"], "redo": ["/var/lib/mysql"], "binlog": ["/binlogs"],
                     "tmp": ["/tmp", "/scratch"], "relay": ["/var/lib/mysql"], "undo": ["/undo"]}


# ----- the running screen ----------------------------------------------------------------------

COLS, ROWS = 160, 40


def test_space_view_and_the_header_alarm_live(proxytop_term, server_on_tmpfs, tmpfs):
    """The real proxytop on a server whose files are on the tmpfs: the space view's row, the
    rebuild check, then the header's alarm once the filesystem is past 90%, on the devices view."""
    server = server_on_tmpfs
    term = proxytop_term("--screen", "iostat", "--iostat-view", "space", "-d", "1", "--no-discover",
                         "--mysql", server.address, "--mysql-user", server.user, "--mysql-password",
                         server.password, cols=COLS, rows=ROWS)
    screen = term.wait_until(lambda s: any(line.startswith(tmpfs) and "data" in line for line in s.splitlines())
                             and "room for a rebuild" in s, timeout=60, what="the tmpfs's row and the rebuild check")
    print("\n" + screen)
    row = next(line for line in screen.splitlines() if line.startswith(tmpfs))
    assert "256.0MiB" in row and "tmp" in row and "binlog" in row, row
    filler = os.path.join(server.tmpdir, "filler-live")
    fs = os.statvfs(tmpfs)
    write_bytes(filler, int(SIZE * 0.93) - (fs.f_blocks - fs.f_bfree) * fs.f_frsize)
    try:
        term.send("f")  # back to the devices: the alarm shows on every view and screen
        screen = term.wait_until(lambda s: f"! {tmpfs} 9" in s and "% used" in s, timeout=60,
                                 what="the header's space alarm")
        print("\n" + screen)
    finally:
        os.unlink(filler)
    term.wait_until(lambda s: f"! {tmpfs}" not in s, timeout=60, what="the alarm gone once the space is freed")


def test_device_detail_shows_its_queue_settings(proxytop_term, server_on_tmpfs):
    names = [n for n in sorted(os.listdir("/sys/block")) if os.path.exists(f"/sys/block/{n}/queue/scheduler")
             and not n.startswith(("loop", "zram", "ram"))] if os.path.isdir("/sys/block") else []
    if not names:
        pytest.skip("no disk with a queue scheduler in /sys/block")
    server = server_on_tmpfs  # a MySQL server named, so no ProxySQL is looked for
    term = proxytop_term("--screen", "iostat", "-d", "1", "--no-discover", "--mysql", server.address, "--mysql-user",
                         server.user, "--mysql-password", server.password, cols=COLS, rows=ROWS)
    term.wait_until(lambda s: any(line.startswith(names[0] + " ") for line in s.splitlines()), timeout=30,
                    what=f"the row of {names[0]}")
    term.send("/")
    term.send(f"device:^{names[0]}$\r")
    term.wait_until(lambda s: "filter" in s, timeout=10, what="the filter")
    term.send("\r")
    term.wait_for(f"Device {names[0]}")
    term.send("\x1b[6~")  # PgDn: the set-up is at the end of the detail
    with open(f"/sys/block/{names[0]}/queue/read_ahead_kb") as handle:
        read_ahead = handle.read().strip()
    screen = term.wait_until(lambda s: f"scheduler {names[0]}" in s and f"read_ahead_kb {read_ahead}" in s,
                             timeout=20, what="the queue settings in the device's detail")
    print("\n" + screen)


def test_batch_json_carries_the_space_figures(server_on_tmpfs, tmpfs):
    """--batch --iostat-view space: the rows with their figures (bytes, %, bytes an hour) and
    the servers' own figures among the notes."""
    server = server_on_tmpfs
    result = subprocess.run(list(proxytop_command()) + [
        "--batch", "--count", "1", "--screen", "iostat", "--iostat-view", "space", "--format", "json",
        "--no-discover", "--mysql", server.address, "--mysql-user", server.user],
        capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
        env=dict(os.environ, MYSQL_PWD=server.password))
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout.splitlines()[-1])
    rows = [r for r in record["rows"] if r["mount"] == tmpfs]
    assert len(rows) == 1, record
    row = rows[0]
    fs = os.statvfs(tmpfs)
    assert row["size"] == SIZE and "data" in row["holds"].split(",")
    assert abs(row["free"] - fs.f_bavail * fs.f_frsize) <= 4 * MiB  # the idle server writes a little
    assert row["used_pct"] == pytest.approx(row["used"] / (row["used"] + row["free"]) * 100)
    assert "growth" in row and "full_in" in row
    assert any("binary log" in note for note in record["notes"]), record["notes"]


# ----- options ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["", "ninety", "120", "-1", "90,", "90,soon", "90,-5", "90,20000", "90,60,1"])
def test_bad_space_alarm_is_one_usage_line(value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        options.parse(["--space-alarm", value], {})
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "--space-alarm" in err[-1], err


def test_space_alarm_thresholds_reach_the_screen():
    assert (IOstatScreen(options.parse([], {})).used_limit, IOstatScreen(options.parse([], {})).full_limit) == (90, 60)
    screen = IOstatScreen(options.parse(["--space-alarm", "95,30"], {}))
    assert (screen.used_limit, screen.full_limit) == (95, 30)
    screen = IOstatScreen(options.parse(["--space-alarm", "0,0", "--iostat-view", "space"], {}))
    assert screen.alarm_readings(None) == () and screen.options["space"]
    assert screen.initial_state().sort_key == "used_pct"


def test_a_volumes_detail_shows_its_queue_and_the_disks_beneath(tmp_path):
    """The disk collector reads the queue settings from (a fake) sysfs; the detail of dm-0 shows
    its own, then its disk's, with the facts to check for a datadir's device."""
    sysfs = fake_sysfs(tmp_path / "sys")
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "diskstats").write_text("   8       0 sda 10 1 80 7 20 2 160 9 0 12 16 0 0 0 0 0 0\n"
                                    "   8       1 sda1 10 1 80 7 20 2 160 9 0 12 16 0 0 0 0 0 0\n"
                                    " 253       0 dm-0 10 0 80 7 20 0 160 9 0 12 16 0 0 0 0 0 0\n")
    collector = DiskStats(proc=str(proc), sysfs=str(sysfs), psutil_counters=None, cpu_times=None,
                          role_paths=lambda: ({}, ()))
    snapshot = collector.collect()
    assert sorted(snapshot.queues) == ["dm-0", "sda"]  # sda1: its disk's queue applies
    snapshot = replace(snapshot, roles={"dm-0": frozenset({"data"}), "sda1": frozenset({"data"}),
                                        "sda": frozenset({"data"})})

    class Engine:  # the latest readings, as the live engine hands them to a screen
        def last_two(self, name):
            return (None, SimpleNamespace(data=snapshot, taken_at=1.0)) if name == "host.diskstats" else (None, None)

        def latest(self, name):
            return self.last_two(name)[1]

        def source(self, name):
            return None

    screen = IOstatScreen(options.parse([], {}))
    detail = screen.detail({"device": "dm-0"}, DataView(Engine()))
    text = "\n".join("".join(t for t, _ in line) for line in detail.lines)
    assert text.index("scheduler dm-0") < text.index("scheduler sda"), text
    assert "mq-deadline, kyber, bfq" in text and "nr_requests 64, read_ahead_kb 4096" in text, text
    assert "write cache write back" in text
    assert "check: sda is a rotational disk with no I/O scheduler (none)" in text, text
    assert "read-ahead is 4096 KiB on the datadir's device" in text, text
