"""proxytop: a top-like terminal monitor for ProxySQL and the MySQL servers behind it."""

__version__ = "0.1.0"
