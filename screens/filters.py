"""The filter language typed after ``/``: parsed here, applied in the client, never sent as SQL.

- ``text``       case-insensitive substring of any visible column
- ``col:regex``  a regular expression (case-insensitive) on one column
- ``col>N`` ``col<N`` ``col>=N`` ``col<=N`` ``col=N``  numeric comparison on one column
  (``!=`` too). On a column of durations or sizes N may carry a unit, as the screens print
  them: ``time>2s``, ``latency>500ms``, ``free<10GiB``, ``sent>1MiB/s``; a bare N there is
  seconds or bytes (or the unit the column's title names: iostat's ``rkB/s``), and the
  filter says how it read it (``Time > 2 s``). On other columns N is a count: ``1.5k``.
Several terms separated by spaces must all match. Column names are matched against a column's
key or title, case-insensitively, ignoring ``/s`` and punctuation. A quoted term (``"id=5"``)
is text to look for, whatever it contains; an unquoted term that names no column before a
comparison or a colon is refused, so that a typo never quietly filters everything out.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

from proxytop.metrics import quantities
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
    reading: str = ""  # a comparison as it was read: "Time > 2 s" (value)


@dataclass(frozen=True)
class Filter:
    text: str
    terms: Tuple[Term, ...]

    @property
    def empty(self) -> bool:
        return not self.terms

    @property
    def described(self) -> str:
        """The filter as typed, each comparison of a duration or a size as it was read
        ("time>2" -> "Time > 2 s"): what the status line shows."""
        if not any(t.reading for t in self.terms):
            return self.text
        typed = [f'"{word}"' if quoted else word for quoted, word in words(self.text)]  # one per term
        return " ".join(term.reading or word for term, word in zip(self.terms, typed))


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
            number, reading = _compared(name, op, value, next(c for c in columns if c.key == column))
            terms.append(Term("compare", column, word, op=op, number=number, reading=reading))
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


def _compared(name: str, op: str, value: str, column) -> Tuple[float, str]:
    """The figure a comparison compares the column's values with, in their unit, and how it
    was read ("" for a count: it reads as typed); FilterError when it can't be.

    >>> from proxytop.screens.table import Column
    >>> _compared("time", ">", "2s", Column("time_ms", "Time", 7, unit="ms"))
    (2000.0, 'Time > 2 s')
    >>> _compared("time", ">", "1", Column("time_ms", "Time", 7, unit="ms"))
    (1000.0, 'Time > 1 s')
    >>> _compared("conn", ">=", "1.5k", Column("conn", "Conn", 7))
    (1500.0, '')
    """
    if column.unit:
        try:
            number, read_as = quantities.read(value, column.unit, column.bare_unit)
        except quantities.UnitError as exc:
            kind = quantities.unit(column.unit).kind
            raise FilterError(f"{exc}: {name}{op} compares {kind}s in {quantities.NAMES[kind]} (a bare figure: "
                              f"{bare_unit(column)}; e.g. {name}{op}{'2s' if kind == 'duration' else '10MiB'})") from None
        return number, f"{column.title.strip()} {op} {read_as}"
    number = _number(value)
    if number is None:
        raise FilterError(f"'{value}' is not a number: {name}{op} compares numbers (e.g. {name}{op}100, 1.5k)")
    return number, ""


def bare_unit(column) -> str:
    """What a figure without a unit means in a filter on ``column``: '' for a count.

    >>> from proxytop.screens.table import Column
    >>> bare_unit(Column("t", "T", 5, unit="ms")), bare_unit(Column("r", "R", 5, unit="B/s")), bare_unit(Column("n", "N", 5))
    ('s', 'B/s', '')
    """
    if not column.unit:
        return ""
    return column.bare_unit or quantities.bare_unit_of(column.unit)


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
