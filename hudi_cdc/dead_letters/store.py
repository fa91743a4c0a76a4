"""Rejected records -> the dead-letter store (Parquet), with reason and Kafka position.

A record is stored once per error class: `store` skips rejects whose (topic, partition,
offset, error_class) is already in the store, so a replay that fails again, or a batch
replayed after a crash, adds no duplicate. The first failure's message and time are kept.
"""

from __future__ import annotations

import logging
from datetime import datetime

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_cdc.events import KAFKA_POSITION
from hudi_cdc.kafka.headers import KAFKA_HEADERS, headers_column, with_headers

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
    KAFKA_HEADERS,
]
"""KAFKA_HEADERS is kept for the records of tables that read headers, so a replay sees what the
job saw; NULL for the rest."""

IDENTITY = ["topic", "partition", "offset", "error_class"]
"""What makes a dead letter unique: a record and the reason it was rejected."""


def read(spark: SparkSession, path: str, *, every_column: bool = False) -> DataFrame | None:
    """The whole store, or None while nothing was ever stored (or everything was purged).

    `every_column`: the union of every file's columns (stores written before KAFKA_HEADERS was kept
    lack it), at the cost of reading every file's footer; without it the columns of one file,
    enough for the IDENTITY columns every file has."""
    try:
        return spark.read.option("mergeSchema", str(every_column).lower()).parquet(path)
    except AnalysisException as exc:
        # Spark's wording for a missing folder and for a folder without Parquet files
        if "PATH_NOT_FOUND" in str(exc) or "UNABLE_TO_INFER_SCHEMA" in str(exc) or "Path does not exist" in str(exc):
            return None
        raise


def store(
    rejects: DataFrame, *, path: str, job: str, batch_id: int, detected_at: datetime | None = None
) -> None:
    """Append `rejects` (already counted by the caller) to the dead-letter folder, partitioned by table.

    Rejects already in the store (same `IDENTITY`) are left out. `detected_at` (an aware
    datetime) defaults to now.
    """
    rows = with_headers(rejects).select(*DEAD_LETTER_COLUMNS).dropDuplicates(IDENTITY)
    existing = read(rejects.sparkSession, path)
    if existing is not None:
        rows = rows.join(existing.select(*IDENTITY).distinct(), on=IDENTITY, how="left_anti").select(*DEAD_LETTER_COLUMNS)
    when = F.current_timestamp() if detected_at is None else F.lit(detected_at.timestamp()).cast("timestamp")
    (
        rows.withColumn("job", F.lit(job))
        .withColumn("batch_id", F.lit(batch_id).cast("long"))
        .withColumn("detected_at", when)
        .write.mode("append")
        .partitionBy("table")
        .parquet(path)
    )


def raw_as_rejects(
    raw: DataFrame, *, table: str | None, error_class: str, message: str | Column
) -> DataFrame:
    """Every record of `raw` (Kafka source rows) as a reject with the same reason (or a reason per record)."""
    where = F.format_string(KAFKA_POSITION, F.col("topic"), F.col("partition"), F.col("offset"))
    reason = F.lit(message) if isinstance(message, str) else message
    return raw.select(
        F.lit(table).cast("string").alias("table"),
        "topic",
        "partition",
        "offset",
        "key",
        "value",
        F.lit(error_class).alias("error_class"),
        F.concat(where, F.lit(": "), reason).alias("error_message"),
        headers_column(KAFKA_HEADERS in raw.columns).alias(KAFKA_HEADERS),
    )
