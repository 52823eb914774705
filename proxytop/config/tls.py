"""TLS for the connections to ProxySQL's admin interface and the MySQL servers, with the
mysql client's modes and option names (--ssl-mode, --ssl-ca, --ssl-cert, --ssl-key): the
settings, and the SSL context they make (proxytop.polling.connection connects with it).

- DISABLED: never TLS.
- PREFERRED (the default): TLS when the server offers it, the certificate not checked.
- REQUIRED: TLS or no connection; the certificate not checked.
- VERIFY_CA: TLS, and the server's certificate must be signed by --ssl-ca.
- VERIFY_IDENTITY: as VERIFY_CA, and the certificate must name the host connected to.

As with the mysql client, --ssl-ca without --ssl-mode means VERIFY_CA. A client certificate
(--ssl-cert/--ssl-key, for users created REQUIRE X509) is presented in every mode but DISABLED.
One SSL context serves every connection with the same settings: building one loads the CA
store (about 0.8 MB), and proxytop keeps a connection per watched server.
"""
from __future__ import annotations

import argparse
import os
import re
import ssl
import threading
from dataclasses import dataclass
from typing import Dict, Optional

DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY = (
    "DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")
MODES = (DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY)
_OPENSSL_DETAIL = re.compile(r"\s*\(_ssl\.c:\d+\)")


class TLSError(Exception):
    """TLS settings that cannot be used (a certificate or key file that does not load)."""


@dataclass(frozen=True)
class TLSSettings:
    mode: str = PREFERRED
    ca: Optional[str] = None
    cert: Optional[str] = None
    key: Optional[str] = None

    @property
    def required(self) -> bool:
        """No connection without TLS."""
        return self.mode in (REQUIRED, VERIFY_CA, VERIFY_IDENTITY)

    @property
    def verifies(self) -> bool:
        return self.mode in (VERIFY_CA, VERIFY_IDENTITY)

    def describe(self) -> str:
        """
        >>> TLSSettings().describe(), TLSSettings(VERIFY_CA, ca="/etc/ca.pem", cert="c.pem", key="k.pem").describe()
        ('PREFERRED', 'VERIFY_CA ca=/etc/ca.pem cert=c.pem key=k.pem')
        """
        parts = [self.mode] + [f"{name}={value}" for name, value in
                               (("ca", self.ca), ("cert", self.cert), ("key", self.key)) if value]
        return " ".join(parts)


DEFAULT = TLSSettings()


def ssl_mode(text: str) -> str:
    """An --ssl-mode value, any case.

    >>> ssl_mode("verify_ca"), ssl_mode("Required")
    ('VERIFY_CA', 'REQUIRED')
    """
    mode = text.strip().upper().replace("-", "_")
    if mode not in MODES:
        raise argparse.ArgumentTypeError(f"unknown TLS mode '{text}' (choose from {', '.join(MODES)})")
    return mode


def readable_file(text: str) -> str:
    """A certificate or key file given in an option: it must exist and be readable."""
    path = os.path.expanduser(text)
    if not os.path.isfile(path):
        raise argparse.ArgumentTypeError(f"file not found: {text}")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"file not readable: {text}")
    return path


def settings(mode: Optional[str], ca: Optional[str], cert: Optional[str], key: Optional[str]) -> TLSSettings:
    """The settings for the given options; mode None as the mysql client takes it.

    >>> settings(None, None, None, None).mode, settings(None, "ca.pem", None, None).mode
    ('PREFERRED', 'VERIFY_CA')
    >>> settings("REQUIRED", "ca.pem", None, None).mode
    'REQUIRED'
    """
    if mode is None:
        mode = VERIFY_CA if ca else PREFERRED
    return TLSSettings(mode=mode, ca=ca, cert=cert, key=key or None)


def check(tls: TLSSettings) -> Optional[str]:
    """What is wrong with these settings, in one line (None when usable)."""
    if tls.verifies and not tls.ca:
        return f"--ssl-mode {tls.mode} needs --ssl-ca (the CA that signed the server's certificate)"
    if tls.key and not tls.cert:
        return "--ssl-key needs --ssl-cert"
    try:
        context(tls)
    except TLSError as exc:
        return str(exc)
    return None


_contexts: Dict[TLSSettings, ssl.SSLContext] = {}
_lock = threading.Lock()


def context(tls: TLSSettings) -> Optional[ssl.SSLContext]:
    """The shared SSL context for these settings (None for DISABLED)."""
    if tls.mode == DISABLED:
        return None
    with _lock:
        found = _contexts.get(tls)
        if found is None:
            found = _contexts[tls] = _build(tls)
        return found


def _build(tls: TLSSettings) -> ssl.SSLContext:
    try:
        if tls.ca:
            ctx = ssl.create_default_context(cafile=tls.ca)
        else:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    except (OSError, ssl.SSLError) as exc:
        raise TLSError(f"TLS: cannot load the CA file {tls.ca}: {reason(exc)}") from None
    # The certificates MySQL and ProxySQL make for themselves are not strict X.509 (Python
    # 3.13 would reject them by default).
    ctx.verify_flags &= ~getattr(ssl, "VERIFY_X509_STRICT", 0)
    ctx.check_hostname = tls.mode == VERIFY_IDENTITY
    ctx.verify_mode = ssl.CERT_REQUIRED if tls.verifies else ssl.CERT_NONE
    ctx.sslsocket_class = _NotingSocket
    if tls.cert:
        try:
            ctx.load_cert_chain(tls.cert, keyfile=tls.key)
        except (OSError, ssl.SSLError) as exc:
            raise TLSError(f"TLS: cannot load the client certificate {tls.cert}"
                           f"{' with key ' + tls.key if tls.key else ''}: {reason(exc)}") from None
    return ctx


def reason(exc: BaseException) -> str:
    """OpenSSL's words without the source location.

    >>> reason(ssl.SSLError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate (_ssl.c:1006)"))
    'certificate verify failed: self-signed certificate'
    """
    text = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], str) else str(exc)
    text = _OPENSSL_DETAIL.sub("", text)
    return re.sub(r"^\[[A-Z_]+: [A-Z_0-9]+\]\s*", "", text).strip()


class _NotingSocket(ssl.SSLSocket):
    """The SSL socket of proxytop's contexts (``SSLContext.sslsocket_class``): each handshake
    notes the protocol it agreed on for the thread that made it, which is the thread opening
    the connection (PyMySQL does not tell which protocol a connection uses)."""

    def do_handshake(self, *args, **kwargs):
        super().do_handshake(*args, **kwargs)
        handshakes.protocol = self.version() or "TLS"


handshakes = threading.local()
