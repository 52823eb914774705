"""The always-on recorder (proxytop --daemon --record-dir DIR) and the replay of a directory.

Rotation, retention and a failing disk are driven with a fake clock over real files; the real
program runs against the ProxySQL admin test double for signals, kill -9, a trigger and a full
tmpfs. No test reads the MySQL servers the double's runtime_mysql_servers names
(``--no-discover``).
"""
from __future__ import annotations

import datetime
import errno
import logging
import os
import signal
import subprocess
import time
from typing import Callable, List

import pytest

from proxytop import options
from proxytop.cli import build
from proxytop.core import Snapshot, Table
from proxytop.recordings import rotation
from proxytop.recordings.daemon import Daemon, DetailKeeper, RotatingWriter, screens_to_record
from proxytop.recordings.recording import RecordingWriter, loads, scan
from proxytop.recordings.replay import RecordingIndex, ReplayEngine, parse_jump
from tests.terminal import proxytop_command

HOUR = 3600.0
START = 1795784400.0 + 50 * 60  # 2026-11-27 13:50:00 UTC: ten minutes before an hour ends


class FakeClocks:
    """Wall and monotonic clocks a test moves by hand (monotonic = wall - 1e9)."""

    def __init__(self, wall: float = START):
        self.at = wall

    def wall(self) -> float:
        return self.at

    def mono(self) -> float:
        return self.at - 1e9


class Source:
    def __init__(self, name: str):
        self.name = name
        self.description = f"the {name} double"


class Collector:
    def __init__(self, name: str, source: str = "proxysql"):
        self.name, self.source, self.history = name, source, 2
        self.default_interval, self.min_interval, self.own_pace = 1.0, 0.5, False


def counter_snapshot(clocks: FakeClocks, value: int, name: str = "proxysql.global") -> Snapshot:
    table = Table(("Variable_Name", "Variable_Value"), (("Questions", str(value)),))
    return Snapshot(name, table, clocks.mono(), 0.001, wall_time=clocks.wall())


def writer_in(directory, clocks: FakeClocks, **keywords) -> RotatingWriter:
    writer = RotatingWriter(str(directory), options={"port": 6032}, target="127.0.0.1:6032",
                            clock=clocks.mono, wall=clocks.wall, **keywords)
    writer.source("proxysql", Source("proxysql"), clocks.mono())
    writer.collector(Collector("proxysql.global"))
    return writer


def record_every_second(writer: RotatingWriter, clocks: FakeClocks, seconds: int, start_value: int = 0) -> None:
    for i in range(seconds):
        writer.snapshot(counter_snapshot(clocks, start_value + 100 * i))
        clocks.at += 1.0


def recording_names(directory) -> List[str]:
    return sorted(n for n in os.listdir(directory) if n.endswith(rotation.SUFFIX))


# ----- rotation and retention with a fake clock ------------------------------------------------

def test_a_file_per_hour_each_replayable_alone_and_the_directory_as_one_timeline(tmp_path):
    clocks = FakeClocks()
    writer = writer_in(tmp_path, clocks)
    record_every_second(writer, clocks, 20 * 60)  # 13:50 to 14:10
    writer.close()
    names = recording_names(tmp_path)
    assert names == ["proxytop-20261127-135000.rec.gz", "proxytop-20261127-140000.rec.gz"]
    for name in names:  # each begins with what a replay needs: the source and the collector
        index = RecordingIndex(str(tmp_path / name))
        assert "proxysql" in index.sources and "proxysql.global" in index.collectors
        assert index.complete
    whole = RecordingIndex(str(tmp_path))
    assert len(whole.segments) == 1  # one recorder, one run: rates go on across the hour
    assert len(whole.snapshots["proxysql.global"]) == 20 * 60
    assert whole.end - whole.start == pytest.approx(20 * 60 - 1)


