"""Durations are parsed strictly, and mean the same in the config and in the job's loops."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hudi_cdc.config.durations import format_duration, parse_duration, spark_interval


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("30 seconds", 30, id="seconds"),
        pytest.param("1 second", 1, id="singular"),
        pytest.param("2 minutes", 120, id="minutes"),
        pytest.param("1 hour", 3600, id="hour"),
        pytest.param("1 day", 86400, id="day-is-not-one-second"),
        pytest.param(" 1.5 Minutes ", 90, id="fraction-and-case"),
    ],
)
def test_durations_parse_to_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["banana", "10s", "10", "-1 day", "0 seconds", "1 fortnight", "1 day 2 hours", ""])
def test_anything_else_is_refused_with_the_syntax(text: str) -> None:
    with pytest.raises(ValueError, match="`30 seconds`, `2 minutes`"):
        parse_duration(text)


def test_formatting_round_trips_and_spark_gets_milliseconds() -> None:
    assert format_duration(timedelta(days=1)) == "1 day"
    assert format_duration(timedelta(seconds=90)) == "90 seconds"
    assert parse_duration(format_duration(timedelta(hours=3))) == timedelta(hours=3)
    assert spark_interval(timedelta(days=1)) == "86400000 milliseconds"
