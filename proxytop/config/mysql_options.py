"""The --mysql options and the credentials for the MySQL servers (the InnoDB and IOstat
screens read them), taken as the mysql client takes them: ``--mysql-user`` /
``--mysql-password`` (given without a value it prompts), else ``--mysql-login-path`` (from
~/.mylogin.cnf), else the ``[client]`` group of ``--mysql-defaults-file`` or ~/.my.cnf, else
MYSQL_PWD for the password, else ``mysql-user``/``mysql-password`` in the configuration file.
TLS to the MySQL servers the same way: ``--mysql-ssl-mode`` etc., else ``ssl-mode`` etc. in
``[client]``, else the configuration file, else PREFERRED.
"""
from __future__ import annotations

import argparse
import getpass
import os
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Tuple

import pymysql.optionfile

from proxytop.config import login_path
from proxytop.errors import OptionError
from proxytop.config import tls
from proxytop.config.tls import DEFAULT as TLS_DEFAULT, TLSSettings

PROMPT = object()  # --mysql-password given without a value
DEFAULT_PORT = 3306
CLIENT_GROUP = "client"
TLS_KEYS = ("ssl-mode", "ssl-ca", "ssl-cert", "ssl-key")


def server_address(text: str) -> Tuple[str, int]:
    """HOST[:PORT] -> (host, port); IPv6 in brackets when a port follows.

    >>> server_address("db1"), server_address("db1:3307"), server_address("[::1]:3310"), server_address("::1")
    (('db1', 3306), ('db1', 3307), ('::1', 3310), ('::1', 3306))
    """
    text = text.strip()
    if not text:
        raise argparse.ArgumentTypeError("an empty server address")
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:
        host, port_text = text, ""
    if not host:
        raise argparse.ArgumentTypeError(f"'{text}' has no host")
    if not port_text:
        return host, DEFAULT_PORT
    try:
        port = int(port_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{port_text}' is not a port number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError("a port is between 1 and 65535")
    return host, port


def existing_file(text: str) -> str:
    path = os.path.expanduser(text)
    if not os.path.isfile(path):
        raise argparse.ArgumentTypeError(f"defaults file not found: {text}")
    return path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "InnoDB screen (MySQL servers)",
        "Servers: --mysql/--mysql-socket and, unless --no-discover, ProxySQL's runtime_mysql_servers. "
        "Credentials: --mysql-user/--mysql-password > --mysql-login-path > [client] of the defaults file "
        "(~/.my.cnf) > MYSQL_PWD > the configuration file; with none given, discovered servers are read as "
        "ProxySQL's monitor user.")
    group.add_argument("--mysql", action="append", type=server_address, metavar="HOST[:PORT]",
                       help="a MySQL/MariaDB server to watch (repeatable; port 3306 by default)")
    group.add_argument("--mysql-socket", action="append", metavar="PATH",
                       help="a local MySQL/MariaDB server by its UNIX socket (repeatable)")
    group.add_argument("--mysql-user", metavar="USER", help="user for the MySQL servers")
    group.add_argument("--mysql-password", nargs="?", const=PROMPT, metavar="PASSWORD",
                       help="password for the MySQL servers; given without a value, proxytop asks for it "
                            "before the screen starts")
    group.add_argument("--mysql-defaults-file", type=existing_file, metavar="FILE",
                       help="read the [client] group of FILE instead of ~/.my.cnf")
    group.add_argument("--mysql-login-path", metavar="NAME",
                       help="user and password for the MySQL servers from login path NAME of ~/.mylogin.cnf "
                            "(mysql_config_editor)")
    group.add_argument("--mysql-ssl-mode", type=tls.ssl_mode, metavar="MODE",
                       help="TLS to the MySQL servers: DISABLED, PREFERRED (default), REQUIRED, VERIFY_CA, "
                            "VERIFY_IDENTITY (also ssl-mode in [client] of ~/.my.cnf)")
    group.add_argument("--mysql-ssl-ca", type=tls.readable_file, metavar="FILE",
                       help="CA certificate that signed the MySQL servers' certificates (implies VERIFY_CA)")
    group.add_argument("--mysql-ssl-cert", type=tls.readable_file, metavar="FILE",
                       help="client certificate for the MySQL servers (users created REQUIRE X509)")
    group.add_argument("--mysql-ssl-key", type=tls.readable_file, metavar="FILE",
                       help="private key of --mysql-ssl-cert")
    group.add_argument("--no-discover", action="store_true",
                       help="don't add the backends listed in ProxySQL's runtime_mysql_servers")


@dataclass(frozen=True)
class Credentials:
    """Who proxytop is on the MySQL servers. ``given`` is False when nothing named a user or a
    password (then discovered servers use ProxySQL's monitor credentials)."""

    user: str
    password: str = ""
    given: bool = False
    origin: str = "default"
    tls: TLSSettings = TLS_DEFAULT
    origins: Mapping[str, str] = field(default_factory=dict, compare=False)  # setting -> where from

    def __repr__(self) -> str:  # the password never shows
        return f"Credentials(user={self.user!r}, given={self.given}, origin={self.origin!r})"


