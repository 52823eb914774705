import pytest

from proxytop.metrics import units
from proxytop.screens import filters
from proxytop.screens.table import Column, TableState, arrange, clip, fit_columns, row_cells, sort_rows

COLUMNS = (
    Column("hostgroup", "HG", 4, priority=0),
    Column("server", "Server", 18, "<", numeric=False, priority=0),
    Column("status", "Status", 12, "<", numeric=False, priority=1),
    Column("queries_s", "Queries/s", 10, fmt=units.number, summable=True, priority=2),
    Column("comment", "Comment", 10, "<", numeric=False, priority=9, flexible=True),
)

ROWS = [
    {"_id": 1, "hostgroup": 10, "server": "db1:3306", "status": "ONLINE", "queries_s": 1200.0, "comment": "writer"},
    {"_id": 2, "hostgroup": 20, "server": "db2:3306", "status": "ONLINE", "queries_s": 10.0, "comment": "reader-a"},
    {"_id": 3, "hostgroup": 20, "server": "db3:3306", "status": "SHUNNED", "queries_s": None, "comment": "reader-b"},
]


def parse(text):
    return filters.parse(text, COLUMNS)


def test_plain_text_matches_any_column_case_insensitively():
    state = TableState("hostgroup", filter=parse("READER-B"))
    assert [r["_id"] for r in arrange(ROWS, COLUMNS, state)] == [3]


def test_column_regex_targets_one_column():
    state = TableState("hostgroup", filter=parse("status:^shun"))
    assert [r["_id"] for r in arrange(ROWS, COLUMNS, state)] == [3]
    # the same text in another column does not match a column filter
    assert arrange(ROWS, COLUMNS, TableState("hostgroup", filter=parse("comment:SHUNNED"))) == []


def test_numeric_comparisons_and_suffixes():
    assert [r["_id"] for r in arrange(ROWS, COLUMNS, TableState("hostgroup", filter=parse("queries/s>100")))] == [1]
    assert [r["_id"] for r in arrange(ROWS, COLUMNS, TableState("hostgroup", filter=parse("queries_s<1k")))] == [2]
    # a missing value never passes a comparison
    assert 3 not in [r["_id"] for r in arrange(ROWS, COLUMNS, TableState("hostgroup", filter=parse("queries_s>=0")))]


def test_terms_are_anded():
    state = TableState("hostgroup", filter=parse("hg=20 status:online"))
    assert [r["_id"] for r in arrange(ROWS, COLUMNS, state)] == [2]


@pytest.mark.parametrize("text, message", [
    ("nosuch:x", "no column 'nosuch'"),
    ("status:(", "bad regular expression"),
    ('"unclosed', "filter:"),
    # two terms typed without the space: no column 'foo', and never a silent text search
    ("foo>1/queries/s>1k", "no column 'foo'"),
    ("queries/s>1kstatus:[", "is not a number"),
    ("id=5", 'quote it: "id=5"'),
])
def test_bad_filters_raise_a_clear_error(text, message):
    with pytest.raises(filters.FilterError) as info:
        parse(text)
    assert message in str(info.value)


def test_a_quoted_term_is_text_whatever_it_contains():
    rows = ROWS + [{"_id": 4, "hostgroup": 30, "server": "db4", "status": "ONLINE", "comment": "id=5 here"}]
    assert [r["_id"] for r in arrange(rows, COLUMNS, TableState("hostgroup", filter=parse('"id=5"')))] == [4]
    assert [r["_id"] for r in arrange(rows, COLUMNS, TableState("hostgroup", filter=parse("'id=5 here' hg=30")))] == [4]


def test_column_names_match_titles_and_keys():
    assert filters.resolve_column("Queries/s", COLUMNS) == "queries_s"
    assert filters.resolve_column("serv", [Column("server", "Server", 5)]) == "server"  # unique prefix


def test_sort_puts_missing_values_last_both_ways():
    up = sort_rows(ROWS, "queries_s")
    down = sort_rows(ROWS, "queries_s", descending=True)
    assert [r["_id"] for r in up] == [2, 1, 3]
    assert [r["_id"] for r in down] == [1, 2, 3]


def test_sort_text_case_insensitively_and_numbers_by_value():
    rows = [{"v": "b"}, {"v": "A"}, {"v": "c"}]
    assert [r["v"] for r in sort_rows(rows, "v")] == ["A", "b", "c"]
    rows = [{"v": "10"}, {"v": "9"}, {"v": "100"}]
    assert [r["v"] for r in sort_rows(rows, "v")] == ["9", "10", "100"]


def test_groups_get_subtotals_and_follow_the_sort():
    state = TableState("queries_s", descending=True)
    arranged = arrange(ROWS, COLUMNS, state, group_key="hostgroup",
                       subtotal_label=lambda g: ("server", f"hg {g} total"))
    kinds = [(r.get("_kind", "row"), r.get("server")) for r in arranged]
    assert kinds == [("row", "db1:3306"), ("row", "db2:3306"), ("row", "db3:3306"), ("subtotal", "hg 20 total")]
    total = arranged[-1]
    assert total["queries_s"] == 10.0  # None is left out of the sum
    # a filter leaving one row of a group drops that group's subtotal
    shunned = arrange(ROWS, COLUMNS, TableState("hostgroup", filter=parse("status:SHUNNED")), "hostgroup",
                      lambda g: ("server", "total"))
    assert [r["_id"] for r in shunned] == [3]


def test_narrow_terminals_drop_columns_by_priority_not_wrap():
    wide = [c.key for c, _ in fit_columns(COLUMNS, 200)]
    assert wide == ["hostgroup", "server", "status", "queries_s", "comment"]
    narrow = fit_columns(COLUMNS, 40)
    assert [c.key for c, _ in narrow] == ["hostgroup", "server", "status"]
    assert sum(w for _, w in narrow) + len(narrow) - 1 <= 40
    # the sort column stays even when its priority would drop it
    assert "comment" in [c.key for c, _ in fit_columns(COLUMNS, 50, keep="comment")]
    # the flexible column takes what is left
    assert dict((c.key, w) for c, w in fit_columns(COLUMNS, 100))["comment"] == 100 - 4 - 18 - 12 - 10 - 4


def test_clip():
    assert clip("abcdef", 4) == "abc\u2026"
    assert clip("ab", 4, ">") == "  ab"
    assert clip("ab", 0) == ""


def test_a_spilling_cell_takes_the_empty_cells_before_it():
    # server(8) state(5) age(6) rate(6) note(8): a down row's reason gets 6+1+6+1+8 = 22 columns
    columns = [Column("server", "Server", 8, "<"), Column("state", "State", 5, "<"), Column("age", "Age", 6),
               Column("rate", "Rate", 6), Column("note", "Note", 8, "<", style=lambda row: "danger")]
    fitted = fit_columns(columns, 40)
    down = {"server": "db1:3306", "state": "DOWN", "note": "down: timeout: no answer", "_spill": "note"}
    cells = row_cells(down, fitted)
    assert [text for text, _ in cells] == ["db1:3306", "DOWN ", "down: timeout: no answer".ljust(22)[:21] + "\u2026"]
    plain = row_cells({k: v for k, v in down.items() if k != "_spill"}, fitted)
    assert cells[-1][1] == "danger" and len(" ".join(t for t, _ in cells)) == len(" ".join(t for t, _ in plain)) == 37
    # only empty cells give way: a value before the note keeps its cell
    partial = dict(down, rate=5)
    assert [text for text, _ in row_cells(partial, fitted)][2:] == ["     \u2014", "     5", "down: t\u2026"]
    assert len(plain) == 5  # without _spill every cell keeps its place
