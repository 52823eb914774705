"""What the engine polls for the visible screen, and how often: the screen's collectors at
its interval, the header's and the backend alarm's beside them, and the keys that change the
pace or pause polling.

A part of :class:`proxytop.ui.controller.Controller` (it reads ``engine``, ``screen``, ``mode``,
``detail_row`` and ``intervals`` there)."""
from __future__ import annotations

from typing import Tuple

from proxytop.config.options import step_interval
from proxytop.screens.base import Screen

from proxytop.screens.connpool import alarm_collectors
from proxytop.screens.sided import header_collector


class Pacing:
    def minimum_interval(self, screen: Screen) -> float:
        paced = self._paced
        if paced is not None and paced[0] is self._activated and paced[1] is screen:
            return paced[2]  # asked twice a frame: kept while the screen polls the same set
        collectors = [self.engine.collector(n) for n in screen.active_collectors()]
        minimums = [c.min_interval for c in collectors if c is not None and not c.own_pace]
        return max(minimums, default=0.5)

    def screen_uses_proxysql(self) -> bool:
        paced = self._paced
        if paced is not None and paced[0] is self._activated and paced[1] is self.screen:
            return paced[3] or not self.screen.built
        sources = {getattr(self.engine.collector(n), "source", None) for n in self.screen.active_collectors()}
        return "proxysql" in sources or not self.screen.built

    # (the activated names, the screen, its minimum interval, whether it reads ProxySQL): what a
    # frame asks of a fleet's 1,501 collectors, worked out when the screen's set is polled
    _paced = None

    def interval(self) -> float:
        return self.ui.intervals[self.screen.key]

    def activate(self) -> None:
        """Poll only what the visible screen needs, plus the header's cheap collector."""
        screen = self.screen
        names = list(screen.active_collectors())
        if self.ui.mode == "detail" and self.ui.detail_row is not None:
            # an open drill-down may need more (QueryRules' "queries this rule catches"); back
            # on the table, rows() sees the set differ and stops them
            names += [n for n in screen.detail_collectors(self.ui.detail_row) if n not in names]
        self._activated = tuple(names)
        self._paced = None
        # A screen's minimum may have grown (e.g. a large fleet found at runtime).
        minimum = self.minimum_interval(screen)
        self.ui.intervals[screen.key] = max(self.ui.intervals[screen.key], minimum)
        interval = self.interval()
        for name in names:
            collector = self.engine.collector(name)
            if collector is None:
                continue
            self.engine.set_interval(name, max(collector.default_interval, interval) if collector.own_pace else interval)
        header = header_collector(screen, names)
        if self.engine.collector(header) is not None:
            self.engine.set_interval(header, interval)
            names.append(header)
        self._alarm_plan = self.alarm_plan()
        for name, pace in self._alarm_plan:
            if self.engine.collector(name) is not None and name not in names:
                # the header's backend alarm, on every screen: each side's pool at a slower pace
                self.engine.set_interval(name, max(interval, pace))
                names.append(name)
        self.engine.set_active(names)
        uses_proxysql = "proxysql" in {getattr(self.engine.collector(n), "source", None)
                                       for n in screen.active_collectors()}
        self._paced = (self._activated, screen, minimum, uses_proxysql)
        # The ProxySQL readings start in one batch (the slower ones then stay in step with it):
        # after a switch the header's (read anew) and the pool's (kept at the alarm's pace)
        # were a fraction of a second apart for good, two wake-ups and two frames an interval.
        self.engine.read_together([n for n in names if getattr(self.engine.collector(n), "source", None) == "proxysql"])
        self._rows_token = None

    def alarm_plan(self) -> Tuple[Tuple[str, float], ...]:
        """The pool readings the header's backend alarm takes on every screen (screens.connpool)."""
        return alarm_collectors(getattr(self.view.source("proxysql"), "session", None), self.engine.latest)

    def do_faster(self):
        self._step_interval(-1)

    def do_slower(self):
        self._step_interval(+1)

    def _step_interval(self, direction: int) -> None:
        minimum = self.minimum_interval(self.screen)
        new = step_interval(self.interval(), direction, minimum)
        self.ui.intervals[self.screen.key] = new
        self.activate()
        if direction < 0 and new == minimum and minimum > 0.5:
            self.say(f"interval {new:g}s: the minimum for this screen")
        else:
            self.say(f"interval {new:g}s")

    def do_pause(self):
        if self.engine.paused:
            self.engine.resume()
            self.say("resumed")
        else:
            self.engine.pause()
            self.say("paused: data frozen, press p to resume")
