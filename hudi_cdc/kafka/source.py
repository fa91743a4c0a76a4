"""The job's Kafka source: one streaming DataFrame of every routed topic (Spark's Kafka source)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from hudi_cdc.config.models import Config


def kafka_source(spark: SparkSession, config: Config) -> DataFrame:
    """The streaming DataFrame of every routed topic."""
    kafka = config.kafka
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("subscribePattern", config.topic_pattern())
        .option("startingOffsets", kafka.starting_offsets)
        .option("failOnDataLoss", str(kafka.fail_on_data_loss).lower())
        .option("includeHeaders", str(config.reads_headers).lower())
    )
    if kafka.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(kafka.max_offsets_per_trigger))
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
    return reader.load()
