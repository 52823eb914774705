"""Which query rules a digest meets, evaluated in proxytop the way ProxySQL's query processor
does it (lib/Query_Processor.cpp, ``process_mysql_query``). Pure functions.

ProxySQL walks its active rules in rule_id order. A rule is skipped unless its flagIN equals
the current flag (0 at first) and every field it sets matches: username and schemaname
exactly (case-sensitive), client_addr (a trailing ``%`` is a prefix wildcard, ``%`` alone
matches all), proxy_addr / proxy_port, the digest hash, match_digest (a regex *searched* in
the digest text) and match_pattern (searched in the query text); negate_match_pattern inverts
both regexes; re_modifiers CASELESS makes them case-insensitive. A matching rule sets the
destination hostgroup (when >= 0) and, with flagOUT, the flag the *following* rules must
carry; apply=1 ends the evaluation. With mysql-query_processor_iterations > 0 a flagOUT
starts the walk again from the first rule, that many times at most. No rule setting a
destination leaves the query on the user's default hostgroup.

Some fields are not in the digest: the raw query text (match_pattern), the proxy address and
port, and the client address when mysql-query_digests_track_hostname is off. A rule that
depends on them is *undecided*: proxytop says it can't tell instead of guessing, and follows
the route on which that rule does not match. So is a rule whose regex Python rejects.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple

from proxytop.metrics.rates import to_number

MATCHED, UNDECIDED = "matched", "undecided"


@dataclass(frozen=True)
class Rule:
    """One active runtime query rule, with its regexes compiled (or why they can't be)."""

    rule_id: int
    flag_in: int = 0
    username: Optional[str] = None
    schemaname: Optional[str] = None
    client_addr: Optional[str] = None
    proxy_addr: Optional[str] = None
    proxy_port: Optional[int] = None
    digest: Optional[int] = None
    match_digest: Optional[str] = None
    match_pattern: Optional[str] = None
    negate: bool = False
    caseless: bool = False
    flag_out: Optional[int] = None
    destination: Optional[int] = None
    apply: bool = False
    cache_ttl: Optional[int] = None
    error_msg: Optional[str] = None
    ok_msg: Optional[str] = None
    next_query_flag_in: Optional[int] = None
    comment: Optional[str] = None
    digest_regex: Any = field(default=None, compare=False, repr=False)
    problem: Optional[str] = None  # why this rule can't be evaluated in proxytop


@dataclass(frozen=True)
class Query:
    """What the digest table tells of a query: who sent it, where, and its digest."""

    digest: Optional[int]
    digest_text: Optional[str]
    username: str = ""
    schemaname: str = ""
    client_address: str = ""  # "" when ProxySQL does not track client addresses


@dataclass(frozen=True)
class Step:
    """A rule the query reached with the right flagIN: matched, or undecided (and why)."""

    rule: Rule
    outcome: str
    fields: Tuple[str, ...] = ()  # what matched (or, undecided: what proxytop can't see)
    flag_in: int = 0

    @property
    def matched(self) -> bool:
        return self.outcome == MATCHED


@dataclass(frozen=True)
class Route:
    steps: Tuple[Step, ...]
    destination: Optional[int]  # set by a rule; None: the user's default hostgroup
    ended_by: Optional[int]  # rule_id of the rule with apply=1 that ended it
    flag: int = 0  # the flag after the last rule
    cache_ttl: Optional[int] = None
    answered_by_proxysql: Optional[str] = None  # error_msg / OK_msg of a matched rule

    @property
    def matched_ids(self) -> Tuple[int, ...]:
        return tuple(s.rule.rule_id for s in self.steps if s.matched)

    @property
    def undecided(self) -> Tuple[Step, ...]:
        return tuple(s for s in self.steps if not s.matched)

    def passes(self, rule_id: int) -> bool:
        return rule_id in self.matched_ids


def _empty(value: Any) -> bool:
    return value is None or value == ""


def _int(value: Any) -> Optional[int]:
    number = to_number(value)
    return int(number) if number is not None else None


def parse_digest(value: Any) -> Optional[int]:
    """A digest as ProxySQL reads it (strtoull with base 0): '0x...' hex, else decimal.

    >>> parse_digest("0x3A2B"), parse_digest("15019"), parse_digest(""), parse_digest("zz")
    (14891, 15019, None, None)
    """
    if _empty(value):
        return None
    text = str(value).strip()
    try:
        number = int(text, 16) if text[:2].lower() == "0x" else int(text, 10)
    except ValueError:
        return None
    return number if 0 < number < 2 ** 64 - 1 else None


def modifiers(text: Any) -> Tuple[bool, bool]:
    """(CASELESS, GLOBAL) from re_modifiers: comma-separated, case-insensitive prefixes, as
    ProxySQL's tokenizer reads them (no trimming: ' GLOBAL' is not GLOBAL).

    >>> modifiers("CASELESS"), modifiers("caseless,GLOBAL"), modifiers(None), modifiers("CASELESS, GLOBAL")
    ((True, False), (True, True), (False, False), (True, False))
    """
    caseless = global_ = False
    for token in str(text or "").split(","):
        if not token:
            continue
        if token.upper().startswith("CASELESS"):
            caseless = True
        if token.upper().startswith("GLOBAL"):
            global_ = True
    return caseless, global_


def compile_rule(definition: Mapping) -> Rule:
    """A runtime_mysql_query_rules row (values as text, NULL as None) as a Rule."""
    caseless, _global = modifiers(definition.get("re_modifiers"))
    match_digest = None if _empty(definition.get("match_digest")) else str(definition.get("match_digest"))
    digest_regex, problem = None, None
    if match_digest is not None:
        try:
            digest_regex = re.compile(match_digest, re.IGNORECASE if caseless else 0)
        except (re.error, RecursionError, OverflowError) as exc:
            problem = f"match_digest {match_digest!r} is a pattern Python can't compile ({exc}): can't decide"
    digest_text = definition.get("digest")
    digest = parse_digest(digest_text)
    if not _empty(digest_text) and digest is None and problem is None:
        # ProxySQL logs "Incorrect digest" and then evaluates the rule without a digest.
        problem = f"digest {digest_text!r} is not a digest ProxySQL accepts: the rule ignores it"
    port = _int(definition.get("proxy_port"))
    return Rule(
        rule_id=_int(definition.get("rule_id")) or 0,
        flag_in=_int(definition.get("flagIN")) or 0,
        username=None if _empty(definition.get("username")) else str(definition.get("username")),
        # runtime_pgsql_query_rules names it ``database``; ProxySQL compares it the same way
        schemaname=None if _empty(_schema(definition)) else str(_schema(definition)),
        client_addr=None if _empty(definition.get("client_addr")) else str(definition.get("client_addr")),
        proxy_addr=None if _empty(definition.get("proxy_addr")) else str(definition.get("proxy_addr")),
        proxy_port=port if port is not None and port >= 0 else None,
        digest=digest,
        match_digest=match_digest,
        match_pattern=None if _empty(definition.get("match_pattern")) else str(definition.get("match_pattern")),
        negate=bool(_int(definition.get("negate_match_pattern"))),
        caseless=caseless,
        flag_out=_nonnegative(definition.get("flagOUT")),
        destination=_nonnegative(definition.get("destination_hostgroup")),
        apply=bool(_int(definition.get("apply"))),
        cache_ttl=_nonnegative(definition.get("cache_ttl")),
        error_msg=None if _empty(definition.get("error_msg")) else str(definition.get("error_msg")),
        ok_msg=None if _empty(definition.get("OK_msg")) else str(definition.get("OK_msg")),
        next_query_flag_in=_nonnegative(definition.get("next_query_flagIN")),
        comment=None if _empty(definition.get("comment")) else str(definition.get("comment")),
        digest_regex=digest_regex,
        problem=problem,
    )


def _schema(definition: Mapping) -> Any:
    """A rule's schema: ``schemaname`` on the MySQL side, ``database`` on the PostgreSQL side.

    >>> _schema({"schemaname": "app"}), _schema({"database": "sbtest"}), _schema({"database": None})
    ('app', 'sbtest', None)
    """
    return definition["schemaname"] if "schemaname" in definition else definition.get("database")


def _nonnegative(value: Any) -> Optional[int]:
    """ProxySQL's "-1 / NULL = this rule doesn't change it" columns."""
    number = _int(value)
    return number if number is not None and number >= 0 else None


def compile_rules(definitions: Iterable[Mapping]) -> Tuple[Rule, ...]:
    """The rules ProxySQL evaluates: active ones, in rule_id order."""
    rules = [compile_rule(d) for d in definitions if _int(d.get("active")) != 0]
    return tuple(sorted(rules, key=lambda r: r.rule_id))


def _client_matches(pattern: str, address: str) -> bool:
    """client_addr: exact, or a prefix up to a ``%`` wildcard; ``%`` alone matches every client.

    >>> _client_matches("10.0.%", "10.0.3.4"), _client_matches("%", "x"), _client_matches("10.0.0.1", "10.0.0.12")
    (True, True, False)
    """
    at = pattern.find("%")
    if at < 0:
        return pattern == address
    return at == 0 or address.startswith(pattern[:at])


def check(rule: Rule, query: Query) -> Tuple[Optional[bool], Tuple[str, ...]]:
    """Does ``rule`` match ``query`` (flagIN aside)? (True, fields that matched), (False, ()),
    or (None, what proxytop can't see) when it can't be decided from the digest."""
    matched: List[str] = []
    unknown: List[str] = []
    if rule.username is not None:
        if rule.username != query.username:
            return False, ()
        matched.append(f"username={rule.username}")
    if rule.schemaname is not None:
        if rule.schemaname != query.schemaname:
            return False, ()
        matched.append(f"schemaname={rule.schemaname}")
    if rule.client_addr is not None:
        if not query.client_address:
            unknown.append("client_addr (client addresses are not tracked: mysql-query_digests_track_hostname)")
        elif not _client_matches(rule.client_addr, query.client_address):
            return False, ()
        else:
            matched.append(f"client_addr={rule.client_addr}")
    if rule.proxy_addr is not None:
        unknown.append(f"proxy_addr={rule.proxy_addr} (the digest does not say which address a client used)")
    if rule.proxy_port is not None:
        unknown.append(f"proxy_port={rule.proxy_port} (the digest does not say which port a client used)")
    if rule.digest is not None and query.digest is not None:
        if rule.digest != query.digest:
            return False, ()
        matched.append("digest")
    if rule.match_digest is not None and query.digest_text is not None:
        # ProxySQL looks at match_digest only when the query has a digest text.
        if rule.digest_regex is None:
            unknown.append(rule.problem or "match_digest")
        else:
            found = rule.digest_regex.search(query.digest_text) is not None
            if found == rule.negate:
                return False, ()
            matched.append(("NOT " if rule.negate else "") + "match_digest" + (" (CASELESS)" if rule.caseless else ""))
    if rule.match_pattern is not None:
        unknown.append("match_pattern (it runs on the query text, which the digest does not show)")
    if unknown:
        return None, tuple(unknown)
    return True, tuple(matched) or ("(matches every query)",)


def evaluate(rules: Sequence[Rule], query: Query, iterations: int = 0) -> Route:
    """The route of ``query`` through ``rules`` (see the module's docstring)."""
    steps: List[Step] = []
    flag = 0
    destination = None
    cache_ttl = None
    answered = None
    reiterate = max(0, iterations)
    restart = True
    while restart:
        restart = False
        for rule in rules:
            if rule.flag_in != flag:
                continue
            outcome, fields = check(rule, query)
            if outcome is False:
                continue
            if outcome is None:
                steps.append(Step(rule, UNDECIDED, fields, flag))
                continue
            steps.append(Step(rule, MATCHED, fields, flag))
            flag_set = False
            if rule.flag_out is not None:
                flag, flag_set = rule.flag_out, True
            if rule.destination is not None:
                destination = rule.destination
            if rule.cache_ttl is not None:
                cache_ttl = rule.cache_ttl
            if rule.error_msg or rule.ok_msg:
                answered = rule.error_msg or rule.ok_msg
            if rule.apply:
                return Route(tuple(steps), destination, rule.rule_id, flag, cache_ttl, answered)
            if flag_set and reiterate:
                reiterate -= 1
                restart = True
                break
    return Route(tuple(steps), destination, None, flag, cache_ttl, answered)
