"""IOstat: ``iostat -x`` for every block device, with saturation against each device's own
baseline, and the devices of a local MySQL server labelled with their roles.

Needs no database. Whole disks are shown by default; ``a`` adds partitions and loop, dm, md,
zram devices. Devices without any I/O since boot are left out, as iostat does.

Saturation: for each device and direction, the await of quiet intervals (aqu-sz <= 1, enough
I/Os) is learned as a baseline (a low percentile over a rolling window, kept across runs in
$XDG_STATE_HOME/proxytop/disk-baselines.json); r_sat and w_sat are the current await over
that baseline, coloured from 2x (warning) and 5x (alarm). ``--disk-baseline DEV=MS`` sets a
baseline by hand.

Device roles -- the contract with the MySQL side
------------------------------------------------
Any collector registered with the engine under a name starting with ``innodb.vars.`` (for
example ``innodb.vars.127.0.0.1:3306``) whose latest snapshot's data is a mapping of server
variables is read for these keys (case-insensitive): ``datadir``,
``innodb_log_group_home_dir``, ``log_bin_basename``, ``tmpdir``. Its server counts as local
when the mapping has a true ``_local`` key, or, without that key, when the collector's source
has an ``endpoint`` whose ``socket`` is set or whose ``host`` is 127.0.0.1, localhost, ::1,
this machine's host name or one of its interface addresses.
Only local servers' paths are mapped (a remote server's datadir says nothing about this
host's disks). The mapping itself (stat, sysfs) runs in the disk collector on the host
thread, see :mod:`proxytop.polling.devices`.
"""
from __future__ import annotations

import argparse
import math
import os
import socket
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple

import psutil

from proxytop.collectors.diskstats import NAME as DISKSTATS, DiskSnapshot, DiskStats
from proxytop.collectors.filesystems import NAME as SPACE, Filesystems
from proxytop.metrics import units
from proxytop.metrics.space import DEFAULT_FULL_ALARM, DEFAULT_USED_ALARM, queue_notes
from proxytop.polling.devices import role_label, server_role_paths, space_role_paths
from proxytop.collectors.baseline_file import state_path
from proxytop.metrics.iostat import (READ, RULES, WRITE, Baseline, UNKNOWN, cpu_stats, device_stats, saturation,
                             saturation_level)
from proxytop.metrics.rates import to_number
from proxytop.screens.base import DataView, Detail, Screen, seconds_between
from proxytop.screens.keys import Binding
from proxytop.screens.space import (SPACE_PREFIX, filesystem_detail, queue_lines, readings_by_server, server_lines,
                                    space_alarm, space_columns, space_rows, space_snapshot)
from proxytop.screens.table import Column, Row, TableState

ROLE_COLLECTOR_PREFIX = "innodb.vars."
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "")
SHOWN_BY_DEFAULT = ("disk",)
LEARNING = "learning"


# ----- formatting -------------------------------------------------------------------------

def fixed(value: Any) -> str:
    """iostat's two decimals while they fit a narrow column, fewer for large values.

    >>> fixed(3.14159), fixed(12345.678), fixed(2500000), fixed(None)
    ('3.14', '12345.7', '2500000', '—')
    """
    number = to_number(value)
    if number is None:
        return units.MISSING if value is None else str(value)
    size = abs(number)
    if size < 10000:
        return f"{number:.2f}"
    if size < 100000:
        return f"{number:.1f}"
    if size < 10 ** 7:
        return f"{number:.0f}"
    return units.number(number)


def kib(value: Any) -> str:
    """A size the kernel's counters give in KiB (iostat's kB), with its unit as every size.

    >>> kib(16.15), kib(512), kib(None)
    ('16.1KiB', '512.0KiB', '—')
    """
    number = to_number(value)
    if number is None:
        return units.MISSING if value is None else str(value)
    return units.size(number * 1024)


def ratio(value: Any) -> str:
    """A saturation ratio: '1.3x'; text (learning) as it is.

    >>> ratio(1.26), ratio(123.4), ratio("learning"), ratio(None)
    ('1.3x', '123x', 'learning', '—')
    """
    number = to_number(value)
    if number is None:
        return units.MISSING if value is None else str(value)
    return f"{number:.1f}x" if number < 100 else f"{number:.0f}x"


