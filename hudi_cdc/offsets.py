"""Kafka positions of a batch, kept in the Hudi commit metadata of the table they fed."""

from __future__ import annotations

import json

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from hudi_cdc.hudi.options import COMMIT_METADATA_PREFIX_DEFAULT

OFFSETS_KEY = COMMIT_METADATA_PREFIX_DEFAULT + "kafka_offsets"
BATCH_KEY = COMMIT_METADATA_PREFIX_DEFAULT + "batch_id"
JOB_KEY = COMMIT_METADATA_PREFIX_DEFAULT + "job"


def batch_positions(raw: DataFrame) -> dict[str, dict[str, int]]:
    """topic -> partition -> newest offset in `raw` (one small aggregation)."""
    positions: dict[str, dict[str, int]] = {}
    for row in raw.groupBy("topic", "partition").agg(F.max("offset").alias("offset")).collect():
        positions.setdefault(row["topic"], {})[str(row["partition"])] = int(row["offset"])
    return positions


def commit_metadata(*, job: str, batch_id: int, positions: dict[str, dict[str, int]]) -> dict[str, str]:
    """Extra commit metadata: Hudi stores keys with the configured prefix in the commit file."""
    return {
        OFFSETS_KEY: json.dumps(positions, sort_keys=True),
        BATCH_KEY: str(batch_id),
        JOB_KEY: job,
    }
