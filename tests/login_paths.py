"""Write a ~/.mylogin.cnf as mysql_config_editor does (MariaDB ships no mysql_config_editor):
4 unused bytes, a 20-byte key, then each line AES-128-ECB encrypted with the key folded to
16 bytes, padded to whole blocks, after its 4-byte length."""
from __future__ import annotations

import os
import struct
from typing import Mapping

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes


def write_login_file(path: str, paths: Mapping[str, Mapping[str, object]]) -> str:
    """``{"prod": {"host": "10.0.0.5", "port": 6032, "user": "radmin", "password": "..."}}``"""
    key = os.urandom(20)
    folded = bytearray(16)
    for i, byte in enumerate(key):
        folded[i % 16] ^= byte
    encryptor = Cipher(algorithms.AES(bytes(folded)), modes.ECB()).encryptor()
    out = b"\0" * 4 + key
    for name, settings in paths.items():
        lines = [f"[{name}]"] + [f'{k} = "{v}"' if k == "password" else f"{k} = {v}" for k, v in settings.items()]
        for line in lines:
            plain = (line + "\n").encode()
            pad = 16 - len(plain) % 16
            cipher = encryptor.update(plain + bytes([pad]) * pad)
            out += struct.pack("<i", len(cipher)) + cipher
    with open(path, "wb") as handle:
        handle.write(out)
    os.chmod(path, 0o600)
    return path
