"""Path -> device mapping and device roles, on a fake sysfs tree laid out like the kernel's.

The fake host:
  sda (disk) with partitions sda1, sda2; sdb (whole-disk LVM PV)
  dm-0 = LVM volume vg0-mysql on sda2 and sdb            -> /var/lib/mysql (datadir)
  nvme0n1 with partition nvme0n1p1                       -> /redo
  md0 = RAID1 of sdc1 and sdd1; dm-1 = vg1-binlog on md0 -> /binlogs
  sde1 holds a btrfs filesystem (anonymous device 0:45)  -> /scratch (tmpdir)
  a ZFS dataset (0:50, no block device)                  -> /tank
  loop0, zram0
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from proxytop.polling.devices import (DeviceMapper, map_roles, parse_mountinfo, role_devices, role_label,
                              server_role_paths)

# name: (major, minor, parent disk or None, slaves, extra files)
DEVICES = {
    "sda": (8, 0, None, [], {"device/wwid": "naa.5000c500a1b2c3d4"}),
    "sda1": (8, 1, "sda", [], {}),
    "sda2": (8, 2, "sda", [], {}),
    "sdb": (8, 16, None, [], {"device/serial": "S3Z9NB0K"}),
    "sdc": (8, 32, None, [], {}),
    "sdc1": (8, 33, "sdc", [], {}),
    "sdd": (8, 48, None, [], {}),
    "sdd1": (8, 49, "sdd", [], {}),
    "sde": (8, 64, None, [], {}),
    "sde1": (8, 65, "sde", [], {}),
    "nvme0n1": (259, 0, None, [], {"wwid": "eui.0025388b91b2c3d4"}),
    "nvme0n1p1": (259, 1, "nvme0n1", [], {}),
    "dm-0": (253, 0, None, ["sda2", "sdb"], {"dm/name": "vg0-mysql", "dm/uuid": "LVM-abc"}),
    "md0": (9, 0, None, ["sdc1", "sdd1"], {"md/level": "raid1"}),
    "dm-1": (253, 1, None, ["md0"], {"dm/name": "vg1-binlog"}),
    "loop0": (7, 0, None, [], {"loop/backing_file": "/img"}),
    "zram0": (252, 0, None, [], {}),
}
VIRTUAL = {"dm-0", "dm-1", "md0", "loop0", "zram0"}

# path -> (major, minor) of the filesystem holding it
PATHS = {
    "/var/lib/mysql": (253, 0),
    "/redo": (259, 1),
    "/binlogs": (253, 1),
    "/scratch": (0, 45),
    "/tank": (0, 50),
    "/": (8, 1),
}
NODES = {"/dev/sde1": (8, 65), "/dev/mapper/vg0-mysql": (253, 0)}

MOUNTINFO = """\
22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
30 22 253:0 / /var/lib/mysql rw - xfs /dev/mapper/vg0-mysql rw
31 22 259:1 / /redo rw - ext4 /dev/nvme0n1p1 rw
32 22 253:1 / /binlogs rw - xfs /dev/mapper/vg1-binlog rw
33 22 0:45 /@scratch /scratch rw - btrfs /dev/sde1 rw,subvol=/@scratch
34 22 0:50 / /tank rw - zfs tank/data rw
"""


def build_sysfs(root: Path) -> Path:
    sysfs = root / "sys"
    for name, (major, minor, parent, slaves, extra) in DEVICES.items():
        if parent:
            directory = sysfs / "devices" / "pci0000:00" / "block" / parent / name
        elif name in VIRTUAL:
            directory = sysfs / "devices" / "virtual" / "block" / name
        else:
            directory = sysfs / "devices" / "pci0000:00" / "block" / name
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "dev").write_text(f"{major}:{minor}\n")
        if parent:
            (directory / "partition").write_text(f"{minor % 16}\n")
        (directory / "slaves").mkdir(exist_ok=True)
        for relative, content in extra.items():
            (directory / relative).parent.mkdir(parents=True, exist_ok=True)
            (directory / relative).write_text(content + "\n")
        for link_dir, target_name in ((sysfs / "class" / "block", name), (sysfs / "dev" / "block", f"{major}:{minor}")):
            link_dir.mkdir(parents=True, exist_ok=True)
            os.symlink(directory, link_dir / target_name)
        if not parent:
            (sysfs / "block").mkdir(exist_ok=True)
            os.symlink(directory, sysfs / "block" / name)
    # slaves/ entries link to the slave's own directory, as the kernel's do
    for name, (_major, _minor, _parent, slaves, _extra) in DEVICES.items():
        holder = (sysfs / "class" / "block" / name).resolve()
        for slave in slaves:
            os.symlink((sysfs / "class" / "block" / slave).resolve(), holder / "slaves" / slave)
    return sysfs


def fake_stat(path: str):
    path = os.path.normpath(path)
    if path in NODES:
        return SimpleNamespace(st_dev=os.makedev(0, 6), st_rdev=os.makedev(*NODES[path]))
    for known, number in PATHS.items():
        if path == known:
            return SimpleNamespace(st_dev=os.makedev(*number), st_rdev=0)
    raise FileNotFoundError(2, "No such file or directory", path)


@pytest.fixture
def mapper(tmp_path):
    sysfs = build_sysfs(tmp_path)
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(MOUNTINFO)
    return DeviceMapper(sysfs=str(sysfs), mountinfo=str(mountinfo), stat=fake_stat)


def test_kinds(mapper):
    kinds = {name: mapper.kind(name) for name in DEVICES}
    assert kinds == {
        "sda": "disk", "sda1": "partition", "sda2": "partition", "sdb": "disk", "sdc": "disk",
        "sdc1": "partition", "sdd": "disk", "sdd1": "partition", "sde": "disk", "sde1": "partition",
        "nvme0n1": "disk", "nvme0n1p1": "partition", "dm-0": "dm", "md0": "md", "dm-1": "dm",
        "loop0": "loop", "zram0": "zram",
    }


def test_partitions_map_to_their_disk_without_guessing_from_the_name(mapper):
    assert mapper.whole_disk("nvme0n1p1") == "nvme0n1"
    assert mapper.whole_disk("sda2") == "sda"
    assert mapper.whole_disk("nvme0n1") == "nvme0n1"
    assert mapper.whole_disk("dm-0") == "dm-0"


def test_what_lies_beneath_lvm_and_raid(mapper):
    assert mapper.beneath("dm-0") == ["dm-0", "sda2", "sda", "sdb"]
    assert mapper.beneath("dm-1") == ["dm-1", "md0", "sdc1", "sdc", "sdd1", "sdd"]
    assert mapper.dm_name("dm-1") == "vg1-binlog"


def test_paths_to_devices_including_mountinfo_fallback(mapper):
    assert mapper.locate("/var/lib/mysql") == ("dm-0", None)
    assert mapper.locate("/var/lib/mysql/ib_logfile0") == ("dm-0", None)  # missing file: its directory
    assert mapper.locate("/redo") == ("nvme0n1p1", None)
    assert mapper.locate("/scratch") == ("sde1", None)  # btrfs: 0:45 -> mountinfo -> /dev/sde1
    device, why = mapper.locate("/tank")
    assert device is None and "zfs (tank/data)" in why


def test_role_devices_labels_every_layer_down_to_the_disks(mapper):
    roles = role_devices({"data": "/var/lib/mysql", "redo": ["/redo"], "binlog": ["/binlogs"],
                          "tmp": ["/scratch", "/tank"]}, mapper)
    assert roles == {
        "dm-0": {"data"}, "sda2": {"data"}, "sda": {"data"}, "sdb": {"data"},
        "nvme0n1p1": {"redo"}, "nvme0n1": {"redo"},
        "dm-1": {"binlog"}, "md0": {"binlog"}, "sdc1": {"binlog"}, "sdc": {"binlog"},
        "sdd1": {"binlog"}, "sdd": {"binlog"},
        "sde1": {"tmp"}, "sde": {"tmp"},
    }
    _mapping, notes = map_roles({"tmp": ["/tank"]}, mapper)
    assert notes == ["tmp: /tank: on zfs (tank/data), no local block device"]


def test_several_roles_on_one_disk(mapper):
    roles = role_devices({"data": "/var/lib/mysql", "redo": "/var/lib/mysql", "tmp": "/"}, mapper)
    assert roles["sda"] == {"data", "redo", "tmp"}
    assert role_label(roles["sda"]) == "data,redo,tmp"


def test_identities_tell_disks_apart(mapper):
    assert mapper.identity("sda") == "wwid:naa.5000c500a1b2c3d4"
    assert mapper.identity("sdb") == "serial:S3Z9NB0K"
    assert mapper.identity("nvme0n1") == "wwid:eui.0025388b91b2c3d4"
    assert mapper.identity("dm-0") == "uuid:LVM-abc"
    assert mapper.identity("sdc") == ""


def test_without_sysfs_kinds_come_from_names(tmp_path):
    bare = DeviceMapper(sysfs=str(tmp_path / "none"), mountinfo=str(tmp_path / "none"))
    assert [bare.kind(n) for n in ("sda", "sda3", "nvme0n1", "nvme0n1p2", "mmcblk0p1", "dm-3", "md127", "loop2",
                                   "zram0", "xvda1")] == \
        ["disk", "partition", "disk", "partition", "partition", "dm", "md", "loop", "zram", "partition"]


def test_server_variables_to_role_paths():
    assert server_role_paths({"datadir": "/var/lib/mysql/", "innodb_log_group_home_dir": "/redo/",
                              "log_bin_basename": "/binlogs/binlog", "tmpdir": "/scratch"}) == {
        "data": ["/var/lib/mysql"], "redo": ["/redo"], "binlog": ["/binlogs"], "tmp": ["/scratch"]}
    # defaults: redo in the datadir, no binary log, relative paths under the datadir
    assert server_role_paths({"datadir": b"/var/lib/mysql/", "innodb_log_group_home_dir": "./",
                              "log_bin_basename": None, "tmpdir": "tmp"}) == {
        "data": ["/var/lib/mysql"], "redo": ["/var/lib/mysql"], "tmp": ["/var/lib/mysql/tmp"]}
    assert server_role_paths({}) == {}


def test_mountinfo_octal_escapes():
    assert parse_mountinfo("1 2 8:1 / /a\\040b rw - ext4 /dev/sda1 rw")[0][1] == "/a b"


def test_real_host_temporary_directory_is_on_a_listed_device():
    import tempfile

    name, why = DeviceMapper().locate(tempfile.gettempdir())
    if name is None:
        pytest.skip(f"the temporary directory has no block device here: {why}")
    with open("/proc/diskstats") as handle:
        assert name in {line.split()[2] for line in handle if len(line.split()) > 3}


# ----- roles end to end: the InnoDB side's snapshot -> the disk collector -> the screen -------

def test_roles_flow_from_a_local_servers_variables_to_the_screen(tmp_path, mapper):
    from proxytop.core import Collector, Source
    from proxytop.collectors.diskstats import DiskStats
    from proxytop.polling.connection import Endpoint
    from proxytop.polling.engine import Engine
    from proxytop.screens.iostat import IOstatScreen, device_rows, local_role_paths

    class MySQLSource(Source):
        def __init__(self, name, host, socket=None):
            self.name = name
            self.endpoint = Endpoint(host=host, port=3306, socket=socket)

    class Variables(Collector):
        def __init__(self, name, source, data):
            self.name, self.source, self.data = name, source, data

        def collect(self, handle):
            return self.data

    engine = Engine()
    engine.add_source(MySQLSource("mysql:local", "127.0.0.1"))
    engine.add_source(MySQLSource("mysql:remote", "db2.example.com"))
    engine.add_collector(Variables("innodb.vars.127.0.0.1:3306", "mysql:local",
                                   {"DATADIR": "/var/lib/mysql/", "innodb_log_group_home_dir": "/redo",
                                    "log_bin_basename": "/binlogs/bin", "tmpdir": "/scratch"}))
    engine.add_collector(Variables("innodb.vars.db2.example.com:3306", "mysql:remote",
                                   {"datadir": "/tank/", "tmpdir": "/tank"}))
    engine.set_active(engine.collector_names())
    engine.start()
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not all(engine.latest(n) for n in engine.collector_names()):
            time.sleep(0.02)
        paths, servers = local_role_paths(engine)
    finally:
        engine.stop()
    assert servers == ("127.0.0.1:3306",)  # the remote server's paths say nothing about this host
    assert paths == {"data": ["/var/lib/mysql"], "redo": ["/redo"], "binlog": ["/binlogs"], "tmp": ["/scratch"]}

    proc = tmp_path / "proc"
    proc.mkdir()
    lines = [f"{major} {minor} {name} 1 0 8 1 1 0 8 1 0 1 1 0 0 0 0 0 0"
             for name, (major, minor, *_rest) in DEVICES.items()]
    (proc / "diskstats").write_text("\n".join(lines) + "\n")
    collector = DiskStats(proc=str(proc), psutil_counters=None, cpu_times=None, state_path=None,
                          role_paths=lambda: (paths, servers), mapper=mapper)
    snap = collector.collect()
    assert snap.roles["sda"] == {"data"} and snap.roles["nvme0n1"] == {"redo"} and snap.roles["sde"] == {"tmp"}
    assert snap.roles["sdc"] == snap.roles["sdd"] == {"binlog"}
    assert snap.dm_names == {"dm-0": "vg0-mysql", "dm-1": "vg1-binlog"}
    assert snap.beneath["dm-1"] == ("md0", "sdc1", "sdc", "sdd1", "sdd")
    assert snap.role_servers == ("127.0.0.1:3306",)

    disks = {r["device"]: r["role"] for r in device_rows(snap, snap, None)}
    assert disks == {"sda": "data", "sdb": "data", "sdc": "binlog", "sdd": "binlog", "sde": "tmp",
                     "nvme0n1": "redo"}
    everything = {r["device"]: r["role"] for r in device_rows(snap, snap, None, show_all=True)}
    assert everything["dm-0"] == "data" and everything["md0"] == "binlog" and everything["loop0"] is None

    screen = IOstatScreen()
    view = SimpleNamespace(pair=lambda name: (None, SimpleNamespace(data=snap)))
    note_text = ["".join(text for text, _ in line) for line in screen.notes(view)]
    assert any("roles from MySQL 127.0.0.1:3306" in line for line in note_text)


def test_socket_connections_count_as_local_and_explicit_flag_wins():
    import socket

    from proxytop.polling.connection import Endpoint
    from proxytop.screens.iostat import own_addresses, server_is_local

    class FakeEngine:
        def __init__(self, endpoint):
            self.endpoint = endpoint

        def collector(self, name):
            return SimpleNamespace(source="s")

        def source(self, name):
            return SimpleNamespace(endpoint=self.endpoint)

    assert server_is_local(FakeEngine(Endpoint(host="db1", socket="/run/mysqld/mysqld.sock")), "x", {})
    assert server_is_local(FakeEngine(Endpoint(host="localhost")), "x", {})
    assert not server_is_local(FakeEngine(Endpoint(host="10.0.0.5")), "x", {})
    assert server_is_local(FakeEngine(Endpoint(host="10.0.0.5")), "x", {"_local": True})
    assert not server_is_local(FakeEngine(Endpoint(host="127.0.0.1")), "x", {"_local": False})
    # a backend configured by one of this machine's own addresses is local too
    mine = own_addresses()
    lan = next((a for a in mine if a.count(".") == 3 and not a.startswith("127.")), None)
    if lan:
        assert server_is_local(FakeEngine(Endpoint(host=lan)), "x", {}, mine)
    assert server_is_local(FakeEngine(Endpoint(host=socket.gethostname())), "x", {}, mine)