def test_replay_across_the_hour_boundary_rates_span_it_and_t_jumps_between_files(tmp_path):
    clocks = FakeClocks()
    writer = writer_in(tmp_path, clocks)
    record_every_second(writer, clocks, 20 * 60)
    writer.close()
    engine = ReplayEngine(RecordingIndex(str(tmp_path)), clock=lambda: 0.0)
    index = engine.index
    # the first reading of the 14:00 file, and the one before it, in the 13:50 file
    first_of_hour = START + 600 - index.base
    engine.seek(first_of_hour)
    before, after = engine.last_two("proxysql.global")
    assert (before.wall_time, after.wall_time) == (START + 599, START + 600)
    assert after.data.rows[0][1] == "60000" and before.data.rows[0][1] == "59900"
    # t 13:55 and t 14:05 (UTC here) land in either file
    for clock_text, wall in (("13:55", START + 300), ("14:05:30", START + 930)):
        target = parse_jump(clock_text, engine.wall_now(), index.start + index.base, index.end + index.base,
                            zone=time.gmtime)
        engine.seek(target - index.base)
        assert engine.latest("proxysql.global").wall_time == wall


def test_retention_by_age_removes_the_oldest_files_never_the_current_one(tmp_path):
    clocks = FakeClocks()
    writer = writer_in(tmp_path, clocks, retention=2 * HOUR)
    for _hour in range(5):  # a reading a minute for five hours
        for _minute in range(60):
            writer.snapshot(counter_snapshot(clocks, 1))
            clocks.at += 60
    writer.close()
    names = recording_names(tmp_path)
    # the last reading 18:49: the files of 13:50, 14:00 and 15:00 ended more than two hours before
    assert names == ["proxytop-20261127-160000.rec.gz", "proxytop-20261127-170000.rec.gz",
                     "proxytop-20261127-180000.rec.gz"]
    assert writer.removed == ["proxytop-20261127-135000.rec.gz", "proxytop-20261127-140000.rec.gz",
                              "proxytop-20261127-150000.rec.gz"]


def test_retention_by_size_keeps_the_newest_files_under_the_limit(tmp_path):
    clocks = FakeClocks()
    writer = writer_in(tmp_path, clocks)
    record_every_second(writer, clocks, 3 * 3600, start_value=1)  # 13:50 to 16:50: four files
    writer.close()
    sizes = {f.name: f.size for f in rotation.list_directory(str(tmp_path))}
    assert len(sizes) == 4
    newest_two = sorted(sizes)[-2:]
    limit = sum(sizes[n] for n in newest_two) + 10
    writer = writer_in(tmp_path, clocks, retention_size=limit + 2000)  # the new file adds a little
    writer.tick()
    writer.close()
    assert recording_names(tmp_path)[:2] == newest_two
    assert len(writer.removed) == 2


# ----- a full disk ------------------------------------------------------------------------------

class FullDisk:
    """Makes the files' writers fail as a full disk does while ``full`` is set."""

    def __init__(self):
        self.full = False

    def open_file(self, path, **keywords) -> RecordingWriter:
        disk = self
        if disk.full:  # the file is made (an inode), its first bytes find no room
            open(path, "wb").close()
            raise OSError(errno.ENOSPC, "No space left on device")

        class Writer(RecordingWriter):
            def snapshot(self, snapshot):
                if disk.full:
                    raise OSError(errno.ENOSPC, "No space left on device")
                return super().snapshot(snapshot)

        return Writer(path, **keywords)


def test_a_full_disk_is_one_line_in_the_log_and_recording_resumes_in_a_new_file(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="proxytop.recordings.daemon")
    clocks, disk = FakeClocks(), FullDisk()
    writer = writer_in(tmp_path, clocks, open_file=disk.open_file)
    record_every_second(writer, clocks, 30)
    disk.full = True
    record_every_second(writer, clocks, 45)  # four retries (every 10 s) fail too
    disk.full = False
    record_every_second(writer, clocks, 30)
    writer.close()
    stopped = [r.getMessage() for r in caplog.records if "recording stopped" in r.getMessage()]
    assert stopped == [f"recording stopped: cannot write in {tmp_path}: No space left on device; "
                       "trying again every 10 s"]
    again = [r.getMessage() for r in caplog.records if "recording again" in r.getMessage()]
    assert len(again) == 1 and "records lost" in again[0]
    assert 45 <= writer.lost <= 54  # the 45 while full, and those until the next retry
    index = RecordingIndex(str(tmp_path))
    assert len(recording_names(tmp_path)) == 2 and len(os.listdir(tmp_path)) == 2  # no empty file of a retry
    assert len(index.snapshots["proxysql.global"]) == 30 + 30 - (writer.lost - 45)


