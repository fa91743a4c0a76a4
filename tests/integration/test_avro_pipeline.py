"""Avro end to end: one logical-event corpus through a real Kafka, a real registry and the
real job into Hudi, once as JSON and once as Avro: the two tables are identical.

Also: a registry that stays down longer than the retry budget stops the job before it commits
anything, and the next run (registry back) resumes from the same offsets; records whose schema
ids sit in Kafka headers (Apicurio's default) are dead-lettered with their headers while their
ids are unknown, and a replay of those dead letters lands them once the registry knows them.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from devkit.debezium_avro import to_avro
from devkit.services.kafka import LocalKafka
from devkit.services.process import free_port
from devkit.services.registry import LocalRegistry
from hudi_cdc.job import replay
from tests.support.avro_corpus import corpus, id_in_headers
from tests.support.harness import Job
from tests.support.registry_fakes import NATIVE, FakeRegistry, RegistryHandler

pytestmark = pytest.mark.integration


def _landed_as_json(spark: SparkSession, kafka: LocalKafka, tmp_path: Path) -> Job:
    """The corpus as JSON through the job: the table the Avro runs must equal."""
    as_json = Job(spark, kafka, tmp_path / "json", [{"name": "t", "key": ["id"]}])
    as_json.produce("t", corpus(f"srv{as_json.suffix}"))
    as_json.run()
    return as_json


# deep: make test keeps Avro end to end from MariaDB (test_mariadb_avro_to_hudi.py) and this file's other tests
@pytest.mark.deep
def test_same_corpus_as_json_and_as_avro_gives_identical_tables(
    spark: SparkSession, kafka: LocalKafka, registry: LocalRegistry, tmp_path: Path
) -> None:
    as_json = _landed_as_json(spark, kafka, tmp_path)

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


@pytest.mark.deep
def test_dead_lettered_records_with_ids_in_headers_land_when_replayed(
    spark: SparkSession, kafka: LocalKafka, registry: LocalRegistry, tmp_path: Path
) -> None:
    as_json = _landed_as_json(spark, kafka, tmp_path)

    # Apicurio's v2 API at first answers from a registry that knows none of the ids
    empty = FakeRegistry(("127.0.0.1", 0), RegistryHandler)
    threading.Thread(target=empty.serve_forever, daemon=True).start()
    job = Job(
        spark, kafka, tmp_path / "avro", [{"name": "t", "key": ["id"], "format": "avro"}],
        schema_registry={"url": registry.ccompat_url, "apicurio_url": f"http://127.0.0.1:{empty.server_address[1]}{NATIVE}"},
    )  # fmt: skip
    topic = job.topic("t")
    kafka.create_topics([topic])
    producer = Producer(kafka.client_config())
    for record in corpus(f"srv{job.suffix}"):
        key, value, ids = id_in_headers(to_avro(record, topic=topic, register=registry.register))
        headers: list[tuple[str, str | bytes | None]] = list(ids)
        producer.produce(topic, key=key, value=value, headers=headers)
    assert producer.flush(60) == 0
    try:
        (batch,) = job.run()
    finally:
        empty.shutdown()
        empty.server_close()
    (metrics,) = batch.tables
    assert (metrics.read, metrics.tombstone, metrics.dead_letter) == (10, 1, 9)
    letters = job.dead_letters()
    assert {d["error_class"] for d in letters} == {"AvroDecodeError"}
    assert all(any(h["key"] == "apicurio.value.contentId" for h in d["headers"]) for d in letters)

    job.schema_registry = {"url": registry.ccompat_url}  # Apicurio's API beside it
    replayed = replay.replay_dead_letters(spark, job.config, tables=["t"], error_class="AvroDecodeError")
    (metrics,) = replayed.tables
    assert (metrics.read, metrics.dead_letter) == (9, 0)
    assert job.rows_spark("t") == as_json.rows_spark("t")
