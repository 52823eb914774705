"""iostat -x arithmetic, 32-bit wraps, baseline learning and the baseline state file.

The /proc/diskstats samples under tests/data/diskstats are hand-written for three kernel
generations (14, 18 and 20 fields per line); every expected figure below is worked out by hand
from sysstat's formulas (Δ over an interval of 2 s).
"""
from __future__ import annotations

import doctest
import importlib
import json
import os
from collections import namedtuple
from pathlib import Path
from types import SimpleNamespace

import pytest

from proxytop.collectors.baseline_file import load_state, save_state, state_path
from proxytop.collectors.diskstats import DiskSnapshot, DiskStats, merge_psutil, parse_diskstats, parse_line
from proxytop.metrics import iostat
from proxytop.metrics.iostat import (READ, WRITE, Baseline, BaselineLearner, BaselineRules, DeviceStats, DiskCounters,
                             cpu_stats, device_stats, percentile, quiet_await, saturation, saturation_level,
                             wrapped_delta)

DATA = Path(__file__).parent / "data" / "diskstats"
WRAP = 2 ** 32


def samples(name: str):
    """{seconds: parsed diskstats} from a fixture file ('@ N' starts a sample)."""
    result, current, lines = {}, None, []
    for line in (DATA / name).read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith("@"):
            if current is not None:
                result[current] = parse_diskstats("\n".join(lines))
            current, lines = float(line[1:]), []
        else:
            lines.append(line)
    result[current] = parse_diskstats("\n".join(lines))
    return result


def stats_between(name: str, device: str) -> DeviceStats:
    data = samples(name)
    return device_stats(data[0.0][device], data[2.0][device], 2.0)


@pytest.mark.parametrize("module", ["proxytop.metrics.iostat", "proxytop.polling.devices", "proxytop.collectors.diskstats",
                                    "proxytop.screens.iostat"])
def test_worked_examples_in_docstrings(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0


# ----- parsing ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, device, fields, discard, flush", [
    ("linux-4.14.txt", "sda", 11, False, False),
    ("linux-4.19.txt", "nvme0n1", 15, True, False),
    ("linux-5.10.txt", "vda", 17, True, True),
])
def test_parses_each_kernel_generation(name, device, fields, discard, flush):
    counters = samples(name)[0.0][device]
    assert counters.fields == fields
    assert counters.has_discard is discard and counters.has_flush is flush
    assert (counters.rd_ios, counters.rd_merges, counters.rd_sectors, counters.rd_ticks) == (1000, 100, 8000, 5000)
    assert (counters.wr_ios, counters.wr_merges, counters.wr_sectors, counters.wr_ticks) == (500, 50, 4000, 2000)
    assert (counters.in_flight, counters.io_ticks, counters.rq_ticks) == (0, 10000, 20000)


def test_old_partition_line_has_only_counts_and_sectors():
    counters = samples("linux-4.14.txt")[0.0]["sda2"]
    assert counters.fields == 4
    assert (counters.rd_ios, counters.rd_sectors, counters.wr_ios, counters.wr_sectors) == (10, 80, 20, 160)
    assert counters.rd_ticks is None and counters.rq_ticks is None and counters.in_flight is None


def test_lines_that_are_not_diskstats_are_skipped_and_extra_fields_ignored():
    assert parse_line("garbage") is None
    assert parse_line("8 0 sda x y z 1 2 3 4 5 6 7 8") is None
    future = parse_line(" 8 0 sda " + " ".join(str(i) for i in range(1, 21)))  # a kernel with 20 values
    assert future.fields == 17 and future.fl_ticks == 17


# ----- the arithmetic -----------------------------------------------------------------------

