"""The file that keeps the disks' learned baselines across runs (IOstat's saturation):
$XDG_STATE_HOME/proxytop/disk-baselines.json, written atomically about once a minute by the
disk statistics collector; a damaged or unreadable file is ignored with a one-line note.
The learning itself is proxytop.metrics.iostat.BaselineLearner (to_state/restore)."""
from __future__ import annotations

import json
import math
import os
import tempfile
from typing import Mapping, Optional, Tuple

from proxytop.metrics.iostat import DIRECTIONS, STATE_VERSION

STATE_NAME = "disk-baselines.json"


def state_path(environ: Mapping[str, str]) -> str:
    """$XDG_STATE_HOME/proxytop/disk-baselines.json (default ~/.local/state); a relative
    XDG_STATE_HOME is ignored, as the XDG specification says.

    >>> state_path({"XDG_STATE_HOME": "/var/tmp/st", "HOME": "/home/u"})
    '/var/tmp/st/proxytop/disk-baselines.json'
    >>> state_path({"XDG_STATE_HOME": "rel", "HOME": "/home/u"})
    '/home/u/.local/state/proxytop/disk-baselines.json'
    """
    base = environ.get("XDG_STATE_HOME") or ""
    if not os.path.isabs(base):
        home = environ.get("HOME") or os.path.expanduser("~")
        base = os.path.join(home, ".local", "state")
    return os.path.join(base, "proxytop", STATE_NAME)


class StateError(Exception):
    """The state file can't be used; the message is one plain line."""


def validate_state(data) -> dict:
    """The parsed JSON if it has the expected shape, else StateError."""
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
        raise StateError("unknown format")
    devices = data.get("devices")
    if not isinstance(devices, dict):
        raise StateError("no device list")
    for name, entry in devices.items():
        if not isinstance(name, str) or not isinstance(entry, dict):
            raise StateError("bad device entry")
        if not isinstance(entry.get("identity", ""), str):
            raise StateError(f"bad identity for {name}")
        for direction in DIRECTIONS:
            values = entry.get(direction, [])
            if not isinstance(values, list) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
                    for v in values):
                raise StateError(f"bad {direction} samples for {name}")
    return data


def load_state(path: str) -> Tuple[Optional[dict], Optional[str]]:
    """(state, note): (None, None) when there is no file yet; a corrupt or unreadable file
    gives (None, a one-line note) and is never fatal."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"disk baselines: cannot read {path}: {exc.strerror or exc.__class__.__name__}; learning afresh"
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError:  # includes bad UTF-8 and bad JSON
        return None, f"disk baselines: ignored unreadable {path} (not valid JSON); learning afresh"
    try:
        return validate_state(data), None
    except StateError as exc:
        return None, f"disk baselines: ignored unreadable {path} ({exc}); learning afresh"


def save_state(path: str, state: Mapping) -> Optional[str]:
    """Write the state atomically (temporary file in the same directory, then rename);
    returns None, or a one-line note when it could not be written."""
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".disk-baselines.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(state, handle, separators=(",", ":"), sort_keys=True)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
        except BaseException:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise
    except OSError as exc:
        return f"disk baselines: cannot write {path}: {exc.strerror or exc.__class__.__name__}"
    return None
