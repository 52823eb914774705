from proxytop.metrics.rates import delta, rate, row_rates, to_number


def test_rate_is_delta_over_seconds():
    assert rate("1000", "1600", 2.0) == 300.0
    assert rate(5, 5, 1.0) == 0.0


def test_first_sample_has_no_rate():
    assert rate(None, "10", 1.0) is None


def test_counter_reset_gives_no_rate_not_a_negative_one():
    # a ProxySQL restart or a stats reset: the counter starts again
    assert rate(123456, 12, 1.0) is None


def test_32bit_wrap_of_connok_gives_no_rate():
    assert rate(2**32 - 5, 3, 1.0) is None


def test_no_time_no_rate():
    assert rate(1, 2, 0) is None
    assert rate(1, 2, -1.0) is None
    assert rate(1, 2, None) is None


def test_non_numeric_values_give_no_rate():
    assert rate("true", "false", 1.0) is None
    assert to_number("abc") is None
    assert to_number(b"12") == 12
    assert to_number("nan") is None


def test_delta_and_row_rates():
    assert delta(10, 25) == 15
    assert delta(25, 10) is None
    prev = {"Queries": "100", "ConnERR": "4"}
    cur = {"Queries": "400", "ConnERR": "1"}
    assert row_rates(prev, cur, ["Queries", "ConnERR"], 3.0) == {"Queries": 100.0, "ConnERR": None}
    assert row_rates(None, cur, ["Queries"], 3.0) == {"Queries": None}
