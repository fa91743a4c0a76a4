"""Kafka positions of a batch, kept in the Hudi commit metadata of the table they fed."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hudi_cdc.commit.progress import Positions, Progress
from hudi_cdc.events import CDC_PREFIX, kafka_position

OFFSETS_KEY = CDC_PREFIX + "kafka_offsets"
"""topic -> partition -> the newest offset the commit applied."""
FIRST_OFFSETS_KEY = CDC_PREFIX + "kafka_offsets_from"
"""topic -> partition -> the oldest offset the commit applied (with OFFSETS_KEY: the range)."""
BATCH_KEY = CDC_PREFIX + "batch_id"
JOB_KEY = CDC_PREFIX + "job"
TRUNCATE_KEY = CDC_PREFIX + "truncate"
"""The table's newest applied truncate ({order, ts_ms, source}), carried by every commit after it."""
INDEX_KEY = CDC_PREFIX + "index"
"""The index that shapes the table's files (`hudi.table_options.index_layout`); Hudi keeps no record of a bucket index."""
NEWEST_ORDER_KEY = CDC_PREFIX + "newest_order"
"""The newest order of any event the table has taken, this commit's and every earlier one's;
absent where not known (a table written before it was recorded). A batch whose events are all
newer needs none of the table's stored rows (`job.table_batch`)."""
SOURCE_TYPES_KEY = CDC_PREFIX + "source_types"
"""Column -> its narrow integer type at the source (`schema_check.SourceTypes`), carried by every commit."""


@dataclass(frozen=True)
class KafkaRange:
    """The Kafka records of one table in one batch (or part of a batch): per partition, first and last offset."""

    first: Positions
    last: Positions

    def is_range_of(self, metadata: Mapping[str, str]) -> bool:
        """Did the commit with this extra metadata apply exactly these records?"""
        first = json.loads(metadata.get(FIRST_OFFSETS_KEY) or "null")
        last = json.loads(metadata.get(OFFSETS_KEY) or "null")
        return bool(first == self.first and last == self.last)

    def describe(self) -> str:
        """`topic[partition]@first..last` for each partition, for messages."""
        return ", ".join(
            kafka_position(topic, int(partition), f"{self.first.get(topic, {}).get(partition, last)}..{last}")
            for topic, partitions in sorted(self.last.items())
            for partition, last in sorted(partitions.items(), key=lambda p: int(p[0]))
        )


def first_offsets(ranges: Iterable[KafkaRange]) -> dict[str, dict[str, int]]:
    """The oldest offset of each topic-partition over several ranges (e.g. every table's of a batch)."""
    firsts: dict[str, dict[str, int]] = {}
    for kafka in ranges:
        for topic, partitions in kafka.first.items():
            mine = firsts.setdefault(topic, {})
            for partition, offset in partitions.items():
                mine[partition] = min(offset, mine.get(partition, offset))
    return firsts


def commit_metadata(
    *,
    job: str,
    batch_id: int,
    kafka: KafkaRange,
    progress: Progress,
    index: str,
    source_types: Mapping[str, str],
    truncate: dict[str, Any] | None = None,
    newest_order: str | None = None,
) -> dict[str, str]:
    """Extra commit metadata: Hudi stores keys with the configured prefix in the commit file.

    `index`: the table's `hudi.table_options.index_layout`; `source_types`: `schema_check.source_types_after`;
    `newest_order`: NEWEST_ORDER_KEY's value (None: not known, not recorded).
    """
    metadata = {
        OFFSETS_KEY: json.dumps(kafka.last, sort_keys=True),
        FIRST_OFFSETS_KEY: json.dumps(kafka.first, sort_keys=True),
        BATCH_KEY: str(batch_id),
        JOB_KEY: job,
        INDEX_KEY: index,
        SOURCE_TYPES_KEY: json.dumps(dict(source_types), sort_keys=True),
        **progress.to_metadata(),
    }
    if truncate is not None:
        metadata[TRUNCATE_KEY] = json.dumps(truncate, sort_keys=True)
    if newest_order is not None:
        metadata[NEWEST_ORDER_KEY] = newest_order
    return metadata