def test_iostat_x_figures_on_a_14_field_kernel():
    s = stats_between("linux-4.14.txt", "sda")
    assert (s.r_s, s.w_s, s.rkb_s, s.wkb_s) == (100.0, 50.0, 400.0, 400.0)
    assert (s.rrqm_s, s.wrqm_s) == (15.0, 50.0)
    assert s.rrqm_pct == pytest.approx(30 / 230 * 100) and s.wrqm_pct == 50.0
    assert (s.r_await, s.w_await) == (1.5, 5.0)  # 300 ms / 200 reads, 500 ms / 100 writes
    assert (s.rareq_sz, s.wareq_sz) == (4.0, 8.0)  # 1600 sectors / 200 / 2, 1600 / 100 / 2
    assert s.aqu_sz == pytest.approx(1.2)  # 2400 weighted ms / 2000 ms
    assert s.util == pytest.approx(75.0)  # 1500 busy ms / 2000 ms
    assert s.d_s is None and s.f_s is None  # not reported before 4.18 / 5.5
    assert (s.r_ios, s.w_ios, s.in_flight) == (200, 100, 1)


def test_discards_on_an_18_field_kernel():
    s = stats_between("linux-4.19.txt", "nvme0n1")
    assert (s.r_s, s.w_s, s.aqu_sz, s.util) == (100.0, 50.0, pytest.approx(1.2), pytest.approx(75.0))
    assert s.d_s == 20.0  # 40 discards / 2 s
    assert s.dkb_s == 400.0  # 1600 sectors / 2 / 2 s
    assert s.drqm_s == 5.0 and s.drqm_pct == 20.0  # 10 merged of 50
    assert s.d_await == 2.0 and s.dareq_sz == 20.0  # 80 ms / 40; 1600 / 40 / 2
    assert s.f_s is None


def test_flushes_on_a_20_field_kernel():
    s = stats_between("linux-5.10.txt", "vda")
    assert s.f_s == 20.0 and s.f_await == 1.0  # 40 flushes / 2 s, 40 ms / 40
    assert s.d_s == 20.0 and s.d_await == 2.0


def test_millisecond_fields_wrap_at_32_bits():
    s = stats_between("linux-4.14.txt", "sdb")
    assert (s.r_s, s.w_s) == (50.0, 50.0)
    assert s.r_await == 2.0  # 4294966000 -> 4294966200: no wrap
    assert s.w_await == 5.0
    assert s.util == pytest.approx(50.0)  # 4294967000 -> 704 is 1000 ms, not a reset
    assert s.aqu_sz == pytest.approx((WRAP - 4294965000 + 3000) / 2000)  # 2.648
    v = stats_between("linux-5.10.txt", "vdb")
    assert v.r_await == 2.5  # 4294967000 -> 204 is 500 ms over 200 reads
    assert v.aqu_sz == pytest.approx(1.2)  # 4294967200 -> 2304 is 2400 ms
    assert v.f_s == 0.0 and v.f_await == 0.0 and v.d_await == 0.0


def test_idle_device_has_zero_awaits_like_iostat():
    s = stats_between("linux-4.14.txt", "dm-0")
    assert (s.r_s, s.w_s, s.r_await, s.w_await, s.rareq_sz, s.rrqm_pct, s.aqu_sz, s.util) == (0, 0, 0, 0, 0, 0, 0, 0)


def test_old_partition_line_gives_rates_but_no_times():
    s = stats_between("linux-4.14.txt", "sda2")
    assert (s.r_s, s.rkb_s, s.w_s, s.wkb_s) == (1.0, 4.0, 5.0, 20.0)
    assert (s.rareq_sz, s.wareq_sz) == (4.0, 4.0)
    assert s.r_await is None and s.aqu_sz is None and s.util is None and s.rrqm_s is None


def test_device_removed_and_added_again_has_no_figures():
    before = DiskCounters("sdc", rd_ios=5000, rd_sectors=40000, wr_ios=100, wr_sectors=800, rd_ticks=10, wr_ticks=10,
                          io_ticks=100, rq_ticks=100)
    after = DiskCounters("sdc", rd_ios=3, rd_sectors=24, wr_ios=0, wr_sectors=0, rd_ticks=1, wr_ticks=0,
                         io_ticks=2, rq_ticks=2)
    assert device_stats(before, after, 1.0) is None
    assert device_stats(None, after, 1.0) is None and device_stats(before, before, 0) is None


def test_a_64_bit_counter_going_down_is_not_taken_for_a_wrap():
    assert wrapped_delta(WRAP + 10, 5) is None
    before = DiskCounters("x", rd_ios=WRAP + 100, rd_sectors=8, wr_ios=10, wr_sectors=8)
    after = DiskCounters("x", rd_ios=50, rd_sectors=16, wr_ios=20, wr_sectors=16)
    assert device_stats(before, after, 1.0) is None


