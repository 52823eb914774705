"""A MySQL server's statement digest (performance_schema.events_statements_summary_by_digest):
rates per digest from two readings, and the key that matches a statement across normalisers.
Pure.

The table has one row per (schema, digest) with lifetime counters: COUNT_STAR, SUM_TIMER_WAIT
and MAX_TIMER_WAIT (picoseconds), rows examined, sent and affected, statements that used no
index, errors, FIRST_SEEN. Rates come from two readings, row by row. A row whose counters went
down or whose FIRST_SEEN moved was reset (TRUNCATE of the table, or evicted and added again):
it has no rate for that interval, never a negative or huge one. A row missing from the previous
reading has none either: it may be new, or it may have just entered the rows read (the read
takes the heaviest few hundred), and the two can't be told apart.

ProxySQL's digest texts and the server's DIGEST_TEXT normalise the same statement differently
(``SELECT c FROM sbtest1 WHERE id=?`` against ``SELECT `c` FROM `sbtest1` WHERE ID = ?``):
:func:`statement_key` brings both to one text, so that a ProxySQL digest finds its rows on
the backends it was routed to, and proxytop finds its own statements among a server's.
"""
from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

PICOSECONDS_PER_MS = 1e9
TRUNCATED = "..."  # performance_schema ends a DIGEST_TEXT cut at its maximum length so

# One pass over the text: quoted strings become ?, comments go, backquoted names lose quotes.
_TOKENS = re.compile(r"""'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*"|/\*.*?\*/|--[^\n]*|#[^\n]*|`((?:[^`]|``)*)`""",
                     re.DOTALL)
_NUMBER = re.compile(r"(?<![\w.@$?])(?:0x[0-9a-f]+|\d+(?:\.\d*)?(?:e[+-]?\d+)?|\.\d+)(?![\w])")
_USER_VARIABLE = re.compile(r"(?<!@)@[a-z_$][\w$.]*")  # @day, not @@port
_NULL_VALUE = re.compile(r"(?<!\bis )(?<!\bnot )\bnull\b")  # a NULL value, not IS [NOT] NULL
_SPACE_AROUND_SYMBOL = re.compile(r"\s*([^\w\s$])\s*")
_SIGNED = re.compile(r"[+-]+\?")  # ProxySQL folds a sign into its number
_VALUE_LIST = re.compile(r"\((?:[?,]|\.\.\.)+\)")  # (?,?,?,...) and (...)
_REPEATED_LIST = re.compile(r"\(\?\)(?:,\(\?\))+")  # VALUES (?),(?),(?)
# performance_schema spells some words its own way (MariaDB 10.11: DISTINCT -> DISTINCTROW,
# INT -> INTEGER, CHAR -> CHARACTER, VARCHAR -> VARCHARACTER, DATABASE -> SCHEMA, the name User
# -> SYSTEM_USER, TIMESTAMPDIFF(SECOND, ...) -> SQL_TSI_SECOND)
_SYNONYMS = {"distinctrow": "distinct", "integer": "int", "character": "char", "varcharacter": "varchar",
             "schema": "database", "schemas": "databases", "system_user": "user"}
_SYNONYM = re.compile(r"\b(" + "|".join(_SYNONYMS) + r"|sql_tsi_(\w+))\b")


def _token(match: "re.Match[str]") -> str:
    text = match.group(0)
    if match.group(1) is not None:
        return match.group(1).replace("``", "`")
    if text[0] in "'\"":
        return "?"
    return " "  # a comment


# performance_schema cuts a DIGEST_TEXT at max_digest_length (1,024 bytes of tokens by default,
# with no mark): a key this long may be the beginning of a longer statement's.
CUT_KEY = 500


def is_statement(digest_key: str, key: str) -> bool:
    """Whether a DIGEST_TEXT's key is the statement whose key is ``key``: the same, or, for a
    long statement the server cut, its beginning.

    >>> is_statement("select 1", "select 1"), is_statement("select 1", "select 12")
    (True, False)
    >>> is_statement("select " + "a," * 300, "select " + "a," * 400 + "b")
    True
    """
    return digest_key == key or (len(digest_key) >= CUT_KEY and key.startswith(digest_key))


