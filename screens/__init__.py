"""The screens, in tab order (keys 1-7)."""
from __future__ import annotations

from typing import List

from proxytop.screens.base import Placeholder, Screen


def all_screens(config=None) -> List[Screen]:
    from proxytop.screens.connpool import ConnPoolScreen

    return [
        ConnPoolScreen(config),
        Placeholder("queryrules", "QueryRules", config),
        Placeholder("glostat", "GloStat", config),
        Placeholder("proclist", "ProcList", config),
        Placeholder("comcount", "ComCount", config),
        Placeholder("innodb", "InnoDB", config),
        Placeholder("iostat", "IOstat", config),
    ]
