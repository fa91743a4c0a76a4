"""`hudi-cdc watermark`: how fresh a table is in source time, and waiting until it is fresh enough.

A scheduler asks "is `orders` complete up to 10:00?" before it starts the hourly job. The answer
comes from the table's newest hudi_cdc commit (see hudi_cdc.commit.progress), so it is exactly what a
reader of the table sees: every change the source made before the watermark is in the table.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from hudi_cdc.commit.progress import iso_utc

EXIT_REACHED = 0
EXIT_NOT_REACHED = 3
"""Exit code when the table is not complete up to the asked time before the timeout (1 is an error)."""


@dataclass(frozen=True)
class Freshness:
    """A table's watermark, and whether it has reached an asked time."""

    table: str
    watermark_ts_ms: int | None
    until_ts_ms: int | None = None

    @property
    def reached(self) -> bool:
        if self.until_ts_ms is None:
            return self.watermark_ts_ms is not None
        return self.watermark_ts_ms is not None and self.watermark_ts_ms >= self.until_ts_ms

    def as_row(self) -> dict[str, object]:
        return {
            "table": self.table,
            "watermark": iso_utc(self.watermark_ts_ms),
            "watermark_ts_ms": self.watermark_ts_ms,
            "until": iso_utc(self.until_ts_ms),
            "reached": self.reached,
        }


def epoch_ms(moment: datetime) -> int:
    """An aware datetime as epoch milliseconds."""
    return int(moment.timestamp() * 1000)


def wait_until(
    read_watermark: Callable[[], int | None],
    *,
    table: str,
    until: datetime | None,
    timeout: timedelta,
    poll: timedelta,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    on_poll: Callable[[Freshness, float], None] | None = None,
) -> Freshness:
    """Read the watermark until it reaches `until` or `timeout` passes (a zero timeout reads once).

    `on_poll` is told each reading that falls short, with the seconds left before the timeout.
    """
    until_ms = epoch_ms(until) if until is not None else None
    deadline = clock() + timeout.total_seconds()
    while True:
        freshness = Freshness(table=table, watermark_ts_ms=read_watermark(), until_ts_ms=until_ms)
        remaining = deadline - clock()
        if freshness.reached or until is None or remaining <= 0:
            return freshness
        if on_poll is not None:
            on_poll(freshness, remaining)
        sleep(min(poll.total_seconds(), remaining))
