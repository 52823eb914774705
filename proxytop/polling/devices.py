"""Which block device holds a path, what kind of device it is, and what lies beneath it.

A path's ``st_dev`` gives major:minor; ``/sys/dev/block/MAJ:MIN`` links to the device's sysfs
directory. A ``partition`` file there means the parent directory is the whole disk (names are
never guessed by stripping digits: nvme0n1p2, mmcblk0p1). Device-mapper (LVM, LUKS) and md
devices list what they are built on in ``slaves/``; those are followed down to the disks.
Filesystems without a block device number of their own (major 0: btrfs, overlay, ZFS, NFS)
are looked up in ``/proc/self/mountinfo``, whose mount source may name a /dev node.

Every path is injectable (sysfs root, mountinfo file, the stat function) so tests run on a
fake tree. All of this is I/O: it runs on the engine's host thread, never in the UI.

The contract with the MySQL side (see :func:`role_devices`): a MySQL server's variables map
to role paths with :func:`server_role_paths`; the IOstat screen labels the devices under those
paths with the roles.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Set, Tuple, Union

# Roles and the server variables they come from, in display order.
ROLES = ("data", "redo", "binlog", "tmp")
ROLE_VARIABLES = (
    ("datadir", "data"),
    ("innodb_log_group_home_dir", "redo"),
    ("log_bin_basename", "binlog"),
    ("tmpdir", "tmp"),
)

KINDS = ("disk", "partition", "dm", "md", "loop", "zram", "ram")
VIRTUAL_PREFIXES = (("loop", "loop"), ("zram", "zram"), ("dm-", "dm"), ("md", "md"), ("ram", "ram"))
_PARTITION_NAME = re.compile(r"^(?:(?:sd|hd|vd|xvd)[a-z]+\d+|(?:nvme\d+n\d+|mmcblk\d+|nbd\d+|loop\d+|md\d+)p\d+)$")


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def parse_mountinfo(text: str) -> List[Tuple[str, str, str, str]]:
    """(major:minor, mount point, filesystem type, mount source) per line of mountinfo.

    >>> parse_mountinfo("27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\\n"
    ...                 "40 27 0:45 / /srv/my\\\\040data rw - btrfs /dev/sdb1 rw,subvol=/data\\n")
    [('254:0', '/', 'ext4', '/dev/vda'), ('0:45', '/srv/my data', 'btrfs', '/dev/sdb1')]
    """
    entries = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields[6:]:
            continue
        dash = fields.index("-", 6)
        if len(fields) < dash + 3 or len(fields) < 5:
            continue
        mount_point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
        entries.append((fields[2], mount_point, fields[dash + 1], fields[dash + 2]))
    return entries


@dataclass(frozen=True)
class QueueSettings:
    """How the kernel queues a block device's requests (``/sys/block/<dev>/queue``), read only.

    None where the file is missing (a partition has no queue/ of its own: its disk's is read).
    """

    device: str
    scheduler: Optional[str] = None  # the one in use ([mq-deadline] in the file)
    schedulers: Tuple[str, ...] = ()  # every one the kernel offers for it
    nr_requests: Optional[int] = None
    read_ahead_kb: Optional[int] = None
    rotational: Optional[bool] = None
    max_sectors_kb: Optional[int] = None
    write_cache: Optional[str] = None  # 'write back' or 'write through'


def parse_scheduler(text: Optional[str]) -> Tuple[Optional[str], Tuple[str, ...]]:
    """(in use, available) from queue/scheduler.

    >>> parse_scheduler("[none] mq-deadline kyber bfq")
    ('none', ('none', 'mq-deadline', 'kyber', 'bfq'))
    >>> parse_scheduler("none"), parse_scheduler(None)
    (('none', ('none',)), (None, ()))
    """
    if not text:
        return None, ()
    names = text.split()
    chosen = next((n[1:-1] for n in names if n.startswith("[") and n.endswith("]")), None)
    available = tuple(n.strip("[]") for n in names)
    if chosen is None and len(available) == 1:
        chosen = available[0]  # dm and some virtual devices print the one name alone
    return chosen, available


def _number(text: Optional[str]) -> Optional[int]:
    return int(text) if text is not None and text.strip().isdigit() else None


class BlockDevices:
    """What sysfs says about one block device: its kind, its disk, what it is built on."""

    def __init__(self, sysfs: str = "/sys"):
        self.sysfs = sysfs

    def _class_dir(self, name: str) -> Optional[str]:
        path = os.path.join(self.sysfs, "class", "block", name)
        if os.path.exists(path):
            return os.path.realpath(path)
        path = os.path.join(self.sysfs, "block", name)
        return os.path.realpath(path) if os.path.exists(path) else None

    def block_name(self, major: int, minor: int) -> Optional[str]:
        link = os.path.join(self.sysfs, "dev", "block", f"{major}:{minor}")
        if not os.path.exists(link):
            return None
        return os.path.basename(os.path.realpath(link))

    def is_partition(self, name: str) -> bool:
        directory = self._class_dir(name)
        if directory is None:
            return bool(_PARTITION_NAME.match(name))
        return os.path.exists(os.path.join(directory, "partition"))

    def whole_disk(self, name: str) -> str:
        """The disk a partition is on (the name itself for anything else)."""
        directory = self._class_dir(name)
        if directory is not None and os.path.exists(os.path.join(directory, "partition")):
            return os.path.basename(os.path.dirname(directory))
        return name

    def kind(self, name: str) -> str:
        """disk, partition, dm, md, loop, zram or ram."""
        directory = self._class_dir(name)
        if directory is not None:
            if os.path.exists(os.path.join(directory, "partition")):
                return "partition"
            if os.path.isdir(os.path.join(directory, "dm")):
                return "dm"
            if os.path.isdir(os.path.join(directory, "md")):
                return "md"
        for prefix, kind in VIRTUAL_PREFIXES:
            if name.startswith(prefix) and (kind != "md" or re.match(r"^md\d", name)):
                return kind
        if directory is None and _PARTITION_NAME.match(name):
            return "partition"
        return "disk"

    def slaves(self, name: str) -> List[str]:
        directory = self._class_dir(name)
        if directory is None:
            return []
        try:
            return sorted(os.listdir(os.path.join(directory, "slaves")))
        except OSError:
            return []

    def dm_name(self, name: str) -> Optional[str]:
        """The device-mapper name (for LVM: VG-LV) of a dm-N device."""
        directory = self._class_dir(name)
        return _read(os.path.join(directory, "dm", "name")) if directory else None

    def identity(self, name: str) -> str:
        """Something that tells this device from another one given the same name after a
        reboot (WWID, serial, dm UUID, md UUID), or '' when sysfs has nothing."""
        directory = self._class_dir(name)
        if directory is None:
            return ""
        for relative in ("wwid", "device/wwid", "serial", "device/serial", "dm/uuid", "md/uuid"):
            value = _read(os.path.join(directory, relative))
            if value:
                return f"{relative.split('/')[-1]}:{value}"
        model = _read(os.path.join(directory, "device", "model"))
        size = _read(os.path.join(directory, "size"))
        if model and size:
            return f"model:{model}:{size}"
        return ""

    def queue_settings(self, name: str) -> Optional[QueueSettings]:
        """The queue settings of a device; None when sysfs has no queue directory for it (a
        partition: its disk's are the ones that apply). Reads only."""
        directory = self._class_dir(name)
        queue = os.path.join(directory, "queue") if directory is not None else ""
        if not queue or not os.path.isdir(queue):
            return None

        def read(setting: str) -> Optional[str]:
            return _read(os.path.join(queue, setting))

        chosen, available = parse_scheduler(read("scheduler"))
        rotational = _number(read("rotational"))
        return QueueSettings(device=name, scheduler=chosen, schedulers=available,
                             nr_requests=_number(read("nr_requests")), read_ahead_kb=_number(read("read_ahead_kb")),
                             rotational=None if rotational is None else bool(rotational),
                             max_sectors_kb=_number(read("max_sectors_kb")), write_cache=read("write_cache"))

    def beneath(self, name: str) -> List[str]:
        """The device, then everything it is built on, down to whole disks: a partition's
        disk, a dm/md device's slaves (recursively, with their disks).

        dm-0 on sda2 and sdb1 -> [dm-0, sda2, sda, sdb1, sdb].
        """
        chain: List[str] = []

        def visit(device: str, depth: int) -> None:
            if device in chain or depth > 16:
                return
            chain.append(device)
            disk = self.whole_disk(device)
            if disk != device:
                visit(disk, depth + 1)
            for slave in self.slaves(device):
                visit(slave, depth + 1)

        visit(name, 0)
        return chain



class DeviceMapper(BlockDevices):
    """Path -> block device, device -> kind and the devices beneath it, from sysfs."""

    def __init__(self, sysfs: str = "/sys", mountinfo: str = "/proc/self/mountinfo",
                 stat: Callable[[str], os.stat_result] = os.stat):
        super().__init__(sysfs)
        self.mountinfo = mountinfo
        self.stat = stat

    def _stat_existing(self, path: str) -> os.stat_result:
        """stat the path, or its nearest existing parent (a binlog basename is a prefix)."""
        current = os.path.abspath(path)
        while True:
            try:
                return self.stat(current)
            except FileNotFoundError:
                parent = os.path.dirname(current)
                if parent == current:
                    raise
                current = parent

    def locate(self, path: str) -> Tuple[Optional[str], Optional[str]]:
        """(device name, None), or (None, why not) for a path without a block device."""
        try:
            info = self._stat_existing(path)
        except OSError as exc:
            return None, f"{path}: {exc.strerror or exc.__class__.__name__}"
        major, minor = os.major(info.st_dev), os.minor(info.st_dev)
        if major != 0:
            name = self.block_name(major, minor)
            if name is not None:
                return name, None
        return self._from_mountinfo(path, major, minor)

    def _from_mountinfo(self, path: str, major: int, minor: int) -> Tuple[Optional[str], Optional[str]]:
        text = _read(self.mountinfo)
        if text is None:
            return None, f"{path}: device {major}:{minor} not in sysfs and no mountinfo"
        mount = _mount_of(parse_mountinfo(text), path, f"{major}:{minor}")
        if mount is None:
            return None, f"{path}: no mount found"
        _number, mount_point, fstype, source = mount
        name = self._device_node(source) if source.startswith("/dev/") else None
        if name is not None:
            return name, None
        return None, f"{path}: on {fstype} ({source}), no local block device"

    def _device_node(self, node_path: str) -> Optional[str]:
        """The block device a /dev node stands for (by its device number, else its name)."""
        try:
            node = self.stat(node_path)
        except OSError:
            node = None
        if node is not None and getattr(node, "st_rdev", 0):
            name = self.block_name(os.major(node.st_rdev), os.minor(node.st_rdev))
            if name is not None:
                return name
        base = os.path.basename(node_path)
        return base if self._class_dir(base) is not None else None


def _mount_of(entries: List[Tuple[str, str, str, str]], path: str,
              number: str) -> Optional[Tuple[str, str, str, str]]:
    """The mountinfo entry of a device number (the last one mounted), or when no line has
    that number, the one with the longest mount point above the path."""
    candidates = [e for e in entries if e[0] == number]
    if not candidates:
        absolute = os.path.abspath(path)
        above = [e for e in entries if absolute == e[1] or absolute.startswith(e[1].rstrip("/") + "/")]
        candidates = sorted(above, key=lambda e: len(e[1]))[-1:]
    return candidates[-1] if candidates else None


def server_role_paths(variables: Mapping[str, object]) -> Dict[str, List[str]]:
    """Role -> directories, from a MySQL server's variables (names in lower case).

    Relative paths (innodb_log_group_home_dir is './' by default) are relative to datadir;
    log_bin_basename is a file-name prefix, so its directory is taken; tmpdir may list several
    directories separated by ':'. Missing or empty variables give no path for that role.

    >>> server_role_paths({"datadir": "/var/lib/mysql/", "innodb_log_group_home_dir": "./",
    ...                    "log_bin_basename": "/binlogs/mysql-bin", "tmpdir": "/tmp:/scratch"})
    {'data': ['/var/lib/mysql'], 'redo': ['/var/lib/mysql'], 'binlog': ['/binlogs'], 'tmp': ['/tmp', '/scratch']}
    """
    def text(name: str) -> str:
        value = variables.get(name)
        if isinstance(value, (bytes, bytearray)):
            value = bytes(value).decode("utf-8", "replace")
        return str(value).strip() if value is not None else ""

    datadir = text("datadir")
    base = datadir or "/"

    def absolute(path: str) -> str:
        return os.path.normpath(path if os.path.isabs(path) else os.path.join(base, path))

    roles: Dict[str, List[str]] = {}
    if datadir:
        roles["data"] = [absolute(datadir)]
    redo = text("innodb_log_group_home_dir")
    if redo or datadir:
        roles["redo"] = [absolute(redo or ".")]
    binlog = text("log_bin_basename")
    if binlog:
        roles["binlog"] = [os.path.dirname(absolute(binlog))]
    tmp = [p for p in text("tmpdir").split(":") if p]
    if tmp:
        roles["tmp"] = [absolute(p) for p in tmp]
    return roles


# What the Space view adds to the roles above: the relay log, innodb_tmpdir (a rebuild's sort
# files), the undo tablespaces' directory.
SPACE_ROLES = ("data", "redo", "binlog", "relay", "tmp", "undo")


def space_role_paths(variables: Mapping[str, object]) -> Dict[str, List[str]]:
    """Role -> directories a server writes to: :func:`server_role_paths`, plus the relay-log
    directory, innodb_tmpdir (as tmp) and innodb_undo_directory (as undo) where they are set.

    >>> space_role_paths({"datadir": "/var/lib/mysql/", "relay_log_basename": "/relay/r-relay-bin",
    ...                   "innodb_tmpdir": "/scratch", "tmpdir": "/tmp", "innodb_undo_directory": "./"})
    {'data': ['/var/lib/mysql'], 'redo': ['/var/lib/mysql'], 'tmp': ['/tmp', '/scratch'], 'relay': ['/relay'], 'undo': ['/var/lib/mysql']}
    """
    roles = server_role_paths(variables)
    datadir = str(variables.get("datadir") or "").strip() or "/"

    def absolute(value: object) -> str:
        path = value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)
        path = path.strip()
        return os.path.normpath(path if os.path.isabs(path) else os.path.join(datadir, path))

    def given(name: str) -> str:
        value = variables.get(name)
        return str(value).strip() if value is not None else ""

    if given("innodb_tmpdir"):
        tmp = roles.setdefault("tmp", [])
        path = absolute(given("innodb_tmpdir"))
        if path not in tmp:
            tmp.append(path)
    if given("relay_log_basename"):
        roles["relay"] = [os.path.dirname(absolute(given("relay_log_basename")))]
    if given("innodb_undo_directory"):
        roles["undo"] = [absolute(given("innodb_undo_directory"))]
    return roles


RolePaths = Mapping[str, Union[str, Iterable[str]]]


def map_roles(paths: RolePaths, mapper: Optional[DeviceMapper] = None) -> Tuple[Dict[str, Set[str]], List[str]]:
    """(device -> roles, notes): every device beneath each role's paths gets the role; the
    notes say which paths have no block device (ZFS, NFS, tmpfs...)."""
    mapper = mapper or DeviceMapper()
    devices: Dict[str, Set[str]] = {}
    notes: List[str] = []
    for role, value in paths.items():
        for path in ([value] if isinstance(value, str) else list(value)):
            name, why = mapper.locate(path)
            if name is None:
                if why and why not in notes:
                    notes.append(f"{role}: {why}")
                continue
            for device in mapper.beneath(name):
                devices.setdefault(device, set()).add(role)
    return devices, notes


def role_devices(paths: RolePaths, mapper: Optional[DeviceMapper] = None) -> Dict[str, Set[str]]:
    """Device name -> the roles of the paths it holds.

    ``paths`` maps a role (data, redo, binlog, tmp) to a path or several. A path on an LVM
    volume labels the dm device, the partitions beneath and their whole disks; a partition
    labels its disk too, so the whole-disk view shows the roles.

    The InnoDB side provides the paths: the IOstat screen reads the latest snapshot of every
    collector named ``innodb.vars.<server>`` whose data is a mapping of server variables
    (datadir, innodb_log_group_home_dir, log_bin_basename, tmpdir), for local servers only,
    and turns it into paths with :func:`server_role_paths`.
    """
    return map_roles(paths, mapper)[0]


def role_label(roles: Iterable[str]) -> str:
    """Roles in display order, comma-separated.

    >>> role_label({"tmp", "data", "redo"})
    'data,redo,tmp'
    """
    wanted = set(roles)
    ordered = [r for r in ROLES if r in wanted] + sorted(wanted - set(ROLES))
    return ",".join(ordered)
