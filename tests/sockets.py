"""Network stand-ins for the tests, on 127.0.0.1: a server that accepts connections and never
answers, and one that answers in another protocol. Each stops with its block."""
from __future__ import annotations

import socket
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, List


@contextmanager
def listening(on_connection: Callable[[socket.socket], None]) -> Iterator[int]:
    """A port whose every accepted connection is handed to ``on_connection`` (on one thread),
    until the block ends."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn = listener.accept()[0]
            except OSError:  # socket.timeout included
                continue
            on_connection(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        listener.close()


@contextmanager
def silent_server() -> Iterator[int]:
    """A port that accepts TCP connections and never sends a byte (a hung server)."""
    held: List[socket.socket] = []
    try:
        with listening(held.append) as port:
            yield port
    finally:
        for conn in held:
            conn.close()


@contextmanager
def speaking_server(first: bytes) -> Iterator[int]:
    """A port that answers every connection with ``first`` (another protocol's bytes) and
    closes it."""
    def answer(conn: socket.socket) -> None:
        with conn:
            conn.sendall(first)

    with listening(answer) as port:
        yield port
