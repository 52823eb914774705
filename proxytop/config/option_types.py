"""Types of command-line values that several options share (argparse calls them on the text)."""
from __future__ import annotations

import argparse
from typing import Callable


def seconds(low: float, high: float, what: str) -> Callable[[str], float]:
    """A number of seconds from ``low`` to ``high``; ``what`` names it in the refusal.

    >>> interval = seconds(0.5, 3600, "the processlist interval")
    >>> interval("5"), interval("0.5")
    (5.0, 0.5)
    >>> interval("0.1")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: the processlist interval must be between 0.5 and 3600 seconds
    >>> interval("soon")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: 'soon' is not a number of seconds
    """
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{what} must be between {low:g} and {high:g} seconds")
        return value
    return parse
