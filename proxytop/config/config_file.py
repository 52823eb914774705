"""The configuration file and named endpoints.

``~/.config/proxytop/proxytop.cnf`` (``$XDG_CONFIG_HOME/proxytop/proxytop.cnf`` when that is
set; ``--config FILE`` names another), in the mysql client's option-file format, read by
PyMySQL's parser::

    [proxytop]
    delay = 2
    screen = innodb
    no-color
    ssl-mode = VERIFY_CA
    ssl-ca = /etc/proxysql/ca.pem

    [node:prod-1]
    host = 10.0.0.5
    port = 6032
    user = radmin
    login-path = prod-1

``[proxytop]`` holds defaults for any long option (without its dashes). Each
``[node:NAME]`` is an endpoint (a ProxySQL admin interface) that ``proxytop @NAME`` connects
to: host, port, user, password or login-path, socket, ssl-mode, ssl-ca, ssl-cert, ssl-key.
:func:`named_endpoint` turns a name into an :class:`~proxytop.polling.connection.Endpoint`, ranking
the node's own settings over its login path's, and those over the ``[proxytop]`` defaults.
"""
from __future__ import annotations

import argparse
import configparser
import os
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import pymysql.optionfile

from proxytop.config import login_path
from proxytop.config.mysql_options import tls_settings
from proxytop.errors import OptionError
from proxytop.config.endpoints import DEFAULT_TIMEOUT, Endpoint

MAIN_GROUP = "proxytop"
NODE_PREFIX = "node:"
TLS_KEYS = ("ssl-mode", "ssl-ca", "ssl-cert", "ssl-key")
ENDPOINT_KEYS = ("host", "port", "user", "password", "socket") + TLS_KEYS
NODE_KEYS = ENDPOINT_KEYS + ("login-path",)
ADMIN_DEFAULTS = {"host": "127.0.0.1", "port": "6032", "user": "admin", "password": "admin"}
SECRET_KEYS = ("password", "mysql-password")

Layer = Tuple[str, Mapping[str, object]]  # (where the settings come from, the settings)


def default_path(environ: Mapping[str, str]) -> str:
    """
    >>> default_path({"HOME": "/home/dba"}), default_path({"XDG_CONFIG_HOME": "/cfg", "HOME": "/home/dba"})
    ('/home/dba/.config/proxytop/proxytop.cnf', '/cfg/proxytop/proxytop.cnf')
    """
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".config")
    return os.path.join(base, "proxytop", "proxytop.cnf")


@dataclass(frozen=True)
class ConfigFile:
    path: str
    exists: bool = False
    options: Mapping[str, Optional[str]] = field(default_factory=dict, repr=False)  # [proxytop], raw text
    nodes: Mapping[str, Mapping[str, Optional[str]]] = field(default_factory=dict, repr=False)

    def node_names(self) -> List[str]:
        """The named endpoints, in the file's order (what --cluster can use)."""
        return list(self.nodes)

    def node(self, name: str) -> Mapping[str, Optional[str]]:
        if name not in self.nodes:
            known = ", ".join(self.nodes) or "none"
            where = self.path if self.exists else f"{self.path} (not found)"
            raise OptionError(f"no endpoint @{name}: no [node:{name}] in {where}; endpoints there: {known}")
        return self.nodes[name]


def load(path: str, required: bool = False) -> ConfigFile:
    """The configuration file at ``path``; a missing file is an empty one unless ``required``
    (named with --config). Errors are one OptionError line."""
    expanded = os.path.expanduser(path)
    if not os.path.isfile(expanded):
        if required:
            raise OptionError(f"configuration file not found: {path}")
        return ConfigFile(path=path)
    parser = pymysql.optionfile.Parser()
    try:
        with open(expanded, encoding="utf-8", errors="replace") as handle:
            parser.read_file(handle)
    except OSError as exc:
        raise OptionError(f"cannot read configuration file {path}: {exc.strerror or exc}") from None
    except Exception as exc:  # configparser's errors: duplicate keys, text before a [group], ...
        first = str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__
        raise OptionError(f"configuration file {path}: {first}") from None
    options: Dict[str, Optional[str]] = {}
    nodes: Dict[str, Dict[str, Optional[str]]] = {}
    for section in parser.sections():
        values = {key: _value(parser, section, key) for key in parser.options(section)}
        if section == MAIN_GROUP:
            options = values
        elif section.startswith(NODE_PREFIX):
            name = section[len(NODE_PREFIX):].strip()
            unknown = sorted(set(values) - set(NODE_KEYS))
            if not name:
                raise OptionError(f"configuration file {path}: [node:] needs a name")
            if unknown:
                raise OptionError(f"configuration file {path}: [node:{name}] has no setting '{unknown[0]}' "
                                  f"(settings: {', '.join(NODE_KEYS)})")
            nodes[name] = values
    return ConfigFile(path=path, exists=True, options=options, nodes=nodes)


def _value(parser: pymysql.optionfile.Parser, section: str, key: str) -> Optional[str]:
    """A key's text with its quotes removed; None for a key without a value (a flag)."""
    if configparser.RawConfigParser.get(parser, section, key) is None:
        return None  # PyMySQL's own get() fails on these
    return parser.get(section, key)


# ----- [proxytop]: defaults for long options ---------------------------------------------------

_TRUE = {"", "1", "true", "on", "yes"}
_FALSE = {"0", "false", "off", "no"}


