"""Rows read by proxytop.polling.textrows: every length encoding, NULLs, converters, shared values."""
from __future__ import annotations

from proxytop.polling.textrows import SHARED_UP_TO, read_row, text
from tests.proxysql_double import lenenc_str as lenenc


def test_every_length_encoding_and_null():
    values = [b"", b"x" * 250, b"y" * 251, b"z" * 70_000, None, "caf\u00e9".encode()]
    packet = b"".join(b"\xfb" if v is None else lenenc(v) for v in values)
    row = read_row(packet, 0, [(None, None)] * len(values))
    assert row == ("", "x" * 250, "y" * 251, "z" * 70_000, None, "caf\u00e9")


def test_converters_apply_to_typed_columns_and_a_short_row_stops_early():
    packet = lenenc(b"42") + lenenc(b"\xffabc")
    row = read_row(packet, 0, [(None, int), (None, None), (None, None)])
    assert row == (42, "\ufffdabc")


def test_short_values_are_one_object_long_ones_are_not():
    short = b"h" * SHARED_UP_TO
    assert text(short) is text(bytes(bytearray(short)))
    first = read_row(lenenc(short) * 2, 0, [(None, None)] * 2)
    assert first[0] is first[1]
    long = b"q" * (SHARED_UP_TO + 1)
    assert read_row(lenenc(long), 0, [(None, None)]) == (long.decode(),)
