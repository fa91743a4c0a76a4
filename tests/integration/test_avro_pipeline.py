"""Issue 13 end to end: one logical-event corpus through a real Kafka, a real registry and the
real job into Hudi, once as JSON and once as Avro: the two tables are identical.

Also: a registry that stays down longer than the retry budget stops the job before it commits
anything, and the next run (registry back) resumes from the same offsets.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from devkit.debezium_avro import to_avro
from devkit.services.kafka import LocalKafka
from devkit.services.process import free_port
from devkit.services.registry import LocalRegistry
from tests.integration.harness import Job
from tests.integration.test_avro_decode import corpus

pytestmark = pytest.mark.integration


def test_same_corpus_as_json_and_as_avro_gives_identical_tables(
    spark: SparkSession, kafka: LocalKafka, registry: LocalRegistry, tmp_path: Path
) -> None:
    as_json = Job(spark, kafka, tmp_path / "json", [{"name": "t", "key": ["id"]}])
    as_json.produce("t", corpus(f"srv{as_json.suffix}"))
    as_json.run()

    down = f"http://127.0.0.1:{free_port()}/apis/ccompat/v7"  # nothing listens there
    as_avro = Job(
        spark, kafka, tmp_path / "avro", [{"name": "t", "key": ["id"], "format": "avro"}],
        schema_registry={"url": down, "retry_budget": "2 seconds", "request_timeout": "1 second"},
    )  # fmt: skip
    topic = as_avro.topic("t")
    as_avro.produce("t", [to_avro(r, topic=topic, register=registry.register) for r in corpus(f"srv{as_avro.suffix}")])
    with pytest.raises(Exception, match="did not return schema id"):
        as_avro.run()
    assert not (tmp_path / "avro" / "warehouse" / "t" / ".hoodie").exists(), "nothing may be committed"

    as_avro.schema_registry = {"url": registry.ccompat_url}
    (batch,) = as_avro.run()
    (metrics,) = batch.tables
    assert (metrics.read, metrics.tombstone, metrics.dead_letter) == (10, 1, 0)
    rows = as_json.rows_spark("t")
    assert [r["id"] for r in rows] == [1, 2, 4, 5, 6]
    assert as_avro.rows_spark("t") == rows
    assert as_avro.rows_hudi_rs("t") == as_json.rows_hudi_rs("t")