# ----- detail readings kept around a trigger ------------------------------------------------------

def test_a_trigger_writes_the_detail_readings_kept_before_it_and_every_one_after(tmp_path):
    clocks = FakeClocks()
    keeper = DetailKeeper(around=120.0, write_every=60.0)
    writer = writer_in(tmp_path, clocks, keeper=keeper)
    writer.collector(Collector("proxysql.processlist"))
    for _ in range(30):  # five minutes of a processlist every 10 s: one a minute is written
        writer.snapshot(counter_snapshot(clocks, 1, "proxysql.processlist"))
        clocks.at += 10
    fired_at = clocks.mono()
    writer.mark("shunned>0: shunned=1 (db2:3306)", fired_at)
    writer.write_kept(keeper.fire(fired_at))
    for _ in range(10):  # after it, every reading
        writer.snapshot(counter_snapshot(clocks, 1, "proxysql.processlist"))
        clocks.at += 2
    writer.close()
    index = RecordingIndex(str(tmp_path))
    times = [t - fired_at for t in index.snapshots["proxysql.processlist"].times]
    before = [t for t in times if t < 0]
    assert [t for t in before if t >= -120] == [-120 + 10 * i for i in range(12)]  # the last two minutes, all
    assert [t for t in before if t < -120] == [-300, -240, -180]  # earlier: one a minute
    assert [t for t in times if t >= 0] == [2.0 * i for i in range(10)]
    assert index.marks == [(fired_at, "shunned>0: shunned=1 (db2:3306)")]


def test_the_plan_reads_only_the_chosen_screens_and_the_detail_slowly_until_a_trigger():
    config = options.parse(["--daemon", "--record-dir", "/nonexistent", "--screens", "connpool,proclist",
                            "--on", "shunned>0", "--no-discover"], {})
    engine, controller = build(config)
    screens = screens_to_record(controller.screens, config.args.screens, config.args.on)
    keeper = DetailKeeper(around=300.0)
    daemon = Daemon(engine, controller, screens, writer=None, triggers=config.args.on, keeper=keeper)
    daemon.activate()
    assert engine.interval("proxysql.processlist") == 10.0 and engine.interval("proxysql.connection_pool") == 1.0
    active = engine.active
    assert "proxysql.query_digest" not in active and "proxysql.global" not in active  # not chosen: not read
    assert {"proxysql.processlist", "proxysql.header_status"} <= active  # the header's few variables too
    keeper.fire(engine.now())
    daemon.activate()
    assert engine.interval("proxysql.processlist") == 2.0  # its screen's own pace


# ----- the real program -------------------------------------------------------------------------

def start_daemon(port: int, directory, *extra: str, log_file=None) -> subprocess.Popen:
    args = list(proxytop_command()) + ["--daemon", "--record-dir", str(directory), "-P", str(port),
                                       "--no-discover", "--connect-timeout", "2"] + list(extra)
    if log_file is not None:
        args += ["--log-file", str(log_file)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))


