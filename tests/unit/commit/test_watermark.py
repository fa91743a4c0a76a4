"""Waiting for a table's freshness watermark (the clock and the reads are fakes: pure logic)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hudi_cdc.commit.watermark import epoch_ms, wait_until

TEN = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def __call__(self) -> float:
        return self.now


def test_waits_until_the_watermark_reaches_the_asked_time() -> None:
    clock = FakeClock()
    readings = iter([None, epoch_ms(TEN) - 1, epoch_ms(TEN), epoch_ms(TEN) + 5])
    freshness = wait_until(lambda: next(readings), table="t", until=TEN, timeout=timedelta(hours=1),
                           poll=timedelta(seconds=30), sleep=clock.sleep, clock=clock)  # fmt: skip
    assert freshness.reached and freshness.watermark_ts_ms == epoch_ms(TEN)
    assert clock.now == 60


def test_gives_up_at_the_timeout_without_oversleeping() -> None:
    clock = FakeClock()
    freshness = wait_until(lambda: epoch_ms(TEN) - 1, table="t", until=TEN, timeout=timedelta(seconds=45),
                           poll=timedelta(seconds=30), sleep=clock.sleep, clock=clock)  # fmt: skip
    assert not freshness.reached
    assert clock.now == 45
    assert freshness.as_row()["until"] == "2026-11-23T10:00:00.000Z"


def test_without_a_time_it_reads_once_and_reports_whether_there_is_a_watermark() -> None:
    clock = FakeClock()
    assert not wait_until(lambda: None, table="t", until=None, timeout=timedelta(hours=1),
                          poll=timedelta(seconds=30), sleep=clock.sleep, clock=clock).reached  # fmt: skip
    assert clock.now == 0


def test_each_reading_that_falls_short_is_reported_with_the_time_left() -> None:
    clock = FakeClock()
    readings = iter([None, epoch_ms(TEN) - 1, epoch_ms(TEN)])
    seen: list[tuple[int | None, float]] = []
    wait_until(lambda: next(readings), table="t", until=TEN, timeout=timedelta(minutes=2), poll=timedelta(seconds=30),
               sleep=clock.sleep, clock=clock, on_poll=lambda f, left: seen.append((f.watermark_ts_ms, left)))  # fmt: skip
    assert seen == [(None, 120.0), (epoch_ms(TEN) - 1, 90.0)]
