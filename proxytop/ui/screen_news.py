"""What changed for the visible screen since the last frame, in as many steps as there were
changes: the generation of the last change of its collectors (what its rows are computed
from) and its newest snapshot (the header's "data N s old").

A fleet's screen has 1,500 collectors and a tenth of them is read between two frames: looking
at all of them every frame (their snapshots' ids, the newest of them) cost the UI 3 ms a frame.
The engine numbers every change (:meth:`proxytop.polling.engine.Engine.changed_since`); only
the collectors changed since the last frame are looked at. An engine that doesn't number its
changes (a replay) is looked at whole, as before.

A part of :class:`proxytop.ui.controller.Controller` (it reads ``engine``, ``screen`` and
``_activated`` there)."""
from __future__ import annotations

from typing import FrozenSet, Optional, Tuple

from proxytop.collectors.base import Snapshot


class ScreenNews:
    _news_for: Optional[Tuple[object, tuple]] = None  # (screen, its activated names) followed
    _news_names: FrozenSet[str] = frozenset()
    _news_seen = 0  # the engine's generation last looked at
    _news_changed = 0  # the generation of the last change of the screen's collectors
    _news_newest: Optional[Snapshot] = None

    def screen_changed_at(self) -> Optional[int]:
        """The generation of the last change of the visible screen's collectors (a snapshot or
        an error) or of their sources' states, or None when the engine doesn't number its
        changes."""
        if not self._follow_news():
            return None
        return self._news_changed

    def newest_of_screen(self) -> Optional[Snapshot]:
        """The newest snapshot of the visible screen's collectors (None: none yet)."""
        if not self._follow_news():
            return self._newest_of(self.screen.active_collectors())
        return self._news_newest

    def _follow_news(self) -> bool:
        engine = self.engine
        if not engine.notifies_changes:
            return False
        screen = self.screen
        followed = self._news_for
        if followed is None or followed[0] is not screen or followed[1] is not self._activated:
            # another screen, or its collectors changed: all of them looked at once
            names = self._followed_keys(screen.active_collectors())
            self._news_for, self._news_names = (screen, self._activated), names
            self._news_seen = engine.generation
            self._news_changed = engine.last_changed(names)
            self._news_newest = self._newest_of(names)
            return True
        generation, changed = engine.changed_since(self._news_seen)
        if not changed:
            return True
        self._news_seen = generation
        names, newest = self._news_names, self._news_newest
        mine = [key for key in changed if key in names]
        if not mine:
            return True
        # the generation of the last of them (not the engine's now): rows parked with it are
        # still good when the screen comes back and nothing of it changed meanwhile
        self._news_changed = engine.last_changed(mine)
        for name in mine:
            if type(name) is not str:
                continue  # a source's state
            snapshot = engine.latest(name)
            if newest is not None and newest.collector == name and snapshot is not newest \
                    and (snapshot is None or snapshot.taken_at < newest.taken_at):
                newest = self._newest_of(names)  # the newest was dropped (another node watched)
                break
            if snapshot is not None and (newest is None or snapshot.taken_at > newest.taken_at):
                newest = snapshot
        self._news_newest = newest
        return True

    def _followed_keys(self, names) -> FrozenSet:
        """The screen's collectors, and the states of their sources (a server going down
        changes its row without a new snapshot)."""
        sources = {getattr(self.engine.collector(name), "source", None) for name in names}
        return frozenset(names) | frozenset(("state", source) for source in sources if source is not None)

    def _newest_of(self, names) -> Optional[Snapshot]:
        latest = None
        for name in names:
            if type(name) is not str:
                continue  # a source's state
            snapshot = self.engine.latest(name)
            if snapshot is not None and (latest is None or snapshot.taken_at > latest.taken_at):
                latest = snapshot
        return latest
