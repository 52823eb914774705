"""Several admin endpoints from ``-H``: repeated (``-H a -H b``) or comma-separated
(``-H a:6032,b:6032``), each ``host``, ``host:port`` or ``[IPv6]:port``.

Kept apart from the rest of the option handling so that other sources of endpoints (a
configuration file's node sections) can be turned into the same list.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import List, Optional, Sequence, Tuple

from proxytop.config.tls import DEFAULT as TLS_DEFAULT, TLSSettings

DEFAULT_TIMEOUT = 3.0  # seconds to connect, read or write, unless --connect-timeout says otherwise


@dataclass(frozen=True)
class Endpoint:
    """Where and as whom to connect. The password is never shown (repr hides it)."""

    host: str = "127.0.0.1"
    port: int = 6032
    user: str = "admin"
    password: str = field(default="admin", repr=False)
    socket: Optional[str] = None
    timeout: float = DEFAULT_TIMEOUT
    tls: TLSSettings = TLS_DEFAULT

    @property
    def label(self) -> str:
        return self.socket if self.socket else f"{self.host}:{self.port}"


class HostError(ValueError):
    """A -H value that is not host[:port]."""


def split_hosts(values: Optional[Sequence[str]]) -> List[Tuple[str, Optional[int]]]:
    """Every (host, port or None) named by the -H values, in order, without repeats.

    >>> split_hosts(["10.0.0.1:6032,10.0.0.2", "db3:7032"])
    [('10.0.0.1', 6032), ('10.0.0.2', None), ('db3', 7032)]
    >>> split_hosts(["[::1]:6032", "::1"]), split_hosts(None)
    ([('::1', 6032), ('::1', None)], [])
    """
    found: List[Tuple[str, Optional[int]]] = []
    for value in values or ():
        for item in str(value).split(","):
            item = item.strip()
            if not item:
                continue
            parsed = _host_port(item)
            if parsed not in found:
                found.append(parsed)
    return found


def _host_port(item: str) -> Tuple[str, Optional[int]]:
    if item.startswith("["):
        host, sep, rest = item[1:].partition("]")
        if not sep or not host:
            raise HostError(f"'{item}': an IPv6 address is written [address]:port")
        if not rest:
            return host, None
        if not rest.startswith(":"):
            raise HostError(f"'{item}' is not host:port")
        return host, _port(rest[1:], item)
    if item.count(":") == 1:
        host, port = item.split(":")
        if not host:
            raise HostError(f"'{item}' has no host name")
        return host, _port(port, item)
    return item, None  # a name, an IPv4 address, or a bare IPv6 address


def _port(text: str, item: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise HostError(f"'{item}': '{text}' is not a port number") from None
    if not 1 <= port <= 65535:
        raise HostError(f"'{item}': a port is between 1 and 65535")
    return port


def endpoint_list(hosts: Sequence[Tuple[str, Optional[int]]], base: Endpoint) -> Tuple[Endpoint, ...]:
    """One Endpoint per (host, port): the credentials, timeout and default port of ``base``
    (the resolved -u/-p/-P settings). No hosts: just ``base``.

    >>> base = Endpoint(host="127.0.0.1", port=6032, user="radmin", password="x")
    >>> [(e.label, e.user) for e in endpoint_list([("a", None), ("b", 7032)], base)]
    [('a:6032', 'radmin'), ('b:7032', 'radmin')]
    """
    if not hosts:
        return (base,)
    return tuple(replace(base, host=host, port=port if port is not None else base.port, socket=None)
                 for host, port in hosts)
