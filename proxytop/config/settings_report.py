"""``proxytop --print-defaults``: every effective setting and where it comes from, as plain
text (passwords masked), so a DBA can see what the command line, the environment, login
paths, option files and the configuration file added up to before anything connects."""
from __future__ import annotations

from typing import List, Mapping, Tuple

from proxytop.config import config_file
from proxytop.config.mysql_options import PROMPT, resolve_credentials

# Shown in their own sections, or not settings at all.
_NOT_LISTED = {"help", "version", "print_defaults", "config", "target", "connect_timeout", "host", "port", "user", "password", "socket",
               "ssl_mode", "ssl_ca", "ssl_cert", "ssl_key", "login_path", "mysql_user", "mysql_password",
               "mysql_login_path", "mysql_ssl_mode", "mysql_ssl_ca", "mysql_ssl_cert", "mysql_ssl_key"}

Row = Tuple[str, str, str]


def rows(config, environ: Mapping[str, str]) -> List[Tuple[str, List[Row]]]:
    """(section title, [(setting, value, origin)]) for the resolved configuration."""
    args = config.args
    endpoint, origins = config.endpoint, config.origins
    admin = [
        ("host", endpoint.host, origins.get("host", "default")),
        ("port", str(endpoint.port), origins.get("port", "default")),
        ("user", endpoint.user, origins.get("user", "default")),
        ("password", "(asked at start)" if args.password is PROMPT
         else config_file.masked("password", endpoint.password),
         "command line (-p)" if args.password is PROMPT else origins.get("password", "default")),
        ("socket", endpoint.socket or "", origins.get("socket", "default")),
    ]
    admin += tls_rows("", endpoint.tls, origins)
    admin.append(("connect-timeout", f"{endpoint.timeout:g} s", origin_of(args, "connect_timeout")))
    if getattr(args, "login_path", None):
        admin.append(("login-path", args.login_path, "command line"))
    credentials = resolve_credentials(args, environ, prompt=lambda text: "")
    mysql_origins = credentials.origins
    asked = getattr(args, "mysql_password", None) is PROMPT
    mysql = [
        ("mysql-user", credentials.user, mysql_origins.get("user", "default (login name)")),
        ("mysql-password", "(asked at start)" if asked else config_file.masked("password", credentials.password),
         "command line" if asked else mysql_origins.get("password", "default")),
    ]
    mysql += tls_rows("mysql-", credentials.tls, mysql_origins)
    if not credentials.given:
        mysql.append(("", "servers found through ProxySQL are read as its monitor user", ""))
    display = []
    for dest in sorted(vars(args)):
        if dest in _NOT_LISTED or dest in ("configured", "config_file", "config_defaults", "given"):
            continue
        value = getattr(args, dest)
        if dest == "delay":
            value = f"{config.delay:g} s"
        elif dest == "screen":
            value = config.screen
        elif dest == "no_color" and not value and environ.get("NO_COLOR"):
            display.append(("no-color", "True", "environment (NO_COLOR)"))
            continue
        display.append((dest.replace("_", "-"), text(value), origin_of(args, dest)))
    return [("ProxySQL admin", admin), ("MySQL servers", mysql), ("other settings", display)]


def tls_rows(prefix: str, tls, origins: Mapping[str, str]) -> List[Row]:
    mode_origin = origins.get("ssl-mode") or ("implied by ssl-ca" if tls.ca else "default")
    return [(f"{prefix}ssl-mode", tls.mode, mode_origin),
            (f"{prefix}ssl-ca", tls.ca or "", origins.get("ssl-ca", "default")),
            (f"{prefix}ssl-cert", tls.cert or "", origins.get("ssl-cert", "default")),
            (f"{prefix}ssl-key", tls.key or "", origins.get("ssl-key", "default"))]


def origin_of(args, dest: str) -> str:
    if dest in (getattr(args, "given", None) or ()):
        return "command line"
    if dest in (getattr(args, "config_defaults", None) or {}):
        return "configuration file"
    return "default"


def text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(":".join(map(str, v)) if isinstance(v, tuple) else str(v) for v in value)
    return str(value)


def report(config, environ: Mapping[str, str]) -> str:
    loaded = getattr(config.args, "config_file", None)
    lines = []
    if loaded is not None:
        state = "" if loaded.exists else " (not found)"
        lines.append(f"configuration file: {loaded.path}{state}")
        if config_file.exposes_passwords(loaded):
            lines.append("warning: it holds passwords and others can read it (chmod 600, or use login paths)")
        if loaded.nodes:
            lines.append(f"endpoints: {', '.join('@' + name for name in loaded.node_names())}")
    if getattr(config.args, "target", None):
        lines.append(f"endpoint: {config.args.target}")
    for title, section in rows(config, environ):
        lines.append("")
        lines.append(f"{title}:")
        for name, value, origin in section:
            lines.append(f"  {name:<22} {value:<36} {origin}".rstrip())
    return "\n".join(lines)
