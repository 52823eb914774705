"""proxytop: a top-like terminal monitor for ProxySQL and the MySQL servers behind it."""

__version__ = "0.1.0"

from proxytop import lazy_rsa as _lazy_rsa  # noqa: E402  (before anything imports pymysql)

_lazy_rsa.install()
