"""Human units: every accepted form, the rejections, and exact round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tcplab.errors import UnitError
from tcplab.units import (
    U64_MAX,
    format_rate,
    format_size,
    format_time,
    parse_percent,
    parse_rate,
    parse_size,
    parse_time,
)


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("5Mbit", 5_000_000),
        ("5mbit", 5_000_000),
        ("5MBIT", 5_000_000),
        ("100Kbit", 100_000),
        ("100kbit", 100_000),
        ("1Gbit", 1_000_000_000),
        ("1Tbit", 10**12),
        ("1.5Mbit", 1_500_000),
        ("0.1Mbit", 100_000),
        ("5 Mbit", 5_000_000),
        ("10Mbit/s", 10_000_000),
        ("64bit", 64),
        ("1000", 1000),
        (1000, 1000),
        (2.5e6, 2_500_000),
        ("1kibit", 1024),
        ("1Mibit", 1024**2),
        # tc's "bps" forms are BYTES per second
        ("1bps", 8),
        ("1Kbps", 8_000),
        ("1Mbps", 8_000_000),
        ("1Gbps", 8_000_000_000),
        ("1KiBps", 8 * 1024),
        ("1e3kbit", 1_000_000),
    ],
)
def test_rate_forms(text, bps):
    assert parse_rate(text) == bps


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("50ms", 50_000_000),
        ("250us", 250_000),
        ("250µs", 250_000),
        ("250usec", 250_000),
        ("1.5s", 1_500_000_000),
        ("1.5ms", 1_500_000),
        ("100ns", 100),
        ("2sec", 2_000_000_000),
        ("2min", 120_000_000_000),
        ("10 ms", 10_000_000),
        ("0", 0),
        (0, 0),
        ("0s", 0),
    ],
)
def test_time_forms(text, ns):
    assert parse_time(text) == ns


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1500B", 1500),
        ("1500", 1500),
        (1500, 1500),
        ("1500b", 1500),
        ("150KB", 150_000),
        ("150kB", 150_000),
        ("1MB", 1_000_000),
        ("1GB", 10**9),
        ("64KiB", 65_536),
        ("1MiB", 1_048_576),
        ("1GiB", 2**30),
        # tc's forms (iproute2 get_size): bytes, powers of 1024
        ("64Kb", 65_536),
        ("64kb", 65_536),
        ("64k", 65_536),
        ("1mb", 1_048_576),
        ("1Mb", 1_048_576),
        ("1m", 1_048_576),
        ("1g", 2**30),
        ("1.5KB", 1500),
    ],
)
def test_size_forms(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "p"),
    [
        ("1%", 0.01),
        ("0.5%", 0.005),
        ("100%", 1.0),
        ("0%", 0.0),
        ("30 %", 0.3),
        # A bare number is percent, as netem reads it (iproute2 tc_util.c parse_percent(): x / 100).
        ("1", 0.01),
        (1, 0.01),
        (2, 0.02),
        ("0.01", 0.0001),
        (0.5, 0.005),
        (0, 0.0),
        (100, 1.0),
    ],
)
def test_percent_forms(text, p):
    assert parse_percent(text) == pytest.approx(p, abs=1e-15)


def test_bare_number_and_percent_sign_agree():
    # netem: "loss 1" and "loss 1%" are the same; tcplab read 1 as 100% and refused 2.
    for x in (0, 0.25, 1, 2, 7.5, 50, 100):
        assert parse_percent(x) == parse_percent(f"{x}%")


@pytest.mark.parametrize(
    ("parse", "value", "fragment"),
    [
        (parse_rate, "5Mbt", '"5Mbt" is not a rate'),
        (parse_rate, "-5Mbit", "negative"),
        (parse_rate, "0Mbit", "zero"),
        (parse_rate, 0, "zero"),
        (parse_rate, "nan", "is not a rate"),
        (parse_rate, float("nan"), "is not a rate"),
        (parse_rate, float("inf"), "is not a rate"),
        (parse_rate, "inf", "is not a rate"),
        (parse_rate, "", "is not a rate"),
        (parse_rate, "Mbit", "is not a rate"),
        (parse_rate, True, "is not a rate"),
        (parse_rate, None, "is not a rate"),
        (parse_rate, [5], "is not a rate"),
        (parse_rate, "1e30Tbit", "too large"),
        (parse_rate, "1e999bit", "out of range"),
        (parse_time, "10", "has no unit"),
        (parse_time, 10, "has no unit"),
        (parse_time, "-5ms", "negative"),
        (parse_time, "5 parsecs", "unknown unit"),
        (parse_time, "5m", "unknown unit"),
        (parse_size, "10Kbit", "sizes are in bytes"),
        (parse_size, "-1B", "negative"),
        (parse_size, "1 KB B", "is not a size"),
        (parse_percent, "101%", "more than 100%"),
        (parse_percent, 101, "more than 100%"),
        (parse_percent, "-1%", "negative"),
        (parse_percent, "1 percent", "is not a percentage"),
    ],
)
def test_rejections(parse, value, fragment):
    with pytest.raises(UnitError) as info:
        parse(value)
    message = str(info.value)
    assert fragment in message
    assert "expected" in message
    assert "\n" not in message


def test_zero_allowed_only_when_asked():
    assert parse_rate("0bit", allow_zero=True) == 0
    with pytest.raises(UnitError):
        parse_time("0s", allow_zero=False)
    with pytest.raises(UnitError):
        parse_size("0B", allow_zero=False)


def test_decimal_parsing_is_exact():
    # floats would give 1499999.9999999998 or similar; decimal arithmetic does not
    assert parse_time("1.000000001s") == 1_000_000_001
    assert parse_rate("0.3Mbit") == 300_000
    assert parse_size("0.1KiB") == 102  # 102.4 rounds half up to 102
    assert parse_size("0.5B") == 1  # half up


@given(st.integers(min_value=1, max_value=U64_MAX))
def test_rate_round_trip(x):
    assert parse_rate(format_rate(x)) == x


@given(st.integers(min_value=0, max_value=U64_MAX))
def test_time_round_trip(x):
    assert parse_time(format_time(x)) == x


@given(st.integers(min_value=0, max_value=U64_MAX))
def test_size_round_trip(x):
    assert parse_size(format_size(x)) == x


@given(st.sampled_from([1, 10**3, 10**6, 10**9]), st.integers(min_value=1, max_value=10**6))
def test_format_rate_uses_the_largest_exact_unit(factor, n):
    text = format_rate(n * factor)
    assert parse_rate(text) == n * factor
    assert not text.startswith("0")


_anything = st.one_of(
    st.text(),
    st.text(alphabet="0123456789.eE+-%kKmMgGtTbBiIpsSuµn /"),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@pytest.mark.parametrize("parse", [parse_rate, parse_time, parse_size, parse_percent])
@given(value=_anything)
def test_arbitrary_input_raises_only_unit_error(parse, value):
    try:
        result = parse(value)
    except UnitError as e:
        assert isinstance(e, ValueError)
        assert e.expected
        return
    if parse is parse_percent:
        assert 0.0 <= result <= 1.0
    else:
        assert isinstance(result, int) and 0 <= result <= U64_MAX