def test_psutil_values_replace_the_files_counts_and_keep_the_rest():
    sdiskio = namedtuple("sdiskio", "read_count write_count read_bytes write_bytes read_time write_time "
                                    "read_merged_count write_merged_count busy_time")
    base = samples("linux-5.10.txt")[0.0]
    merged = merge_psutil(base, {"vda": sdiskio(7, 8, 9 * 512, 10 * 512, 11, 12, 13, 14, 15)})
    vda = merged["vda"]
    assert (vda.rd_ios, vda.wr_ios, vda.rd_sectors, vda.wr_sectors) == (7, 8, 9, 10)
    assert (vda.rd_ticks, vda.wr_ticks, vda.rd_merges, vda.wr_merges, vda.io_ticks) == (11, 12, 13, 14, 15)
    assert (vda.rq_ticks, vda.in_flight, vda.dc_ios, vda.fl_ios) == (20000, 0, 100, 50)  # from the file
    assert merged["vdb"] == base["vdb"]  # not in psutil's answer: the file's values stay


def test_psutil_values_equal_to_the_files_keep_the_files_counters():
    sdiskio = namedtuple("sdiskio", "read_count write_count read_bytes write_bytes read_time write_time "
                                    "read_merged_count write_merged_count busy_time")
    base = samples("linux-5.10.txt")[0.0]
    vda = base["vda"]
    same = sdiskio(vda.rd_ios, vda.wr_ios, vda.rd_sectors * 512, vda.wr_sectors * 512, vda.rd_ticks, vda.wr_ticks,
                   vda.rd_merges, vda.wr_merges, vda.io_ticks)
    assert merge_psutil(base, {"vda": same})["vda"] is vda
    moved = merge_psutil(base, {"vda": same._replace(busy_time=vda.io_ticks + 1)})["vda"]
    assert moved.io_ticks == vda.io_ticks + 1 and moved.rd_ios == vda.rd_ios


def test_cpu_line_like_iostat_avg_cpu_with_guest_time_taken_out_of_user():
    before = dict(user=100, nice=10, system=50, idle=700, iowait=20, irq=5, softirq=5, steal=10, guest=30, guest_nice=0)
    after = dict(user=160, nice=10, system=60, idle=760, iowait=40, irq=10, softirq=10, steal=20, guest=50,
                 guest_nice=0)
    # total = 60 + 0 + 10 + 60 + 20 + 5 + 5 + 10 = 170; user = 60 - 20 guest = 40; system = 10 + 5 + 5
    cpu = cpu_stats(before, after)
    assert cpu.user == pytest.approx(40 / 170 * 100)
    assert cpu.system == pytest.approx(20 / 170 * 100)
    assert cpu.iowait == pytest.approx(20 / 170 * 100)
    assert cpu.steal == pytest.approx(10 / 170 * 100)
    assert cpu.idle == pytest.approx(60 / 170 * 100)
    assert cpu_stats(None, after) is None and cpu_stats(after, after) is None


# ----- baselines ----------------------------------------------------------------------------

def quiet(w_await, w_ios=100, aqu=0.5, seconds=1.0, r_await=0.0, r_ios=0):
    return DeviceStats(seconds, r_ios / seconds, w_ios / seconds, 0, 0, 0, 0, 0, 0, r_await, w_await, 0, 4,
                       aqu_sz=aqu, util=10, r_ios=r_ios, w_ios=w_ios)


def test_only_quiet_intervals_with_enough_io_are_learned_from():
    assert quiet_await(quiet(0.2), WRITE) == 0.2
    assert quiet_await(quiet(0.2, aqu=1.5), WRITE) is None  # requests queued behind each other
    assert quiet_await(quiet(0.2, w_ios=5), WRITE) is None  # too few I/Os to say anything
    assert quiet_await(quiet(0.2, seconds=30), WRITE) is None  # a long interval averages bursts away
    assert quiet_await(quiet(0.2), READ) is None  # no reads in it


