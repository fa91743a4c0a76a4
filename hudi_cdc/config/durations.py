"""Durations in the configuration (`30 seconds`, `2 minutes`, `1 day`): one strict parser.

Used by the configuration models (trigger interval, timeouts, retention) and by everything
that needs the number of seconds, so a value means the same thing everywhere.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_DURATION = re.compile(r"^\s*(?P<amount>\d+(?:\.\d+)?)\s+(?P<unit>second|minute|hour|day)s?\s*$", re.I)

DURATION_SYNTAX = "a positive number and a unit: `30 seconds`, `2 minutes`, `1 hour`, `7 days` (singular or plural)"


def parse_duration(text: str, *, allow_zero: bool = False) -> timedelta:
    """`<number> <unit>` with unit second, minute, hour or day (optionally plural) -> timedelta.

    Raises ValueError naming the accepted syntax for anything else (`banana`, `10s`, `-1 day`,
    and `0 seconds` unless `allow_zero`).
    """
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a duration; write {DURATION_SYNTAX}")
    seconds = float(match["amount"]) * _UNITS[match["unit"].lower()]
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise ValueError(f"{text!r} is not a positive duration; write {DURATION_SYNTAX}")
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """The largest whole unit that represents `value` exactly (`1 day`, `90 seconds`)."""
    seconds = value.total_seconds()
    for unit in ("day", "hour", "minute", "second"):
        amount = seconds / _UNITS[unit]
        if amount == int(amount) and amount >= 1:
            return f"{int(amount)} {unit}{'s' if amount != 1 else ''}"
    return f"{seconds:g} seconds"


def spark_interval(value: timedelta) -> str:
    """The same duration in Spark's trigger interval syntax (milliseconds, never months)."""
    return f"{round(value.total_seconds() * 1000)} milliseconds"


def _coerce(value: Any) -> Any:
    # only strings: a bare YAML number (`trigger_interval: 30`) has no unit and is refused
    if isinstance(value, timedelta):
        return value
    if isinstance(value, str):
        return parse_duration(value)
    raise ValueError(f"{value!r} is not a duration; write {DURATION_SYNTAX}")


def _any_case(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" for c in word)


JSON_PATTERN = r"^\s*\d+(\.\d+)?\s+(" + "|".join(_any_case(u) for u in _UNITS) + r")[sS]?\s*$"
"""`_DURATION` in the regex dialect of JSON Schema (ECMA 262: no flags, so cases spelled out)."""

Duration = Annotated[
    timedelta,
    BeforeValidator(_coerce),
    PlainSerializer(format_duration, return_type=str),
    # as written in the file, not pydantic's ISO 8601 (`PT30S`, which the parser refuses)
    WithJsonSchema({"type": "string", "pattern": JSON_PATTERN, "examples": ["30 seconds", "5 minutes"]}),
]
"""A configuration field holding a duration written as `<number> <unit>`."""
