"""The server side of the MySQL protocol, shared by the test doubles (tests/proxysql_double.py,
tests/mysql8_double.py): a listening port, the handshake (mysql_native_password, or
caching_sha2_password's full authentication with the server's RSA key), optional TLS,
COM_QUERY answered with text result sets or errors, COM_PING, COM_INIT_DB and COM_QUIT.

A double subclasses :class:`ProtocolServer` and says who may log in (``password_of``), what the
handshake announces (``handshake_version``) and how a session answers a statement
(``open_session(user).query(sql)``: None for an OK packet, (columns, rows) for a result set of
text columns, (columns, rows, column types) for typed ones, or :class:`QueryError`). Every
statement received is kept in ``query_log``.
"""
from __future__ import annotations

import hashlib
import os
import socket
import ssl
import struct
import threading
import time
from typing import List, Optional, Tuple

# capability flags we announce (no SSL, no CONNECT_ATTRS, no DEPRECATE_EOF: classic EOF packets)
CAPABILITIES = (1 | 2 | 4 | 8 | 0x200 | 0x2000 | 0x8000 | 0x10000 | 0x20000 | 0x80000)
CLIENT_CONNECT_WITH_DB = 8
CLIENT_SSL = 0x800  # announced only by a double given a TLS context (tls=)
VAR_STRING = 253
LONGLONG = 8  # a BIGINT column: the client reads its values as integers


def text_value(value) -> Optional[bytes]:
    """A value as the text protocol sends it (None is SQL NULL)."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).encode("utf-8")


def lenenc_int(n: int) -> bytes:
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + struct.pack("<H", n)
    if n < 1 << 24:
        return b"\xfd" + struct.pack("<I", n)[:3]
    return b"\xfe" + struct.pack("<Q", n)


def lenenc_str(data: bytes) -> bytes:
    return lenenc_int(len(data)) + data


def native_password_token(password: str, scramble: bytes) -> bytes:
    if not password:
        return b""
    stage1 = hashlib.sha1(password.encode()).digest()
    stage2 = hashlib.sha1(stage1).digest()
    mix = hashlib.sha1(scramble + stage2).digest()
    return bytes(a ^ b for a, b in zip(stage1, mix))


class ClientGone(Exception):
    pass


class QueryError(Exception):
    """What a session raises to answer a statement with an error packet."""

    def __init__(self, code: int, message: str, state: str = "HY000"):
        super().__init__(message)
        self.code, self.message, self.state = code, message, state


def close_gently(sock: socket.socket) -> None:
    """End a failed TLS handshake so its alert reaches the client: closing at once, with the
    client's first packet still unread, sends a reset that can overtake the alert (the client
    then sees only a lost connection instead of, say, "certificate required")."""
    try:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(1.0)
        while sock.recv(4096):
            pass
    except OSError:
        pass


class PacketIO:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.seq = 0

    def _read_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ClientGone()
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def read(self) -> bytes:
        payload = b""
        while True:
            header = self._read_exact(4)
            length = header[0] | header[1] << 8 | header[2] << 16
            self.seq = (header[3] + 1) % 256
            payload += self._read_exact(length)
            if length < 0xFFFFFF:
                return payload

    def write(self, payload: bytes) -> None:
        self.sock.sendall(self.frame(payload))

    def frame(self, payload: bytes) -> bytes:
        out = []
        while True:
            part, payload = payload[:0xFFFFFF], payload[0xFFFFFF:]
            out.append(struct.pack("<I", len(part))[:3] + bytes([self.seq]) + part)
            self.seq = (self.seq + 1) % 256
            if len(part) < 0xFFFFFF:
                break
        return b"".join(out)

    def write_many(self, payloads) -> None:
        """Packets sent in chunks of about 64 KiB rather than one send each, as ProxySQL does:
        it queues a result's packets and writes its output buffer whole (MySQL_Data_Stream::
        write_to_net), so a small result (column count, definitions, rows, EOF) arrives in one
        segment. One send per packet made the client wait and wake up for each one: the
        reading thread's CPU per refresh doubled on ConnPool, a cost a real ProxySQL never gives."""
        chunk, size = [], 0
        for payload in payloads:
            chunk.append(self.frame(payload))
            size += len(chunk[-1])
            if size >= 65536:
                self.sock.sendall(b"".join(chunk))
                chunk, size = [], 0
        if chunk:
            self.sock.sendall(b"".join(chunk))


def ok_packet() -> bytes:
    return b"\x00" + lenenc_int(0) + lenenc_int(0) + struct.pack("<HH", 2, 0)