def _sat_style(direction: str):
    def style(row: Mapping) -> Optional[str]:
        value = row.get(f"{direction}_sat")
        if value == LEARNING:
            return "dim"
        level = saturation_level(to_number(value), int(row.get(f"_{direction}_ios") or 0))
        return {"alarm": "danger", "warning": "warning_bold"}.get(level or "")
    return style


def _role_style(row: Mapping) -> Optional[str]:
    return "header" if row.get("role") else None


# ----- the data ---------------------------------------------------------------------------

def sat_value(await_ms: Optional[float], baseline: Baseline, ios: int) -> Any:
    """What the r_sat / w_sat cell holds: the ratio, 'learning', or None (no I/O)."""
    if not baseline.known:
        return LEARNING
    if not ios:
        return None
    return saturation(await_ms, baseline)


def device_rows(previous: Optional[DiskSnapshot], current: Optional[DiskSnapshot], seconds: Optional[float],
                show_all: bool = False) -> List[Row]:
    """Pure: two disk snapshots -> one row per device shown."""
    if current is None:
        return []
    rows: List[Row] = []
    before = previous.devices if previous is not None else {}
    for name, counters in current.devices.items():
        kind = current.kinds.get(name, "disk")
        if counters.never_used or (not show_all and kind not in SHOWN_BY_DEFAULT):
            continue
        stats = device_stats(before.get(name), counters, seconds)
        read_base, write_base = current.baselines.get(name, (UNKNOWN, UNKNOWN))
        row: Row = {"_id": name, "device": name, "kind": kind,
                    "role": role_label(current.roles.get(name, ())) or None}
        if stats is not None:
            row.update({
                "r_s": stats.r_s, "rkb_s": stats.rkb_s, "rrqm_s": stats.rrqm_s, "rrqm_pct": stats.rrqm_pct,
                "r_await": stats.r_await, "rareq_sz": stats.rareq_sz,
                "w_s": stats.w_s, "wkb_s": stats.wkb_s, "wrqm_s": stats.wrqm_s, "wrqm_pct": stats.wrqm_pct,
                "w_await": stats.w_await, "wareq_sz": stats.wareq_sz,
                "d_s": stats.d_s, "dkb_s": stats.dkb_s, "drqm_s": stats.drqm_s, "drqm_pct": stats.drqm_pct,
                "d_await": stats.d_await, "dareq_sz": stats.dareq_sz,
                "f_s": stats.f_s, "f_await": stats.f_await,
                "aqu_sz": stats.aqu_sz, "util": stats.util,
                "_r_ios": stats.r_ios, "_w_ios": stats.w_ios,
            })
            row["r_sat"] = sat_value(stats.r_await, read_base, stats.r_ios)
            row["w_sat"] = sat_value(stats.w_await, write_base, stats.w_ios)
        else:
            row["r_sat"] = LEARNING if not read_base.known else None
            row["w_sat"] = LEARNING if not write_base.known else None
        rows.append(row)
    return rows


def hidden_count(current: Optional[DiskSnapshot], show_all: bool) -> Tuple[int, int]:
    """(devices hidden by the whole-disk view, devices without I/O since boot)."""
    if current is None:
        return 0, 0
    unused = sum(1 for c in current.devices.values() if c.never_used)
    if show_all:
        return 0, unused
    hidden = sum(1 for n, c in current.devices.items()
                 if not c.never_used and current.kinds.get(n, "disk") not in SHOWN_BY_DEFAULT)
    return hidden, unused


def cpu_line(previous: Optional[DiskSnapshot], current: Optional[DiskSnapshot]):
    """iostat's avg-cpu as one line of segments."""
    stats = cpu_stats(previous.cpu if previous else None, current.cpu if current else None)
    line: List[Tuple[str, Optional[str]]] = [("avg-cpu ", "label")]
    if stats is None:
        line.append(("waiting for a second reading", "dim"))
        return tuple(line)
    for label, value, warn, alarm in (("%user", stats.user, None, None), ("%nice", stats.nice, None, None),
                                      ("%system", stats.system, None, None), ("%iowait", stats.iowait, 10, 30),
                                      ("%steal", stats.steal, 5, 20), ("%idle", stats.idle, None, None)):
        style = "header"
        if alarm is not None and value >= alarm:
            style = "danger"
        elif warn is not None and value >= warn:
            style = "warning_bold"
        line += [(f" {label} ", "label"), (f"{value:.2f}", style)]
    return tuple(line)


