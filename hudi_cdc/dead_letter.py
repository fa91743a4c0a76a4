"""Rejected records -> the dead-letter store (Parquet), with reason and Kafka position."""

from __future__ import annotations

import logging

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

log = logging.getLogger(__name__)

DEAD_LETTER_COLUMNS = [
    "table",
    "topic",
    "partition",
    "offset",
    "key",
    "value",
    "error_class",
    "error_message",
]


def store(rejects: DataFrame, *, path: str, job: str, batch_id: int) -> None:
    """Append `rejects` (already counted by the caller) to the dead-letter folder, partitioned by table."""
    (
        rejects.select(*DEAD_LETTER_COLUMNS)
        .withColumn("job", F.lit(job))
        .withColumn("batch_id", F.lit(batch_id).cast("long"))
        .withColumn("detected_at", F.current_timestamp())
        .write.mode("append")
        .partitionBy("table")
        .parquet(path)
    )


def raw_as_rejects(raw: DataFrame, *, table: str | None, error_class: str, message: str) -> DataFrame:
    """Every record of `raw` (Kafka source rows) as a reject with the same reason."""
    where = F.format_string("%s[%d]@%d", F.col("topic"), F.col("partition"), F.col("offset"))
    return raw.select(
        F.lit(table).cast("string").alias("table"),
        "topic",
        "partition",
        "offset",
        "key",
        "value",
        F.lit(error_class).alias("error_class"),
        F.concat(where, F.lit(": " + message)).alias("error_message"),
    )
