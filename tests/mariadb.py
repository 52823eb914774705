"""A real MariaDB server for the tests, started in a temporary directory.

``MariaDBServer`` runs ``mariadb-install-db`` and ``mariadbd`` (Debian's mariadb-server) with
``--no-defaults`` on a private socket and a free TCP port on 127.0.0.1, so it never touches a
server the machine happens to run nor /var/lib/mysql. Start-up takes about two seconds.

    server = MariaDBServer({"innodb_log_file_size": "48M"}).start()
    with server.connect() as conn: ...
    server.stop()

The session-scoped pytest fixture ``mariadb`` gives every MySQL-side test the same server
(32 MiB buffer pool, 64 MiB redo log, binary log on). Tests that need other server options
start their own with :func:`running_server` or ``MariaDBServer(...)``.

Run one by hand: ``python -m tests.mariadb`` (prints how to connect, Ctrl-C stops it).
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from typing import Dict, Iterator, List, Mapping, Optional, Sequence

import pymysql
import pytest

ROOT_USER = "root"
ROOT_PASSWORD = "proxytop-test-root"

# Small and quick: these servers live for one test session.
DEFAULT_OPTIONS: Dict[str, Optional[str]] = {
    "innodb_buffer_pool_size": "32M",
    "innodb_log_file_size": "64M",
    "innodb_buffer_pool_load_at_startup": "OFF",
    "innodb_buffer_pool_dump_at_shutdown": "OFF",
    "max_connections": "200",
    "log_bin": "mariadb-bin",
    "server_id": "1",
    "character_set_server": "utf8mb4",
}

_BINARIES = {
    "install": ("mariadb-install-db", "mysql_install_db"),
    "server": ("mariadbd", "mysqld"),
}
_SBIN = ("/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin")


class MariaDBUnavailable(RuntimeError):
    """MariaDB's binaries are not installed here."""


class MariaDBStartError(RuntimeError):
    """The server did not come up; the message carries the end of its error log."""


def find_binary(kind: str) -> str:
    for name in _BINARIES[kind]:
        found = shutil.which(name)
        if found:
            return found
        for folder in _SBIN:
            path = os.path.join(folder, name)
            if os.access(path, os.X_OK):
                return path
    raise MariaDBUnavailable(f"{' or '.join(_BINARIES[kind])} not found (install Debian's mariadb-server)")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def option_args(options: Mapping[str, Optional[str]]) -> List[str]:
    """{"innodb_log_file_size": "48M", "skip_log_bin": None} -> ['--innodb-log-file-size=48M', '--skip-log-bin']

    >>> option_args({"innodb_log_file_size": "48M", "skip_log_bin": None})
    ['--innodb-log-file-size=48M', '--skip-log-bin']
    """
    args = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        args.append(flag if value is None else f"{flag}={value}")
    return args


