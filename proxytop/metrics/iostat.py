"""Disk statistics the way ``iostat -x`` computes them, plus saturation against a baseline.

Everything here is pure: the small file that keeps learned baselines across runs is
collectors/baseline_file.py's.

The arithmetic is sysstat's (iostat.c ``write_ext_stat``, rd_stats.c
``compute_ext_disk_stats``) for an interval of T seconds:

=================  =================================================================
r/s w/s d/s f/s    Δios / T
rkB/s wkB/s dkB/s  Δsectors / 2 / T (sectors are always 512 bytes)
rrqm/s wrqm/s      Δmerged / T; %rrqm = Δmerged / (Δmerged + Δios) × 100
r_await w_await    Δms / Δios (0 when the interval had no I/O, as iostat prints)
rareq-sz wareq-sz  Δsectors / Δios / 2, in kB
aqu-sz             Δweighted_ms / (T × 1000)
%util              Δio_ms / (T × 1000) × 100
=================  =================================================================

The millisecond fields of /proc/diskstats are 32-bit and wrap after about 49.7 days; their
deltas are taken modulo 2**32 (iostat gets that from unsigned arithmetic, except for %util
where it shows 0 on the wrapping interval; proxytop keeps the true value). A device that was
removed and added again (all its counters went down) has no figures for that interval,
like every other counter reset in proxytop.

Saturation: utilisation says little about devices with internal parallelism (SSD, NVMe,
RAID). The rise of the average response time over the response time of a lone request says
much more. Per device and direction, :class:`BaselineLearner` keeps the awaits of *quiet*
intervals (aqu-sz <= 1 and enough I/Os) in a rolling window and takes a low percentile of
them as the baseline; saturation = current await / baseline.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Deque, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

SECTOR_BYTES = 512
WRAP_32 = 1 << 32

READ = "read"
WRITE = "write"
DIRECTIONS = (READ, WRITE)
STATE_VERSION = 1  # of BaselineLearner.to_state(), the content of collectors/baseline_file.py


# ----- the counters -----------------------------------------------------------------------

@dataclass(frozen=True)
class DiskCounters:
    """One device's line of /proc/diskstats (fields a kernel doesn't report are None).

    ``fields`` is the number of value fields on the line: 4 (old partition lines), 11 (before
    4.18), 15 (4.18+: discards), 17 (5.5+: flushes).
    """

    name: str
    major: int = 0
    minor: int = 0
    fields: int = 11
    rd_ios: int = 0
    rd_merges: Optional[int] = None
    rd_sectors: int = 0
    rd_ticks: Optional[int] = None
    wr_ios: int = 0
    wr_merges: Optional[int] = None
    wr_sectors: int = 0
    wr_ticks: Optional[int] = None
    in_flight: Optional[int] = None
    io_ticks: Optional[int] = None
    rq_ticks: Optional[int] = None
    dc_ios: Optional[int] = None
    dc_merges: Optional[int] = None
    dc_sectors: Optional[int] = None
    dc_ticks: Optional[int] = None
    fl_ios: Optional[int] = None
    fl_ticks: Optional[int] = None

    @property
    def has_discard(self) -> bool:
        return self.dc_ios is not None

    @property
    def has_flush(self) -> bool:
        return self.fl_ios is not None

    @property
    def never_used(self) -> bool:
        """No I/O since boot (iostat leaves such devices out unless asked)."""
        return not (self.rd_ios or self.wr_ios or self.dc_ios or self.fl_ios)


def wrapped_delta(previous: Optional[int], current: Optional[int], bits: int = 32) -> Optional[int]:
    """Increase of a counter that may wrap at 2**bits; None when a sample is missing or the
    counter went down from a value it could not have wrapped from.

    >>> wrapped_delta(10, 25), wrapped_delta(2**32 - 6, 4), wrapped_delta(None, 3)
    (15, 10, None)
    >>> wrapped_delta(2**40, 5) is None
    True
    """
    if previous is None or current is None:
        return None
    if current >= previous:
        return current - previous
    limit = 1 << bits
    if previous < limit:
        return (current - previous) % limit
    return None


def device_was_reset(previous: DiskCounters, current: DiskCounters) -> bool:
    """True when the device's counters all went back (it was removed and added again):
    sysstat's test, in which a wrap of a single counter is not a reset.

    >>> device_was_reset(DiskCounters("a", rd_ios=10, rd_sectors=80, wr_ios=5, wr_sectors=40),
    ...                  DiskCounters("a", rd_ios=1, rd_sectors=8, wr_ios=0, wr_sectors=0))
    True
    """
    def total(c: DiskCounters) -> int:
        return c.rd_ios + c.wr_ios + (c.dc_ios or 0) + (c.fl_ios or 0)

    if total(current) >= total(previous):
        return False

    def fell(before: Optional[int], after: Optional[int]) -> bool:
        return not before or (after is not None and after < before)

    return (fell(previous.rd_sectors, current.rd_sectors) and fell(previous.wr_sectors, current.wr_sectors)
            and fell(previous.dc_sectors, current.dc_sectors))


# ----- iostat -x --------------------------------------------------------------------------

@dataclass(frozen=True)
class DeviceStats:
    """``iostat -x`` figures for one device over one interval (None: not reported by the
    kernel for this device, e.g. discards before 4.18)."""

    seconds: float
    r_s: float
    w_s: float
    rkb_s: float
    wkb_s: float
    rrqm_s: Optional[float]
    wrqm_s: Optional[float]
    rrqm_pct: Optional[float]
    wrqm_pct: Optional[float]
    r_await: Optional[float]
    w_await: Optional[float]
    rareq_sz: float
    wareq_sz: float
    aqu_sz: Optional[float]
    util: Optional[float]
    d_s: Optional[float] = None
    dkb_s: Optional[float] = None
    drqm_s: Optional[float] = None
    drqm_pct: Optional[float] = None
    d_await: Optional[float] = None
    dareq_sz: Optional[float] = None
    f_s: Optional[float] = None
    f_await: Optional[float] = None
    r_ios: int = 0  # I/Os completed in the interval, per direction
    w_ios: int = 0
    in_flight: Optional[int] = None  # at the end of the interval


def _per_second(delta: Optional[int], seconds: float) -> Optional[float]:
    return None if delta is None else delta / seconds


def _merge_pct(merges: Optional[int], ios: Optional[int]) -> Optional[float]:
    if merges is None or ios is None:
        return None
    return 100.0 * merges / (merges + ios) if (merges + ios) else 0.0


def _await(ticks: Optional[int], ios: Optional[int]) -> Optional[float]:
    if ticks is None or ios is None:
        return None
    return ticks / ios if ios else 0.0


def _req_kb(sectors: Optional[int], ios: Optional[int]) -> Optional[float]:
    if sectors is None or ios is None:
        return None
    return sectors / ios / 2.0 if ios else 0.0


def device_stats(previous: Optional[DiskCounters], current: Optional[DiskCounters],
                 seconds: Optional[float]) -> Optional[DeviceStats]:
    """iostat -x for one device between two readings ``seconds`` apart; None when there is
    no honest figure (first reading, no time passed, device reset).

    A worked example, 2 s apart: 200 reads of 8 sectors with 30 merged and 300 ms reading,
    100 writes of 16 sectors with 100 merged and 500 ms writing, 1,500 ms busy, 2,400 ms
    weighted:

    >>> a = DiskCounters("sda", rd_ios=1000, rd_merges=100, rd_sectors=8000, rd_ticks=5000,
    ...                  wr_ios=500, wr_merges=50, wr_sectors=4000, wr_ticks=2000,
    ...                  in_flight=0, io_ticks=10000, rq_ticks=20000)
    >>> b = DiskCounters("sda", rd_ios=1200, rd_merges=130, rd_sectors=9600, rd_ticks=5300,
    ...                  wr_ios=600, wr_merges=150, wr_sectors=5600, wr_ticks=2500,
    ...                  in_flight=1, io_ticks=11500, rq_ticks=22400)
    >>> s = device_stats(a, b, 2.0)
    >>> s.r_s, s.w_s, s.rkb_s, s.wkb_s, s.rrqm_s, round(s.rrqm_pct, 2), s.wrqm_pct
    (100.0, 50.0, 400.0, 400.0, 15.0, 13.04, 50.0)
    >>> s.r_await, s.w_await, s.rareq_sz, s.wareq_sz, s.aqu_sz, s.util
    (1.5, 5.0, 4.0, 8.0, 1.2, 75.0)
    """
    if previous is None or current is None or not seconds or seconds <= 0:
        return None
    if device_was_reset(previous, current):
        return None

    def d(name: str) -> Optional[int]:
        return wrapped_delta(getattr(previous, name), getattr(current, name))

    rd_ios, wr_ios = d("rd_ios"), d("wr_ios")
    rd_sectors, wr_sectors = d("rd_sectors"), d("wr_sectors")
    if rd_ios is None or wr_ios is None or rd_sectors is None or wr_sectors is None:
        return None
    rd_merges, wr_merges = d("rd_merges"), d("wr_merges")
    rd_ticks, wr_ticks = d("rd_ticks"), d("wr_ticks")
    io_ticks, rq_ticks = d("io_ticks"), d("rq_ticks")
    dc_ios, dc_merges, dc_sectors, dc_ticks = d("dc_ios"), d("dc_merges"), d("dc_sectors"), d("dc_ticks")
    fl_ios, fl_ticks = d("fl_ios"), d("fl_ticks")
    ms = seconds * 1000.0
    return DeviceStats(
        seconds=seconds,
        r_s=rd_ios / seconds,
        w_s=wr_ios / seconds,
        rkb_s=rd_sectors / 2.0 / seconds,
        wkb_s=wr_sectors / 2.0 / seconds,
        rrqm_s=_per_second(rd_merges, seconds),
        wrqm_s=_per_second(wr_merges, seconds),
        rrqm_pct=_merge_pct(rd_merges, rd_ios),
        wrqm_pct=_merge_pct(wr_merges, wr_ios),
        r_await=_await(rd_ticks, rd_ios),
        w_await=_await(wr_ticks, wr_ios),
        rareq_sz=_req_kb(rd_sectors, rd_ios),
        wareq_sz=_req_kb(wr_sectors, wr_ios),
        aqu_sz=None if rq_ticks is None else rq_ticks / ms,
        util=None if io_ticks is None else io_ticks / ms * 100.0,
        d_s=_per_second(dc_ios, seconds),
        dkb_s=None if dc_sectors is None else dc_sectors / 2.0 / seconds,
        drqm_s=_per_second(dc_merges, seconds),
        drqm_pct=_merge_pct(dc_merges, dc_ios),
        d_await=_await(dc_ticks, dc_ios),
        dareq_sz=_req_kb(dc_sectors, dc_ios),
        f_s=_per_second(fl_ios, seconds),
        f_await=_await(fl_ticks, fl_ios),
        r_ios=rd_ios,
        w_ios=wr_ios,
        in_flight=current.in_flight,
    )


# ----- avg-cpu ----------------------------------------------------------------------------

CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")


@dataclass(frozen=True)
class CpuStats:
    user: float
    nice: float
    system: float
    iowait: float
    steal: float
    idle: float


def cpu_stats(previous: Optional[Mapping[str, float]], current: Optional[Mapping[str, float]]) -> Optional[CpuStats]:
    """iostat's avg-cpu line from two readings of the CPU times (psutil.cpu_times() as a
    mapping, seconds): %user excludes guest time (the kernel counts it in user too),
    %system includes irq and softirq.

    >>> zero = dict(nice=0, irq=5, softirq=5, steal=0, guest=0, guest_nice=0)
    >>> before = dict(zero, user=100, system=50, idle=800, iowait=40)
    >>> after = dict(zero, user=130, system=60, idle=850, iowait=50)
    >>> cpu_stats(before, after)
    CpuStats(user=30.0, nice=0.0, system=10.0, iowait=10.0, steal=0.0, idle=50.0)
    """
    if not previous or not current:
        return None

    def d(name: str) -> float:
        value = float(current.get(name) or 0.0) - float(previous.get(name) or 0.0)
        return value if value > 0 else 0.0

    guest, guest_nice = d("guest"), d("guest_nice")
    user = max(0.0, d("user") - guest)
    nice = max(0.0, d("nice") - guest_nice)
    system = d("system") + d("irq") + d("softirq")
    total = d("user") + d("nice") + d("system") + d("idle") + d("iowait") + d("irq") + d("softirq") + d("steal")
    if total <= 0:
        return None

    def pct(value: float) -> float:
        return round(100.0 * value / total, 10)

    return CpuStats(user=pct(user), nice=pct(nice), system=pct(system), iowait=pct(d("iowait")),
                    steal=pct(d("steal")), idle=pct(d("idle")))


# ----- saturation against a baseline ------------------------------------------------------

@dataclass(frozen=True)
class BaselineRules:
    """What makes an interval quiet enough to learn from, and how the baseline is taken."""

    max_queue: float = 1.0  # aqu-sz at most this: requests mostly alone on the device
    min_ios: int = 20  # at least this many I/Os of the direction in the interval
    max_interval: float = 10.0  # longer intervals average bursts away: not learned from
    window: int = 600  # quiet intervals kept per device and direction (the rolling window)
    min_samples: int = 30  # "learning" until this many
    percentile: float = 10.0  # the baseline: this low percentile of the kept awaits


RULES = BaselineRules()
WARNING_RATIO = 2.0
ALARM_RATIO = 5.0
MIN_IOS_TO_COLOUR = 10  # fewer I/Os in an interval: the ratio is shown but not coloured


@dataclass(frozen=True)
class Baseline:
    """The single-request await of one device and direction, as far as it is known."""

    ms: Optional[float]  # None while learning
    samples: int = 0
    needed: int = RULES.min_samples
    source: str = "learning"  # learning | learned | manual

    @property
    def known(self) -> bool:
        return self.ms is not None and self.ms > 0


UNKNOWN = Baseline(None)


def percentile(values: Sequence[float], pct: float) -> Optional[float]:
    """Linear-interpolation percentile (numpy's default).

    >>> percentile([4, 1, 3, 2, 5], 10), percentile([4, 1, 3, 2, 5], 50), percentile([], 10)
    (1.4, 3.0, None)
    """
    ordered = sorted(values)
    if not ordered:
        return None
    rank = (len(ordered) - 1) * pct / 100.0
    low = math.floor(rank)
    high = math.ceil(rank)
    if low == high:
        return float(ordered[low])
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def quiet_await(stats: Optional[DeviceStats], direction: str, rules: BaselineRules = RULES) -> Optional[float]:
    """The await of ``direction`` if this interval is one to learn the baseline from.

    >>> s = DeviceStats(1.0, 0, 60, 0, 240, 0, 0, 0, 0, 0.0, 0.4, 0, 4, aqu_sz=0.3, util=20, w_ios=60)
    >>> quiet_await(s, WRITE), quiet_await(s, READ)
    (0.4, None)
    """
    if stats is None or stats.aqu_sz is None or stats.aqu_sz > rules.max_queue:
        return None
    if stats.seconds > rules.max_interval:
        return None
    ios = stats.r_ios if direction == READ else stats.w_ios
    value = stats.r_await if direction == READ else stats.w_await
    if ios < rules.min_ios or value is None or value <= 0:
        return None
    return value


def saturation(await_ms: Optional[float], baseline: Baseline) -> Optional[float]:
    """Current await over the baseline: 1 is a lone request's speed, 5 means requests wait
    five times as long.

    >>> saturation(1.0, Baseline(0.2, 40, source="learned")), saturation(1.0, UNKNOWN), saturation(None, Baseline(0.2))
    (5.0, None, None)
    """
    if await_ms is None or not baseline.known:
        return None
    return await_ms / baseline.ms


def saturation_level(ratio: Optional[float], ios: int) -> Optional[str]:
    """'alarm' (>= 5x), 'warning' (>= 2x) or None; never for an interval with few I/Os.

    >>> saturation_level(6, 100), saturation_level(2.5, 100), saturation_level(1.2, 100), saturation_level(9, 3)
    ('alarm', 'warning', None, None)
    """
    if ratio is None or ios < MIN_IOS_TO_COLOUR:
        return None
    if ratio >= ALARM_RATIO:
        return "alarm"
    if ratio >= WARNING_RATIO:
        return "warning"
    return None


class BaselineLearner:
    """Rolling windows of quiet-interval awaits per (device, direction).

    Mutable and owned by one collector; it hands out frozen :class:`Baseline` values.
    ``manual`` maps a device to (read ms, write ms) set by hand; those always win.
    """

    def __init__(self, manual: Optional[Mapping[str, Tuple[Optional[float], Optional[float]]]] = None,
                 rules: BaselineRules = RULES):
        self.rules = rules
        self.manual = dict(manual or {})
        self._windows: Dict[Tuple[str, str], Deque[float]] = {}
        self.identities: Dict[str, str] = {}
        self.changed = False  # samples were added since the state was last saved

    def window(self, device: str, direction: str) -> Deque[float]:
        key = (device, direction)
        if key not in self._windows:
            self._windows[key] = deque(maxlen=self.rules.window)
        return self._windows[key]

    def observe(self, device: str, stats: Optional[DeviceStats]) -> bool:
        """Learn from one interval; True when a sample was kept."""
        kept = False
        for direction in DIRECTIONS:
            value = quiet_await(stats, direction, self.rules)
            if value is not None:
                self.window(device, direction).append(round(value, 6))
                kept = True
        if kept:
            self.changed = True
        return kept

    def baseline(self, device: str, direction: str) -> Baseline:
        manual = self.manual.get(device)
        if manual is not None:
            value = manual[0] if direction == READ else manual[1]
            if value is not None:
                return Baseline(float(value), 0, 0, "manual")
        window = self._windows.get((device, direction), ())
        count = len(window)
        if count < self.rules.min_samples:
            return Baseline(None, count, self.rules.min_samples, "learning")
        return Baseline(percentile(list(window), self.rules.percentile), count, self.rules.min_samples, "learned")

    def baselines(self, devices: Iterable[str]) -> Dict[str, Tuple[Baseline, Baseline]]:
        return {name: (self.baseline(name, READ), self.baseline(name, WRITE)) for name in devices}

    # --- the state file's content -----------------------------------------------------------
    def to_state(self) -> dict:
        devices: Dict[str, dict] = {}
        for (device, direction), window in sorted(self._windows.items()):
            if not window:
                continue
            entry = devices.setdefault(device, {"identity": self.identities.get(device, "")})
            entry[direction] = list(window)
        return {"version": STATE_VERSION, "devices": devices}

    def restore(self, state: Mapping, identities: Mapping[str, str]) -> List[str]:
        """Take windows saved by an earlier run; a device whose identity (serial, WWID) changed
        since is a different device under the same name and starts afresh. Returns the names
        of the devices restored."""
        restored = []
        for device, entry in (state.get("devices") or {}).items():
            saved_identity = entry.get("identity") or ""
            current = identities.get(device)
            if current is not None and saved_identity and current and saved_identity != current:
                continue
            for direction in DIRECTIONS:
                values = entry.get(direction) or []
                window = self.window(device, direction)
                window.clear()
                window.extend(float(v) for v in values[-self.rules.window:])
            if saved_identity:
                self.identities.setdefault(device, saved_identity)
            restored.append(device)
        return restored
