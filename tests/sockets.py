"""Network stand-ins for the tests: a server that accepts connections and never answers."""
from __future__ import annotations

import socket
import threading
from contextlib import contextmanager
from typing import Iterator, List


@contextmanager
def silent_server() -> Iterator[int]:
    """A port that accepts TCP connections and never sends a byte (a hung server)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: List[socket.socket] = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:  # socket.timeout included
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        for conn in held:
            conn.close()
        listener.close()
