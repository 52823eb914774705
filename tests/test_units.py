"""One format per unit, on every screen: the rules of proxytop/metrics/units.py checked on what
`proxytop --demo --batch --count 1 --screen all` shows (the header, each screen's notes and
cells, and the drill-down of its first row), not only on the formatters themselves."""
from __future__ import annotations

import re
from typing import Dict, List, Tuple

import pytest

from proxytop import cli, options
from proxytop.metrics import units
from proxytop.screens import iostat
from proxytop.ui import batch

# A figure with a time unit: its number is what the rule of durations is checked on.
DURATION = re.compile(r"(?<![\w.,:])(\d[\d.,]*)(\u00b5s|ms|s)(?![\w/])")
CLOCK = re.compile(r"^(\d+m\d\ds|\d+h\d\dm|\d+d\d\dh)$")
BYTES = re.compile(r"^-?(\d+B|\d+\.\d(KiB|MiB|GiB|TiB))$")
OLD_BYTES = re.compile(r"(?<![\w.])\d+(\.\d+)?K(?!\w)|\d bytes\b")  # 819.7K, 36,625,046 bytes
THOUSANDS = re.compile(r"\d,\d\d\d")  # counts are compact: 19.3k, not 19,338
UNITS_IN_TITLES = (("%", "%"), ("/s", "/s"), (" ms", "ms"), ("kB", "kB"))


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Tuple[str, List[batch.Block], object]:
    """(header, blocks, data view) of one batch report of the demo, made in this process the
    way `proxytop --demo --batch --count 1 --screen all` makes it."""
    home = tmp_path_factory.mktemp("home")
    environ = {"HOME": str(home), "XDG_STATE_HOME": str(home / "state"), "XDG_CONFIG_HOME": str(home / "config")}
    config = options.parse(["--demo", "--batch", "--count", "1", "--screen", "all"], environ)
    replay, config = cli.open_replay(config)
    engine, controller = cli.build(config, replay)
    reports: List[Tuple[str, List[batch.Block]]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batch, "make_output", lambda fmt, out, color=True:
                      lambda when, header, blocks, events=(): reports.append((header, list(blocks))))
        try:
            assert batch.main(config, engine, controller) == 0
        finally:
            engine.stop()
    assert len(reports) == 1
    header, blocks = reports[0]
    return header, blocks, controller.view


def checked_columns(block: batch.Block):
    """The columns whose cells proxytop formats (not a query's or a comment's own text)."""
    return [c for c in block.screen.columns if not c.flexible]


def cells(block: batch.Block) -> Dict[str, List[str]]:
    return {c.title: [c.text(row) for row in block.rows] for c in checked_columns(block)}


def detail_text(block: batch.Block, view) -> List[str]:
    rows = block.data_rows
    detail = block.screen.detail(rows[0], view) if rows else None
    return ["".join(text for text, _ in line) for line in detail.lines] if detail else []


def duration_problems(text: str) -> List[str]:
    """Figures with a time unit that break the rule: at most three significant digits, no
    trailing zeros, below 1000 of their unit (below 60 of seconds), 0 written 0s."""
    problems = []
    for match in DURATION.finditer(text):
        figure, unit = match.groups()
        number = float(figure.replace(",", ""))
        digits = figure.replace(".", "").replace(",", "").lstrip("0")
        if ("," in figure or len(digits) > 3 or ("." in figure and figure.endswith("0"))
                or number >= (60 if unit == "s" else 1000) or (number == 0 and unit != "s")):
            problems.append(match.group(0))
    return problems


def test_the_demo_shows_every_screen(demo):
    _header, blocks, _view = demo
    assert {b.screen.key for b in blocks} >= {"connpool", "glostat", "proclist", "comcount", "innodb",
                                              "iostat", "queries", "errors", "cluster"}


