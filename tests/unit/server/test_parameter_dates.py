"""Date and timestamp parameters as JDBC's setDate/setTimestamp send them (untyped text with an
offset), as psycopg sends them (ISO), and refusals of text that is no date."""

from __future__ import annotations

import datetime as dt

import pytest

from dpsql.server import pgtypes


@pytest.mark.parametrize(("text", "day"), [
    ("2024-01-01 +00", dt.date(2024, 1, 1)), ("2024-01-01", dt.date(2024, 1, 1)), ("2024-1-2 10:00:00+05:30", dt.date(2024, 1, 2)),
    ("2024-12-31T23:59:59Z", dt.date(2024, 12, 31)),
])
def test_date_parameters(text: str, day: dt.date) -> None:
    assert pgtypes.decode_parameter(pgtypes.DATE, text.encode(), 0) == day


@pytest.mark.parametrize(("text", "plain", "utc"), [
    ("2024-01-01 10:00:00+00", dt.datetime(2024, 1, 1, 10), dt.datetime(2024, 1, 1, 10)),
    ("2024-01-01 10:00:00.5+05:30", dt.datetime(2024, 1, 1, 10, 0, 0, 500000), dt.datetime(2024, 1, 1, 4, 30, 0, 500000)),
    ("2024-01-01 10:00:00-0800", dt.datetime(2024, 1, 1, 10), dt.datetime(2024, 1, 1, 18)),
    ("2024-01-01T10:00", dt.datetime(2024, 1, 1, 10), dt.datetime(2024, 1, 1, 10)),
])
def test_timestamp_parameters_keep_the_wall_clock_and_timestamptz_converts(text: str, plain: dt.datetime, utc: dt.datetime) -> None:
    # As PostgreSQL: `timestamp without time zone` ignores the offset, timestamptz is the instant (in UTC).
    assert pgtypes.decode_parameter(pgtypes.TIMESTAMP, text.encode(), 0) == plain
    assert pgtypes.decode_parameter(pgtypes.TIMESTAMPTZ, text.encode(), 0) == utc


@pytest.mark.parametrize("text", ["2024-01-01x", "yesterday", "2024-13-01", "2024-01-01 25:00:00", ""])
def test_text_that_is_no_date_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        pgtypes.decode_parameter(pgtypes.DATE, text.encode(), 0)
