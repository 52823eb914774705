"""InnoDB lock waits as chains: the transaction at the head blocks others and waits for none;
under it each of its waiters, under each waiter the transactions that wait for that one in
turn. Pure functions of the (waiter, blocker) pairs a server lists, and the header alarm's
line.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from proxytop.metrics import units


@dataclass(frozen=True)
class ChainNode:
    """One transaction's place in a chain."""

    chain: int  # the chain's number, longest wait first
    order: int  # its place in the chain, the head first, each waiter under what it waits for
    depth: int  # 0 for the head
    trx: str
    blocked_by: Optional[str]  # the transaction it is shown under (None for the head)
    also_blocked_by: Tuple[str, ...] = ()  # other blockers (a wait can conflict with several locks)
    in_cycle: bool = False  # no transaction of the chain waits for nothing: a deadlock not broken yet


def chains(pairs: Sequence[Tuple[str, str]], wait_s: Mapping[str, Optional[float]]) -> List[Tuple[ChainNode, ...]]:
    """The chains of the (waiter, blocker) pairs, longest wait first; ``wait_s`` is each
    waiting transaction's wait. A transaction shows once, under the first of its blockers; a
    cycle (a deadlock InnoDB does not break, innodb_deadlock_detect=OFF) is shown from its
    longest waiter, marked.

    >>> three = chains([("B", "A"), ("C", "B"), ("D", "A")], {"B": 30, "C": 5, "D": 40})
    >>> [(n.depth, n.trx, n.blocked_by) for n in three[0]]
    [(0, 'A', None), (1, 'D', 'A'), (1, 'B', 'A'), (2, 'C', 'B')]
    >>> loop = chains([("X", "Y"), ("Y", "X")], {"X": 3, "Y": 9})
    >>> [(n.trx, n.depth, n.in_cycle) for n in loop[0]]
    [('Y', 0, True), ('X', 1, True)]
    """
    blockers: Dict[str, List[str]] = {}
    for waiter, blocker in pairs:
        if waiter != blocker and blocker not in blockers.setdefault(waiter, []):
            blockers[waiter].append(blocker)
    everyone = set(blockers) | {b for listed in blockers.values() for b in listed}
    longest = {trx: wait_s.get(trx) or 0 for trx in everyone}
    shown_under: Dict[str, List[str]] = {}  # each waiter under its first blocker
    for waiter in sorted(blockers, key=lambda trx: (-longest[trx], trx)):  # the longest waiter first
        shown_under.setdefault(blockers[waiter][0], []).append(waiter)
    heads = [trx for trx in everyone if trx not in blockers]
    placed: Dict[str, None] = {}
    found: List[List[Tuple[int, str, Optional[str], bool]]] = []

    def walk(head: str, cycle: bool) -> None:
        members: List[Tuple[int, str, Optional[str], bool]] = []
        stack: List[Tuple[int, str, Optional[str]]] = [(0, head, None)]
        while stack:
            depth, trx, parent = stack.pop()
            if trx in placed:
                continue
            placed[trx] = None
            members.append((depth, trx, parent, cycle))
            # pushed in reverse: the longest waiter comes out (and shows) first
            stack += [(depth + 1, w, trx) for w in reversed(shown_under.get(trx, [])) if w not in placed]
        found.append(members)

    for head in heads:
        walk(head, False)
    while len(placed) < len(longest):  # what is left waits in a cycle
        rest = [trx for trx in longest if trx not in placed]
        walk(max(rest, key=lambda trx: (longest[trx], trx)), True)
    found.sort(key=lambda members: (-max(longest[m[1]] for m in members), members[0][1]))
    return [tuple(ChainNode(number, order, depth, trx, parent,
                            tuple(b for b in blockers.get(trx, []) if b != parent), cycle)
                  for order, (depth, trx, parent, cycle) in enumerate(members))
            for number, members in enumerate(found)]


def tree_label(depth: int, text: str) -> str:
    """The first column: a waiter indented under what it waits for.

    >>> tree_label(0, "12"), tree_label(1, "15"), tree_label(2, "19")
    ('12', '\u2514 15', '  \u2514 19')
    """
    return f"{'  ' * (depth - 1)}\u2514 {text}" if depth > 0 else text


@dataclass(frozen=True)
class LongestWait:
    """A server's longest lock wait and who blocks it (the header alarm's reading)."""

    wait_s: Optional[float]
    waiter: Optional[int]  # session ids
    blocker: Optional[int]
    blocker_trx_age: Optional[float]
    blocker_idle: bool  # no statement running: idle in its transaction


def longest_wait(waits: Sequence[Tuple[int, Optional[float], int, Optional[float], bool]]) -> Optional[LongestWait]:
    """The longest wait of (waiter, its wait, blocker, the blocker's transaction age, whether the
    blocker is idle) rows, and the head of its chain: the blocker that waits for no one (the
    one whose end frees them all), or the last one before a cycle closes.

    >>> longest_wait([(11, 5, 10, 30, False), (10, 9, 9, 60, True)])
    LongestWait(wait_s=9, waiter=10, blocker=9, blocker_trx_age=60, blocker_idle=True)
    >>> longest_wait([(11, 9, 10, 30, False), (10, 5, 9, 60, True)]).blocker
    9
    >>> longest_wait([(1, 3, 2, 9, False), (2, 4, 1, 9, False)]).blocker, longest_wait([]) is None
    (2, True)
    """
    if not waits:
        return None
    first = max(waits, key=lambda row: (row[1] or 0, -row[0]))
    waiting = {row[0]: row for row in waits}
    head, seen = first, {first[0]}
    while head[2] in waiting and head[2] not in seen:  # the blocker waits too: go up the chain
        seen.add(head[2])
        head = waiting[head[2]]
    return LongestWait(first[1], first[0], head[2], head[3], bool(head[4]))


def alarm_text(server: str, wait: Optional[LongestWait], threshold: Optional[float]) -> Optional[str]:
    """The header alarm's line for a server whose longest lock wait is past the threshold.

    >>> alarm_text("db1:3306", LongestWait(42, 77, 1234, 300, True), 10)
    'lock wait 42s on db1:3306 (blocker: thread 1234, idle in transaction 5m00s)'
    >>> alarm_text("db1:3306", LongestWait(12, 77, 1234, 20, False), 10)
    'lock wait 12s on db1:3306 (blocker: thread 1234, running a statement, transaction 20s)'
    >>> alarm_text("db1:3306", LongestWait(9, 77, 1234, 20, False), 10) is None
    True
    """
    if wait is None or wait.wait_s is None or not threshold or wait.wait_s < threshold:
        return None
    doing = "idle in transaction" if wait.blocker_idle else "running a statement, transaction"
    blocker = (f" (blocker: thread {wait.blocker}, {doing} {units.age(wait.blocker_trx_age)})"
               if wait.blocker is not None else "")
    return f"lock wait {units.age(wait.wait_s)} on {server}{blocker}"
