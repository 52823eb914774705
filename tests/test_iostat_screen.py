"""IOstat end to end: the installed proxytop in a pseudo-terminal next to sysstat's ``iostat -x``.

The test makes real I/O (4 KiB writes, each followed by fsync, at a steady pace) on the device
that holds the temporary directory, runs ``proxytop --screen iostat -d 1`` and
``iostat -x -d -y DEV 1 N`` over the same seconds, and compares w/s and wkB/s.

Alignment: both tools read the same kernel counters with the same arithmetic, so any
difference comes from their intervals not being the same seconds. The header's "data N s old"
tells when proxytop took each reading; iostat is started at the moment proxytop is due to take
its next one, so each of its one-second intervals matches one of proxytop's to within a few
tens of milliseconds (process start-up, timer jitter, the age's 10 ms resolution). The amounts
(rate x interval) of the matched intervals are summed and compared.

Tolerance: 8% of the figure plus a small absolute slack (3 w/s, 40 kB/s). What is left of the
skew only matters when other I/O arrives in bursts inside those few milliseconds at an
interval's edge (a database flushing on a shared machine); under the steady load written here
the two agree to about 1%.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Dict, List, Optional, Tuple

import pytest

from proxytop import options
from proxytop.metrics.rates import to_number
from proxytop.polling.devices import DeviceMapper
from proxytop.screens.iostat import ALL_COLUMNS, WITHOUT_ROLE, IOstatScreen
from proxytop.screens import table
from tests.terminal import ESC, ENTER

IOSTAT = shutil.which("iostat")
needs_iostat = pytest.mark.skipif(IOSTAT is None, reason="iostat (Debian package sysstat) is not installed; "
                                                        "tests/run installs it")

COLS, ROWS = 150, 30
REPORTS = 8  # iostat intervals compared
RELATIVE = 0.08
SLACK = {"w_s": 3.0, "wkb_s": 40.0}


def parse_number(text: str) -> Optional[float]:
    text = text.strip()
    number = to_number(text)
    if number is not None:
        return float(number)
    match = re.fullmatch(r"(-?[\d.]+)([kMGT])", text)
    if match:
        return float(match.group(1)) * {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[match.group(2)]
    return None


def screen_cells(screen: str, device: str, cols: int = COLS) -> Optional[Dict[str, str]]:
    """The cells of one device's row, cut at the column positions proxytop lays out (the Role
    column is there only when a local server's roles are known)."""
    columns = ALL_COLUMNS if re.search(r"^Device\s+Role\b", screen, re.MULTILINE) else WITHOUT_ROLE
    fitted = table.fit_columns(columns, cols, keep="util")
    for line in screen.splitlines():
        if not re.match(rf"^{re.escape(device)}\s", line):
            continue
        cells, x = {}, 0
        for column, width in fitted:
            cells[column.key] = line[x:x + width].strip()
            x += width + 1
        return cells
    return None


def find_target(mapper: DeviceMapper) -> Tuple[str, str]:
    """(directory to write in, device) for the first candidate directory on a block device."""
    candidates = [tempfile.gettempdir(), os.getcwd(), os.path.expanduser("~")]
    for directory in candidates:
        name, _why = mapper.locate(directory)
        if name is not None and os.access(directory, os.W_OK):
            return directory, name
    pytest.skip("no writable directory on a local block device (tmpfs/overlay only)")


class SteadyWriter(threading.Thread):
    """4 KiB writes, each made durable with fsync, about ``per_second`` times a second."""

    def __init__(self, directory: str, per_second: int = 100):
        super().__init__(daemon=True)
        self.directory = directory
        self.period = 1.0 / per_second
        self.stop = threading.Event()
        self.writes = 0

    def run(self):
        fd, path = tempfile.mkstemp(prefix="proxytop-iostat-", dir=self.directory)
        block = os.urandom(4096)
        try:
            next_at = time.monotonic()
            while not self.stop.is_set():
                os.pwrite(fd, block, (self.writes % 256) * 4096)
                os.fsync(fd)
                self.writes += 1
                next_at += self.period
                delay = next_at - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                else:
                    next_at = time.monotonic()
        finally:
            os.close(fd)
            os.unlink(path)


def parse_iostat(text: str, device: str) -> List[Dict[str, float]]:
    """iostat -x reports for one device, as {column title: value}."""
    reports, header = [], None
    for line in text.splitlines():
        fields = line.split()
        if fields[:1] == ["Device"]:
            header = fields
        elif header and fields[:1] == [device] and len(fields) == len(header):
            reports.append({title: float(value.replace(",", ".")) for title, value in zip(header[1:], fields[1:])})
    return reports


