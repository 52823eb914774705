"""Each collector's recent snapshots and its last error: what the engine's workers write and
the UI reads.

Each history is a bounded deque (as long as its collector asks for). When a source starts
reading another server the history is replaced, not cleared, so that a reader holding the old
one never sees it change under it.
"""
from __future__ import annotations

import dataclasses
import threading
from collections import deque
from typing import Deque, Dict, Optional, Tuple

from proxytop.collectors.base import Collector, Snapshot


class Readings:
    """The snapshots kept per collector, and the error of its last failed reading."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._history: Dict[str, Deque[Snapshot]] = {}
        self._errors: Dict[str, Tuple[str, float]] = {}

    def add(self, collector: Collector) -> None:
        with self._lock:
            self._history[collector.name] = deque(maxlen=max(1, collector.history))

    def forget(self, name: str) -> bool:
        """Drop a collector's readings and error; False when it is unknown."""
        with self._lock:
            if name not in self._history:
                return False
            self._history[name] = deque(maxlen=self._history[name].maxlen)
            self._errors.pop(name, None)
            return True

    def record(self, collector: Collector, snapshot: Snapshot) -> None:
        """Keep a new snapshot (it clears the collector's error). A long history keeps only
        what the collector's ``shrink`` keeps of older readings (the two newest stay whole:
        rates are computed from them)."""
        with self._lock:
            history = self._history[collector.name]
            history.append(snapshot)
            if len(history) > 2 and collector.history > 2:
                older = history[-3]
                kept = collector.shrink(older.data)
                if kept is not older.data:
                    history[-3] = dataclasses.replace(older, data=kept)
            self._errors.pop(collector.name, None)

    def record_error(self, name: str, message: str, at: float) -> None:
        with self._lock:
            self._errors[name] = (message, at)

    def last_taken_at(self, name: str) -> float:
        """When the newest reading was taken (0 when there is none)."""
        with self._lock:
            history = self._history[name]
            return history[-1].taken_at if history else 0.0

    def latest(self, name: str) -> Optional[Snapshot]:
        history = self._history.get(name)
        return history[-1] if history else None

    def history(self, name: str) -> Tuple[Snapshot, ...]:
        with self._lock:
            return tuple(self._history.get(name, ()))

    def last_two(self, name: str) -> Tuple[Optional[Snapshot], Optional[Snapshot]]:
        """(previous, current): what rates are computed from."""
        with self._lock:
            history = self._history.get(name)
            if not history:
                return None, None
            if len(history) == 1:
                return None, history[-1]
            return history[-2], history[-1]

    def error(self, name: str) -> Optional[str]:
        entry = self._errors.get(name)
        return entry[0] if entry else None