def test_a_title_that_carries_a_unit_is_not_repeated_in_its_cells(demo):
    _header, blocks, _view = demo
    repeated = []
    for block in blocks:
        for title, texts in cells(block).items():
            for in_title, in_cell in UNITS_IN_TITLES:
                if in_title in title:
                    repeated += [f"{block.screen.title} {title}: {t}" for t in texts if in_cell in t]
    assert not repeated, repeated


def test_bytes_always_carry_a_unit(demo):
    header, blocks, view = demo
    for block in blocks:
        for column in checked_columns(block):
            if column.fmt in (units.size, iostat.kib):
                texts = [column.text(row) for row in block.data_rows]
                assert texts and all(BYTES.match(t) or t == units.MISSING for t in texts), (column.title, texts)
    glostat = next(b for b in blocks if b.screen.key == "glostat")
    value = next(c for c in glostat.screen.columns if c.key == "value")
    sizes = [value.text(row) for row in glostat.data_rows if row.get("_unit") == "bytes"]
    assert sizes and all(BYTES.match(t) for t in sizes), sizes
    texts = [header] + [line for b in blocks for line in b.notes + detail_text(b, view)]
    texts += [t for b in blocks for column in cells(b).values() for t in column]
    assert not [t for t in texts if OLD_BYTES.search(t)]


def test_durations_have_one_style(demo):
    header, blocks, view = demo
    texts = [header] + [line for b in blocks for line in b.notes + detail_text(b, view)]
    texts += [t for b in blocks for column in cells(b).values() for t in column]
    problems = [(t, duration_problems(t)) for t in texts if duration_problems(t)]
    assert not problems, problems
    shown = [m.group(0) for t in texts for m in DURATION.finditer(t)]
    assert {"\u00b5s", "ms", "s"} <= {m[-2:] if m.endswith(("ms", "\u00b5s")) else "s" for m in shown}, shown


def test_counts_have_one_style(demo):
    """The header's Q/s as the tables' Queries/s: compact (an LSN, a position, keeps its digits)."""
    header, blocks, view = demo
    assert re.search(r"Q/s \d+(\.\d)?k ", header), header
    texts = [header] + [line for b in blocks for line in b.notes]
    texts += [line for b in blocks for line in detail_text(b, view) if not line.strip().startswith("LSN")]
    texts += [t for b in blocks for column in cells(b).values() for t in column]
    assert not [t for t in texts if THOUSANDS.search(t)]


def test_the_detail_views_name_their_units(demo):
    _header, blocks, view = demo
    by_key = {b.screen.key: b for b in blocks}
    disk = "\n".join(detail_text(by_key["iostat"], view))
    assert re.search(r"r_await\s+[\d.]+(\u00b5s|ms|s)\b", disk), disk
    assert re.search(r"rareq-sz\s+[\d.]+(B|KiB|MiB)\b", disk), disk
    server = "\n".join(detail_text(by_key["innodb"], view))
    assert re.search(r"checkpoint age\s+[\d.]+(B|KiB|MiB|GiB)\s", server), server
    glostat = "\n".join(by_key["glostat"].notes)
    assert re.search(r"Digests\s+\d+(\.\d)?(B|KiB|MiB) of memory held by the query digest map", glostat), glostat


@pytest.mark.parametrize("seconds, text", [
    (0.000586, "586\u00b5s"), (0.0014, "1.4ms"), (0.00065, "650\u00b5s"), (0.001, "1ms"),
    (3, "3s"), (7, "7s"), (11, "11s"), (56, "56s"), (6.21, "6.21s"), (0, "0s"), (90, "1m30s"),
])
def test_the_reported_durations_read_alike(seconds, text):
    """The defect's examples: 3.00s beside 11s, 7.00s beside 0.65ms, 0ms beside 6.21s."""
    assert units.duration(seconds) == text
    assert not duration_problems(text) and (DURATION.fullmatch(text) or CLOCK.match(text))


def test_the_reported_byte_figures_carry_a_unit():
    assert [units.size(v) for v in (0, 15, 819.7 * 1024, 36 * 1024**2)] == ["0B", "15B", "819.7KiB", "36.0MiB"]
