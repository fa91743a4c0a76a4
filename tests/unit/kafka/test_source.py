"""The Kafka source is built from the user's `kafka:` settings (read back from Spark's plan)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from hudi_cdc.config.models import parse_config
from hudi_cdc.kafka.source import kafka_source


def _source_options(spark: SparkSession, kafka: dict[str, Any], **table: Any) -> Any:
    config = parse_config({
        "kafka": {"bootstrap_servers": "localhost:1", **kafka},
        "job": {"checkpoint_dir": "/tmp/unused/cp", "dead_letter_path": "/tmp/unused/dl"},
        "routes": [{"topic": "srv.db.accounts", "table": "accounts"}],
        "tables": [{"name": "accounts", "key": ["id"], "base_path": "/tmp/unused/accounts", **table}],
    })  # fmt: skip
    # nothing connects until the query starts: the plan's relation holds the options as given
    return kafka_source(spark, config)._jdf.queryExecution().logical().extraOptions()


def test_min_partitions_splits_the_read_and_the_rest_passes_through(spark: SparkSession) -> None:
    options = _source_options(
        spark, {"min_partitions": 4, "max_offsets_per_trigger": 5000, "properties": {"security.protocol": "SSL"}}
    )
    assert options.get("minPartitions") == "4"
    assert options.get("maxOffsetsPerTrigger") == "5000"
    assert options.get("kafka.security.protocol") == "SSL"
    assert options.get("kafka.isolation.level") == "read_committed"


def test_without_settings_each_topic_partition_is_one_task(spark: SparkSession) -> None:
    options = _source_options(spark, {})
    assert options.get("minPartitions") is None
    assert options.get("maxOffsetsPerTrigger") is None
    assert options.get("startingOffsets") == "earliest"


def test_headers_are_read_only_for_a_job_with_a_flattened_or_avro_table(spark: SparkSession) -> None:
    """The SMT's `add.headers` may carry a flattened row's position, Apicurio's headers an Avro
    record's schema id; no other table reads headers."""
    assert _source_options(spark, {}).get("includeHeaders") == "false"
    assert _source_options(spark, {}, mode="flattened").get("includeHeaders") == "true"
