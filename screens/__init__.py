"""The screens, and the two halves of proxytop that show them: the ProxySQL screens and the
MySQL servers' screens (InnoDB and IOstat are in both). Each half numbers its tabs from 1
(keys 1-9, then 0 for the tenth); the tabs after those are reached by a letter
(``keys.TAB_LETTERS``: T for Trends, E for Events), the same in both halves.

Each screen lives in screens/<key>.py and defines ``SCREEN`` (its class) and, optionally,
``add_arguments(parser)`` for options of its own. The screens of the MySQL servers share one
fleet of servers (``uses_fleet``), which the InnoDB screen registers with the engine.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Dict, List, Optional, Sequence, Tuple

from proxytop.collectors.innodb_fleet import Fleet
from proxytop.screens.base import Placeholder, Screen
from proxytop.screens.keys import TAB_LETTERS

SCREENS = (
    ("connpool", "ConnPool"),
    ("queryrules", "QueryRules"),
    ("glostat", "GloStat"),
    ("proclist", "ProcList"),
    ("comcount", "ComCount"),
    ("innodb", "InnoDB"),
    ("iostat", "IOstat"),
    ("queries", "Queries"),
    ("errors", "Errors"),
    ("cluster", "Cluster"),
    ("servers", "Servers"),
    ("sessions", "Sessions"),
    ("locks", "Locks"),
    ("statements", "Statements"),
    ("status", "Status"),
    ("commands", "Commands"),
    ("galera", "Galera"),
    ("replication", "Replication"),
    ("trends", "Trends"),
    ("events", "Events"),
)
PROXYSQL_HALF, MYSQL_HALF = "proxysql", "mysql"
LETTERED = tuple(TAB_LETTERS)  # the tabs reached by a letter, at the end of both halves
HALVES: Dict[str, Tuple[str, ...]] = {  # each half's screens, in tab order
    PROXYSQL_HALF: ("connpool", "queryrules", "glostat", "proclist", "comcount", "innodb", "iostat", "queries",
               "errors", "cluster") + LETTERED,
    MYSQL_HALF: ("servers", "sessions", "locks", "statements", "status", "commands", "replication", "galera",
                 "innodb", "iostat") + LETTERED,
}
HALF_TITLES = {PROXYSQL_HALF: "ProxySQL", MYSQL_HALF: "MySQL servers"}


# The tabs after the tenth of a half, reached by a letter (in both halves): keys.TAB_LETTERS.
LETTER_TABS = {key: letter for key, (letter, _help, _hint) in TAB_LETTERS.items()}


def screen_key(index: int, key: str = "") -> str:
    """The key of the tab at ``index`` (0-based) showing screen ``key``: 1-9, then 0 for the
    tenth, then the screen's letter."""
    return LETTER_TABS.get(key, "") or str((index + 1) % 10)


def tab_keys(keys: Sequence[str]) -> List[str]:
    """The key of each tab of a half (screen keys in tab order): its letter, or its number
    among the tabs without one.

    >>> tab_keys(["connpool", "queryrules", "events"])
    ['1', '2', 'E']
    """
    found: List[str] = []
    for key in keys:
        found.append(LETTER_TABS.get(key) or screen_key(sum(k.isdigit() for k in found)))
    return found


def _module(key: str) -> Optional[ModuleType]:
    name = f"proxytop.screens.{key}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None  # not part of this build: the tab says so
        raise


def add_all_arguments(parser) -> None:
    for key, _title in SCREENS:
        module = _module(key)
        if module is not None and hasattr(module, "add_arguments"):
            module.add_arguments(parser)


def all_screens(config=None) -> List[Screen]:
    """Every screen of this run: with no ProxySQL to watch (``config.proxysql`` false: only
    MySQL servers were named) the MySQL servers' screens alone."""
    with_proxysql = getattr(config, "proxysql", True)
    fleet = None
    screens: List[Screen] = []
    for key, title in SCREENS:
        module = _module(key)
        if module is None:
            screens.append(Placeholder(key, title, config))
            continue
        if not with_proxysql and key not in HALVES[MYSQL_HALF]:
            continue
        if getattr(module.SCREEN, "uses_fleet", False):
            fleet = fleet if fleet is not None else Fleet.from_config(config)
            screens.append(module.SCREEN(config, fleet=fleet))
        else:
            screens.append(module.SCREEN(config))
    return screens
