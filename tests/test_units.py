import pytest

from xsim.units import (
    MIB, UnitError, bytes_per_us_to_gbps, drain_time_us, gbps_to_bytes_per_us, human, human_key, parse_bytes,
    parse_count, parse_gbps, parse_time_us, parser_for_key,
)


def test_rates_round_trip():
    assert gbps_to_bytes_per_us(717) == 717_000
    assert bytes_per_us_to_gbps(717_000) == pytest.approx(717)
    assert drain_time_us(717_000, 717) == pytest.approx(1.0)


@pytest.mark.parametrize("text, expected", [
    ("32KB", 32 * 1024), ("4.25MiB", 4.25 * MIB), ("100", 100), (4096, 4096), ("1e3 b", 1000),
])
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text, expected", [("2us", 2.0), ("500ns", 0.5), ("1.5ms", 1500.0), ("3", 3.0)])
def test_parse_time(text, expected):
    assert parse_time_us(text) == pytest.approx(expected)


def test_parse_rate_and_count():
    assert parse_gbps("0.7TB/s") == pytest.approx(700)
    assert parse_count("12") == 12


@pytest.mark.parametrize("parser, text", [
    (parse_bytes, "2us"), (parse_time_us, "2MB"), (parse_count, "3KB"), (parse_bytes, "abc"), (parse_bytes, "1e999"),
])
def test_wrong_unit_or_not_a_number(parser, text):
    with pytest.raises(UnitError):
        parser(text)


def test_parser_from_key_name():
    assert parser_for_key("burst_bytes") is parse_bytes
    assert parser_for_key("gap_us") is parse_time_us
    assert parser_for_key("drain_gbps") is parse_gbps
    assert parser_for_key("producers") is parse_count


@pytest.mark.parametrize("value, unit, text", [
    (4325376, "bytes", "4.12 MiB"), (512, "bytes", "512 B"), (32 * 1024, "bytes", "32 KiB"),
    (3 * 2**30, "bytes", "3 GiB"), (0.5395, "us", "0.539 µs"), (2449.0, "us", "2.45 ms"),
    (2.5e6, "us", "2.5 s"), (360.206, "gbps", "360 GB/s"), (1234.5, "gbps", "1234 GB/s"),
    (3.425, "percent", "3.42%"), (345, "count", "345"), (0.123456, "count", "0.1235"),
    (float("nan"), "us", "–"), (None, "bytes", "–"), ("st.v4", "bytes", "st.v4"), (True, "count", "yes"),
])
def test_human(value, unit, text):
    assert human(value, unit) == text


def test_human_key_takes_the_unit_from_the_name():
    import numpy as np

    assert human_key("capacity_bytes", 2.485e6) == "2.37 MiB"
    assert human_key("t_iss0_us", np.float64(0.54)) == "0.54 µs"
    assert human_key("drain_rate_gbps", 360.2) == "360 GB/s"
    assert human_key("period_mape", 9.9) == "9.9%"
    assert human_key("producers", 132) == "132"
    with pytest.raises(UnitError, match="unit 'furlongs' is not one of"):
        human(1.0, "furlongs")
