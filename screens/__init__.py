"""The screens, in tab order (keys 1-9, then 0 for the tenth).

Each screen lives in screens/<key>.py and defines ``SCREEN`` (its class) and, optionally,
``add_arguments(parser)`` for options of its own.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import List, Optional

from proxytop.screens.base import Placeholder, Screen

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
)


def screen_key(index: int) -> str:
    """The number key of the screen at ``index`` (0-based): 1-9, then 0 for the tenth."""
    return str((index + 1) % 10)


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
    screens: List[Screen] = []
    for key, title in SCREENS:
        module = _module(key)
        screens.append(module.SCREEN(config) if module is not None else Placeholder(key, title, config))
    return screens
