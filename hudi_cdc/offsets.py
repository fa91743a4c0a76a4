"""Kafka positions of a batch, kept in the Hudi commit metadata of the table they fed."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from hudi_cdc.hudi.options import COMMIT_METADATA_PREFIX_DEFAULT

OFFSETS_KEY = COMMIT_METADATA_PREFIX_DEFAULT + "kafka_offsets"
BATCH_KEY = COMMIT_METADATA_PREFIX_DEFAULT + "batch_id"
JOB_KEY = COMMIT_METADATA_PREFIX_DEFAULT + "job"
TRUNCATE_KEY = COMMIT_METADATA_PREFIX_DEFAULT + "truncate"
"""The table's newest applied truncate ({order, ts_ms, source}), carried by every commit after it."""


def batch_positions(raw: DataFrame) -> dict[str, dict[str, int]]:
    """topic -> partition -> newest offset in `raw` (one small aggregation)."""
    positions: dict[str, dict[str, int]] = {}
    for row in raw.groupBy("topic", "partition").agg(F.max("offset").alias("offset")).collect():
        positions.setdefault(row["topic"], {})[str(row["partition"])] = int(row["offset"])
    return positions


def commit_metadata(
    *, job: str, batch_id: int, positions: dict[str, dict[str, int]], truncate: dict[str, Any] | None = None
) -> dict[str, str]:
    """Extra commit metadata: Hudi stores keys with the configured prefix in the commit file."""
    metadata = {
        OFFSETS_KEY: json.dumps(positions, sort_keys=True),
        BATCH_KEY: str(batch_id),
        JOB_KEY: job,
    }
    if truncate is not None:
        metadata[TRUNCATE_KEY] = json.dumps(truncate, sort_keys=True)
    return metadata
