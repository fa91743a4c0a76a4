"""Committed progress (counts, running totals, freshness watermark) carried in commit metadata."""

from __future__ import annotations

from hudi_cdc.commit.metrics import COUNTED, TableMetrics
from hudi_cdc.commit.offsets import KafkaRange, commit_metadata
from hudi_cdc.commit.progress import Mark, Progress, counts_of, iso_utc


def test_a_new_table_has_no_watermark_and_zero_totals() -> None:
    progress = Progress.from_metadata({})
    assert progress.watermark_ts_ms is None
    assert progress.totals == {}


def test_totals_add_up_commit_after_commit_and_survive_the_round_trip() -> None:
    first = TableMetrics(table="t", read=5, applied=3, tombstone=1, dead_letter=1)
    second = TableMetrics(table="t", read=4, applied=1, late=2, deleted=1, behind_watermark=2)
    progress = Progress().after(counts_of(first), {"topic": {"0": Mark(ts_ms=1_000, offset=4)}})
    progress = Progress.from_metadata(progress.to_metadata())
    progress = progress.after(counts_of(second), {"topic": {"0": Mark(ts_ms=2_000, offset=8)}})
    again = Progress.from_metadata(progress.to_metadata())
    assert again.counts == counts_of(second)
    assert again.totals["read"] == 9 and again.totals["applied"] == 4 and again.totals["late"] == 2
    assert again.totals["behind_watermark"] == 2
    assert set(again.totals) == set(COUNTED)


def test_watermark_is_the_slowest_partition_and_never_moves_back() -> None:
    progress = Progress().after({}, {"t": {"0": Mark(5_000, 10), "1": Mark(3_000, 7)}})
    assert progress.watermark_ts_ms == 3_000
    # partition 1 catches up; partition 0 brings an older event (late) and only tombstones (no time)
    progress = progress.after({}, {"t": {"0": Mark(4_000, 12), "1": Mark(9_000, 9)}})
    assert progress.watermark_ts_ms == 5_000
    progress = progress.after({}, {"t": {"0": Mark(None, 13)}})
    assert progress.marks["t"]["0"] == Mark(5_000, 13)
    assert progress.watermark_ts_ms == 5_000


def test_a_partition_seen_only_through_tombstones_holds_the_watermark_unknown() -> None:
    progress = Progress().after({}, {"t": {"0": Mark(5_000, 1), "1": Mark(None, 0)}})
    assert progress.watermark_ts_ms is None


def test_commit_metadata_records_the_range_so_a_replay_recognises_its_own_commit() -> None:
    kafka = KafkaRange(first={"t": {"0": 10, "1": 3}}, last={"t": {"0": 19, "1": 3}})
    metadata = commit_metadata(
        job="j", batch_id=7, kafka=kafka, progress=Progress(), index="simple", source_types={"qty": "int16"}
    )
    assert kafka.is_range_of(metadata)
    # the second half of a batch split by failure isolation ends where the batch ends, but is not the batch
    assert not KafkaRange(first={"t": {"0": 15, "1": 3}}, last=kafka.last).is_range_of(metadata)
    assert not kafka.is_range_of({})


def test_watermark_is_shown_as_utc() -> None:
    assert iso_utc(1_763_892_930_500) == "2025-11-23T10:15:30.500Z"
    assert iso_utc(None) is None
