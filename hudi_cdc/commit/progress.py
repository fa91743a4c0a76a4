"""What a table has durably applied: counts and freshness, carried from commit to commit.

Every commit hudi_cdc makes records, in Hudi's commit metadata and so atomically with the data:
- the Kafka range it applied (first and last offset per topic partition, see offsets.py);
- the outcome counts of the records it applied, and running totals since the table began;
- the freshness watermark: per topic partition, the newest source time (Debezium `ts_ms`) and
  Kafka offset applied through. The table's watermark is the minimum across its partitions:
  every change the source made before it is in the table (within a partition Debezium writes in
  source order).
Because the counts are committed with the data, a batch replayed after a crash (Hudi committed,
Spark's checkpoint did not move) finds its own commit, is not applied again, and reports the
counts of that commit: nothing is counted twice or relabelled as duplicates.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hudi_cdc.commit.metrics import COUNTED, TableMetrics
from hudi_cdc.events import CDC_PREFIX

COUNTS_KEY = CDC_PREFIX + "counts"
"""Outcome counts of the records this commit applied."""
TOTALS_KEY = CDC_PREFIX + "counts_total"
"""Running outcome counts of every commit up to this one."""
WATERMARK_KEY = CDC_PREFIX + "watermark"
"""{"ts_ms": table watermark, "partitions": {topic: {partition: {"ts_ms", "offset"}}}}."""

Positions = dict[str, dict[str, int]]
"""topic -> partition (as text) -> Kafka offset."""


@dataclass(frozen=True)
class Mark:
    """How far one topic partition has been applied: newest source time and Kafka offset."""

    ts_ms: int | None
    offset: int


@dataclass(frozen=True)
class Progress:
    """A table's committed progress, as its newest hudi_cdc commit states it."""

    counts: dict[str, int] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    marks: dict[str, dict[str, Mark]] = field(default_factory=dict)

    @property
    def watermark_ts_ms(self) -> int | None:
        """The source time through which every partition is applied (None before any change)."""
        times = [m.ts_ms for partitions in self.marks.values() for m in partitions.values()]
        if not times or any(t is None for t in times):
            return None
        return min(t for t in times if t is not None)

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, str]) -> Progress:
        """Read from a commit's extra metadata; empty for tables written before counts existed."""
        watermark: dict[str, Any] = json.loads(metadata.get(WATERMARK_KEY) or "{}")
        marks = {
            topic: {p: Mark(ts_ms=m.get("ts_ms"), offset=int(m["offset"])) for p, m in partitions.items()}
            for topic, partitions in watermark.get("partitions", {}).items()
        }
        return cls(
            counts=json.loads(metadata.get(COUNTS_KEY) or "{}"),
            totals=json.loads(metadata.get(TOTALS_KEY) or "{}"),
            marks=marks,
        )

    def after(self, counts: Mapping[str, int], batch_marks: Mapping[str, Mapping[str, Mark]]) -> Progress:
        """The progress once a commit applies `counts` and moves the partitions in `batch_marks`."""
        totals = {name: self.totals.get(name, 0) + counts.get(name, 0) for name in COUNTED}
        marks = {topic: dict(partitions) for topic, partitions in self.marks.items()}
        for topic, partitions in batch_marks.items():
            for partition, mark in partitions.items():
                old = marks.setdefault(topic, {}).get(partition, Mark(ts_ms=None, offset=-1))
                newest = max((t for t in (old.ts_ms, mark.ts_ms) if t is not None), default=None)
                marks[topic][partition] = Mark(ts_ms=newest, offset=max(old.offset, mark.offset))
        return Progress(counts=dict(counts), totals=totals, marks=marks)

    def to_metadata(self) -> dict[str, str]:
        """The commit metadata entries that carry this progress."""
        partitions = {
            topic: {p: {"ts_ms": m.ts_ms, "offset": m.offset} for p, m in sorted(marks.items())}
            for topic, marks in sorted(self.marks.items())
        }
        return {
            COUNTS_KEY: json.dumps(self.counts, sort_keys=True),
            TOTALS_KEY: json.dumps(self.totals, sort_keys=True),
            WATERMARK_KEY: json.dumps(
                {"ts_ms": self.watermark_ts_ms, "partitions": partitions}, sort_keys=True
            ),
        }


def iso_utc(ts_ms: int | None) -> str | None:
    """A source time (epoch milliseconds) as ISO-8601 UTC, e.g. 2026-11-23T10:15:30.500Z."""
    if ts_ms is None:
        return None
    return dt.datetime.fromtimestamp(ts_ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def counts_of(metrics: TableMetrics) -> dict[str, int]:
    """The committed counts of a batch's table metrics."""
    return {name: int(getattr(metrics, name)) for name in COUNTED}