def test_learning_until_enough_samples_then_a_low_percentile():
    learner = BaselineLearner()
    for i in range(1, 30):
        learner.observe("sda", quiet(i / 10))
    early = learner.baseline("sda", WRITE)
    assert early == Baseline(None, 29, 30, "learning") and not early.known
    learner.observe("sda", quiet(3.0))
    learner.observe("sda", quiet(9.0, aqu=4.0))  # busy: ignored
    base = learner.baseline("sda", WRITE)
    # awaits 0.1 .. 3.0; p10 by linear interpolation: rank 2.9 -> 0.3 + 0.9 * 0.1
    assert base.source == "learned" and base.samples == 30 and base.ms == pytest.approx(0.39)
    assert learner.baseline("sda", READ).source == "learning"
    assert saturation(1.95, base) == pytest.approx(5.0)
    assert saturation_level(saturation(1.95, base), 100) == "alarm"
    assert saturation_level(saturation(0.8, base), 100) == "warning"
    assert saturation_level(saturation(0.4, base), 100) is None


def test_the_window_rolls_so_the_baseline_follows_the_device():
    learner = BaselineLearner(rules=BaselineRules(window=5, min_samples=3, percentile=0))
    for value in (0.1, 0.1, 0.1, 0.5, 0.5, 0.5, 0.5, 0.5):
        learner.observe("nvme0n1", quiet(value))
    assert learner.baseline("nvme0n1", WRITE).ms == 0.5  # the 0.1s have left the window
    assert learner.baseline("nvme0n1", WRITE).samples == 5


def test_a_baseline_set_by_hand_wins():
    learner = BaselineLearner(manual={"sda": (0.2, 0.05)})
    for _ in range(40):
        learner.observe("sda", quiet(1.0, r_await=1.0, r_ios=100))
    assert learner.baseline("sda", READ) == Baseline(0.2, 0, 0, "manual")
    assert learner.baseline("sda", WRITE).ms == 0.05


def test_percentile_interpolates():
    assert percentile([10], 10) == 10
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 10) == 2


# ----- the state file -----------------------------------------------------------------------

def test_state_path_follows_xdg(tmp_path):
    assert state_path({"XDG_STATE_HOME": str(tmp_path)}) == str(tmp_path / "proxytop" / "disk-baselines.json")
    assert state_path({"HOME": "/home/dba"}) == "/home/dba/.local/state/proxytop/disk-baselines.json"


def test_state_round_trip_and_identity_check(tmp_path):
    path = str(tmp_path / "state" / "proxytop" / "disk-baselines.json")
    learner = BaselineLearner()
    learner.identities.update({"sda": "wwid:naa.1", "sdb": "serial:B"})
    for _ in range(35):
        learner.observe("sda", quiet(0.3))
        learner.observe("sdb", quiet(0.7))
    assert save_state(path, learner.to_state()) is None
    assert oct(os.stat(os.path.dirname(path)).st_mode & 0o777) == "0o700"
    assert os.listdir(os.path.dirname(path)) == ["disk-baselines.json"]  # no temporary file left
    state, note = load_state(path)
    assert note is None
    again = BaselineLearner()
    # sdb is now another disk (new serial): it starts afresh
    restored = again.restore(state, {"sda": "wwid:naa.1", "sdb": "serial:OTHER"})
    assert restored == ["sda"]
    assert again.baseline("sda", WRITE).ms == pytest.approx(0.3)
    assert again.baseline("sdb", WRITE).source == "learning"


@pytest.mark.parametrize("content, reason", [
    (b"{not json", "not valid JSON"),
    (b"\xff\xfe", "not valid JSON"),
    (json.dumps({"version": 99, "devices": {}}).encode(), "unknown format"),
    (json.dumps({"version": 1, "devices": {"sda": {"write": [0.1, "x"]}}}).encode(), "bad write samples for sda"),
    (json.dumps({"version": 1, "devices": {"sda": {"read": [-1]}}}).encode(), "bad read samples for sda"),
    (json.dumps([1, 2]).encode(), "unknown format"),
])
def test_a_corrupt_state_file_is_ignored_with_a_note(tmp_path, content, reason):
    path = tmp_path / "disk-baselines.json"
    path.write_bytes(content)
    state, note = load_state(str(path))
    assert state is None and reason in note and "learning afresh" in note


