"""Topics written in Kafka transactions (Kafka Connect's exactly-once source support).

Connect then writes each batch of source records in a transaction and aborts it when the task
fails; the records of an aborted transaction were never delivered and must not reach the table.
The job reads `read_committed` by default: aborted records are never read (nor counted: they
are not records of the stream), records of an open transaction wait for its commit, and the
commit markers between records are offsets without records, under any batch cut.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from pathlib import Path

import pytest
from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable, KafkaRecord
from devkit.services.kafka import LocalKafka
from tests.support.harness import Job

pytestmark = pytest.mark.integration


def _source(job: Job) -> DebeziumTable:
    columns = [Column("id", "int64", optional=False), Column("name", "string")]
    return DebeziumTable(server=f"srv{job.suffix}", database="db", table="t", columns=columns, key=["id"])


class _Transactions:
    """A transactional producer of one topic."""

    def __init__(self, kafka: LocalKafka, topic: str) -> None:
        self.topic = topic
        self.producer = Producer({**kafka.client_config(), "transactional.id": uuid.uuid4().hex})
        self.producer.init_transactions(30)

    def send(self, records: Iterable[KafkaRecord], *, commit: bool | None) -> None:
        """One transaction of `records`: committed, aborted, or (None) left open."""
        self.producer.begin_transaction()
        for key, value in records:
            self.producer.produce(self.topic, key=key, value=value)
        self.producer.flush(30)
        if commit is True:
            self.producer.commit_transaction(30)
        elif commit is False:
            self.producer.abort_transaction(30)


def test_aborted_transactions_never_reach_the_table_and_open_ones_wait_for_their_commit(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    textfile = tmp_path / "metrics.prom"
    job = Job(spark, kafka, tmp_path, [{"name": "t", "key": ["id"]}], job_settings={"metrics_textfile": str(textfile)})
    source = _source(job)
    kafka.create_topics([job.topic("t")])
    connect = _Transactions(kafka, job.topic("t"))
    connect.send([source.change("c", after={"id": 1, "name": "a"}, pos=100),
                  source.change("c", after={"id": 2, "name": "b"}, pos=200)], commit=True)  # fmt: skip
    connect.send([source.change("u", after={"id": 1, "name": "aborted"}, pos=300),
                  source.change("c", after={"id": 9, "name": "aborted"}, pos=310)], commit=False)  # fmt: skip
    connect.send([source.change("u", after={"id": 2, "name": "b2"}, pos=400)], commit=True)
    connect.send([source.change("u", after={"id": 2, "name": "open"}, pos=500)], commit=None)

    # every offset alone in its batch: records, aborted records and markers each get a batch
    batches = job.run(kafka={"max_offsets_per_trigger": 1})
    tables = [t for b in batches for t in b.tables]
    assert sum(t.read for t in tables) == 3 and sum(t.applied for t in tables) == 3
    assert sum(t.dead_letter for t in tables) == 0
    assert [(r["id"], r["name"]) for r in job.rows_spark("t")] == [(1, "a"), (2, "b2")]
    # the open transaction's record is not readable yet: Kafka's last stable offset is before it
    assert _kafka_lag(textfile) == 0

    connect.producer.commit_transaction(30)  # the open transaction commits: its record is read now
    (batch,) = job.run()
    assert [(t.read, t.applied) for t in batch.tables] == [(1, 1)]
    assert [(r["id"], r["name"]) for r in job.rows_spark("t")] == [(1, "a"), (2, "open")]
    # the topic ends in the commit marker: consumed, so no lag (it is an offset, not a record)
    assert _kafka_lag(textfile) == 0


def _kafka_lag(textfile: Path) -> float:
    (family,) = (f for f in text_string_to_metric_families(textfile.read_text()) if f.name == "hudi_cdc_kafka_lag_records")
    (sample,) = family.samples
    return sample.value


def test_read_uncommitted_is_a_users_choice(spark: SparkSession, kafka: LocalKafka, tmp_path: Path) -> None:
    """`kafka.properties` overrides the isolation level (here: an aborted record is read)."""
    job = Job(spark, kafka, tmp_path, [{"name": "t", "key": ["id"]}])
    kafka.create_topics([job.topic("t")])
    connect = _Transactions(kafka, job.topic("t"))
    connect.send([_source(job).change("c", after={"id": 1, "name": "aborted"}, pos=100)], commit=False)
    job.run(kafka={"properties": {"isolation.level": "read_uncommitted"}})
    assert [(r["id"], r["name"]) for r in job.rows_spark("t")] == [(1, "aborted")]
