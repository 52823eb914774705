"""Login paths: the encrypted ~/.mylogin.cnf that mysql_config_editor writes, read with the
myloginpath package (the file is obfuscated, not secret: anyone who can read it can decrypt
it, which is why it must stay private to its owner).

``mysql_config_editor set --login-path=proxysql -h 10.0.0.5 -P 6032 -u radmin -p`` and then
``proxytop --login-path proxysql``. MYSQL_TEST_LOGIN_FILE names another file, as for the
mysql client.
"""
from __future__ import annotations

import configparser
import os
from typing import Dict, Mapping

from proxytop.errors import OptionError

KEYS = ("host", "port", "user", "password", "socket")


class LoginPathError(OptionError):
    """A login path that cannot be read, in one line (never its password)."""


def login_file(environ: Mapping[str, str]) -> str:
    """Where the login paths are: MYSQL_TEST_LOGIN_FILE, else ~/.mylogin.cnf.

    >>> login_file({"HOME": "/home/dba"}), login_file({"MYSQL_TEST_LOGIN_FILE": "/tmp/l.cnf"})
    ('/home/dba/.mylogin.cnf', '/tmp/l.cnf')
    """
    named = environ.get("MYSQL_TEST_LOGIN_FILE")
    if named:
        return named
    return os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".mylogin.cnf")


def read(name: str, environ: Mapping[str, str]) -> Dict[str, str]:
    """The settings of login path ``name`` (host, port, user, password, socket: those it has)."""
    path = login_file(environ)
    if not os.path.isfile(path):
        raise LoginPathError(f"login path '{name}': {path} not found (mysql_config_editor set "
                             f"--login-path={name} ... creates it)")
    try:
        import myloginpath  # lazy: only --login-path needs it (and its cryptography), and a missing one gets its own message
    except ImportError:
        raise LoginPathError("login paths need the myloginpath package (pip install myloginpath)") from None
    try:
        found = myloginpath.parse(name, path=path)
    except configparser.NoSectionError:
        raise LoginPathError(f"login path '{name}' is not in {path} "
                             "(mysql_config_editor print --all lists them)") from None
    except PermissionError:
        raise LoginPathError(f"login path '{name}': {path} is not readable") from None
    except Exception as exc:  # a damaged file: say so in one line
        raise LoginPathError(f"login path '{name}': {path} cannot be read ({exc.__class__.__name__})") from None
    return {key: str(found[key]) for key in KEYS if found.get(key) is not None}
