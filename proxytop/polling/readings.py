"""Each collector's recent snapshots and its last error: what the engine's workers write and
the UI reads.

Each history is a bounded deque (as long as its collector asks for). When a source starts
reading another server the history is replaced, not cleared, so that a reader holding the old
one never sees it change under it.

Every change (a snapshot, an error, a history replaced, and what the engine adds: a source's
state) gets the next *generation* number, and the changed names are kept in the order of their
last change: the UI asks what changed since the generation it last drew (a few of a fleet's
1,500 collectors), rather than looking at all of them every frame.
"""
from __future__ import annotations

import dataclasses
import threading
from collections import deque
from typing import Deque, Dict, Hashable, Optional, Tuple

from proxytop.core import Collector, Snapshot


class Readings:
    """The snapshots kept per collector, and the error of its last failed reading."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._history: Dict[str, Deque[Snapshot]] = {}
        self._errors: Dict[str, Tuple[str, float]] = {}
        self.generation = 0  # the number of the last change
        # each changed key -> the generation of its last change, oldest first
        self._changes: Dict[Hashable, int] = {}  # key -> the generation of its last change

    def _changed(self, key: Hashable) -> None:
        """(the lock is held) ``key`` changed: it takes the next generation."""
        self.generation += 1
        self._changes[key] = self.generation

    def last_changed(self, keys) -> int:
        """The generation of the last change of any of ``keys`` (0: none changed yet)."""
        with self._lock:
            changes = self._changes
            return max((changes.get(key, 0) for key in keys), default=0)

    def touch(self, key: Hashable) -> None:
        """Note a change the readings don't hold (a source's state)."""
        with self._lock:
            self._changed(key)

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
            self._changed(name)
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
            self._changed(collector.name)

    def record_error(self, name: str, message: str, at: float) -> None:
        with self._lock:
            self._errors[name] = (message, at)
            self._changed(name)

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
