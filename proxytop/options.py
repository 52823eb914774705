"""Command-line options and where each setting comes from.

Precedence for the ProxySQL admin connection: command line > environment
(PROXYTOP_ADMIN_PASSWORD) > --login-path (~/.mylogin.cnf) > defaults file (-f: group
[proxysqladmin], then [proxytop], the later winning) > the endpoint named @NAME
([node:NAME] of the configuration file, then its login-path) > [proxytop] of the configuration
file > built-in defaults (127.0.0.1:6032, admin/admin). Other options: command line >
configuration file > defaults.
"""
from __future__ import annotations

import argparse
import getpass
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import pymysql.optionfile

from proxytop import __version__, errors
from proxytop.config import config_file, login_path
from proxytop.config.endpoints import HostError, endpoint_list, split_hosts
from proxytop.config.option_types import seconds
from proxytop.config import tls
from proxytop.config.endpoints import DEFAULT_TIMEOUT, Endpoint
from proxytop.config.mysql_options import PROMPT, resolve_credentials  # PROMPT: -p given without a value
from proxytop.recordings import rotation
from proxytop.recordings.daemon import DEFAULT_SCREENS
from proxytop.recordings.triggers import FIGURES, Trigger, parse_trigger
from proxytop.screens import HALVES, MYSQL_HALF, SCREENS, add_all_arguments

PASSWORD_OPTIONS = ("-p", "--password", "--mysql-password")  # a value of their own is optional
DEFAULTS_GROUPS = ("proxysqladmin", "proxytop")
SCREEN_NAMES = tuple(key for key, _title in SCREENS)


OptionError = errors.OptionError  # a bad setting found after parsing: usage error, exit 2


@dataclass(frozen=True)
class Config:
    endpoint: Endpoint
    delay: float = 1.0
    screen: str = "connpool"
    color: bool = True
    log_file: Optional[str] = None
    args: Any = None  # the parsed namespace, for screen-specific options
    origins: Mapping[str, str] = field(default_factory=dict)  # setting -> where it came from
    endpoints: Tuple[Endpoint, ...] = ()  # every admin endpoint (-H a,b); the first is `endpoint`
    cluster: bool = False  # --cluster: also watch the nodes the first one lists
    proxysql: bool = True  # False when only MySQL servers were named: no ProxySQL is looked for


positive_seconds = seconds(0.1, 3600, "the interval")


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a port number") from None
    if not (1 <= value <= 65535):
        raise argparse.ArgumentTypeError("a port is between 1 and 65535")
    return value


def screen_name(text: str) -> str:
    wanted = text.lower()
    if wanted == "all":
        return "all"  # --batch only (checked in resolve)
    for name in SCREEN_NAMES:
        if name == wanted or name.startswith(wanted):
            return name
    raise argparse.ArgumentTypeError(f"unknown screen '{text}' (choose from {', '.join(SCREEN_NAMES)}, "
                                     "or all with --batch)")


def report_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of reports") from None
    if value < 1:
        raise argparse.ArgumentTypeError("the count is at least 1")
    return value