class MariaDBServer:
    """One throw-away MariaDB server. ``options`` are added to (and override) the defaults;
    a value of None gives a bare flag (``{"skip_log_bin": None}``)."""

    def __init__(self, options: Optional[Mapping[str, Optional[str]]] = None, name: str = "mariadb",
                 use_defaults: bool = True, port: int = 0):
        self.fixed_port = port  # 0: any free port
        merged: Dict[str, Optional[str]] = dict(DEFAULT_OPTIONS) if use_defaults else {}
        merged.update(options or {})
        if "skip_log_bin" in merged:
            merged.pop("log_bin", None)
        self.options = merged
        self.name = name
        self.host = "127.0.0.1"
        self.port = 0
        self.user = ROOT_USER
        self.password = ROOT_PASSWORD
        self.basedir: Optional[str] = None
        self.process: Optional[subprocess.Popen] = None
        self.version = ""

    # ----- where things are -------------------------------------------------------------------
    @property
    def datadir(self) -> str:
        return os.path.join(self.basedir or "", "data")

    @property
    def socket(self) -> str:
        return os.path.join(self.basedir or "", "mysqld.sock")

    @property
    def error_log(self) -> str:
        return os.path.join(self.basedir or "", "error.log")

    @property
    def tmpdir(self) -> str:
        return os.path.join(self.basedir or "", "tmp")

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def __repr__(self) -> str:  # never shows the password
        return f"MariaDBServer({self.name!r}, {self.address}, socket={self.socket!r})"

    # ----- life cycle --------------------------------------------------------------------------
    # Run as this OS user when the tests run as root (None: as root). Galera's rsync SST needs
    # "mysql": as root, the joiner's rsync daemon drops to "nobody" and can't write the datadir.
    run_as: Optional[str] = None

    def as_root(self) -> List[str]:
        """mariadbd's --user when the tests run as root; the base directory is then given to it."""
        if os.geteuid() != 0:
            return []
        if self.run_as and self.basedir:
            shutil.chown(self.basedir, self.run_as)
            os.chmod(self.basedir, 0o755)
            for folder, dirs, files in os.walk(self.basedir):
                for name in dirs + files:
                    shutil.chown(os.path.join(folder, name), self.run_as)
        return [f"--user={self.run_as or 'root'}"]

    def start(self, timeout: float = 60.0) -> "MariaDBServer":
        install = find_binary("install")
        server = find_binary("server")
        as_root = ["--user=root"] if os.geteuid() == 0 else []
        for attempt in (1, 2):  # a failed bootstrap is retried once in a fresh directory
            try:
                self._install(install, as_root, timeout)
                break
            except MariaDBStartError as exc:
                if attempt == 2:
                    raise
                print(f"tests/mariadb.py: retrying the bootstrap after: {exc}", file=sys.stderr)
        as_root = self.as_root()
        deadline = time.monotonic() + timeout
        for attempt in range(5):
            self.port = self.fixed_port or free_port()
            try:
                self._launch(server, as_root, deadline)
                break
            except MariaDBStartError as exc:
                if "already in use" in str(exc) and attempt < 4 and not self.fixed_port:
                    continue  # another process took the port between probe and bind
                self.stop()
                raise
        self._secure_root()
        return self

    def _install(self, install: str, as_root: Sequence[str], timeout: float) -> None:
        self.basedir = tempfile.mkdtemp(prefix=f"proxytop-{self.name}-")
        os.makedirs(self.tmpdir)
        innodb_sizes = {k: v for k, v in self.options.items()
                        if k in ("innodb_log_file_size", "innodb_buffer_pool_size", "innodb_page_size")}
        command = [install, "--no-defaults", f"--datadir={self.datadir}", "--auth-root-authentication-method=normal",
                   "--skip-test-db", "--skip-name-resolve", *as_root, *option_args(innodb_sizes)]
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                                stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            lines = result.stdout.decode("utf-8", "replace").strip().splitlines()
            # the cause is near the top; the tail is boilerplate advice
            important = [line for line in lines if "ERROR" in line or "rror:" in line]
            self._remove()
            raise MariaDBStartError(f"mariadb-install-db exited with {result.returncode}:\n"
                                    + "\n".join((important or lines)[:20]))

    def _launch(self, server: str, as_root: Sequence[str], deadline: float, password: str = "") -> None:
        command = [server, "--no-defaults", f"--datadir={self.datadir}", f"--socket={self.socket}",
                   f"--port={self.port}", f"--bind-address={self.host}", "--skip-name-resolve",
                   f"--pid-file={os.path.join(self.basedir, 'mysqld.pid')}", f"--log-error={self.error_log}",
                   f"--tmpdir={self.tmpdir}", *as_root, *option_args(self.options)]
        log_start = os.path.getsize(self.error_log) if os.path.exists(self.error_log) else 0
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        last_error = ""
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise MariaDBStartError(f"mariadbd exited with {self.process.returncode}:\n"
                                        + self.log_tail(since=log_start))
            try:
                conn = pymysql.connect(unix_socket=self.socket, user=ROOT_USER, password=password, connect_timeout=2)
            except pymysql.err.MySQLError as exc:
                last_error = str(exc)
                time.sleep(0.05)
                continue
            conn.close()
            return
        raise MariaDBStartError(f"mariadbd not ready in time ({last_error}):\n" + self.log_tail(since=log_start))

    def _secure_root(self) -> None:
        """Give root a password on every host entry, as a DBA's server would have."""
        conn = pymysql.connect(unix_socket=self.socket, user=ROOT_USER, password="", autocommit=True)
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT Host FROM mysql.user WHERE User = 'root'")
                hosts = [row[0] for row in cursor.fetchall()]
                for host in hosts:
                    if host in ("localhost", "127.0.0.1", "::1"):
                        cursor.execute("ALTER USER 'root'@%s IDENTIFIED BY %s", (host, self.password))
                    else:
                        cursor.execute("DROP USER 'root'@%s", (host,))
                cursor.execute("SELECT VERSION()")
                self.version = cursor.fetchone()[0]
        finally:
            conn.close()

    def restart(self, timeout: float = 60.0) -> "MariaDBServer":
        """Start mariadbd again on the same data, port and socket, after ``process.kill()``."""
        if self.running:
            raise MariaDBStartError("the server is still running")
        as_root = self.as_root()
        self._launch(find_binary("server"), as_root, time.monotonic() + timeout, password=self.password)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """A clean shutdown (SIGTERM), killed if it takes longer than ``timeout``."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            try:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        self._remove()

    def _remove(self) -> None:
        if self.basedir and not os.environ.get("PROXYTOP_KEEP_MARIADB"):
            shutil.rmtree(self.basedir, ignore_errors=True)

    def __enter__(self) -> "MariaDBServer":
        return self.start() if not self.running else self

    def __exit__(self, *exc) -> None:
        self.stop()

    # ----- helpers for tests --------------------------------------------------------------------
    def connect(self, user: Optional[str] = None, password: Optional[str] = None, via_socket: bool = False,
                **kwargs) -> pymysql.connections.Connection:
        """A PyMySQL connection (root unless told otherwise), autocommit on."""
        kwargs.setdefault("autocommit", True)
        kwargs.setdefault("connect_timeout", 5)
        if user is None:
            user, password = self.user, self.password
        if via_socket:
            kwargs["unix_socket"] = self.socket
        else:
            kwargs.update(host=self.host, port=self.port)
        return pymysql.connect(user=user, password=password or "", **kwargs)

    def query(self, sql: str, args=None) -> List[tuple]:
        """Run one statement as root and return its rows."""
        conn = self.connect()
        try:
            with conn.cursor() as cursor:
                cursor.execute(sql, args)
                return list(cursor.fetchall())
        finally:
            conn.close()

    def create_user(self, user: str, password: str, grants: Sequence[str] = ("USAGE",), on: str = "*.*",
                    host: str = "%") -> None:
        """CREATE USER (replacing an earlier one) with the given privileges."""
        conn = self.connect()
        try:
            with conn.cursor() as cursor:
                cursor.execute("DROP USER IF EXISTS %s@%s", (user, host))
                cursor.execute("CREATE USER %s@%s IDENTIFIED BY %s", (user, host, password))
                cursor.execute(f"GRANT {', '.join(grants)} ON {on} TO %s@%s", (user, host))
        finally:
            conn.close()

    def log_tail(self, lines: int = 20, since: int = 0) -> str:
        try:
            with open(self.error_log, "rb") as handle:
                handle.seek(since)
                text = handle.read().decode("utf-8", "replace")
        except OSError:
            return "(no error log)"
        return "\n".join(text.strip().splitlines()[-lines:])


@contextmanager
def running_server(options: Optional[Mapping[str, Optional[str]]] = None, name: str = "mariadb") -> Iterator[MariaDBServer]:
    """A server for one test or module: ``with running_server({...}) as server:``."""
    server = start_or_skip(options, name)
    try:
        yield server
    finally:
        server.stop()


def start_or_skip(options: Optional[Mapping[str, Optional[str]]] = None, name: str = "mariadb") -> MariaDBServer:
    """Start a server; skip the test when MariaDB is not installed (fail instead under CI)."""
    try:
        return MariaDBServer(options, name=name).start()
    except MariaDBUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def mariadb() -> Iterator[MariaDBServer]:
    """The MariaDB every MySQL-side test shares (root: ``.user`` / ``.password``)."""
    server = start_or_skip(name="mariadb")
    try:
        yield server
    finally:
        server.stop()


def main() -> None:
    server = MariaDBServer().start()
    print(f"MariaDB {server.version} on {server.address} and {server.socket}; "
          f"mariadb -h{server.host} -P{server.port} -u{server.user} -p   (Ctrl-C stops it)")
    try:
        while server.running:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
