"""The job's Kafka source: one streaming DataFrame of every routed topic (Spark's Kafka source),
and the same records of given offset ranges as a batch (a parked table's catch-up)."""

from __future__ import annotations

import json
from typing import TypeVar

from pyspark.sql import DataFrame, DataFrameReader, SparkSession
from pyspark.sql.streaming.readwriter import DataStreamReader

from hudi_cdc.commit.offsets import KafkaRange
from hudi_cdc.config.models import Config


def kafka_source(spark: SparkSession, config: Config) -> DataFrame:
    """The streaming DataFrame of every routed topic."""
    kafka = config.kafka
    starting = kafka.starting_offsets
    reader = _configured(
        spark.readStream.format("kafka")
        .option("subscribePattern", config.topic_pattern())
        .option("startingOffsets", starting if isinstance(starting, str) else json.dumps(starting)),
        config,
    )
    if kafka.starting_timestamp is not None:
        # Spark's `startingTimestamp` wins over `startingOffsets`; `latest`: a partition with no
        # record that late starts at its end (Spark's default strategy fails the query instead)
        reader = reader.option("startingTimestamp", str(int(kafka.starting_timestamp.timestamp() * 1000)))
        reader = reader.option("startingOffsetsByTimestampStrategy", "latest")
    if kafka.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(kafka.max_offsets_per_trigger))
    return reader.load()


def kafka_range(spark: SparkSession, config: Config, kafka: KafkaRange) -> DataFrame:
    """The records of `kafka` (per topic partition, `first` through `last`, both included), read as
    a batch with the stream's settings: the same columns and the same transactional view."""
    assign = {topic: sorted(int(p) for p in partitions) for topic, partitions in kafka.last.items()}
    starting = {topic: {p: kafka.first[topic][p] for p in partitions} for topic, partitions in kafka.last.items()}
    ending = {topic: {p: last + 1 for p, last in partitions.items()} for topic, partitions in kafka.last.items()}
    reader = (
        spark.read.format("kafka")
        .option("assign", json.dumps(assign))
        .option("startingOffsets", json.dumps(starting))
        .option("endingOffsets", json.dumps(ending))
    )
    return _configured(reader, config).load()


Reader = TypeVar("Reader", DataStreamReader, DataFrameReader)


def _configured(reader: Reader, config: Config) -> Reader:
    """The settings the stream and a range read share (a DataStreamReader or a DataFrameReader)."""
    kafka = config.kafka
    reader = (
        reader.option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("failOnDataLoss", str(kafka.fail_on_data_loss).lower())
        .option("includeHeaders", str(config.reads_headers).lower())
    )
    if kafka.min_partitions:
        # Why it keeps the semantics: each record keeps its topic, partition and offset, and the
        # fold orders by the event's position, not by the task that read it.
        reader = reader.option("minPartitions", str(kafka.min_partitions))
    # Kafka Connect with exactly-once source support writes in transactions: records of an
    # aborted one were never committed by Connect and must not be applied. Same as
    # read_uncommitted for topics written without transactions; `kafka.properties` may override.
    reader = reader.option("kafka.isolation.level", "read_committed")
    for key, value in kafka.properties.items():
        reader = reader.option(f"kafka.{key}", value)
    return reader