def statement_key(text: Optional[str]) -> str:
    """One text for the same statement however it was normalised: ProxySQL's digest text,
    performance_schema's DIGEST_TEXT, or a statement as sent. Lower case, no quotes around
    names, literals and NULL values as ?, lists of values as (?), a sign folded into its
    number, no comments, no space around symbols, performance_schema's synonyms undone.

    Real pairs (ProxySQL 2.7.2 under sysbench; MariaDB 10.11's DIGEST_TEXT of the same):

    >>> statement_key("SELECT c FROM sbtest1 WHERE id=?") == statement_key("SELECT `c` FROM `sbtest1` WHERE ID = ? ")
    True
    >>> statement_key("SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c")
    'select distinct c from sbtest1 where id between?and?order by c'
    >>> statement_key("SELECT DISTINCTROW `c` FROM `sbtest1` WHERE ID BETWEEN ? AND ? ORDER BY `c` ")
    'select distinct c from sbtest1 where id between?and?order by c'
    >>> statement_key("UPDATE sbtest1 SET k = k ? WHERE id = ?") == statement_key("UPDATE `sbtest1` SET `k` = `k` + ? WHERE ID = ? ")
    True
    >>> statement_key("SELECT c FROM sbtest1 WHERE id IN (?,?,?,...)") == statement_key("SELECT `c` FROM `sbtest1` WHERE ID IN (...) ")
    True
    >>> statement_key("INSERT INTO sbtest4 (id,k,c,pad) VALUES (?,?,?,?)")
    'insert into sbtest4(id,k,c,pad)values(?)'
    >>> statement_key("INSERT INTO `sbtest4` ( ID , `k` , `c` , `pad` ) VALUES (...) ")
    'insert into sbtest4(id,k,c,pad)values(?)'
    >>> statement_key("SELECT GREATEST(?,?),LEAST(?,?)") == statement_key("SELECT `GREATEST` (...) , `LEAST` (...) ")
    True
    >>> statement_key("SET @day = CURDATE()") == statement_key("SET @? = CURDATE ( ) ")
    True
    >>> statement_key("SELECT TIMESTAMPDIFF(SECOND, t.a, NOW()) AS age, p.USER AS user FROM p")
    'select timestampdiff(second,t.a,now())as age,p.user as user from p'
    >>> statement_key("SELECT TIMESTAMPDIFF ( SQL_TSI_SECOND , `t` . `a` , NOW ( ) ) AS `age` , `p` . `USER` AS SYSTEM_USER FROM `p` ")
    'select timestampdiff(second,t.a,now())as age,p.user as user from p'

    Statements as sent: literals, quoting, whitespace, case and comments.

    >>> statement_key("/* proxytop */ select  c\\n FROM t WHERE id = -5 AND name = 'x' AND v IS NULL")
    'select c from t where id=?and name=?and v is null'
    >>> statement_key("INSERT INTO t VALUES (1, NULL), (2, 'b')") == statement_key("INSERT INTO `t` VALUES (...) /* , ... */ ")
    True
    """
    if not text:
        return ""
    key = _TOKENS.sub(_token, text).lower()
    key = _NUMBER.sub("?", key)
    key = _USER_VARIABLE.sub("@?", key)
    key = " ".join(key.split())
    key = _NULL_VALUE.sub("?", key)
    key = _SPACE_AROUND_SYMBOL.sub(r"\1", key)
    key = _SIGNED.sub("?", key)
    key = _VALUE_LIST.sub("(?)", key)
    key = _REPEATED_LIST.sub("(?)", key)
    key = _SYNONYM.sub(lambda m: m.group(2) or _SYNONYMS[m.group(1)], key)
    return key.rstrip(";")


class KeptKeys:
    """:func:`statement_key` of each (digest, text) worked out once and kept while the digest
    is read: a key takes about 80 µs, 25 ms for the 300 rows of a reading made anew each time.

    >>> keys = KeptKeys()
    >>> keys.of([("d1", "SELECT `a` FROM `t` ")]), keys.of([("d1", "SELECT `a` FROM `t` ")])
    (['select a from t'], ['select a from t'])
    """

    def __init__(self):
        self._kept: Dict[Tuple[Any, Any], str] = {}

    def of(self, pairs: Iterable[Tuple[Any, Optional[str]]]) -> List[str]:
        kept: Dict[Tuple[Any, Any], str] = {}
        keys = []
        for pair in pairs:
            key = self._kept.get(pair)
            if key is None:
                key = statement_key(pair[1])
            kept[pair] = key
            keys.append(key)
        self._kept = kept  # only the digests of the last reading
        return keys