def playback_speed(text: str) -> float:
    try:
        value = float(text.rstrip("xX"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a speed (1, 2, 0.5, ...)") from None
    if not (0.25 <= value <= 64):
        raise argparse.ArgumentTypeError("the speed is between 0.25 and 64")
    return value


def retention_age(text: str) -> float:
    try:
        return rotation.parse_age(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def retention_size(text: str) -> int:
    try:
        return rotation.parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def trigger(text: str) -> Trigger:
    try:
        return parse_trigger(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def screen_list(text: str) -> Tuple[str, ...]:
    """--screens connpool,queries: each named as --screen names it (a prefix will do)."""
    names = []
    for word in text.split(","):
        name = screen_name(word.strip())
        if name == "all":
            raise argparse.ArgumentTypeError("--screens names screens; leave it out for the default set")
        names.append(name)
    return tuple(names)


class OptionParser(argparse.ArgumentParser):
    """argparse's parser with a public list of the options it was given (``actions``; the
    repeatable ones' dests in ``repeatable``): argparse lists them only in a private attribute,
    and the configuration file's [proxytop] and given_options() need them. Options are added
    through :meth:`options` (what build_parser and the screens' add_arguments are handed)."""

    def __init__(self, **keywords):
        super().__init__(**keywords)
        self.actions: List[argparse.Action] = []
        self.repeatable: set = set()

    def options(self, container=None) -> "_KeptOptions":
        return _KeptOptions(self, self if container is None else container)

    def error(self, message: str):
        """The one line that matters and where to read more (argparse prints its whole usage,
        some 18 lines, before it): stderr, exit 2."""
        self.exit(2, usage_line(message))


def usage_line(message: str) -> str:
    """A usage error as proxytop prints it.

    >>> usage_line("argument -P/--port: 'x' is not a port number")
    "proxytop: error: argument -P/--port: 'x' is not a port number (see proxytop --help)\\n"
    """
    return f"proxytop: error: {message} (see proxytop --help)\n"


class _KeptOptions:
    """add_argument and add_argument_group of a parser or group, keeping what they make."""

    def __init__(self, parser: OptionParser, container):
        self.parser, self.container = parser, container

    def add_argument(self, *args, **keywords) -> argparse.Action:
        action = self.container.add_argument(*args, **keywords)
        self.parser.actions.append(action)
        if keywords.get("action") == "append":
            self.parser.repeatable.add(action.dest)
        return action

    def add_argument_group(self, *args, **keywords) -> "_KeptOptions":
        return self.parser.options(self.parser.add_argument_group(*args, **keywords))


def build_parser() -> OptionParser:
    real = OptionParser(
        prog="proxytop",
        description="A top-like terminal monitor for ProxySQL and the MySQL servers behind it.",
        epilog="Connection settings: command line > PROXYTOP_ADMIN_PASSWORD > --login-path > defaults file > "
               "@NAME > [proxytop] of the configuration file > built-in defaults (--print-defaults shows them).",
    )
    parser = real.options()
    admin = parser.add_argument_group("ProxySQL admin interface")
    admin.add_argument("-H", "--host", action="append",
                       help="admin host (default 127.0.0.1); several ProxySQL nodes: repeat -H or "
                            "separate them with commas, each host or host:port")
    admin.add_argument("--cluster", action="store_true",
                       help="also watch every node of the first one's ProxySQL Cluster (runtime_proxysql_servers)")
    admin.add_argument("-P", "--port", type=port_number, help="admin port (default 6032)")
    admin.add_argument("-u", "--user", help="admin user (default admin)")
    admin.add_argument("-p", "--password", nargs="?", const=PROMPT,
                       help="admin password (default admin); -p alone prompts for it")
    admin.add_argument("-S", "--socket", help="admin UNIX socket instead of host and port")
    admin.add_argument("-f", "--defaults-file", metavar="FILE",
                       help="option file to read: group [proxysqladmin], then [proxytop]")
    admin.add_argument("--connect-timeout", type=positive_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                       help=f"connect/read/write timeout (default {DEFAULT_TIMEOUT:g})")
    admin.add_argument("--login-path", metavar="NAME",
                       help="host, port, user and password from login path NAME of ~/.mylogin.cnf "
                            "(mysql_config_editor)")
    admin.add_argument("--ssl-mode", type=tls.ssl_mode, metavar="MODE",
                       help="TLS to ProxySQL: DISABLED, PREFERRED (default: TLS when offered), REQUIRED, "
                            "VERIFY_CA, VERIFY_IDENTITY")
    admin.add_argument("--ssl-ca", type=tls.readable_file, metavar="FILE",
                       help="CA certificate that signed ProxySQL's certificate (implies VERIFY_CA)")
    admin.add_argument("--ssl-cert", type=tls.readable_file, metavar="FILE", help="client certificate")
    admin.add_argument("--ssl-key", type=tls.readable_file, metavar="FILE", help="private key of --ssl-cert")
    admin.add_argument("target", nargs="?", metavar="@NAME",
                       help="connect to the endpoint [node:NAME] of the configuration file")
    admin.add_argument("--config", metavar="FILE",
                       help="configuration file (default $XDG_CONFIG_HOME/proxytop/proxytop.cnf, "
                            "else ~/.config/proxytop/proxytop.cnf)")
    admin.add_argument("--print-defaults", action="store_true",
                       help="print every effective setting and where it comes from (passwords masked), then exit")
    display = parser.add_argument_group("display")
    display.add_argument("-d", "--delay", type=positive_seconds, metavar="SECONDS",
                         help="initial refresh interval (default 1; fractions allowed)")
    display.add_argument("--screen", type=screen_name, metavar="NAME",
                         help=f"start screen: {', '.join(SCREEN_NAMES)}; with --batch also all")
    display.add_argument("--side", choices=("mysql", "pgsql"),
                         help="ProxySQL screens start on this side: mysql (default) or pgsql (ProxySQL 3.0+; m switches)")
    display.add_argument("--no-color", action="store_true", help="no colours (also when NO_COLOR is set)")
    display.add_argument("--log-file", metavar="FILE", help="write a debug log to FILE")
    batch = parser.add_argument_group("batch output (no terminal needed)")
    batch.add_argument("--batch", action="store_true",
                       help="print the screen(s) every interval instead of the live view: a table on a "
                            "terminal, plain text when piped, or --format json/csv")
    batch.add_argument("--count", type=report_count, metavar="N", help="with --batch: stop after N reports")
    batch.add_argument("--format", choices=("table", "json", "csv"), default="table",
                       help="with --batch: table (default), json (one line per screen and report) or csv")
    batch.add_argument("--sort", metavar="COL[:asc|:desc]",
                       help="with --batch: sort by a column (title or key), numbers largest first unless :asc")
    batch.add_argument("--filter", metavar="EXPR", help="with --batch: a filter as typed after / in the live view")
    recordings = parser.add_argument_group("recordings")
    recordings.add_argument("--record", metavar="FILE",
                            help="append every reading to FILE (live view or --batch); never a password")
    recordings.add_argument("--replay", metavar="FILE",
                            help="the live view (or --batch) over a recording instead of a server")
    recordings.add_argument("--demo", action="store_true",
                            help="replay the short recording that comes with proxytop (no ProxySQL needed)")
    recordings.add_argument("--speed", type=playback_speed, metavar="X",
                            help="replay speed, 0.25 to 64 (default 1)")
    recorder = parser.add_argument_group("always-on recorder (no terminal)")
    recorder.add_argument("--daemon", action="store_true",
                          help="record continuously without a terminal into --record-dir, a file per hour "
                               "(SIGTERM ends it, SIGHUP reopens the log; replay the directory with --replay DIR)")
    recorder.add_argument("--record-dir", metavar="DIR", help="with --daemon: the directory of the recordings")
    recorder.add_argument("--retention", type=retention_age, metavar="AGE",
                          help="with --daemon: remove the files older than AGE (48h, 2d, 90m), oldest first")
    recorder.add_argument("--retention-size", type=retention_size, metavar="SIZE",
                          help="with --daemon: remove the oldest files while they take more than SIZE (2G, 500M)")
    recorder.add_argument("--on", type=trigger, action="append", metavar="TRIGGER",
                          help="with --daemon: mark the moment and keep full detail around it when FIGURE>N: "
                               f"{', '.join(FIGURES)} (repeatable)")
    recorder.add_argument("--screens", type=screen_list, metavar="LIST",
                          help="with --daemon: the screens whose readings are recorded, comma-separated "
                               f"(default {','.join(DEFAULT_SCREENS)})")
    parser.add_argument("--version", action="version", version=f"proxytop {__version__}")
    add_all_arguments(parser)  # screens with options of their own (e.g. --mysql, --disk-baseline)
    return real


def read_defaults_file(path: str) -> Dict[str, str]:
    """Settings from an option file via PyMySQL's own parser; later groups win."""
    expanded = os.path.expanduser(path)
    if not os.path.isfile(expanded):
        raise OptionError(f"defaults file not found: {path}")
    parser = pymysql.optionfile.Parser()
    try:
        with open(expanded, encoding="utf-8", errors="replace") as handle:
            parser.read_file(handle)
    except Exception as exc:
        raise OptionError(f"cannot read defaults file {path}: {exc.__class__.__name__}") from None
    settings: Dict[str, str] = {}
    for group in DEFAULTS_GROUPS:
        if parser.has_section(group):
            for key in ("host", "port", "user", "password", "socket") + config_file.TLS_KEYS:
                if parser.has_option(group, key):
                    settings[key] = parser.get(group, key)
    return settings


def resolve(args: argparse.Namespace, environ: Mapping[str, str],
            prompt: Callable[[str], str] = getpass.getpass) -> Config:
    """Merge the sources of each setting by precedence into one Config."""
    check_modes(args)
    replaying = bool(getattr(args, "replay", None) or getattr(args, "demo", False))
    printing = bool(getattr(args, "print_defaults", False))
    hosts = cluster_hosts(args)
    endpoint, origins = admin_endpoint(args, environ, prompt, ask=not replaying and not printing,
                                       host=hosts[0][0] if hosts else None)
    endpoints = endpoint_list(hosts, endpoint)  # -P is the port of the hosts given without one
    endpoint = endpoints[0]
    if not replaying:
        # MySQL-side settings are checked now (a bad file is a usage error before the screen
        # starts); the screen resolves them again, asking for a password then, when it is built.
        resolve_credentials(args, environ, prompt=lambda text: "")
    color = not args.no_color and not environ.get("NO_COLOR")
    # Only --mysql / --mysql-socket, and nothing about a ProxySQL anywhere (options, login path,
    # environment, configuration file): the MySQL servers alone.
    mysql_only = not replaying and bool(getattr(args, "mysql", None) or getattr(args, "mysql_socket", None)) and not hosts \
        and not getattr(args, "cluster", False) and all(origin == "default" for origin in origins.values())
    if mysql_only and args.screen and args.screen != "all" and args.screen not in HALVES[MYSQL_HALF]:
        raise OptionError(f"--screen {args.screen} is a ProxySQL screen, and only MySQL servers were named "
                          f"(theirs: {', '.join(HALVES[MYSQL_HALF])}; -H/-P name a ProxySQL)")
    return Config(
        endpoint=endpoint,
        delay=args.delay if args.delay is not None else 1.0,
        screen=args.screen if args.screen and args.screen != "all" else ("servers" if mysql_only else "connpool"),
        color=color,
        log_file=args.log_file,
        args=args,
        origins=origins,
        endpoints=endpoints,
        cluster=bool(getattr(args, "cluster", False)),
        proxysql=not mysql_only,
    )


def cluster_hosts(args: argparse.Namespace):
    """The -H values as [(host, port or None)]; a bad one is a usage error."""
    try:
        return split_hosts(args.host if isinstance(args.host, (list, tuple)) else
                           ([args.host] if args.host else []))
    except HostError as exc:
        raise OptionError(f"-H {exc}") from None


LAYERED = config_file.NODE_KEYS + ("mysql-user", "mysql-password", "mysql-login-path", "mysql-ssl-mode",
                                   "mysql-ssl-ca", "mysql-ssl-cert", "mysql-ssl-key")


def admin_endpoint(args: argparse.Namespace, environ: Mapping[str, str], prompt: Callable[[str], str],
                   ask: bool = True, host: Optional[str] = None):
    """(Endpoint, origins) of the ProxySQL admin connection, by the module's precedence; ``host``
    is the first of the -H hosts (the others share its settings)."""
    cli: Dict[str, object] = {"host": host, "port": args.port, "user": args.user, "socket": args.socket,
                              "ssl-mode": args.ssl_mode, "ssl-ca": args.ssl_ca, "ssl-cert": args.ssl_cert,
                              "ssl-key": args.ssl_key}
    if args.password is PROMPT:
        if ask:
            cli["password"] = prompt("ProxySQL admin password: ")
    else:
        cli["password"] = args.password
    layers: List[config_file.Layer] = [("command line", cli),
                                       ("environment", {"password": environ.get("PROXYTOP_ADMIN_PASSWORD") or None})]
    if args.login_path:
        layers.append((f"login path {args.login_path}", login_path.read(args.login_path, environ)))
    if args.defaults_file:
        layers.append(("defaults file", read_defaults_file(args.defaults_file)))
    configured = getattr(args, "configured", None) or {}
    loaded = getattr(args, "config_file", None)
    if args.target:
        if loaded is None:
            loaded = config_file.load(config_file.default_path(environ))
        layers += config_file.node_layers(loaded, node_name(args.target), environ)
    main = {key: configured.get(key) for key in config_file.NODE_KEYS}
    layers += config_file.with_login_path("configuration file", main, environ)
    endpoint, origins = config_file.layered_endpoint(layers, args.connect_timeout)
    if args.password is PROMPT and ask:
        origins["password"] = "prompt"
    return endpoint, origins


def node_name(target: str) -> str:
    """'@prod-1' -> 'prod-1'; anything else is a usage error."""
    if not target.startswith("@") or len(target) < 2:
        raise OptionError(f"unexpected argument '{target}' (an endpoint of the configuration file is written @NAME)")
    return target[1:]


def check_modes(args: argparse.Namespace) -> None:
    """Options that only make sense together (usage errors, exit 2)."""
    batch = getattr(args, "batch", False)
    replaying = getattr(args, "replay", None) or getattr(args, "demo", False)
    for name in ("count", "sort", "filter"):
        if getattr(args, name, None) is not None and not batch:
            raise OptionError(f"--{name} needs --batch")
    if getattr(args, "format", "table") != "table" and not batch:
        raise OptionError(f"--format {args.format} needs --batch")
    if getattr(args, "screen", None) == "all" and not batch:
        raise OptionError("--screen all needs --batch (the live view shows one screen at a time)")
    if getattr(args, "replay", None) and getattr(args, "demo", False):
        raise OptionError("--replay and --demo: choose one")
    if getattr(args, "record", None) and replaying:
        raise OptionError("--record records a server; it can't be combined with --replay or --demo")
    if getattr(args, "speed", None) is not None and not replaying:
        raise OptionError("--speed needs --replay or --demo")
    daemon = getattr(args, "daemon", False)
    for name in ("record_dir", "retention", "retention_size", "on", "screens"):
        if getattr(args, name, None) and not daemon:
            raise OptionError(f"--{name.replace('_', '-')} needs --daemon")
    if daemon:
        if not getattr(args, "record_dir", None):
            raise OptionError("--daemon needs --record-dir DIR (where the recordings go)")
        for name in ("batch", "record", "replay", "demo"):
            if getattr(args, name, None):
                raise OptionError(f"--daemon records on its own: it can't be combined with --{name}")


def endpoint_not_password(argv: Sequence[str]) -> List[str]:
    """``-p @NAME`` means "ask for the password, connect to @NAME", as ``@NAME -p`` does: a
    word of its own after a bare -p/--password (or --mysql-password) that starts with @ is the
    endpoint, not the password (a password that starts with @ is given attached: ``-p@...``,
    ``--password=@...``).

    >>> endpoint_not_password(["-p", "@prod", "--batch"])
    ['@prod', '-p', '--batch']
    >>> endpoint_not_password(["-p", "s3cret", "@prod"]), endpoint_not_password(["-p@x"])
    (['-p', 's3cret', '@prod'], ['-p@x'])
    """
    words = list(argv)
    for at in range(len(words) - 1):
        if words[at] in PASSWORD_OPTIONS and words[at + 1].startswith("@") and len(words[at + 1]) > 1:
            words[at], words[at + 1] = words[at + 1], words[at]
    return words


def parse(argv: Optional[Sequence[str]], environ: Mapping[str, str],
          prompt: Callable[[str], str] = getpass.getpass) -> Config:
    parser = build_parser()
    argv = endpoint_not_password(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    try:
        args = apply_config_file(parser, argv, args, environ)
        return resolve(args, environ, prompt)
    except OptionError as exc:
        parser.error(str(exc))
        raise  # unreachable: parser.error exits with status 2


def apply_config_file(parser: argparse.ArgumentParser, argv: Optional[Sequence[str]], args: argparse.Namespace,
                      environ: Mapping[str, str]) -> argparse.Namespace:
    """The options again with the configuration file's [proxytop] values as defaults; the
    namespace also carries ``config_file``, ``configured`` (connection settings from the file,
    ranked in resolve) and ``given`` (the options on the command line)."""
    loaded = config_file.load(args.config or config_file.default_path(environ), required=bool(args.config))
    defaults, configured = config_file.option_defaults(loaded, parser, LAYERED)
    if defaults:
        parser.set_defaults(**defaults)
        args = parser.parse_args(argv)
    args.config_file = loaded
    args.configured = configured
    args.config_defaults = defaults
    args.given = given_options(argv)
    return args


def given_options(argv: Optional[Sequence[str]]) -> frozenset:
    """The dests the command line itself sets (a parse where nothing has a default)."""
    parser = build_parser()
    for action in parser.actions:
        action.default = argparse.SUPPRESS
    return frozenset(vars(parser.parse_args(argv)))