def test_missing_state_file_is_silent(tmp_path):
    assert load_state(str(tmp_path / "nothing.json")) == (None, None)


def test_unwritable_state_directory_gives_a_note(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    note = save_state(str(blocker / "proxytop" / "disk-baselines.json"), {"version": 1, "devices": {}})
    assert note and note.startswith("disk baselines: cannot write")


# ----- the collector on a fake /proc --------------------------------------------------------

class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def diskstats_line(name, major, minor, rd_ios, wr_ios, wr_ticks, rq_ticks, io_ticks):
    return (f"{major:4d} {minor:7d} {name} {rd_ios} 0 {rd_ios * 8} {rd_ios} {wr_ios} 0 {wr_ios * 8} {wr_ticks} "
            f"0 {io_ticks} {rq_ticks} 0 0 0 0 0 0\n")


class FakeHost:
    """A /proc with a diskstats file the test rewrites, and a clock."""

    def __init__(self, tmp_path):
        self.proc = tmp_path / "proc"
        self.proc.mkdir()
        (self.proc / "self").mkdir()
        (self.proc / "self" / "mountinfo").write_text("")
        self.clock = Clock()
        self.totals = {"wr_ios": 0, "wr_ticks": 0, "rq_ticks": 0, "io_ticks": 0}
        self.write()

    def write(self):
        t = self.totals
        text = diskstats_line("sda", 8, 0, 10, t["wr_ios"], t["wr_ticks"], t["rq_ticks"], t["io_ticks"])
        text += "   8       1 sda1 10 0 80 10 5 0 40 5 0 10 10 0 0 0 0 0 0\n"
        (self.proc / "diskstats").write_text(text)

    def interval(self, writes, await_ms, seconds=1.0):
        t = self.totals
        t["wr_ios"] += writes
        t["wr_ticks"] += int(writes * await_ms)
        t["rq_ticks"] += int(writes * await_ms)
        t["io_ticks"] += int(min(seconds * 1000, writes * await_ms))
        self.clock.now += seconds
        self.write()

    def collector(self, state, **kwargs):
        cpu = SimpleNamespace(**{f: 1.0 for f in iostat.CPU_FIELDS})
        return DiskStats(proc=str(self.proc), sysfs=str(self.proc / "no-sysfs"), psutil_counters=None,
                         cpu_times=lambda: cpu, state_path=str(state), clock=self.clock, **kwargs)


def test_collector_learns_saves_at_most_once_a_minute_and_restores(tmp_path):
    host = FakeHost(tmp_path)
    state = tmp_path / "state" / "proxytop" / "disk-baselines.json"
    collector = host.collector(state)
    first = collector.collect()
    assert isinstance(first, DiskSnapshot)
    assert first.kinds == {"sda": "disk", "sda1": "partition"}  # by name: no sysfs here
    assert first.baselines["sda"][1].source == "learning"
    writes_seen = []
    for i in range(40):  # 40 quiet seconds: 100 writes of 0.25 ms, queue 0.025
        host.interval(100, 0.25)
        snap = collector.collect()
        writes_seen.append(state.exists() and state.stat().st_mtime_ns)
    base = snap.baselines["sda"][1]
    assert base.source == "learned" and base.ms == pytest.approx(0.25) and base.samples == 40
    # nothing is written while learning; the moment the baseline is known (30th sample), it is
    assert writes_seen[:29] == [False] * 29 and writes_seen[29]
    assert len(set(writes_seen[29:])) == 1  # and not again inside the minute
    saved = json.loads(state.read_text())
    assert len(saved["devices"]["sda"]["write"]) == 30
    for _ in range(20):  # 3-second intervals: a minute after that write (t=1030) comes the next
        host.interval(100, 0.25, seconds=3.0)
        collector.collect()
    saved = json.loads(state.read_text())
    assert len(saved["devices"]["sda"]["write"]) == 57  # up to t=1091: 40 + 17 intervals
    # a new run starts with the baseline already known
    fresh = host.collector(state).collect()
    assert fresh.baselines["sda"][1] == Baseline(0.25, 57, 30, "learned") and fresh.notes == ()

    # a burst: 2,000 writes that each wait 2.5 ms (queue 5): ten times the baseline
    from proxytop.screens.iostat import IOstatScreen, device_rows

    before = collector.collect()
    host.interval(2000, 2.5)
    busy = collector.collect()
    row = {r["device"]: r for r in device_rows(before, busy, 1.0)}["sda"]
    assert (row["w_s"], row["w_await"], row["aqu_sz"]) == (2000.0, 2.5, 5.0)
    assert row["w_sat"] == pytest.approx(10.0)
    sat_column = next(c for c in IOstatScreen.columns if c.key == "w_sat")
    assert sat_column.style(row) == "danger" and sat_column.text(row) == "10.0x"
    assert busy.baselines["sda"][1].samples == 60  # the busy interval taught nothing
    assert device_rows(before, busy, None)[0].get("w_s") is None  # no interval, no figures


def test_collector_survives_a_corrupt_state_file_and_replaces_it(tmp_path):
    host = FakeHost(tmp_path)
    state = tmp_path / "state" / "disk-baselines.json"
    state.parent.mkdir(parents=True)
    state.write_text("{\"version\": 1, \"devices\": ")  # cut short by a crash, say
    collector = host.collector(state)
    snap = collector.collect()
    assert any("ignored unreadable" in n for n in snap.notes)
    from proxytop.screens.iostat import IOstatScreen

    view = SimpleNamespace(pair=lambda name: (None, SimpleNamespace(data=snap)))
    shown = [("".join(t for t, _ in line), line[0][1]) for line in IOstatScreen().notes(view)]
    assert (f"disk baselines: ignored unreadable {state} (not valid JSON); learning afresh", "warning") in shown
    for _ in range(30):
        host.interval(100, 0.3)
        snap = collector.collect()
    assert snap.baselines["sda"][1].known
    saved = json.loads(state.read_text())  # written afresh, atomically, once the baseline was known
    assert saved["version"] == 1 and len(saved["devices"]["sda"]["write"]) == 30
    assert sorted(os.listdir(state.parent)) == ["disk-baselines.json"]
    assert snap.notes == ()  # the problem is over: the note goes


def test_manual_baseline_reaches_the_snapshot(tmp_path):
    host = FakeHost(tmp_path)
    collector = host.collector(tmp_path / "s.json", manual_baselines={"sda": (0.5, 0.1)})
    snap = collector.collect()
    assert snap.baselines["sda"] == (Baseline(0.5, 0, 0, "manual"), Baseline(0.1, 0, 0, "manual"))


# ----- the screen's rows ----------------------------------------------------------------------

def test_screen_rows_whole_disks_first_sorted_by_util_and_the_a_toggle():
    from proxytop.screens.iostat import IOstatScreen, hidden_count

    data = samples("linux-5.10.txt")
    kinds = {"loop0": "loop", "zram0": "zram", "vda": "disk", "vdb": "disk"}
    extra = DiskCounters("vda1", 254, 1, 17, rd_ios=5, wr_ios=5)

    def snapshot(devices):
        return DiskSnapshot(devices=dict(devices, vda1=extra), kinds=dict(kinds, vda1="partition"), cpu=None,
                            baselines={})

    before, after = snapshot(data[0.0]), snapshot(data[2.0])
    previous = SimpleNamespace(data=before, taken_at=10.0)
    current = SimpleNamespace(data=after, taken_at=12.0)
    view = SimpleNamespace(pair=lambda name: (previous, current))
    screen = IOstatScreen()
    rows = screen.arrange(screen.rows(view), screen.initial_state())
    # vdb: 1,500 busy ms of 2,000 -> 75 %; vda the same counters: ties go by name
    assert [r["device"] for r in rows] == ["vda", "vdb"]
    assert [round(r["util"], 1) for r in rows] == [75.0, 75.0]
    assert rows[0]["r_sat"] == "learning"
    assert hidden_count(after, False) == (1, 2)  # vda1 hidden; loop0 and zram0 never did I/O
    said = []
    screen.action_toggle_all(SimpleNamespace(say=said.append))
    assert [r["device"] for r in screen.arrange(screen.rows(view), screen.initial_state())] == ["vda", "vdb", "vda1"]
    assert said == ["showing all block devices"]
    assert screen.columns == tuple(c for c in IOstatScreen.columns if c.key != "role")  # no roles known