def truncated_key(text: Optional[str]) -> Optional[str]:
    """The key of what is left of a DIGEST_TEXT that performance_schema cut (it ends with
    '...'): a prefix of the whole statement's key. None for a whole text.

    >>> truncated_key("SELECT `a` , `b` , `c` ..."), truncated_key("SELECT ? ") is None
    ('select a,b,c', True)
    """
    stripped = (text or "").rstrip()
    if not stripped.endswith(TRUNCATED) or stripped.endswith("(...)") or stripped.endswith("*/"):
        return None
    return statement_key(stripped[:-len(TRUNCATED)])


# ----- rates ----------------------------------------------------------------------------------

# The columns a reading holds (collectors.mysql_statements reads them under these names).
COUNTERS = ("count", "sum_timer", "rows_examined", "rows_sent", "rows_affected", "no_index", "no_good_index",
            "errors")
COLUMNS = ("schema", "digest", "text") + COUNTERS + ("max_timer", "first_seen", "last_seen", "p95_timer")


def rows_by_key(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Dict[Tuple[Any, Any], Dict[str, Any]]:
    """{(schema, digest): the row as a dict}."""
    return {(row["schema"], row["digest"]): row for row in (dict(zip(columns, values)) for values in rows)}


def _number(value: Any) -> Optional[float]:
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def row_delta(before: Optional[Mapping[str, Any]], now: Mapping[str, Any]) -> Optional[Dict[str, float]]:
    """The increase of one digest row's counters; None when it can't be rated: no earlier
    reading of it, counters down or FIRST_SEEN moved (a TRUNCATE, or evicted and added again).

    >>> row_delta({"count": 10, "sum_timer": 5e9, "first_seen": 100}, {"count": 14, "sum_timer": 9e9, "first_seen": 100})["count"]
    4.0
    >>> row_delta({"count": 10, "sum_timer": 5e9, "first_seen": 100}, {"count": 3, "sum_timer": 1e9, "first_seen": 100}) is None
    True
    >>> row_delta({"count": 10, "sum_timer": 5e9, "first_seen": 100}, {"count": 30, "sum_timer": 9e9, "first_seen": 160}) is None
    True
    >>> row_delta(None, {"count": 3, "sum_timer": 1e9, "first_seen": 160}) is None
    True
    """
    if before is None or before.get("first_seen") != now.get("first_seen"):
        return None
    moved: Dict[str, float] = {}
    for name in COUNTERS:
        a, b = _number(before.get(name)), _number(now.get(name))
        if a is None or b is None:
            if name in ("count", "sum_timer"):
                return None
            continue
        if b < a:
            return None  # any counter down: the row was reset
        moved[name] = b - a
    return moved


def statement_rows(previous: Optional[Mapping[Tuple[Any, Any], Mapping[str, Any]]],
                   current: Mapping[Tuple[Any, Any], Mapping[str, Any]], seconds: Optional[float]) -> List[Dict[str, Any]]:
    """One row per digest: rates per second over the interval, times in milliseconds.

    count_s, time_s (ms of statement time per second), share (% of all rows' time_s), avg_ms
    (over the interval), avg_life_ms and max_ms (since first seen), p95_ms (the server's
    QUANTILE_95 where it has one), examined_per_call and sent_per_call (over the interval),
    no_index_s (statements that used no index, or no good one, per second), errors_s, count
    (lifetime), last_seen (epoch s).

    >>> before = {("db", "d1"): {"schema": "db", "digest": "d1", "text": "SELECT ?", "count": 10, "sum_timer": 2e10,
    ...                          "rows_examined": 100, "rows_sent": 10, "no_index": 0, "errors": 0, "first_seen": 1}}
    >>> now = {("db", "d1"): dict(before[("db", "d1")], count=30, sum_timer=6e10, rows_examined=2100, rows_sent=30)}
    >>> row = statement_rows(before, now, 2.0)[0]
    >>> row["count_s"], row["time_s"], row["avg_ms"], row["examined_per_call"], row["share"]
    (10.0, 20.0, 2.0, 100.0, 100.0)
    """
    moved: Dict[Tuple[Any, Any], Dict[str, float]] = {}
    if previous is not None and seconds:
        for key, now in current.items():
            change = row_delta(previous.get(key), now)
            if change is not None:
                moved[key] = change
    total = sum(change["sum_timer"] for change in moved.values())
    rows = []
    for key, now in current.items():
        count, sum_timer = _number(now.get("count")) or 0.0, _number(now.get("sum_timer")) or 0.0
        row: Dict[str, Any] = {"_id": key, "schema": now.get("schema"), "digest": now.get("digest"),
                               "full_text": now.get("text"), "text": one_line(now.get("text")),
                               "count": int(count), "avg_life_ms": sum_timer / count / PICOSECONDS_PER_MS if count else None,
                               "max_ms": _ms(now.get("max_timer")), "p95_ms": _ms(now.get("p95_timer")),
                               "last_seen": now.get("last_seen"), "first_seen": now.get("first_seen"),
                               "_weight": sum_timer}
        for name in ("count_s", "time_s", "share", "avg_ms", "examined_per_call", "sent_per_call", "affected_s",
                     "no_index_s", "errors_s", "examined_s", "sent_s"):
            row[name] = None
        change = moved.get(key)
        if change is not None:
            calls = change["count"]
            row.update(count_s=calls / seconds, time_s=change["sum_timer"] / PICOSECONDS_PER_MS / seconds,
                       share=100.0 * change["sum_timer"] / total if total > 0 else None,
                       avg_ms=change["sum_timer"] / calls / PICOSECONDS_PER_MS if calls else None,
                       examined_per_call=_per(change.get("rows_examined"), calls),
                       sent_per_call=_per(change.get("rows_sent"), calls),
                       examined_s=_per(change.get("rows_examined"), seconds),
                       sent_s=_per(change.get("rows_sent"), seconds),
                       affected_s=_per(change.get("rows_affected"), seconds),
                       no_index_s=_per((change.get("no_index") or 0) + (change.get("no_good_index") or 0), seconds)
                       if "no_index" in change else None,
                       errors_s=_per(change.get("errors"), seconds))
        rows.append(row)
    rows.sort(key=lambda r: r["_weight"], reverse=True)  # heaviest first, for a sort on a column not filled yet
    return rows


def _ms(picoseconds: Any) -> Optional[float]:
    value = _number(picoseconds)
    return value / PICOSECONDS_PER_MS if value is not None else None


def _per(value: Optional[float], by: float) -> Optional[float]:
    if value is None or not by:
        return None
    return value / by


def one_line(text: Optional[str]) -> Optional[str]:
    """A digest text on one line, single spaces.

    >>> one_line("SELECT `c`\\n FROM `t` ")
    'SELECT `c` FROM `t`'
    """
    return " ".join(text.split()) if text else None


def resets(previous: Optional[Mapping[Tuple[Any, Any], Mapping[str, Any]]],
           current: Mapping[Tuple[Any, Any], Mapping[str, Any]]) -> int:
    """How many rows of the previous reading read again were reset (counters down or
    FIRST_SEEN moved); rows no longer read are not counted (they may have left the top).

    >>> resets({("a", "1"): {"count": 5, "sum_timer": 9, "first_seen": 1}},
    ...        {("a", "1"): {"count": 1, "sum_timer": 1, "first_seen": 7}})
    1
    """
    if not previous:
        return 0
    return sum(1 for key, now in current.items() if key in previous and row_delta(previous[key], now) is None)


def combine(rows: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """One statement's figures on one server from its rows (one per schema it ran in): rates
    added up, per-call figures weighted by the calls, the worst max and p95.

    >>> combine([{"count_s": 10.0, "time_s": 20.0, "examined_s": 100.0, "sent_s": 10.0, "no_index_s": 0.0,
    ...           "errors_s": 0.0, "max_ms": 5.0, "p95_ms": None, "schema": "a", "count": 10},
    ...          {"count_s": 30.0, "time_s": 20.0, "examined_s": 300.0, "sent_s": 30.0, "no_index_s": 30.0,
    ...           "errors_s": 1.0, "max_ms": 9.0, "p95_ms": None, "schema": "b", "count": 30}])["examined_per_call"]
    10.0
    """
    rated = [row for row in rows if row.get("count_s") is not None]
    made: Dict[str, Any] = {"schemas": sorted({str(row.get("schema") or "") for row in rows}),
                            "count": sum(row.get("count") or 0 for row in rows),
                            "max_ms": max((row["max_ms"] for row in rows if row.get("max_ms") is not None), default=None),
                            "p95_ms": max((row["p95_ms"] for row in rows if row.get("p95_ms") is not None), default=None)}
    for name in ("count_s", "time_s", "examined_s", "sent_s", "no_index_s", "errors_s"):
        values = [row[name] for row in rated if row.get(name) is not None]
        made[name] = sum(values) if values else None
    calls = made["count_s"]
    made["avg_ms"] = made["time_s"] / calls if calls and made["time_s"] is not None else None
    made["examined_per_call"] = made["examined_s"] / calls if calls and made["examined_s"] is not None else None
    made["sent_per_call"] = made["sent_s"] / calls if calls and made["sent_s"] is not None else None
    return made
