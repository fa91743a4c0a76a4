"""Debezium under Kafka Connect's exactly-once source support (KIP-618), on real components.

A worker with `exactly.once.source.support=enabled` writes each task's records and source
offsets in one Kafka transaction, so the table's topic holds commit markers between the change
events. MariaDB -> Debezium -> Kafka (transactions) -> hudi_cdc -> Hudi must still land row for
row, every record counted once, and the Kafka lag must reach 0 with the markers consumed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql import SparkSession

from devkit.services.connect import LocalConnect
from devkit.services.kafka import LocalKafka
from devkit.services.mariadb import LocalMariaDB
from hudi_cdc.hudi.table import table_exists
from tests.support.databases import captured_mariadb
from tests.support.harness import Job, wait_for

pytestmark = pytest.mark.integration

DDL = "CREATE TABLE {t} (id INT PRIMARY KEY, name VARCHAR(50), qty INT)"


@pytest.fixture(scope="module")
def exactly_once_connect(kafka: LocalKafka) -> Iterator[LocalConnect]:
    """A Connect worker of its own, with exactly-once source support on."""
    with LocalConnect(kafka.bootstrap_servers, worker_settings={"exactly.once.source.support": "enabled"}) as worker:
        yield worker


def test_debezium_with_exactly_once_delivery_lands_row_for_row_and_its_markers_are_no_lag(
    spark: SparkSession, kafka: LocalKafka, mariadb: LocalMariaDB, exactly_once_connect: LocalConnect, tmp_path: Path
) -> None:
    textfile = tmp_path / "metrics.prom"
    job = Job(spark, kafka, tmp_path, [{"name": "items", "key": ["id"]}], job_settings={"metrics_textfile": str(textfile)})
    insert = "INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)"
    options = {"exactly.once.support": "required"}
    with captured_mariadb(mariadb, exactly_once_connect, kafka, job, DDL, insert, options) as qualified:
        wait_for("the snapshot", lambda: _rows(job) == {1: ("a", 1), 2: ("b", 2), 3: ("c", 3)})
        for statement in (
            f"UPDATE {qualified} SET qty = 10 WHERE id = 1",
            f"INSERT INTO {qualified} VALUES (4, 'd', 4)",
            f"DELETE FROM {qualified} WHERE id = 2",
            f"UPDATE {qualified} SET name = 'c2', qty = NULL WHERE id = 3",
        ):
            mariadb.execute(statement)
        expected = {r[0]: (r[1], r[2]) for r in mariadb.execute(f"SELECT id, name, qty FROM {qualified}")}
        wait_for("the changes", lambda: _rows(job) == expected)

        topic = job.topic("items")
        records, end = _records_and_end(kafka, topic)
        assert end > records, f"{topic}: {records} records up to offset {end}: no transaction markers"
        tables = [t for b in job.batches for t in b.tables]
        # 3 snapshot reads, 4 changes and the delete's tombstone: each counted once
        assert sum(t.read for t in tables) == records == 8
        assert sum(t.dead_letter for t in tables) == 0 and sum(t.tombstone for t in tables) == 1
        assert _kafka_lag(textfile) == 0


def _rows(job: Job) -> dict[int, tuple[str | None, int | None]]:
    job.run()
    if not table_exists(job.spark, job.path("items")):
        return {}
    return {r["id"]: (r["name"], r["qty"]) for r in job.rows_spark("items")}


def _records_and_end(kafka: LocalKafka, topic: str) -> tuple[int, int]:
    """Committed records of `topic`'s only partition, and its end offset (markers included)."""
    consumer = Consumer({**kafka.client_config(), "group.id": "eos-check", "isolation.level": "read_committed",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})  # fmt: skip
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        consumer.assign([TopicPartition(topic, 0, 0)])
        count = 0
        while (message := consumer.poll(5)) is not None:
            if message.error() is None:
                count += 1
        return count, end
    finally:
        consumer.close()


def _kafka_lag(textfile: Path) -> float:
    (family,) = (f for f in text_string_to_metric_families(textfile.read_text()) if f.name == "hudi_cdc_kafka_lag_records")
    (sample,) = family.samples
    return sample.value