def wait_for(condition: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def snapshots_in(directory, collector: str = "") -> int:
    """The readings recorded in the directory (of one collector when named)."""
    total = 0
    for name in recording_names(directory) if os.path.isdir(directory) else ():
        try:
            total += sum(1 for envelope, _ in scan(os.path.join(directory, name)).records
                         if envelope["k"] == "s" and (not collector or envelope.get("c") == collector))
        except Exception:  # a file just begun
            pass
    return total


def log_text(path) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
    process.send_signal(sig)
    try:
        return process.wait(timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_sigterm_ends_it_cleanly_and_sighup_reopens_the_log(proxysql_double, tmp_path):
    directory, log_file = tmp_path / "rec", tmp_path / "proxytop.log"
    process = start_daemon(proxysql_double.port, directory, "--screens", "connpool,glostat")
    try:
        wait_for(lambda: snapshots_in(directory) >= 10, what="readings in the recording")
        log_path = directory / "proxytop.log"
        assert "recording connpool,glostat every 1 s" in log_text(log_path)
        os.rename(log_path, log_file)  # as logrotate does
        process.send_signal(signal.SIGHUP)
        wait_for(lambda: "log reopened (SIGHUP)" in log_text(log_path), what="the log reopened")
        assert process.poll() is None
        assert stop(process) == 0
    finally:
        if process.poll() is None:
            process.kill()
    out, err = process.communicate()
    assert out == ""
    assert "recording connpool,glostat every 1 s" in err
    assert "stopped:" in log_text(log_path)
    (name,) = recording_names(directory)
    assert scan(str(directory / name)).complete  # finished, not cut short


def test_kill_9_during_a_write_then_the_directory_replays(proxysql_double, tmp_path):
    directory = tmp_path / "rec"
    first = start_daemon(proxysql_double.port, directory, "--screens", "connpool")
    # a few seconds of the pool's readings (what its rates and the replayed reports need)
    wait_for(lambda: snapshots_in(directory, "proxysql.connection_pool") >= 4, what="readings in the recording")
    first.kill()  # kill -9, somewhere in its stream of writes
    first.communicate()
    (cut,) = recording_names(directory)
    with open(directory / cut, "r+b") as handle:  # and a record torn in half, for certain
        handle.truncate(os.path.getsize(directory / cut) - 7)
    kept = snapshots_in(directory)
    time.sleep(1.1)  # the next file's name has the next second in it
    restarted = time.time()
    second = start_daemon(proxysql_double.port, directory, "--screens", "connpool")
    # pool readings of the second run two seconds and more after it started: the replayed
    # reports (stamped in whole seconds) then have some after ``restarted``
    wait_for(lambda: snapshots_in(directory) >= kept + 10
             and sum(w > restarted + 2 for w in reading_walls(directory, "proxysql.connection_pool")) >= 2,
             what="readings of the second run")
    assert stop(second) == 0
    second.communicate()
    assert len(recording_names(directory)) == 2
    index = RecordingIndex(str(directory))
    assert len(index.segments) == 2 and not index.complete
    replayed = subprocess.run(list(proxytop_command()) + ["--replay", str(directory), "--batch", "--format", "csv",
                                                          "--screen", "connpool"],
                              capture_output=True, text=True, timeout=60)
    assert replayed.returncode == 0, replayed.stderr
    times = sorted({datetime.datetime.fromisoformat(line.split(",")[0]).timestamp()
                    for line in replayed.stdout.splitlines() if line.startswith("20")})
    assert times[0] < restarted < times[-1]  # both runs, one after the other
    assert len(times) >= 4


def source_states(directory, name: str = "proxysql") -> list:
    series = RecordingIndex(str(directory)).states.get(name)
    return [loads(data) for _, _, _, data in series.entries] if series is not None else []


def reading_walls(directory, name: str) -> List[float]:
    series = RecordingIndex(str(directory)).snapshots.get(name)
    return [envelope["w"] for _, _, envelope, _ in series.entries] if series is not None else []


def test_it_rides_through_a_proxysql_restart(proxysql_double, tmp_path):
    directory = tmp_path / "rec"
    process = start_daemon(proxysql_double.port, directory, "--screens", "connpool")
    try:
        wait_for(lambda: snapshots_in(directory) >= 5, what="readings in the recording")
        proxysql_double.stop()
        stopped_at = time.time()
        wait_for(lambda: any(not state.connected for state in source_states(directory)),
                 what="the outage in the recording")
        proxysql_double.start()  # on the same port, as a restarted ProxySQL
        wait_for(lambda: any(w > stopped_at for w in reading_walls(directory, "proxysql.connection_pool")),
                 what="readings after the restart")
        assert process.poll() is None
        assert stop(process) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    assert len(recording_names(directory)) == 1  # one file, one run throughout
    assert source_states(directory)[-1].connected


def test_a_trigger_fires_on_the_doubles_shunned_backend(proxysql_double, tmp_path):
    directory = tmp_path / "rec"

    def processlist_reads() -> int:
        return sum(1 for sql in proxysql_double.queries() if "stats_mysql_processlist" in sql)

    process = start_daemon(proxysql_double.port, directory, "--screens", "connpool,proclist", "--on", "shunned>0")
    try:
        # quiet: the processlist read every 10 s, the first written and the next ones kept
        wait_for(lambda: processlist_reads() >= 3, timeout=60, what="three processlist readings")

        def shun(columns, rows):
            status = columns.index("status")
            return columns, [row[:status] + ["SHUNNED"] + row[status + 1:] if row[columns.index("srv_port")] == "3313"
                             else row for row in rows]

        proxysql_double.transforms["stats_mysql_connection_pool"] = shun
        log_path = directory / "proxytop.log"
        wait_for(lambda: "trigger shunned>0: shunned=1 (127.0.0.1:3313)" in log_text(log_path), what="the trigger")
        reads_at_firing = processlist_reads()
        wait_for(lambda: processlist_reads() >= reads_at_firing + 3, what="processlist readings at full pace")
        assert stop(process) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    assert log_text(log_path).count("trigger shunned>0") == 1  # marked once while it keeps firing
    index = RecordingIndex(str(directory))
    ((at, text),) = index.marks
    assert text == "shunned>0: shunned=1 (127.0.0.1:3313)"
    times = index.snapshots["proxysql.processlist"].times
    before, after = [t for t in times if t < at], [t for t in times if t >= at]
    assert len(before) >= 3  # the first one written at once, the kept ones written at the firing
    assert len(after) >= 3 and max(b - a for a, b in zip(after, after[1:])) < 5  # every 2 s, not 10


def test_bad_daemon_options_are_one_line(tmp_path):
    for extra, expected in (
        (["--daemon", "--record-dir", str(tmp_path), "--on", "qps>5"],
         "'qps>5' is not a trigger: write FIGURE>NUMBER (or >=, <, <=, =) with FIGURE one of threads_running, "
         "shunned, lock_wait"),
        (["--daemon"], "--daemon needs --record-dir DIR"),
        (["--record-dir", str(tmp_path)], "--record-dir needs --daemon"),
        (["--daemon", "--record-dir", str(tmp_path), "--retention", "soon"], "'soon' is not a retention time"),
    ):
        done = subprocess.run(list(proxytop_command()) + extra, capture_output=True, text=True, timeout=30)
        assert done.returncode == 2
        assert len(done.stderr.splitlines()) == 1 and expected in done.stderr, done.stderr
        assert os.listdir(tmp_path) == []  # nothing written


def fill(path) -> None:
    """Take every byte left on the file system of ``path``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


def test_a_full_tmpfs_is_logged_once_and_recording_resumes(proxysql_double, tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace').strip()}")
    log_path = tmp_path / "proxytop.log"
    process = None
    try:
        directory = mount / "rec"
        process = start_daemon(proxysql_double.port, directory, "--screens", "connpool,glostat", log_file=log_path)
        wait_for(lambda: snapshots_in(directory) >= 5, what="readings in the recording")
        fill(mount / "filler")
        wait_for(lambda: "recording stopped" in log_text(log_path), what="the full disk in the log")
        assert process.poll() is None
        os.remove(mount / "filler")
        wait_for(lambda: "recording again" in log_text(log_path), what="recording again")
        written = snapshots_in(directory)
        wait_for(lambda: snapshots_in(directory) >= written + 5, what="readings after the disk had room")
        assert stop(process) == 0
        text = log_text(log_path)
        assert text.count("recording stopped") == 1
        assert "No space left on device" in text and "Traceback" not in text
        names = recording_names(directory)
        assert len(names) == 2
        for name in names:  # the first up to the failed write, the second from the retry
            records = scan(str(directory / name)).records
            assert any(e.get("c") == "proxysql.connection_pool" for e, _ in records)
        index = RecordingIndex(str(directory))  # one timeline
        assert len(index.segments) == 1 and len(index.snapshots["proxysql.connection_pool"]) >= 2
    finally:
        if process is not None and process.poll() is None:
            process.kill()
        if process is not None:
            process.communicate()
        subprocess.run(["umount", str(mount)], capture_output=True)
