"""Kafka deleted records the job has not applied, or a topic left the job: a clear stop, and a way on.

With `kafka.fail_on_data_loss` on (the default), Spark's Kafka source stops the query when the
checkpoint needs records Kafka no longer holds. The job says which topic-partitions and offsets,
which tables they feed, and what to do; run once with the setting off, it goes past the gap and
counts the records it went past.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession

from devkit.debezium import DebeziumTable
from devkit.services.kafka import LocalKafka
from hudi_cdc.commit.metrics import BatchMetrics
from hudi_cdc.errors import KafkaDataLossError
from tests.support.accounts import COLUMNS, account
from tests.support.harness import Job

pytestmark = pytest.mark.integration


def _names(job: Job, table: str) -> list[tuple[int, str]]:
    return [(r["id"], r["name"]) for r in job.rows_spark(table)]


def _lost(batches: list[BatchMetrics], table: str) -> int:
    return sum(t.lost for batch in batches for t in batch.tables if t.table == table)


def _recreate(kafka: LocalKafka, topic: str) -> None:
    """Delete `topic` and create it again (empty): its offsets start at 0 once more."""
    admin = AdminClient(kafka.client_config())
    for future in admin.delete_topics([topic], operation_timeout=30).values():
        future.result()
    deadline = time.monotonic() + 60
    while topic in admin.list_topics(timeout=10).topics:  # the broker deletes it in the background
        assert time.monotonic() < deadline, f"{topic} still listed 60 s after its deletion"
        time.sleep(0.5)
    kafka.create_topics([topic])


def _delete_before(kafka: LocalKafka, topic: str, offset: int) -> None:
    """What retention does: Kafka no longer holds the partition's offsets before `offset`."""
    admin = AdminClient(kafka.client_config())  # held: a client collected early never answers its futures
    for future in admin.delete_records([TopicPartition(topic, 0, offset)]).values():
        future.result()


def test_records_deleted_by_kafka_or_a_removed_route_stop_the_job_clearly_and_a_lenient_run_goes_on(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    job = Job(spark, kafka, tmp_path, [{"name": "kept", "key": ["id"]}, {"name": "other", "key": ["id"]}])
    sources = {
        name: DebeziumTable(server=f"srv{job.suffix}", database="db", table=name, columns=COLUMNS, key=["id"])
        for name in ("kept", "other")
    }
    for name, src in sources.items():
        job.produce(name, [src.change("c", after=account(i, "first", "1.00"), pos=100 + i) for i in range(3)])
    job.run()

    # retention deletes records 3 and 4 of `kept` before the job reads them
    for name, src in sources.items():
        job.produce(name, [src.change("u", after=account(i, "second", "1.00"), pos=200 + i) for i in range(3)])
    _delete_before(kafka, job.topic("kept"), 5)
    with pytest.raises(KafkaDataLossError) as stopped:
        job.run()
    message = str(stopped.value)
    assert f"{job.topic('kept')}-0: the records from offset 3 on are no longer in Kafka" in message
    assert "(tables: kept)" in message and "kafka.fail_on_data_loss: false" in message
    assert _names(job, "other") == [(i, "first") for i in range(3)]  # nothing of the batch committed

    # the way on: one run that skips the gap, and counts what it skipped; then the default again
    lenient = job.run(kafka={"fail_on_data_loss": False})
    assert _names(job, "kept") == [(0, "first"), (1, "first"), (2, "second")]
    assert _names(job, "other") == [(i, "second") for i in range(3)]
    assert (_lost(lenient, "kept"), _lost(lenient, "other")) == (2, 0)  # offsets 3 and 4
    job.run()

    # a lenient run whose whole batch is gone: nothing to read, everything counted
    job.produce("kept", [sources["kept"].change("u", after=account(i, "third", "1.00"), pos=400 + i) for i in range(3)])
    _delete_before(kafka, job.topic("kept"), 9)
    lenient = job.run(kafka={"fail_on_data_loss": False})
    assert (_lost(lenient, "kept"), sum(t.read for b in lenient for t in b.tables)) == (3, 0)
    assert _names(job, "kept") == [(0, "first"), (1, "first"), (2, "second")]

    # the topic deleted and created again with 2 records: its offsets went back from 9 to 2, Spark
    # skips to 2 and never reads those 2; the lenient run counts them
    _recreate(kafka, job.topic("kept"))
    job.produce("kept", [sources["kept"].change("u", after=account(i, "fifth", "1.00"), pos=500 + i) for i in range(2)])
    with pytest.raises(KafkaDataLossError, match="went back from 9 to 2"):
        job.run()
    lenient = job.run(kafka={"fail_on_data_loss": False})
    assert (_lost(lenient, "kept"), sum(t.read for b in lenient for t in b.tables)) == (2, 0)
    job.produce("kept", [sources["kept"].change("u", after=account(0, "sixth", "1.00"), pos=600)])
    job.run()  # read from offset 2 on, as Spark left it
    assert _names(job, "kept") == [(0, "sixth"), (1, "first"), (2, "second")]

    # a route removed: Spark takes the topic that left the subscription for a deleted one
    job.tables[:] = [t for t in job.tables if t["name"] == "other"]
    job.produce("other", [sources["other"].change("u", after=account(0, "third", "1.00"), pos=300)])
    with pytest.raises(KafkaDataLossError, match=rf"{job.topic('kept')}-0: in the checkpoint, but no longer read"):
        job.run()
    assert _lost(job.run(kafka={"fail_on_data_loss": False}), "kept") == 0  # left the job: not lost
    job.produce("other", [sources["other"].change("u", after=account(1, "fourth", "1.00"), pos=301)])
    job.run()
    assert _names(job, "other") == [(0, "third"), (1, "fourth"), (2, "second")]
