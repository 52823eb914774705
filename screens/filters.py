"""The filter language typed after ``/``: parsed here, applied in the client, never sent as SQL.

- ``text``       case-insensitive substring of any visible column
- ``col:regex``  a regular expression (case-insensitive) on one column
- ``col>N`` ``col<N`` ``col>=N`` ``col<=N`` ``col=N``  numeric comparison on one column
Several terms separated by spaces must all match. Column names are matched against a column's
key or title, case-insensitively, ignoring ``/s`` and punctuation. A quoted term (``"id=5"``)
is text to look for, whatever it contains; an unquoted term that names no column before a
comparison or a colon is refused, so that a typo never quietly filters everything out.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

from proxytop.metrics.rates import to_number


class FilterError(ValueError):
    """A filter that can't be applied; the message is shown to the user as is."""


@dataclass(frozen=True)
class Term:
    kind: str  # "text", "regex", "compare"
    column: Optional[str]  # the column key it applies to (None = any visible column)
    value: str
    op: Optional[str] = None
    number: Optional[float] = None
    pattern: Optional["re.Pattern"] = None


@dataclass(frozen=True)
class Filter:
    text: str
    terms: Tuple[Term, ...]

    @property
    def empty(self) -> bool:
        return not self.terms


EMPTY = Filter("", ())

_COMPARE = re.compile(r"^([A-Za-z_][\w/%.-]*?)\s*(>=|<=|!=|>|<|=)(.*)$")
_NUMBER = re.compile(r"^\s*(-?[\d.]+)\s*([kKmMgG]?)$")
_COLUMN_TERM = re.compile(r"^([A-Za-z_][\w/%.-]*?):(.*)$")
_SUFFIX = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}


def normalise(name: str) -> str:
    """'Queries/s' -> 'queriess', 'srv_host' -> 'srvhost': how typed column names are matched."""
    return re.sub(r"[^a-z0-9%]", "", name.lower())


def words(text: str) -> List[Tuple[bool, str]]:
    """The terms of a filter as (quoted, text); FilterError for a quote left open.

    >>> words('hg=10 "id=5" "a b"')
    [(False, 'hg=10'), (True, 'id=5'), (True, 'a b')]
    """
    found = []
    for double, single, plain in re.findall(r'"([^"]*)"|\'([^\']*)\'|(\S+)', text):
        if plain and plain[0] in "\"'":
            raise FilterError(f"filter: a quote is not closed: {plain}")
        found.append((not plain, plain or double or single))
    return found


def resolve_column(name: str, columns: Sequence, hint: str = "") -> str:
    """The key of the column a user means by ``name`` (key or title); FilterError if none."""
    wanted = normalise(name)
    for column in columns:
        if wanted in (normalise(column.key), normalise(column.title)):
            return column.key
    matches = [c.key for c in columns if normalise(c.title).startswith(wanted) or normalise(c.key).startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(c.title.strip() for c in columns)
    raise FilterError(f"no column '{name}' (columns: {known}){hint}")


def parse(text: str, columns: Sequence) -> Filter:
    """Parse a filter; raises FilterError with a one-line explanation when it can't be used."""
    text = text.strip()
    if not text:
        return EMPTY
    terms = []
    for quoted, word in words(text):
        if quoted:
            terms.append(Term("text", None, word.lower()))
            continue
        compare = _COMPARE.match(word)
        if compare:
            name, op, value = compare.groups()
            column = resolve_column(name, columns, hint=f'; to look for the text, quote it: "{word}"')
            number = _number(value)
            if number is None:
                raise FilterError(f"'{value}' is not a number: {name}{op} compares numbers (e.g. {name}{op}100, 1.5k)")
            terms.append(Term("compare", column, word, op=op, number=number))
            continue
        column_term = _COLUMN_TERM.match(word)
        if column_term and column_term.group(2):
            name, expression = column_term.groups()
            try:
                pattern = re.compile(expression, re.IGNORECASE)
            except re.error as exc:
                raise FilterError(f"bad regular expression '{expression}': {exc}") from None
            terms.append(Term("regex", resolve_column(name, columns, hint=f'; to look for the text, quote it: "{word}"'),
                              expression, pattern=pattern))
            continue
        terms.append(Term("text", None, word.lower()))
    return Filter(text, tuple(terms))


def _number(text: str) -> Optional[float]:
    """'1.5k' -> 1500.0; None when the text is not a number.

    >>> _number("1.5k"), _number("-2"), _number("abc"), _number("1kstatus:[")
    (1500.0, -2.0, None, None)
    """
    found = _NUMBER.match(text)
    if not found:
        return None
    try:
        return float(found.group(1)) * _SUFFIX[found.group(2).lower()]
    except ValueError:  # "1.2.3"
        return None


_OPS: dict = {
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def matches(flt: Filter, row, cell_text: Callable[[object, str], str], visible_keys: Sequence[str]) -> bool:
    """Whether a row passes; ``cell_text(row, key)`` gives the text shown in a cell."""
    for term in flt.terms:
        if term.kind == "compare":
            value = to_number(row.get(term.column))
            if value is None or not _OPS[term.op](value, term.number):
                return False
        elif term.kind == "regex":
            raw = row.get(term.column)
            candidates = (cell_text(row, term.column), "" if raw is None else str(raw))
            if not any(term.pattern.search(text) for text in candidates):
                return False
        else:
            found = False
            for key in visible_keys:
                raw = row.get(key)
                if term.value in cell_text(row, key).lower() or (raw is not None and term.value in str(raw).lower()):
                    found = True
                    break
            if not found:
                return False
    return True