def read_client_group(path: str) -> Dict[str, str]:
    """user, password and the ssl-* settings from the [client] group of an option file
    (missing file: nothing)."""
    if not os.path.isfile(path):
        return {}
    parser = pymysql.optionfile.Parser()
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            parser.read_file(handle)
    except Exception:
        return {}
    found = {}
    if parser.has_section(CLIENT_GROUP):
        for key in ("user", "password") + TLS_KEYS:
            if parser.has_option(CLIENT_GROUP, key):
                found[key] = parser.get(CLIENT_GROUP, key)
    return found


def login_name() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "root"


def credential_layers(args, environ: Mapping[str, str], home: Optional[str] = None) -> List[Tuple[str, Dict]]:
    """Where the MySQL servers' user, password and TLS settings come from, first wins: the
    command line, --mysql-login-path, the [client] group of the defaults file (or ~/.my.cnf),
    MYSQL_PWD, the configuration file. Raises LoginPathError for an unreadable login path."""
    configured = dict(getattr(args, "configured", None) or {})
    cli = {"user": getattr(args, "mysql_user", None), "password": getattr(args, "mysql_password", None)}
    for key in TLS_KEYS:
        cli[key] = getattr(args, "mysql_" + key.replace("-", "_"), None)
    layers: List[Tuple[str, Dict]] = [("command line", cli)]
    login = getattr(args, "mysql_login_path", None) or configured.get("mysql-login-path")
    if login:
        found = login_path.read(login, dict(environ, HOME=home) if home is not None else environ)
        layers.append((f"login path {login}", {k: found[k] for k in ("user", "password") if k in found}))
    defaults_file = getattr(args, "mysql_defaults_file", None)
    path = defaults_file or os.path.join(home if home is not None else os.path.expanduser("~"), ".my.cnf")
    layers.append(("defaults file", read_client_group(path)))
    if environ.get("MYSQL_PWD"):  # set but empty: no password, as unset
        layers.append(("MYSQL_PWD", {"password": environ["MYSQL_PWD"]}))
    from_config = {key: configured.get("mysql-" + key) for key in ("user", "password") + TLS_KEYS}
    layers.append(("configuration file", from_config))
    return layers


def resolve_credentials(args, environ: Mapping[str, str], prompt=getpass.getpass,
                        home: Optional[str] = None) -> Credentials:
    """Command line > --mysql-login-path > [client] of the defaults file (or ~/.my.cnf) >
    MYSQL_PWD > the configuration file, as the mysql client ranks its own sources; the prompt
    for ``--mysql-password`` without a value happens here.

    >>> ns = argparse.Namespace(mysql_user="dba", mysql_password=None, mysql_defaults_file=None)
    >>> resolve_credentials(ns, {"MYSQL_PWD": "s3cret"}, home="/nonexistent")
    Credentials(user='dba', given=True, origin='command line')
    >>> resolve_credentials(ns, {"MYSQL_PWD": "s3cret"}, home="/nonexistent").password
    's3cret'
    """
    values: Dict[str, object] = {}
    origins: Dict[str, str] = {}
    for origin, layer in credential_layers(args, environ, home):
        for key, value in layer.items():
            if value is not None and key not in values:
                values[key], origins[key] = value, origin
    if values.get("password") is PROMPT:
        values["password"] = prompt("MySQL password: ")
        origins["password"] = "prompt"
    given = "user" in values or "password" in values
    origin = origins.get("user") or origins.get("password") or "default"
    if origin == "prompt":
        origin = "command line"
    return Credentials(user=str(values.get("user") or login_name()), password=str(values.get("password") or ""),
                       given=given, origin=origin, tls=tls_settings(values, origins, "mysql-"), origins=origins)


def tls_settings(values: Mapping[str, object], origins: Mapping[str, str], prefix: str = "") -> TLSSettings:
    """TLSSettings from ssl-mode, ssl-ca, ssl-cert, ssl-key values (text from option files,
    checked here); a problem is one OptionError line naming the setting and its source."""
    checked: Dict[str, Optional[str]] = {}
    for key in TLS_KEYS:
        value = values.get(key)
        if value is None:
            checked[key] = None
            continue
        try:
            checked[key] = tls.ssl_mode(str(value)) if key == "ssl-mode" else tls.readable_file(str(value))
        except argparse.ArgumentTypeError as exc:
            raise OptionError(f"{prefix}{key} ({origins.get(key, 'default')}): {exc}") from None
    settings = tls.settings(checked["ssl-mode"], checked["ssl-ca"], checked["ssl-cert"], checked["ssl-key"])
    problem = tls.check(settings)
    if problem:
        raise OptionError(problem.replace("--ssl-", f"--{prefix}ssl-"))
    return settings
