"""Turn any failure into one plain line a DBA can act on. Never includes a password."""
from __future__ import annotations

import errno
import re
import socket
import ssl
from typing import Optional

import pymysql

# MySQL client error codes that mean the connection itself is gone.
CONNECTION_ERRNOS = {2002, 2003, 2005, 2006, 2011, 2013, 2014, 2026, 2055}
CR_SSL_CONNECTION_ERROR = 2026
_SERVER_IN_MESSAGE = re.compile(r"server on '([^']+)'")
_OPENSSL_REASON = re.compile(r"\[SSL(?:: [A-Z_0-9]+)?\]\s*(.*?)\s*(?:\(_ssl\.c:\d+\))?\)*$")
_TLS_WORDS = ("[ssl", "certificate verify failed", "tlsv1 alert", "sslv3 alert", "wrong version number",
              "ssl is required", "tls is required")


class NotProxySQLAdmin(Exception):
    """The server answered but is not a ProxySQL admin interface."""


class MySQLServerFound(NotProxySQLAdmin):
    """A MySQL server answered where a ProxySQL admin interface was expected; ``found`` says
    what it is (its version, when it said it)."""

    def __init__(self, text: str, found: str = "a MySQL server"):
        super().__init__(text)
        self.found = found


class NotMySQL(Exception):
    """The port did not answer as a MySQL server would: no greeting within the connect timeout
    (``silent``: an HTTP server waiting for its request, a hung server), or bytes of another
    protocol."""

    def __init__(self, silent: bool):
        super().__init__("no greeting" if silent else "another protocol")
        self.silent = silent


ADMIN_PORT_HINT = "ProxySQL's admin port is usually 6032"


class UnsafeQuery(Exception):
    """A query proxytop refuses to send (e.g. one naming a *_reset table)."""


class NotInThisVersion(Exception):
    """This ProxySQL has no such thing (e.g. a PostgreSQL side before 3.0): the message says so."""


class OptionError(Exception):
    """A bad setting found after parsing (an option or configuration file, a login path, TLS
    files): a usage error, exit 2."""


def _code_and_text(exc: BaseException):
    args = getattr(exc, "args", ())
    if len(args) >= 2 and isinstance(args[0], int):
        return args[0], str(args[1])
    return None, str(exc)


def is_passing(exc: BaseException) -> bool:
    """A failure that says nothing of the query sent: ProxySQL's admin database was locked
    (1205). A reading that changes its query when one is refused (collectors.folded, the rule
    hits) reports this one as any failed reading, and keeps its query.

    >>> is_passing(pymysql.err.OperationalError(1205, "database is locked")), is_passing(ValueError("x"))
    (True, False)
    """
    return _code_and_text(exc)[0] == 1205


def is_connection_error(exc: BaseException) -> bool:
    """A broken or unusable connection (reconnect), as opposed to a failed query."""
    if isinstance(exc, (NotProxySQLAdmin, NotMySQL, ConnectionError, socket.timeout, TimeoutError, OSError)):
        return True
    if isinstance(exc, pymysql.err.InterfaceError):
        return True
    if isinstance(exc, pymysql.err.OperationalError):
        code, text = _code_and_text(exc)
        if code in CONNECTION_ERRNOS:
            return True
        if code == 1045 and "ProxySQL Admin Error" not in text:
            return True
        if code == 1040:
            return True
    return False


def describe(exc: BaseException, target: str = "", password: Optional[str] = None,
             timeout: Optional[float] = None, server: str = "") -> str:
    """One line: what went wrong, in words, with the target it concerns. ``timeout`` (the
    seconds waited) turns a timeout into advice: a big answer may just need longer; ``server``
    is the host that TLS problems name.

    >>> describe(NotMySQL(silent=True), timeout=3)
    "the port did not answer as a MySQL server would (nothing in 3 s): ProxySQL's admin port is usually 6032; a slow server needs a longer --connect-timeout"
    >>> describe(NotMySQL(silent=False), "db1:80")
    "db1:80: the port did not answer as a MySQL server would (another protocol): ProxySQL's admin port is usually 6032"
    """
    if isinstance(exc, NotMySQL):
        waited = f"nothing in {timeout:g} s" if timeout is not None else "nothing in time"
        slow = "; a slow server needs a longer --connect-timeout" if exc.silent else ""
        return (f"{_prefix(target)}the port did not answer as a MySQL server would "
                f"({waited if exc.silent else exc}): {ADMIN_PORT_HINT}{slow}")
    message = _describe(exc, target, password, server)
    if timeout is not None and message.endswith(_TIMED_OUT):
        message += f" ({timeout:g} s; a slow server needs a longer --connect-timeout)"
    return " ".join(message.split())


def mask_password(message: str, password: str) -> str:
    """Hide the password wherever it stands as a value of its own; leave an equal string that
    is the user name (``user 'admin'@'host'``) or part of a longer name (a host, a word).

    >>> mask_password("Access denied for user 'admin'@'10.0.0.5' (using password: YES)", "admin")
    "Access denied for user 'admin'@'10.0.0.5' (using password: YES)"
    >>> mask_password("bad DSN mysql://app:s3cr=t@db1 (password 's3cr=t')", "s3cr=t")
    "bad DSN mysql://app:***@db1 (password '***')"
    >>> mask_password("cannot reach db-app-1.example", "app")
    'cannot reach db-app-1.example'
    """
    standing_alone = (r"(?<![\w.-])(?<!user ')" + re.escape(password) + r"(?!'@)(?![\w.-])")
    return re.sub(standing_alone, "***", message)


