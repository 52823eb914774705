"""The latest deadlock InnoDB remembers: the LATEST DETECTED DEADLOCK section of SHOW ENGINE
INNODB STATUS, parsed into its transactions (statement, locks held, the lock waited for) and
which one was rolled back.

The products word the section differently. MariaDB (a real 10.11 sample in the tests) writes
``MariaDB thread id N``, a ``0x…`` thread handle after the time, and lists under
``*** CONFLICTING WITH:`` the *other* transaction's locks that block this one; MySQL 8 (its
manual's example) writes ``MySQL thread id N``, a decimal thread number after the time, and
``*** (1) HOLDS THE LOCK(S):``. Either way every lock line names the transaction that holds or
waits for it (``trx id N``, ``waiting`` at the end for a wait), so the locks held by each
transaction are found by that id, wherever the product lists them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

SECTION_TITLE = "LATEST DETECTED DEADLOCK"
_DASHES = re.compile(r"^-{3,}$")
_TRX_START = re.compile(r"^\*\*\* \((\d+)\) TRANSACTION:")
_TRX_LINE = re.compile(r"^TRANSACTION (\S+), ACTIVE (\d+) sec")
_THREAD_LINE = re.compile(r"^(?:MySQL|MariaDB) thread id (\d+), OS thread handle \S+, query id \d+ (\S+) (\S+)")
_ROLLED_BACK = re.compile(r"^\*\*\* WE ROLL BACK TRANSACTION \((\d+)\)")
_LOCK_LINE = re.compile(r"^(RECORD LOCKS|TABLE LOCK) .*?trx id (\S+) (.*)$")
_INDEX = re.compile(r"index (\S+) of table (\S+)")
_TABLE = re.compile(r"table (\S+)")
_WHEN = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")


@dataclass(frozen=True)
class Lock:
    """One lock line, shortened: 'RECORD X locks rec but not gap on `d`.`t` index PRIMARY'."""

    kind: str  # RECORD or TABLE
    table: str
    index: Optional[str]
    mode: str  # 'X locks rec but not gap', 'IX'...
    trx: str
    waiting: bool

    @property
    def text(self) -> str:
        where = self.table + (f" index {self.index}" if self.index else "")
        return f"{self.kind} {self.mode} on {where}"


@dataclass(frozen=True)
class DeadlockTransaction:
    number: int  # (1), (2)... as the section numbers them
    trx: Optional[str]
    active_s: Optional[int]
    thread: Optional[int]  # the session (connection) id
    host: Optional[str]
    user: Optional[str]
    statement: str
    waits_for: Optional[Lock]
    holds: Tuple[Lock, ...]
    rolled_back: bool


@dataclass(frozen=True)
class Deadlock:
    when: Optional[str]  # 'YYYY-MM-DD HH:MM:SS', the server's clock
    transactions: Tuple[DeadlockTransaction, ...]


def section(status_text: str) -> Optional[str]:
    """The LATEST DETECTED DEADLOCK section's body (the lines between its dashes and the next
    section's), or None when the server has seen no deadlock since it started.

    >>> section("---\\nLATEST DETECTED DEADLOCK\\n---\\n2026-01-02 03:04:05 0x7f\\n*** x\\n----\\nTRANSACTIONS\\n")
    '2026-01-02 03:04:05 0x7f\\n*** x'
    >>> section("TRANSACTIONS\\n------------\\n") is None
    True
    """
    lines = status_text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == SECTION_TITLE)
    except StopIteration:
        return None
    body: List[str] = []
    for line in lines[start + 2:]:  # after the title and its dashes
        if _DASHES.match(line.strip()):
            break  # the next section's dashes
        body.append(line)
    return "\n".join(body).strip("\n") or None


def parse_lock(line: str) -> Optional[Lock]:
    """A lock line of the section, or None for another line.

    >>> parse_lock("RECORD LOCKS space id 5 page no 3 n bits 320 index PRIMARY of table `d`.`t` "
    ...            "trx id 24 lock_mode X locks rec but not gap waiting").text
    'RECORD X locks rec but not gap on `d`.`t` index PRIMARY'
    >>> lock = parse_lock("TABLE LOCK table `d`.`t` trx id 7 lock mode IX")
    >>> (lock.kind, lock.mode, lock.trx, lock.waiting)
    ('TABLE', 'IX', '7', False)
    """
    match = _LOCK_LINE.match(line.strip())
    if not match:
        return None
    kind = "RECORD" if match.group(1) == "RECORD LOCKS" else "TABLE"
    rest = match.group(3).strip()
    waiting = rest.endswith(" waiting")
    mode = re.sub(r"^lock[_ ]mode ", "", rest[:-len(" waiting")] if waiting else rest)
    index = _INDEX.search(line)
    table = index.group(2) if index else (_TABLE.search(line).group(1) if _TABLE.search(line) else "?")
    return Lock(kind, table, index.group(1) if index else None, mode, match.group(2), waiting)


def parse(body: str) -> Deadlock:
    """The deadlock of a section's body (see :func:`section`).

    >>> d = parse('''2026-11-25 17:33:42 0x7f3eec1696c0
    ... *** (1) TRANSACTION:
    ... TRANSACTION 34, ACTIVE 0 sec starting index read
    ... MariaDB thread id 21, OS thread handle 1399, query id 69 localhost root Updating
    ... UPDATE t SET v=21 WHERE id=1
    ... *** WAITING FOR THIS LOCK TO BE GRANTED:
    ... RECORD LOCKS space id 5 page no 3 n bits 320 index PRIMARY of table `test`.`t` trx id 34 lock_mode X waiting
    ... *** CONFLICTING WITH:
    ... RECORD LOCKS space id 5 page no 3 n bits 320 index PRIMARY of table `test`.`t` trx id 33 lock_mode X
    ... *** (2) TRANSACTION:
    ... TRANSACTION 33, ACTIVE 1 sec starting index read
    ... MariaDB thread id 20, OS thread handle 1398, query id 68 localhost root Updating
    ... UPDATE t SET v=11 WHERE id=2
    ... *** WE ROLL BACK TRANSACTION (1)''')
    >>> d.when, [(t.thread, t.statement, t.rolled_back) for t in d.transactions]
    ('2026-11-25 17:33:42', [(21, 'UPDATE t SET v=21 WHERE id=1', True), (20, 'UPDATE t SET v=11 WHERE id=2', False)])
    >>> [lock.text for lock in d.transactions[1].holds]
    ['RECORD X on `test`.`t` index PRIMARY']
    """
    lines = body.splitlines()
    when = next((m.group(1) for m in map(_WHEN.match, lines) if m), None)
    blocks: Dict[int, List[str]] = {}
    rolled_back: Optional[int] = None
    current: Optional[int] = None
    for line in lines:
        start = _TRX_START.match(line)
        if start:
            current = int(start.group(1))
            blocks[current] = []
            continue
        victim = _ROLLED_BACK.match(line)
        if victim:
            rolled_back, current = int(victim.group(1)), None
            continue
        if current is not None:
            blocks[current].append(line)
    locks = [lock for lock in map(parse_lock, lines) if lock is not None]
    transactions = tuple(_transaction(number, block, locks, number == rolled_back)
                         for number, block in sorted(blocks.items()))
    return Deadlock(when, transactions)


def _transaction(number: int, block: Sequence[str], locks: Sequence[Lock], rolled_back: bool) -> DeadlockTransaction:
    trx = active = thread = host = user = None
    statement: List[str] = []
    in_statement = False
    waits_for: Optional[Lock] = None
    for line in block:
        if line.startswith("***"):
            in_statement = False
            continue
        found = _TRX_LINE.match(line)
        if found:
            trx, active = found.group(1), int(found.group(2))
            continue
        found = _THREAD_LINE.match(line)
        if found:
            thread, host, user = int(found.group(1)), found.group(2), found.group(3)
            in_statement = True  # the statement follows, maybe on several lines
            continue
        lock = parse_lock(line)
        if lock is not None:
            in_statement = False
            if lock.waiting and waits_for is None and (trx is None or lock.trx == trx):
                waits_for = lock
        elif in_statement and line.strip():
            statement.append(line.strip())
    holds = tuple(dict.fromkeys(lock for lock in locks if trx is not None and lock.trx == trx and not lock.waiting))
    return DeadlockTransaction(number, trx, active, thread, host, user, " ".join(statement), waits_for, holds,
                               rolled_back)


def latest(status_text: str) -> Optional[Deadlock]:
    """The latest deadlock of a whole SHOW ENGINE INNODB STATUS text, or None."""
    body = section(status_text)
    return parse(body) if body is not None else None
