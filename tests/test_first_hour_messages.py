"""What a new user meets in the first hour when something is wrong: ProxySQL down on every
screen, a port that is not MySQL, against the real proxytop in a terminal."""
from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Optional

import pytest

from proxytop import errors
from proxytop.polling.connection import Endpoint, open_admin
from tests.sockets import silent_server, speaking_server

NOT_MYSQL = "the port did not answer as a MySQL server would"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def http_server() -> Iterator[int]:
    """An HTTP server's port: it waits for a request, and a MySQL client waits for a greeting."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def failed_connect(port: int, timeout: float):
    started = time.monotonic()
    with pytest.raises(Exception) as info:
        open_admin(Endpoint(port=port, timeout=timeout))
    return info.value, time.monotonic() - started


# ----- 15: a port that is not MySQL ------------------------------------------------------------

@pytest.mark.parametrize("kind", ["http", "silent"])
def test_a_silent_port_fails_once_within_the_timeout_and_names_the_admin_port(kind):
    with (http_server() if kind == "http" else silent_server()) as port:
        exc, took = failed_connect(port, timeout=1)
    assert 0.9 < took < 2.0, took  # one attempt, one timeout
    assert errors.is_connection_error(exc)
    text = errors.describe(exc, timeout=1)
    assert text == (f"{NOT_MYSQL} (nothing in 1 s): ProxySQL's admin port is usually 6032; "
                    "a slow server needs a longer --connect-timeout")


@pytest.mark.parametrize("first", [b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
                                   b"SSH-2.0-OpenSSH_9.6\r\n"])
def test_a_port_that_speaks_another_protocol_says_so_at_once(first):
    with speaking_server(first) as port:
        exc, took = failed_connect(port, timeout=3)
    assert took < 1.0, took
    assert errors.describe(exc) == f"{NOT_MYSQL} (another protocol): ProxySQL's admin port is usually 6032"


def test_an_http_port_is_said_in_the_header_within_the_connect_timeout(proxytop_term):
    with http_server() as port:
        started = time.monotonic()
        term = proxytop_term("-P", str(port), "--connect-timeout", "2", cols=200, rows=24)
        term.wait_for(f"disconnected, retrying (in \\d+s|now): {NOT_MYSQL} \\(nothing in 2 s\\): "
                      "ProxySQL's admin port is usually 6032", timeout=10)
        assert time.monotonic() - started < 6  # one attempt of 2 s, and the program's start
        term.send("q", pause=0)
        assert term.wait_exit(5) == 0


# ----- 14: ProxySQL down, on the IOstat and InnoDB screens -------------------------------------

def header_line(screen: str, prefix: str) -> Optional[str]:
    return next((line for line in screen.splitlines()[:3] if line.startswith(prefix)), None)


@pytest.mark.parametrize("cols", [200, 100])
def test_proxysql_down_is_in_the_iostat_header_and_innodb_says_what_to_do(proxytop_term, cols):
    port = free_port()  # nobody listens: connection refused
    term = proxytop_term("-P", str(port), "--screen", "iostat", cols=cols, rows=24)
    # at 100 columns the reason is wrapped onto lines of its own, never cut
    term.wait_until(lambda s: "Device" in s and "disconnected, retrying" in s and "connection refused" in s
                    and "\u2026" not in "".join(s.splitlines()[:4]), timeout=10,
                    what="IOstat's header saying ProxySQL is down")
    term.send("6", pause=0)
    # the hint wraps whole: the option to type is there
    term.wait_until(lambda s: "ProxySQL can't be reached" in s and "--mysql HOST[:PORT]" in " ".join(s.split())
                    and "Looking for backends" not in s, timeout=10, what="InnoDB's hint")
    term.send("q", pause=0)
    assert term.wait_exit(5) == 0
