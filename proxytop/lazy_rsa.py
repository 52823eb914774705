"""PyMySQL without the cryptography package until a server asks for RSA.

PyMySQL imports ``cryptography`` when it loads (pymysql/_auth.py), whether or not a
connection will ever need it: about 10 MB of resident memory and 20-30 ms of start-up in every
proxytop process, most of the weight of the whole program on a proxy host. PyMySQL needs it for
one thing only: encrypting the password with the server's RSA key, when a MySQL 8 or ProxySQL
3 account uses caching_sha2_password or sha256_password and its full authentication runs over
a connection without TLS (``sha2_rsa_encrypt``). Servers of mysql_native_password (MariaDB,
ProxySQL 2.x's admin), and every connection over TLS, never get there.

``install()`` (run by ``import proxytop``) puts a finder in front of the import system that
loads ``pymysql._auth`` with ``cryptography`` held back, and gives the module a
``sha2_rsa_encrypt`` that imports cryptography the first time it is called and then is
PyMySQL's own. Should a PyMySQL release lay the module out otherwise, the module is loaded
again the ordinary way: nothing depends on the saving.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import threading

AUTH_MODULE = "pymysql._auth"
HELD_BACK = "cryptography"


class _AuthFinder(importlib.abc.MetaPathFinder):
    """Finds pymysql._auth for the other finders and wraps its loader (once)."""

    def find_spec(self, fullname, path, target=None):
        if fullname != AUTH_MODULE:
            return None
        _remove_finder()
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _AuthLoader(spec.loader)
        return spec


class _AuthLoader(importlib.abc.Loader):
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        if HELD_BACK in sys.modules or importlib.util.find_spec(HELD_BACK) is None:
            self.loader.exec_module(module)  # already loaded, or not installed: nothing to save
            return
        sys.modules[HELD_BACK] = None  # makes ``from cryptography... import`` raise ImportError
        try:
            self.loader.exec_module(module)
        finally:
            if sys.modules.get(HELD_BACK, 0) is None:
                del sys.modules[HELD_BACK]
        original = getattr(module, "sha2_rsa_encrypt", None)
        if original is None or getattr(module, "_have_cryptography", True):
            self.loader.exec_module(module)  # laid out otherwise: the ordinary way
            return
        module.sha2_rsa_encrypt = _encrypt_on_demand(module, original)


def _encrypt_on_demand(module, original):
    lock = threading.Lock()

    def sha2_rsa_encrypt(password, salt, public_key):
        with lock:
            if not module._have_cryptography:
                try:
                    from cryptography.hazmat.backends import default_backend
                    from cryptography.hazmat.primitives import hashes, serialization
                    from cryptography.hazmat.primitives.asymmetric import padding
                except ImportError:
                    pass  # PyMySQL's own function says cryptography is needed
                else:
                    module.default_backend, module.hashes = default_backend, hashes
                    module.serialization, module.padding = serialization, padding
                    module._have_cryptography = True
                    module.sha2_rsa_encrypt = original
        return original(password, salt, public_key)

    sha2_rsa_encrypt.__doc__ = original.__doc__
    return sha2_rsa_encrypt


_FINDER = _AuthFinder()


def _remove_finder() -> None:
    try:
        sys.meta_path.remove(_FINDER)
    except ValueError:
        pass


def install() -> None:
    """Hold cryptography back from PyMySQL's loading (before anything imports pymysql)."""
    if AUTH_MODULE not in sys.modules and _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