def option_defaults(config: ConfigFile, parser: argparse.ArgumentParser,
                    layered: Sequence[str]) -> Tuple[Dict[str, object], Dict[str, Optional[str]]]:
    """([proxytop] values of ordinary options as parser defaults, by dest; those of
    ``layered`` options (connection settings ranked against the environment, option files and
    login paths) as text, by option name)."""
    by_option = {}
    for action in parser.actions:
        for flag in action.option_strings:
            if flag.startswith("--"):
                by_option[flag[2:]] = action
    defaults: Dict[str, object] = {}
    raw: Dict[str, Optional[str]] = {}
    for key, text in config.options.items():
        action = by_option.get(key)
        if action is None or key in ("help", "version", "config", "print-defaults"):
            raise OptionError(f"configuration file {config.path}: [proxytop] has no option '{key}' "
                              "(any long option of proxytop --help, without its dashes)")
        if key in layered:
            raw[key] = text
            continue
        try:
            defaults[action.dest] = _typed(action, text, action.dest in parser.repeatable)
        except (argparse.ArgumentTypeError, ValueError) as exc:
            raise OptionError(f"configuration file {config.path}: {key}: {exc}") from None
    return defaults, raw


def _typed(action: argparse.Action, text: Optional[str], repeatable: bool = False) -> object:
    if action.nargs == 0:  # a flag: "no-color" alone or "no-color = 1"
        word = (text or "").strip().lower()
        if word in _TRUE:
            return action.const
        if word in _FALSE:
            return action.default
        raise argparse.ArgumentTypeError(f"'{text}' is not on or off")
    if text is None:
        raise argparse.ArgumentTypeError("needs a value")
    convert = action.type or str
    if repeatable:  # a list, by commas or spaces
        values = [convert(part) for part in text.replace(",", " ").split()]
        return values
    value = convert(text)
    if action.choices is not None and value not in action.choices:
        raise argparse.ArgumentTypeError(f"'{text}' is not one of {', '.join(map(str, action.choices))}")
    return value


# ----- endpoints ---------------------------------------------------------------------------------

def with_login_path(origin: str, settings: Mapping[str, object], environ: Mapping[str, str]) -> List[Layer]:
    """A layer, followed by the login path it names (if any) as the next layer down."""
    layers: List[Layer] = [(origin, settings)]
    name = settings.get("login-path")
    if name:
        layers.append((f"login path {name} ({origin})", login_path.read(str(name), environ)))
    return layers


def node_layers(config: ConfigFile, name: str, environ: Mapping[str, str]) -> List[Layer]:
    return with_login_path(f"[node:{name}]", config.node(name), environ)


def layered_endpoint(layers: Sequence[Layer], timeout: float = DEFAULT_TIMEOUT) -> Tuple[Endpoint, Dict[str, str]]:
    """The endpoint from layers of settings, the first that has a key winning, and where each
    setting came from.

    >>> endpoint, origins = layered_endpoint([("command line", {"port": 6042}), ("[node:a]", {"host": "db", "port": "7032"})])
    >>> endpoint.label, endpoint.user, origins["port"], origins["host"], origins["user"]
    ('db:6042', 'admin', 'command line', '[node:a]', 'default')
    """
    values: Dict[str, object] = {}
    origins: Dict[str, str] = {}
    for origin, layer in list(layers) + [("default", ADMIN_DEFAULTS)]:
        for key in ENDPOINT_KEYS:
            value = layer.get(key)
            if value is not None and key not in values:
                values[key], origins[key] = value, origin
    try:
        port = int(str(values["port"]))
        if not 1 <= port <= 65535:
            raise ValueError
    except ValueError:
        raise OptionError(f"port ({origins['port']}): '{values['port']}' is not a port number (1-65535)") from None
    settings = tls_settings({key: values.get(key) for key in TLS_KEYS}, origins)
    endpoint = Endpoint(host=str(values["host"]), port=port, user=str(values["user"]),
                        password=str(values["password"]), socket=str(values["socket"]) if values.get("socket") else None,
                        timeout=timeout, tls=settings)
    return endpoint, origins


def named_endpoint(name: str, environ: Optional[Mapping[str, str]] = None, config: Optional[ConfigFile] = None,
                   timeout: float = DEFAULT_TIMEOUT) -> Endpoint:
    """The ProxySQL admin endpoint ``[node:NAME]`` of the configuration file describes, with
    its login path and the [proxytop] defaults (ssl-*, user, ...) beneath it. Raises
    OptionError (one line) for an unknown name or a bad setting.

    Usable for any set of nodes, e.g. ``[named_endpoint(n, config=c) for n in c.node_names()]``.
    """
    environ = os.environ if environ is None else environ
    config = config if config is not None else load(default_path(environ))
    main = {key: config.options.get(key) for key in ENDPOINT_KEYS + ("login-path",)}
    layers = node_layers(config, name, environ)
    if not config.node(name).get("login-path"):
        layers += with_login_path("configuration file", main, environ)
    else:
        layers.append(("configuration file", main))
    return layered_endpoint(layers, timeout)[0]


def exposes_passwords(config: ConfigFile) -> bool:
    """The file holds a password and users other than its owner may read it."""
    sections = [config.options] + list(config.nodes.values())
    if not any(key in SECRET_KEYS and value for section in sections for key, value in section.items()):
        return False
    try:
        return bool(os.stat(os.path.expanduser(config.path)).st_mode & 0o044)
    except OSError:
        return False


def masked(key: str, value: object) -> str:
    """A setting as --print-defaults shows it: never a password.

    >>> masked("password", "s3cret"), masked("password", ""), masked("user", "admin")
    ('***', '(empty)', 'admin')
    """
    if key.endswith("password"):
        return "***" if value else "(empty)"
    return "" if value is None else str(value)