# ----- roles from the MySQL side ----------------------------------------------------------

def own_addresses() -> FrozenSet[str]:
    """This machine's host name and interface addresses (lower case)."""
    names = {socket.gethostname().lower()}
    try:
        for addresses in psutil.net_if_addrs().values():
            names.update(a.address.split("%")[0].lower() for a in addresses
                         if a.address and a.family in (socket.AF_INET, socket.AF_INET6))
    except Exception:  # no interface list: loopback names still count
        pass
    return frozenset(names)


def server_is_local(engine, collector_name: str, variables: Mapping,
                    addresses: Optional[FrozenSet[str]] = None) -> bool:
    """Whether a server's paths are on this host's disks (see the module docstring)."""
    if "_local" in variables:
        return bool(variables.get("_local"))
    collector = engine.collector(collector_name)
    source = engine.source(getattr(collector, "source", "")) if collector is not None else None
    endpoint = getattr(source, "endpoint", None)
    if endpoint is None:
        return False
    if getattr(endpoint, "socket", None):
        return True
    host = str(getattr(endpoint, "host", "") or "").strip().lower()
    return host in LOCAL_HOSTS or host.startswith("127.") or host in (addresses or frozenset())


def local_space_paths(engine) -> Dict[str, Dict[str, List[str]]]:
    """Server -> role -> directories, for every local MySQL server whose variables are known
    (the space view's and the space alarm's). Runs on the host thread; reads only memory."""
    found: Dict[str, Dict[str, List[str]]] = {}
    names = engine.collector_names(ROLE_COLLECTOR_PREFIX)
    addresses = own_addresses() if names else frozenset()
    for name in sorted(names):
        data = getattr(engine.latest(name), "data", None)
        if not isinstance(data, Mapping):
            continue
        variables = {str(k).lower(): v for k, v in data.items()}
        if server_is_local(engine, name, variables, addresses):
            paths = space_role_paths(variables)
            if paths:
                found[name[len(ROLE_COLLECTOR_PREFIX):]] = paths
    return found


def local_role_paths(engine) -> Tuple[Dict[str, List[str]], Tuple[str, ...]]:
    """Role paths of every local MySQL server the InnoDB side reads variables from (see the
    module docstring for the contract). Runs on the host thread; reads only memory."""
    paths: Dict[str, List[str]] = {}
    servers: List[str] = []
    names = engine.collector_names(ROLE_COLLECTOR_PREFIX)
    addresses = own_addresses() if names else frozenset()
    for name in sorted(names):
        snapshot = engine.latest(name)
        data = getattr(snapshot, "data", None)
        if not isinstance(data, Mapping):
            continue
        variables = {str(k).lower(): v for k, v in data.items()}
        if not server_is_local(engine, name, variables, addresses):
            continue
        found = server_role_paths(variables)
        if not found:
            continue
        for role, role_paths in found.items():
            bucket = paths.setdefault(role, [])
            bucket.extend(p for p in role_paths if p not in bucket)
        servers.append(name[len(ROLE_COLLECTOR_PREFIX):])
    return paths, tuple(servers)


# ----- options ----------------------------------------------------------------------------