def eof_packet() -> bytes:
    return b"\xfe" + struct.pack("<HH", 0, 2)


def err_packet(code: int, message: str, state: str = "28000") -> bytes:
    return b"\xff" + struct.pack("<H", code) + b"#" + state.encode() + message.encode("utf-8", "replace")


def column_definition(name: str, type_code: int = VAR_STRING) -> bytes:
    charset = 33 if type_code == VAR_STRING else 63  # utf8 text, or binary for a number
    return (lenenc_str(b"def") + lenenc_str(b"") + lenenc_str(b"") + lenenc_str(b"")
            + lenenc_str(name.encode("utf-8")) + lenenc_str(name.encode("utf-8"))
            + b"\x0c" + struct.pack("<HIBHB", charset, 255, type_code, 0, 0) + b"\x00\x00")


class ProtocolServer:
    """Start with ``start()``; ``port`` is then the listening port. Thread-safe controls:
    ``stop``, ``restart``, ``hang``."""

    unsupported_command = "Command not supported"  # the error text of a command other than those above

    def __init__(self, port: int = 0, host: str = "127.0.0.1", tls=None, sha2_rsa_key=None):
        # A cryptography RSA private key: accounts log in with caching_sha2_password and always
        # take its full authentication (nothing cached), where a client without TLS encrypts
        # the password with this key's public half, as MySQL 8 after a restart.
        self.sha2_rsa_key = sha2_rsa_key
        self.rsa_logins = 0  # logins whose password came encrypted with that key
        self.tls = tls  # an ssl.SSLContext (server side): offer TLS
        self.tls_sessions: List[str] = []  # the TLS version of each client that switched to TLS
        self.host = host
        self.port = port
        self.query_log: List[Tuple[float, str, str]] = []  # (time, user, sql)
        self.hanging = False
        self._lock = threading.Lock()
        self._listener: Optional[socket.socket] = None
        self._clients: List[socket.socket] = []
        self._accept_thread: Optional[threading.Thread] = None
        self._next_id = 1
        self._running = False

    # --- what a double says ---
    def handshake_version(self) -> str:
        raise NotImplementedError

    def password_of(self, user: str) -> Optional[str]:
        """The account's password; None: no such account."""
        raise NotImplementedError

    def access_denied(self, user: str, with_password: bool) -> str:
        return f"Access denied for user '{user}'@'127.0.0.1' (using password: {'YES' if with_password else 'NO'})"

    def open_session(self, user: str, conn_id: int):
        """An object whose ``query(sql)`` answers each statement of one connection."""
        raise NotImplementedError

    def init_db(self, session, schema: str) -> None:
        """COM_INIT_DB (PyMySQL's select_db): accepted; a double may remember it."""

    # --- controls ---
    def start(self):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        self._running = True
        self._accept_thread = threading.Thread(target=self._accept_loop, args=(listener,), daemon=True)
        self._accept_thread.start()
        return self

    def stop(self) -> None:
        """Close the port and every client connection: like the server going down."""
        self._running = False
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        with self._lock:
            clients, self._clients = self._clients, []
        for client in clients:
            try:
                client.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            client.close()

    def restart(self) -> None:
        self.stop()
        self.start()

    def hang(self, on: bool = True) -> None:
        """Accept connections and read queries but never answer (or stop doing so)."""
        self.hanging = on

    def run_until_interrupted(self) -> None:
        """Serve until Ctrl-C (a double run by hand), then stop."""
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            self.stop()

    def queries(self, user: Optional[str] = None) -> List[str]:
        with self._lock:
            return [sql for _, u, sql in self.query_log if user is None or u == user]

    # --- sessions ---
    def _accept_loop(self, listener: socket.socket) -> None:
        while self._running and self._listener is listener:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            with self._lock:
                self._clients.append(client)
                conn_id = self._next_id
                self._next_id += 1
            threading.Thread(target=self._serve, args=(client, conn_id), daemon=True).start()

    def _wait_while_hanging(self, client) -> None:
        while self.hanging and self._running and client in self._clients:
            time.sleep(0.05)

    def _serve(self, client: socket.socket, conn_id: int) -> None:
        io = PacketIO(client)
        try:
            self._wait_while_hanging(client)
            user = self._handshake(io, conn_id)
            if user is None:
                return
            session = self.open_session(user, conn_id)
            while True:
                packet = io.read()
                self._wait_while_hanging(io.sock)
                if not self._running:
                    return
                command, body = packet[0], packet[1:]
                io.seq = 1
                if command == 0x01:  # COM_QUIT
                    return
                if command == 0x0E:  # COM_PING
                    io.write(ok_packet())
                elif command == 0x02:  # COM_INIT_DB
                    self.init_db(session, body.decode("utf-8", "replace"))
                    io.write(ok_packet())
                elif command == 0x03:  # COM_QUERY
                    sql = body.decode("utf-8", "replace")
                    with self._lock:
                        self.query_log.append((time.time(), user, sql))
                    try:
                        result = session.query(sql)
                    except QueryError as exc:
                        io.write(err_packet(exc.code, exc.message, exc.state))
                        continue
                    self._send_result(io, result)
                else:
                    io.write(err_packet(1045, self.unsupported_command))
        except (ClientGone, OSError):
            pass
        finally:
            client = io.sock  # the TLS socket once the client switched to TLS
            with self._lock:
                if client in self._clients:
                    self._clients.remove(client)
            try:
                client.close()
            except OSError:
                pass

    def _handshake(self, io: PacketIO, conn_id: int) -> Optional[str]:
        scramble = os.urandom(20).replace(b"\x00", b"\x01")
        capabilities = CAPABILITIES | (CLIENT_SSL if self.tls is not None else 0)
        greeting = (b"\x0a" + self.handshake_version().encode() + b"\x00" + struct.pack("<I", conn_id)
                    + scramble[:8] + b"\x00" + struct.pack("<H", capabilities & 0xFFFF) + b"\x21"
                    + struct.pack("<H", 2) + struct.pack("<H", capabilities >> 16) + bytes([21])
                    + b"\x00" * 10 + scramble[8:] + b"\x00"
                    + (b"caching_sha2_password\x00" if self.sha2_rsa_key is not None else b"mysql_native_password\x00"))
        io.seq = 0
        io.write(greeting)
        response = io.read()
        if self.tls is not None and len(response) == 32 and struct.unpack("<I", response[:4])[0] & CLIENT_SSL:
            # An SSL request: the client's flags alone; TLS starts, then the real handshake response.
            plain = io.sock
            io.sock = self.tls.wrap_socket(plain, server_side=True, do_handshake_on_connect=False)
            try:
                io.sock.do_handshake()
            except ssl.SSLError:
                close_gently(io.sock)
                raise ClientGone() from None
            with self._lock:
                self._clients = [io.sock if c is plain else c for c in self._clients]
                self.tls_sessions.append(io.sock.version() or "TLS")
            response = io.read()
        pos = 32  # after the client flags, packet size, charset and filler
        end = response.index(b"\x00", pos)
        user = response[pos:end].decode("utf-8", "replace")
        pos = end + 1
        token_len = response[pos]
        token = response[pos + 1: pos + 1 + token_len]
        known = self.password_of(user)
        if self.sha2_rsa_key is not None:
            password = self._sha2_full_authentication(io, scramble)
            if known is not None and password == known:
                io.write(ok_packet())
                return user
            io.write(err_packet(1045, self.access_denied(user, bool(password))))
            return None
        if known is None or token != native_password_token(known, scramble):
            io.write(err_packet(1045, self.access_denied(user, bool(token))))
            return None
        io.write(ok_packet())
        return user

    def _sha2_full_authentication(self, io: PacketIO, scramble: bytes) -> Optional[str]:
        """caching_sha2_password's full authentication (the client's fast-auth token is not
        checked: nothing is cached): the password, or None if the client gave none."""
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding

        io.write(b"\x01\x04")  # extra auth data: perform full authentication
        request = io.read()
        if request in (b"", b"\x00"):
            return None
        if request == b"\x02":  # the client asks for the public key (no TLS)
            public = self.sha2_rsa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            io.write(b"\x01" + public)
            encrypted = io.read()
            message = self.sha2_rsa_key.decrypt(encrypted, padding.OAEP(
                mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None))
            plain = bytes(b ^ scramble[i % len(scramble)] for i, b in enumerate(message))
            with self._lock:
                self.rsa_logins += 1
        else:
            plain = request  # the clear password, over TLS
        return plain.rstrip(b"\x00").decode("utf-8", "replace")

    def _send_result(self, io: PacketIO, result) -> None:
        if result is None:
            io.write(ok_packet())
            return
        columns, rows = result[0], result[1]
        types = result[2] if len(result) > 2 else [VAR_STRING] * len(columns)

        def packets():
            yield lenenc_int(len(columns))
            for name, type_code in zip(columns, types):
                yield column_definition(name, type_code)
            yield eof_packet()
            for row in rows:
                parts = []
                for value in row:
                    data = text_value(value)
                    parts.append(b"\xfb" if data is None else lenenc_str(data))
                yield b"".join(parts)
            yield eof_packet()
        io.write_many(packets())
