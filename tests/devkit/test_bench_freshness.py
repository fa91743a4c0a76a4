"""The freshness bench's pure parts: which batch made a record visible, latencies, keeping up.

No timing is measured: the batches and produce times are made up.
"""

from __future__ import annotations

import math
from typing import Any

from devkit.bench.freshness import (
    TREND_BATCHES,
    Sent,
    capacity,
    keeps_up,
    latencies,
    summarize,
    sustained_updates,
    visible_at,
)


def _batch(at: float, applied: dict[str, dict[str, int]], *, error: str | None = None) -> dict[str, Any]:
    return {"at": at, "batch_id": int(at), "tables": {"t": {"read": 1, "applied_through": applied, "error": error}}}


def test_a_record_is_visible_at_the_end_of_the_first_batch_that_reaches_its_offset() -> None:
    batches = [_batch(10.0, {"a": {"0": 4}}), _batch(20.0, {"a": {"0": 9}}), _batch(30.0, {"b": {"0": 2}})]
    sent = [Sent("a", 0, 0, 1.0), Sent("a", 0, 4, 2.0), Sent("a", 0, 5, 3.0), Sent("b", 0, 2, 4.0), Sent("a", 0, 10, 5.0)]
    assert latencies(sent, batches) == [9.0, 8.0, 17.0, 26.0, None]


def test_a_record_is_visible_when_its_tables_commit_completed_not_when_the_batch_ended() -> None:
    batches = [_batch(10.0, {"a": {"0": 4}, "b": {"0": 1}}), _batch(20.0, {"a": {"0": 9}, "b": {"0": 3}})]
    # batch 10 committed a's table at 6.0; b's commit was not reported: the batch's end counts
    commits = {(10, "a"): 6.0, (20, "a"): 14.0, (20, "b"): 18.5}
    sent = [Sent("a", 0, 2, 1.0), Sent("b", 0, 1, 1.0), Sent("a", 0, 7, 11.0), Sent("b", 0, 3, 12.0)]
    assert latencies(sent, batches, commits) == [5.0, 9.0, 3.0, 6.5]
    assert latencies(sent, batches) == [9.0, 9.0, 9.0, 8.0]


def test_a_table_stopped_by_an_error_makes_nothing_visible() -> None:
    batches = [_batch(10.0, {"a": {"0": 4}}, error="schema change"), _batch(20.0, {"a": {"0": 4}})]
    assert latencies([Sent("a", 0, 3, 0.0)], batches) == [20.0]


def test_offsets_are_kept_per_partition_and_only_grow() -> None:
    batches = [_batch(1.0, {"a": {"0": 5, "1": 2}}), _batch(2.0, {"a": {"1": 7}}), _batch(3.0, {"a": {"0": 3}})]
    assert visible_at(batches) == {("a", 0): ([5], [1.0]), ("a", 1): ([2, 7], [1.0, 2.0])}


def test_a_growing_latency_is_falling_behind() -> None:
    # 9 records a second apart; each batch makes the next three visible, later and later
    sent = [Sent("a", 0, i, float(i)) for i in range(9)]
    steady = [_batch(3.0, {"a": {"0": 2}}), _batch(6.0, {"a": {"0": 5}}), _batch(9.0, {"a": {"0": 8}})]
    falling = [_batch(3.0, {"a": {"0": 2}}), _batch(16.0, {"a": {"0": 5}}), _batch(40.0, {"a": {"0": 8}})]
    assert summarize(sent, steady).latency_steady
    assert not summarize(sent, falling).latency_steady
    assert summarize(sent, falling).drain_s == 32.0
    assert summarize(sent, steady).p95_s == 3.0


def test_records_never_applied_fail_keeping_up_and_are_left_out_of_the_percentiles() -> None:
    sent = [Sent("a", 0, i, float(i)) for i in range(6)]
    found = summarize(sent, [_batch(10.0, {"a": {"0": 2}})])
    assert (found.produced, found.visible, found.drain_s) == (6, 3, None)
    assert not found.latency_steady
    assert found.max_s == 10.0 and math.isnan(found.p95_last_third_s)


def test_updates_are_spread_round_robin_with_growing_positions_per_topic() -> None:
    topics = ["bench.fresh_0.accounts", "bench.fresh_1.accounts"]
    updates = sustained_updates(topics, rows=10, count=6)
    assert [topic for topic, _ in updates] == topics * 3
    for topic in topics:
        positions = [value.decode().split('"pos":')[1].split(",")[0] for t, (_, value) in updates if t == topic and value]
        assert positions == sorted(positions, key=int) and len(set(positions)) == 3


def test_capacity_is_events_per_cpu_second_times_cores() -> None:
    assert capacity(120_000, cpu_s=256.0, cores=2) == 937.5
    assert capacity(10, cpu_s=0.0, cores=2) == float("inf")


def test_a_long_phase_is_judged_by_its_latency_trend_and_a_short_one_also_by_capacity() -> None:
    sent = [Sent("a", 0, i, float(i)) for i in range(9)]
    steady = summarize(sent, [_batch(3.0, {"a": {"0": 2}}), _batch(6.0, {"a": {"0": 5}}), _batch(9.0, {"a": {"0": 8}})])
    falling = summarize(sent, [_batch(3.0, {"a": {"0": 2}}), _batch(16.0, {"a": {"0": 5}}), _batch(40.0, {"a": {"0": 8}})])
    # capacity short of the rate: the fixed cost per batch, which bigger batches would spread
    short_of_rate = {"rate": 2000.0, "capacity_events_per_s": 1700.0}
    assert keeps_up(steady, **short_of_rate, batches=TREND_BATCHES)
    assert not keeps_up(steady, **short_of_rate, batches=TREND_BATCHES - 1)
    assert keeps_up(steady, rate=2000.0, capacity_events_per_s=2100.0, batches=TREND_BATCHES - 1)
    # a growing latency falls behind whatever the capacity says
    assert not keeps_up(falling, rate=2000.0, capacity_events_per_s=5000.0, batches=TREND_BATCHES)