def _milliseconds(text: str, whole: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{whole}': '{text}' is not a number of milliseconds") from None
    if not math.isfinite(value) or value <= 0 or value > 60000:
        raise argparse.ArgumentTypeError(f"'{whole}': a baseline is more than 0 and at most 60000 ms")
    return value


def disk_baseline(text: str) -> Tuple[str, float, float]:
    """``DEV=MS`` (both directions) or ``DEV=READ_MS,WRITE_MS`` -> (device, read, write).

    >>> disk_baseline("nvme0n1=0.08"), disk_baseline("/dev/sda=0.5,2")
    (('nvme0n1', 0.08, 0.08), ('sda', 0.5, 2.0))
    """
    name, sep, value = text.partition("=")
    name = name.strip()
    if name.startswith("/dev/"):
        name = name[len("/dev/"):]
    if not sep or not name or "/" in name or not value.strip():
        raise argparse.ArgumentTypeError(
            f"'{text}' is not DEV=MS (e.g. nvme0n1=0.08, or sda=0.5,2 for read and write)")
    parts = [p.strip() for p in value.split(",")]
    if len(parts) > 2:
        raise argparse.ArgumentTypeError(f"'{text}': give one value, or two (read,write)")
    numbers = [_milliseconds(p, text) for p in parts]
    return name, numbers[0], numbers[-1]


def space_alarm_limits(text: str) -> Tuple[float, Optional[float]]:
    """--space-alarm PCT[,MINUTES]: the used share (0 to 100) and the "full in" minutes (0 to a
    week; None: the default) past which the header warns; 0 turns one off.

    >>> space_alarm_limits("90"), space_alarm_limits("95,30"), space_alarm_limits("0,0")
    ((90.0, None), (95.0, 30.0), (0.0, 0.0))
    """
    used_text, sep, minutes_text = text.partition(",")
    try:
        used = float(used_text)
        minutes = float(minutes_text) if sep else None
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not PCT or PCT,MINUTES (e.g. 90 or 90,60)") from None
    if not 0 <= used <= 100:
        raise argparse.ArgumentTypeError(f"'{text}': the used share is a percentage from 0 (off) to 100")
    if minutes is not None and not 0 <= minutes <= 10080:
        raise argparse.ArgumentTypeError(f"'{text}': the full-in minutes are from 0 (off) to 10080 (a week)")
    return used, minutes


VIEWS = ("devices", "space")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("IOstat screen")
    group.add_argument("--disk-baseline", action="append", type=disk_baseline, metavar="DEV=MS",
                       help="single-request await of a device in ms, instead of learning it "
                            "(DEV=READ,WRITE for two values); repeatable")
    group.add_argument("--iostat-view", choices=VIEWS, default="devices",
                       help="what IOstat shows first: the block devices, or the space of the filesystems local "
                            "MySQL servers write to (the key f switches)")
    group.add_argument("--space-alarm", type=space_alarm_limits, metavar="PCT[,MINUTES]",
                       help=f"the header warns when a filesystem a local MySQL server writes to is PCT full "
                            f"or will be full in less than MINUTES at its growth (default "
                            f"{DEFAULT_USED_ALARM:g},{DEFAULT_FULL_ALARM:g}; 0 turns one off)")


def manual_baselines(config) -> Dict[str, Tuple[float, float]]:
    args = getattr(config, "args", None) if config is not None else None
    given = getattr(args, "disk_baseline", None) or []
    return {name: (read, write) for name, read, write in given}


# ----- the screen -------------------------------------------------------------------------

class IOstatScreen(Screen):
    key = "iostat"
    title = "IOstat"
    short_title = "IO"
    default_sort = ("util", True)
    tiebreak = ("device",)
    bindings = (
        Binding(("a",), "toggle_all", "all block devices (partitions, loop, dm, md, zram) or whole disks only",
                "a all devices"),
        Binding(("f",), "toggle_space", "space: the filesystems local MySQL servers write to, their growth, "
                "'full in' and room for a rebuild (f again: the devices)", "f space"),
    )
    columns = (
        Column("device", "Device", 12, "<", numeric=False, priority=0),
        Column("role", "Role", 20, "<", fmt=lambda v: v or "", style=_role_style, numeric=False, priority=3,
               help="what a local MySQL server keeps there: data, redo, binlog, tmp (shown when known)"),
        Column("r_s", "r/s", 8, fmt=fixed, priority=0, help="reads completed per second"),
        Column("rkb_s", "rkB/s", 9, unit="KiB/s", bare_unit="KiB/s", fmt=fixed, priority=1, help="kilobytes (1024) read per second"),
        Column("rrqm_s", "rrqm/s", 7, fmt=fixed, priority=6, help="read requests merged per second"),
        Column("rrqm_pct", "%rrqm", 6, fmt=fixed, priority=7, help="share of read requests merged"),
        Column("r_await", "r_await", 7, unit="ms", fmt=units.milliseconds, priority=1, help="average read time, queueing included"),
        Column("rareq_sz", "rareq-sz", 8, unit="KiB", bare_unit="KiB", fmt=kib, priority=5, help="average read size"),
        Column("w_s", "w/s", 8, fmt=fixed, priority=0, help="writes completed per second"),
        Column("wkb_s", "wkB/s", 9, unit="KiB/s", bare_unit="KiB/s", fmt=fixed, priority=1, help="kilobytes (1024) written per second"),
        Column("wrqm_s", "wrqm/s", 7, fmt=fixed, priority=6, help="write requests merged per second"),
        Column("wrqm_pct", "%wrqm", 6, fmt=fixed, priority=7, help="share of write requests merged"),
        Column("w_await", "w_await", 7, unit="ms", fmt=units.milliseconds, priority=1, help="average write time, queueing included"),
        Column("wareq_sz", "wareq-sz", 8, unit="KiB", bare_unit="KiB", fmt=kib, priority=5, help="average write size"),
        Column("d_s", "d/s", 7, fmt=fixed, priority=8, help="discards per second (kernel 4.18+)"),
        Column("dkb_s", "dkB/s", 8, unit="KiB/s", bare_unit="KiB/s", fmt=fixed, priority=8, help="kilobytes discarded per second"),
        Column("drqm_s", "drqm/s", 7, fmt=fixed, priority=9, help="discard requests merged per second"),
        Column("drqm_pct", "%drqm", 6, fmt=fixed, priority=9, help="share of discard requests merged"),
        Column("d_await", "d_await", 7, unit="ms", fmt=units.milliseconds, priority=8, help="average discard time"),
        Column("dareq_sz", "dareq-sz", 8, unit="KiB", bare_unit="KiB", fmt=kib, priority=9, help="average discard size"),
        Column("f_s", "f/s", 7, fmt=fixed, priority=7, help="flush requests per second (kernel 5.5+)"),
        Column("f_await", "f_await", 7, unit="ms", fmt=units.milliseconds, priority=7, help="average flush time"),
        Column("aqu_sz", "aqu-sz", 6, fmt=fixed, priority=0, help="average number of requests in flight"),
        Column("r_sat", "r_sat", 8, fmt=ratio, style=_sat_style("r"), priority=2,
               help="read await over this device's single-request baseline (2x warning, 5x alarm)"),
        Column("w_sat", "w_sat", 8, fmt=ratio, style=_sat_style("w"), priority=2,
               help="write await over this device's single-request baseline (2x warning, 5x alarm)"),
        Column("util", "%util", 6, fmt=fixed, priority=0,
               help="time with at least one request in flight: 100% is not saturation on SSD/NVMe/RAID"),
    )

    def __init__(self, config=None):
        super().__init__(config)
        args = getattr(config, "args", None) if config is not None else None
        self.options["all"] = False
        self.options["space"] = getattr(args, "iostat_view", None) == "space"
        used, full = getattr(args, "space_alarm", None) or (None, None)
        self.used_limit = DEFAULT_USED_ALARM if used is None else used
        self.full_limit = DEFAULT_FULL_ALARM if full is None else full
        self.space_columns = space_columns(self.used_limit, self.full_limit)
        self._engine = None
        self._addresses: FrozenSet[str] = frozenset()

    def collectors(self):
        return [DiskStats(state_path=state_path(os.environ), manual_baselines=manual_baselines(self.config)),
                Filesystems()]

    def attach(self, engine) -> None:
        self._engine = engine
        self._addresses = own_addresses()
        collector = engine.collector(DISKSTATS)
        if isinstance(collector, DiskStats):
            collector.role_paths = lambda: local_role_paths(engine)
        space = engine.collector(SPACE)
        if isinstance(space, Filesystems):
            space.paths = lambda: local_space_paths(engine)

    def initial_state(self) -> TableState:
        if self.options.get("space"):
            return TableState(sort_key="used_pct", descending=True)
        return super().initial_state()

    def _local_variables(self) -> List[str]:
        """The variables collectors of local MySQL servers (no I/O: their latest readings and
        endpoints)."""
        names: List[str] = []
        engine = self._engine
        if engine is not None:
            for name in engine.collector_names(ROLE_COLLECTOR_PREFIX):
                latest = getattr(engine.latest(name), "data", None)
                variables = latest if isinstance(latest, Mapping) else {}
                if server_is_local(engine, name, variables, self._addresses):
                    names.append(name)
        return names

    def active_collectors(self) -> List[str]:
        """The disk collector and the filesystems', the variables of local MySQL servers (slow,
        own pace) so the roles stay known while this screen is the one polling, and the
        servers' own space figures. No I/O here."""
        local = self._local_variables()
        engine = self._engine
        if self.options.get("space"):  # every server's own figures: a remote one's are all there is
            servers = sorted(engine.collector_names(SPACE_PREFIX)) if engine is not None else []
        else:  # the local servers' (slow, own pace): switching views shows figures at once, and
            # a recording of the devices view can be replayed in the space view too
            servers = [SPACE_PREFIX + name[len(ROLE_COLLECTOR_PREFIX):] for name in local]
            servers = [name for name in servers if engine is not None and engine.collector(name) is not None]
        return [DISKSTATS] + self._space_when_known(local) + local + servers

    def _space_when_known(self, local: List[str]) -> List[str]:
        """The filesystems' reading once a local server's variables are known (before, it has
        no path to read: --batch --count 1 would report an empty table)."""
        engine = self._engine
        known = engine is not None and any(engine.latest(name) is not None for name in local)
        return [SPACE] if known else []

    def alarm_readings(self, view: DataView) -> Tuple[Tuple[str, float], ...]:
        """The header's space alarm, on every screen: the filesystems every 10 s, and the local
        servers' variables (which paths they write to) every minute; nothing without a local
        server or with both thresholds at 0."""
        if not (self.used_limit or self.full_limit):
            return ()
        local = self._local_variables()
        return tuple((name, 10.0) for name in self._space_when_known(local)) + tuple((name, 60.0) for name in local)

    def alarm(self, view: DataView) -> Optional[str]:
        return space_alarm(space_snapshot(view.latest), self.used_limit, self.full_limit)

    def action_toggle_space(self, controller) -> None:
        self.options["space"] = not self.options.get("space")
        self.columns = self.space_columns if self.options["space"] else ALL_COLUMNS
        sort = ("used_pct", True) if self.options["space"] else self.default_sort
        controller.ui.tables[self.key] = controller.state.with_sort(*sort)
        controller.activate()
        controller.say("space: the filesystems local MySQL servers write to" if self.options["space"]
                       else "devices")

    def _space_view_rows(self, view: DataView) -> List[Row]:
        self.columns = self.space_columns
        engine = self._engine
        names = engine.collector_names(SPACE_PREFIX) if engine is not None else ()
        return space_rows(space_snapshot(view.latest), readings_by_server(view.latest, names))

    def rows(self, view: DataView) -> List[Row]:
        if self.options.get("space"):
            return self._space_view_rows(view)
        previous, current = view.pair(DISKSTATS)
        rows = disk_rows(previous, current, bool(self.options.get("all")))
        # The Role column only takes room when a local server's devices are known.
        now = _data(current)
        self.columns = ALL_COLUMNS if now is not None and now.roles else WITHOUT_ROLE
        return rows

    def _space_notes(self, view: DataView):
        snapshot = space_snapshot(view.latest)
        engine = self._engine
        names = sorted(engine.collector_names(SPACE_PREFIX)) if engine is not None else []
        readings = readings_by_server(view.latest, names)
        local = set(snapshot.servers) if snapshot is not None else set()
        lines: List = []
        if snapshot is None or not snapshot.filesystems:
            lines.append((("no local MySQL server's paths known yet (a server on this host, watched with --mysql "
                           "or found through ProxySQL)", "dim"),))
        for name in names:
            server = name[len(SPACE_PREFIX):]
            lines += server_lines(server, readings.get(server), snapshot, server in local)
        for note in (snapshot.notes if snapshot is not None else ())[:2]:
            lines.append(((note, "warning"),))
        lines.append((("f: the devices", "dim"),))
        return lines

    def notes(self, view: DataView):
        if self.options.get("space"):
            return self._space_notes(view)
        previous, current = view.pair(DISKSTATS)
        before, now = _data(previous), _data(current)
        lines = [cpu_line(before, now)]
        show_all = bool(self.options.get("all"))
        hidden, unused = hidden_count(now, show_all)
        hint: List[Tuple[str, Optional[str]]] = []
        if show_all:
            hint.append(("all block devices (a: whole disks only)", "dim"))
        else:
            hint.append((f"whole disks (a: also {hidden} partitions and virtual devices)" if hidden
                         else "whole disks (a: all block devices)", "dim"))
        if unused:
            hint.append((f"; {unused} without I/O since boot not shown", "dim"))
        if now is not None and now.role_servers:
            hint.append(("  roles from MySQL ", "label"))
            hint.append((", ".join(now.role_servers), "header"))
        lines.append(tuple(hint))
        if now is not None:
            for note in now.notes[:2]:
                lines.append(((note, "warning"),))
        return lines

    def action_toggle_all(self, controller) -> None:
        self.options["all"] = not self.options.get("all")
        controller.say("showing all block devices" if self.options["all"] else "showing whole disks only")

    def detail(self, row: Row, view: DataView) -> Optional[Detail]:
        if self.options.get("space"):
            lines = filesystem_detail(row, space_snapshot(view.latest))
            return Detail(f"Filesystem {row.get('mount')}", tuple(lines)) if lines else None
        previous, current = view.pair(DISKSTATS)
        now = _data(current)
        if now is None:
            return None
        name = row.get("device")
        counters = now.devices.get(name)
        if counters is None:
            return None
        lines: List[Tuple[Tuple[str, Optional[str]], ...]] = []

        def add(label: str, value: str, style: Optional[str] = None) -> None:
            lines.append(((f"{label:<22}", "label"), (value, style)))

        kind = now.kinds.get(name, "disk")
        add("kind", kind + (f" ({now.dm_names[name]})" if name in now.dm_names else ""))
        add("major:minor", f"{counters.major}:{counters.minor}")
        if now.beneath.get(name):
            add("built on", ", ".join(now.beneath[name]))
        add("role", role_label(now.roles.get(name, ())) or "none", "header")
        add("diskstats fields", str(counters.fields))
        add("in flight now", units.plain(counters.in_flight))
        lines.append(())
        for column in self.columns:
            if column.key in ("device", "role"):
                continue
            # the title carries the unit (r/s, %util) or the figure does (r_await 250µs)
            add(column.title, column.text(row), column.style(row) if column.style else None)
            lines[-1] += ((f"  {column.help}", "dim"),) if column.help else ()
        lines.append(())
        for direction, base in zip((READ, WRITE), now.baselines.get(name, (UNKNOWN, UNKNOWN))):
            if base.source == "manual":
                text = f"{units.milliseconds(base.ms)} (set with --disk-baseline)"
            elif base.known:
                text = f"{units.milliseconds(base.ms)} (p{RULES.percentile:g} of {base.samples} quiet intervals)"
            else:
                text = (f"learning: {base.samples} of {base.needed} quiet intervals "
                        f"(aqu-sz <= {RULES.max_queue:g}, >= {RULES.min_ios} I/Os)")
            add(f"{direction} baseline", text, None if base.known else "dim")
        if now.state_file and getattr(view.source("host"), "replayed", False):
            add("baselines kept in", f"{now.state_file} when live (a replay writes no file)", "dim")
        elif now.state_file:
            add("baselines kept in", now.state_file, "dim")
        # how the disk is set up: the device's queue, then those of the disks beneath it
        queues = [now.queues[d] for d in [name] + list(now.beneath.get(name, ())) if d in now.queues]
        if queues:
            lines.append(())
            notes = [n for q in queues for n in queue_notes(q, now.roles.get(q.device, now.roles.get(name, ())))]
            lines += queue_lines(queues, list(dict.fromkeys(notes)))
        return Detail(f"Device {name}", tuple(lines))


ALL_COLUMNS = IOstatScreen.columns
WITHOUT_ROLE = tuple(c for c in ALL_COLUMNS if c.key != "role")


def disk_rows(previous, current, show_all: bool = False) -> List[Row]:
    """Pure: the last two /proc/diskstats readings (snapshots) -> one row per device shown."""
    return device_rows(_data(previous), _data(current), seconds_between(previous, current), show_all)


def _data(snapshot) -> Optional[DiskSnapshot]:
    data = getattr(snapshot, "data", None)
    return data if isinstance(data, DiskSnapshot) else None


SCREEN = IOstatScreen