_TIMED_OUT = "timeout: the server did not answer in time"


def _prefix(target: str) -> str:
    return f"{target}: " if target else ""


def _describe(exc: BaseException, target: str, password: Optional[str], server: str = "") -> str:
    # The password is masked in what the failure says, never in proxytop's own words.
    where = _prefix(target)
    if isinstance(exc, NotInThisVersion):
        return f"{where}{exc}"
    code, text = _code_and_text(exc)
    if password:
        text = mask_password(text, password)
    if isinstance(exc, MySQLServerFound):
        return f"{where}not a ProxySQL admin interface ({text}): to watch this MySQL server, use --mysql HOST[:PORT]"
    if isinstance(exc, NotProxySQLAdmin):
        return f"{where}not a ProxySQL admin interface ({text})"
    if isinstance(exc, UnsafeQuery):
        return f"{where}refused to send query: {text}"
    lowered = text.lower()
    if code == CR_SSL_CONNECTION_ERROR or isinstance(exc, ssl.SSLError) or any(w in lowered for w in _TLS_WORDS):
        return tls_problem(text, server or target)
    if isinstance(exc, (socket.timeout, TimeoutError)) or "timed out" in lowered:
        return f"{where}{_TIMED_OUT}"
    if code == 1045 and "proxysql admin error" in lowered:
        detail = text.split("ProxySQL Admin Error:", 1)[-1].strip()
        return f"{where}ProxySQL admin error: {detail}"
    if code == 1045:
        return f"{where}access denied: {text}"
    if code == 1040 and "locally" in lowered:
        return f"{where}this user can only connect locally (use a second admin credential remotely)"
    if code == 1205:
        return f"{where}ProxySQL admin database is locked, will retry"
    if code in (2003, 2002) or isinstance(exc, OSError):
        if "refused" in lowered or getattr(exc, "errno", None) == errno.ECONNREFUSED:
            return f"{where}connection refused (is ProxySQL running and listening there?)"
        if "name or service not known" in lowered or "nodename nor servname" in lowered \
                or "temporary failure in name resolution" in lowered or "errno -2]" in lowered \
                or "errno -3]" in lowered or "errno -5]" in lowered:
            return f"{where}unknown host"
        if "no such file" in lowered:
            return f"{where}socket file not found"
        if "permission denied" in lowered:
            return f"{where}permission denied"
        if "no route" in lowered or "unreachable" in lowered:
            return f"{where}host unreachable"
        return f"{where}cannot connect: {text}"
    if code in (2006, 2013, 2014) or isinstance(exc, pymysql.err.InterfaceError):
        return f"{where}connection lost"
    if code is not None:
        return f"{where}server error {code}: {text}"
    name = exc.__class__.__name__
    return f"{where}{name}: {text}" if text else f"{where}{name}"


def tls_problem(text: str, server: str = "") -> str:
    """A failed TLS negotiation in one line, naming the server.

    >>> tls_problem("Can't connect to MySQL server on '10.0.0.2' ([SSL: CERTIFICATE_VERIFY_FAILED] "
    ...             "certificate verify failed: self-signed certificate (_ssl.c:1006))")
    'TLS: certificate verify failed for 10.0.0.2: self-signed certificate'
    >>> tls_problem("SSL is required but the server doesn't support it", "db1")
    'TLS: db1 does not offer TLS (required by --ssl-mode)'
    >>> tls_problem("Lost connection to MySQL server during query ([SSL: TLSV13_ALERT_CERTIFICATE_REQUIRED] "
    ...             "tlsv13 alert certificate required (_ssl.c:2580))", "db1")
    'TLS: db1 asks for a client certificate (--ssl-cert and --ssl-key)'
    >>> tls_problem("Can't connect to MySQL server on 'db1' ([SSL: WRONG_VERSION_NUMBER] wrong version number "
    ...             "(_ssl.c:1006))")
    'TLS: handshake with db1 failed: wrong version number'
    """
    found = _SERVER_IN_MESSAGE.search(text)
    server = server or (found.group(1) if found else "the server")
    lowered = text.lower()
    if "is required" in lowered:
        return f"TLS: {server} does not offer TLS (required by --ssl-mode)"
    openssl = _OPENSSL_REASON.search(text)
    reason = (openssl.group(1) if openssl else text).strip()
    if "certificate required" in reason:
        return f"TLS: {server} asks for a client certificate (--ssl-cert and --ssl-key)"
    if "alert unknown ca" in reason or "alert bad certificate" in reason:
        return f"TLS: {server} does not accept the client certificate ({reason})"
    marker = "certificate verify failed"
    if reason.lower().startswith(marker):
        detail = reason[len(marker):].lstrip(": ").strip()
        return f"TLS: certificate verify failed for {server}" + (f": {detail}" if detail else "")
    return f"TLS: handshake with {server} failed: {reason or 'no reason given'}"