def data_age(screen: str) -> Optional[float]:
    """Seconds since the reading on screen was taken, from the header ("data 250ms old")."""
    match = re.search(r"data ([\d.]+)(µs|ms|s) old", screen)
    return float(match.group(1)) * {"µs": 1e-6, "ms": 1e-3, "s": 1.0}[match.group(2)] if match else None


def readings(term, device: str, until: float, on_first=None) -> List[Tuple[float, Dict[str, str]]]:
    """(monotonic time the reading was taken, its cells) for every new reading shown; the
    reading on screen at the start is skipped (it may have been drawn a moment ago, so its
    age is already stale)."""
    seen: List[Tuple[float, Dict[str, str]]] = []
    last = screen_cells(term.text(), device)
    while time.monotonic() < until:
        screen = term.text()
        now = time.monotonic()
        cells, age = screen_cells(screen, device), data_age(screen)
        if cells and age is not None and cells != last:
            seen.append((now - age, cells))
            last = cells
            if on_first is not None and len(seen) == 1:
                on_first(seen[0][0])
        time.sleep(0.005)
    return seen


@needs_iostat
def test_figures_match_iostat_for_real_writes(proxytop_term, tmp_path):
    mapper = DeviceMapper()
    directory, device = find_target(mapper)
    kind = mapper.kind(device)

    writer = SteadyWriter(directory)
    writer.start()
    iostat = None
    try:
        term = proxytop_term("--screen", "iostat", "-d", "1", cols=COLS, rows=ROWS)
        term.wait_for("avg-cpu")
        if kind != "disk":
            term.send("a")  # partitions, dm and md devices are behind the `a` toggle
        term.wait_until(lambda s: (screen_cells(s, device) or {}).get("w_s") not in (None, "", "\u2014"),
                        timeout=15, what=f"figures for {device}")
        env = dict(os.environ, LC_ALL="C", S_COLORS="never")
        launched: List[float] = []

        def start_iostat(taken_at: float) -> None:
            # proxytop's next reading is due one interval later: iostat takes its first then.
            nonlocal iostat
            delay = taken_at + 1.0 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            launched.append(time.monotonic())
            iostat = subprocess.Popen([IOSTAT, "-x", "-d", "-y", device, "1", str(REPORTS)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

        seen = readings(term, device, time.monotonic() + REPORTS + 4, on_first=start_iostat)
        assert iostat is not None, f"no new reading appeared on screen:\n{term.text()}"
        output, errors = iostat.communicate(timeout=15)
        final_screen = term.text()
    finally:
        writer.stop.set()
        writer.join(5)
        if iostat is not None and iostat.poll() is None:
            iostat.kill()

    assert iostat.returncode == 0, errors
    reports = parse_iostat(output, device)
    assert len(reports) == REPORTS, output
    t0 = launched[0]

    # Match each iostat interval [t0+k, t0+k+1] with proxytop's reading that ends nearest t0+k+1.
    pairs = []
    for k, report in enumerate(reports):
        end = t0 + k + 1
        j = min(range(1, len(seen)), key=lambda i: abs(seen[i][0] - end))
        if abs(seen[j][0] - end) < 0.25 and abs(seen[j - 1][0] - (end - 1)) < 0.25:
            pairs.append((report, seen[j][0] - seen[j - 1][0], seen[j][1]))
    # (a reading can be missed when the machine stalls; most must match)
    assert len(pairs) >= REPORTS - 2, f"only {len(pairs)} of {REPORTS} intervals matched: {[s[0] - t0 for s in seen]}"

    results = {}
    for key, title in (("w_s", "w/s"), ("wkb_s", "wkB/s")):
        ours = sum(parse_number(cells[key]) * seconds for _report, seconds, cells in pairs)
        theirs = sum(report[title] * 1.0 for report, _seconds, _cells in pairs)
        span = sum(seconds for _report, seconds, _cells in pairs)
        ours_rate, theirs_rate = ours / span, theirs / len(pairs)
        results[key] = (ours_rate, theirs_rate)
        allowed = RELATIVE * theirs_rate + SLACK[key]
        assert abs(ours_rate - theirs_rate) <= allowed, (
            f"{title}: proxytop {ours_rate:.2f} vs iostat {theirs_rate:.2f} (allowed {allowed:.2f})\n"
            f"{output}\n{final_screen}")

    # The load was seen at all: about 100 fsync'd writes a second reach the device.
    assert results["w_s"][1] >= 50, output
    # iostat's avg-cpu line is shown above the table.
    assert re.search(r"avg-cpu\s+%user [\d.]+ %nice [\d.]+ %system [\d.]+ %iowait [\d.]+ %steal [\d.]+ %idle [\d.]+",
                     final_screen), final_screen
    print(f"\n{device}, {len(pairs)} matched intervals: w/s proxytop {results['w_s'][0]:.2f} iostat "
          f"{results['w_s'][1]:.2f}; wkB/s proxytop {results['wkb_s'][0]:.2f} iostat {results['wkb_s'][1]:.2f} "
          f"({writer.writes} fsync'd writes)")
    print(final_screen)
    print(output)


# ----- options, keys and the detail view ----------------------------------------------------

@pytest.mark.parametrize("value", ["sda", "sda=", "=0.2", "sda=abc", "sda=-1", "sda=0", "sda=1,2,3", "sda=inf",
                                   "a/b=1"])
def test_bad_disk_baseline_is_a_usage_error(value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        options.parse(["--disk-baseline", value], {})
    assert exit_info.value.code == 2
    assert "--disk-baseline" in capsys.readouterr().err


def test_disk_baselines_reach_the_collector():
    config = options.parse(["--disk-baseline", "/dev/sda=0.2", "--disk-baseline", "nvme0n1=0.08,0.02",
                            "--disk-baseline", "sda=0.3"], {})
    collector = IOstatScreen(config).collectors()[0]
    assert collector.learner.manual == {"sda": (0.3, 0.3), "nvme0n1": (0.08, 0.02)}


def test_whole_disks_by_default_a_toggles_all_devices_and_enter_shows_baselines(proxytop_term, tmp_path):
    directory, device = find_target(DeviceMapper())
    disk = DeviceMapper().beneath(device)[-1]
    term = proxytop_term("--screen", "iostat", "-d", "1", "--disk-baseline", f"{disk}=0.01", cols=COLS, rows=54)
    screen = term.wait_for("whole disks")
    assert "%util\u2193" in screen and "sort %util \u2193" in screen  # default sort: %util descending
    assert "a all devices" in screen  # the key is in the footer
    term.wait_until(lambda s: (screen_cells(s, disk) or {}).get("r_s") not in (None, "", "\u2014"),
                    what=f"figures for {disk}")
    # a baseline given by hand: no learning phase for that disk
    cells = screen_cells(term.text(), disk)
    assert cells["r_sat"] != "learning" and cells["w_sat"] != "learning", term.text()
    term.send("a")
    screen = term.wait_for("all block devices (a: whole disks only)")
    term.send("a")
    term.wait_for("whole disks (a:")
    # filter like every table: a device name that matches nothing leaves no rows
    term.send("/")
    term.send("device:^nosuchdevice$")
    term.send(ENTER)
    screen = term.wait_for("0/")
    assert screen_cells(screen, disk) is None
    term.send("\\")
    term.wait_until(lambda s: screen_cells(s, disk) is not None, what="rows back after clearing the filter")
    # Enter: the device's detail with its baselines
    term.send(ENTER)
    screen = term.wait_for(f"Device {disk}")
    assert "10µs (set with --disk-baseline)" in screen
    assert "baselines kept in" in screen and str(tmp_path / "state") in screen
    term.send(ESC, pause=0.4)
    term.wait_until(lambda s: f"Device {disk}" not in s, what="detail closed")
    term.send("?")
    screen = term.wait_for("IOstat screen")
    assert "all block devices (partitions, loop, dm, md, zram)" in screen, screen
    assert "reads completed per second" in screen, screen  # the columns' help follows


def test_roles_of_a_local_mariadb_label_its_disk(proxytop_term, mariadb):
    """A real server given with --mysql: its datadir, redo log, binary log and tmpdir are on
    the disk under the test's temporary directory, and the IOstat screen says so (the server's
    variables are read even though the InnoDB screen was never opened)."""
    mapper = DeviceMapper()
    device, why = mapper.locate(mariadb.datadir)
    if device is None:
        pytest.skip(f"the server's datadir has no block device here: {why}")
    disk = mapper.beneath(device)[-1] if mapper.kind(device) != "disk" else device
    term = proxytop_term("--screen", "iostat", "-d", "1", "--no-discover", "--mysql", mariadb.address,
                         "--mysql-user", mariadb.user, "--mysql-password", mariadb.password, cols=COLS, rows=30)
    # two waits, so a timeout says which half was missing
    term.wait_until(lambda s: (screen_cells(s, disk) or {}).get("role") == "data,redo,binlog,tmp",
                    timeout=30, what=f"the Role cell of {disk}")
    screen = term.wait_until(lambda s: (screen_cells(s, disk) or {}).get("role") == "data,redo,binlog,tmp"
                             and f"roles from MySQL {mariadb.address}" in s, timeout=30,
                             what=f"the note naming {mariadb.address} with the roles on {disk}")
    print("\n" + screen)
