"""The --mysql options and the credentials for the MySQL servers (the InnoDB and IOstat
screens read them), taken as the mysql client takes them: ``--mysql-user`` /
``--mysql-password`` (given without a value it prompts), else the ``[client]`` group of
``--mysql-defaults-file`` or ~/.my.cnf, else MYSQL_PWD for the password.
"""
from __future__ import annotations

import argparse
import getpass
import os
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

import pymysql.optionfile

PROMPT = object()  # --mysql-password given without a value
DEFAULT_PORT = 3306
CLIENT_GROUP = "client"


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
        "Credentials: --mysql-user/--mysql-password > [client] of the defaults file (~/.my.cnf) > MYSQL_PWD; "
        "with none given, discovered servers are read as ProxySQL's monitor user.")
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

    def __repr__(self) -> str:  # the password never shows
        return f"Credentials(user={self.user!r}, given={self.given}, origin={self.origin!r})"


def read_client_group(path: str) -> Dict[str, str]:
    """user and password from the [client] group of an option file (missing file: nothing)."""
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
        for key in ("user", "password"):
            if parser.has_option(CLIENT_GROUP, key):
                found[key] = parser.get(CLIENT_GROUP, key)
    return found


def login_name() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "root"


def resolve_credentials(args, environ: Mapping[str, str], prompt=getpass.getpass,
                        home: Optional[str] = None) -> Credentials:
    """Command line > [client] of the defaults file (or ~/.my.cnf) > MYSQL_PWD, as the mysql
    client does; the prompt for ``--mysql-password`` without a value happens here.

    >>> ns = argparse.Namespace(mysql_user="dba", mysql_password=None, mysql_defaults_file=None)
    >>> resolve_credentials(ns, {"MYSQL_PWD": "s3cret"}, home="/nonexistent")
    Credentials(user='dba', given=True, origin='command line')
    >>> resolve_credentials(ns, {"MYSQL_PWD": "s3cret"}, home="/nonexistent").password
    's3cret'
    """
    user = getattr(args, "mysql_user", None)
    password = getattr(args, "mysql_password", None)
    defaults_file = getattr(args, "mysql_defaults_file", None)
    path = defaults_file or os.path.join(home if home is not None else os.path.expanduser("~"), ".my.cnf")
    from_file = read_client_group(path)
    origin = "command line" if (user is not None or password is not None) else "default"
    given = user is not None or password is not None
    if user is None and "user" in from_file:
        user, given = from_file["user"], True
        origin = "defaults file" if origin == "default" else origin
    if password is PROMPT:
        password = prompt("MySQL password: ")
    elif password is None and "password" in from_file:
        password, given = from_file["password"], True
        origin = "defaults file" if origin == "default" else origin
    elif password is None and environ.get("MYSQL_PWD"):  # set but empty: no password, as unset
        password, given = environ["MYSQL_PWD"], True
        origin = "MYSQL_PWD" if origin == "default" else origin
    return Credentials(user=user or login_name(), password=password or "", given=given, origin=origin)

