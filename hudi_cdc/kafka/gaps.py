"""Kafka records a lenient run went past unread (`kafka.fail_on_data_loss: false`), counted per table.

Told not to fail on data loss, Spark's Kafka source starts a partition at Kafka's oldest record
when the batch's planned start is gone (retention, `deleteRecords`), and says so only in a
warning. After each batch this module measures that gap per topic-partition: the offsets from
the batch's planned start (Spark's offset log in the checkpoint) up to the first offset the
batch read, that Kafka no longer holds (below its log start offset). They are offsets, not
records seen: a gap may also hold transaction markers, which Kafka deleted with it.

A topic deleted and created again ends below the planned start: Spark drops that range and goes
on from the new topic's end, so the new topic's records up to there are never read; they are
counted the same way. What the old topic held past the planned start cannot be counted, and the
warning says so.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql import SparkSession

from hudi_cdc.commit.metrics import BatchMetrics, TableMetrics
from hudi_cdc.config.models import Config
from hudi_cdc.kafka.lag import Positions, Watermarks
from hudi_cdc.kafka.offset_log import planned_range

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Gap:
    """Offsets `first` to `last` of one topic-partition that a batch was to read and never did."""

    topic: str
    partition: str
    first: int
    last: int
    recreated: bool = False
    """The offsets went back (the topic was created anew): these are the new topic's records."""

    @property
    def offsets(self) -> int:
        return self.last - self.first + 1


def _planned(start: Positions, end: Positions, first_read: Positions) -> Iterator[tuple[str, str, int, int, int]]:
    """(topic, partition, planned start, planned end, first offset read) of each partition that had a
    planned start; the first offset read is the planned end where the batch read none."""
    for topic, partitions in end.items():
        for partition, planned_end in partitions.items():
            planned_start = start.get(topic, {}).get(partition)
            if planned_start is not None:  # else new in this batch: it starts at its oldest record
                yield topic, partition, planned_start, planned_end, first_read.get(topic, {}).get(partition, planned_end)


def unread(start: Positions, end: Positions, first_read: Positions, log_start: Positions) -> list[Gap]:
    """The planned offsets before the first one read (all, where none was read) that Kafka no longer holds;
    where the offsets went back (end below start), the new topic's records before the end.

    `end` is exclusive; a partition missing from `log_start` (Kafka did not answer) counts nothing.
    """
    gaps = []
    for topic, partition, planned_start, planned_end, read_from in _planned(start, end, first_read):
        oldest = log_start.get(topic, {}).get(partition)
        if oldest is None:
            continue
        if planned_end < planned_start:  # Spark reads none of it and goes on from planned_end
            # reported even when the new topic holds nothing: the old one's records are gone
            gaps.append(Gap(topic, partition, min(oldest, planned_end), planned_end - 1, recreated=True))
        elif (stop := min(read_from, oldest)) > planned_start:
            gaps.append(Gap(topic, partition, planned_start, stop - 1))
    return gaps


def suspects(start: Positions, end: Positions, first_read: Positions) -> dict[str, dict[str, int]]:
    """The partitions whose batch did not read from its planned start (or whose offsets went back):
    only these can hold a gap.

    Why: Kafka is asked for the oldest offsets of these alone, which in a batch without a gap
    is none (a request per partition adds up over hundreds of partitions).
    """
    found: dict[str, dict[str, int]] = {}
    for topic, partition, planned_start, _, read_from in _planned(start, end, first_read):
        if read_from != planned_start:
            found.setdefault(topic, {})[partition] = planned_start
    return found


class LenientGaps:
    """Counts, after each batch of a lenient run, the records the batch skipped unread (`unread`).

    Each gap is logged as a warning naming table, topic, partition and offsets, and added to
    the table's `TableMetrics.lost` (so to `hudi_cdc_records_lost`).
    """

    def __init__(self, spark: SparkSession, config: Config) -> None:
        self.spark = spark
        self.config = config
        self.watermarks = Watermarks(config.kafka)

    def count(self, batch_id: int, metrics: BatchMetrics) -> None:
        planned = planned_range(self.spark, self.config.job.checkpoint_dir, batch_id)
        if planned is None:
            log.warning("batch %d: no offsets in the checkpoint's log; records it went past are not counted", batch_id)
            return
        start, end = planned
        asked = suspects(start, end, metrics.first_read)
        log_start = self.watermarks.starts(asked) if asked else {}
        for gap in unread(start, end, metrics.first_read, log_start):
            table = self.config.table_of_topic(gap.topic)
            if table is not None:
                _metrics_of(metrics, table).lost += gap.offsets
            if gap.recreated:
                log.warning(
                    "batch %d table %s: %s[%s] went back from offset %d to %d (the topic was created anew): Spark "
                    "goes on from %d, so the new topic's %d record(s) before it were skipped unread, and what the "
                    "old topic held from offset %d on was never read and cannot be counted. Re-snapshot the table "
                    "at the source",
                    batch_id, table or "(no route)", gap.topic, gap.partition, start[gap.topic][gap.partition],
                    gap.last + 1, gap.last + 1, gap.offsets, start[gap.topic][gap.partition],
                )  # fmt: skip
                continue
            log.warning(
                "batch %d table %s: %d record(s) of %s[%s] at offsets %d..%d were deleted from Kafka before "
                "the job read them; skipped (kafka.fail_on_data_loss: false). Re-snapshot the table at the "
                "source if they matter",
                batch_id, table or "(no route)", gap.offsets, gap.topic, gap.partition, gap.first, gap.last,
            )  # fmt: skip

    def close(self) -> None:
        self.watermarks.close()


def _metrics_of(metrics: BatchMetrics, table: str) -> TableMetrics:
    found = next((t for t in metrics.tables if t.table == table), None)
    if found is None:
        found = TableMetrics(table=table)
        metrics.tables.append(found)
    return found

