"""Spark Kafka source rows and `decode` as the pipeline runs it, for the decode, fold and Avro tests."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from devkit.debezium import KafkaRecord
from hudi_cdc.config.models import TableConfig
from hudi_cdc.decode.records import DecodeResult, decode

TOPIC = "dbserver1.inventory.customers"
KAFKA_COLUMNS = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp"
T0 = dt.datetime(2024, 6, 1, 12, 0, 0)


def kafka_rows(
    spark: SparkSession, records: Sequence[KafkaRecord], topic: str = TOPIC, partition: int = 0
) -> DataFrame:
    """Spark Kafka source rows for `records`, at offsets 0.. and one second apart."""
    rows = [
        (key, value, topic, partition, offset, T0 + dt.timedelta(seconds=offset))
        for offset, (key, value) in enumerate(records)
    ]
    return spark.createDataFrame(rows, KAFKA_COLUMNS)


def decode_cached(raw: DataFrame, table: TableConfig, envelopes: Sequence[str] | None = None) -> DecodeResult:
    """`decode` as the pipeline runs it: the parse computed once (`cached`), each output reading it.

    Why: an output of an uncached result is a filter over decode's whole projection, and Spark's
    optimizer pushes that filter down through every level, seconds per output on a wide table.
    """
    return decode(raw, table, envelopes).cached()


def by_offset(frame: DataFrame) -> dict[int, dict[str, Any]]:
    """Rows of an events or rejects frame, keyed by Kafka offset."""
    column = "_kafka_offset" if "_kafka_offset" in frame.columns else "offset"
    return {row[column]: row.asDict() for row in frame.collect()}
