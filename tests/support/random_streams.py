"""Random Debezium change streams of small two-column tables, their expected rows, and the check
that a run landed them exactly: the common ground of the fault tests (kill -9 of the job, a lost
standalone worker, a lost YARN driver).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable, KafkaRecord
from hudi_cdc.hudi.status import table_status
from hudi_cdc.spark import fs
from tests.support.harness import Job
from tests.support.reference_model import Event, ReferenceTable

COLUMNS = [Column("id", "int64", optional=False), Column("name", "string"), Column("qty", "int64")]
DATA = ["name", "qty"]
Rows = dict[str, list[dict[str, Any]]]
"""Table name -> its expected rows (id and DATA), sorted as `exact_rows` sorts them."""


def random_stream(
    rng: random.Random, source: DebeziumTable, changes: int, *, keys: int = 40, delete_rate: float = 0.05, min_live: int = 10
) -> tuple[list[KafkaRecord], list[Event]]:
    """Creates of `keys` keys, then random updates and deletes (with tombstones), in event order:
    (Kafka records, reference events).

    Deleted keys are not created again: after the first batch a merge-on-read table then only
    receives updates and deletes, which Hudi writes to log files, so compaction has work to do
    (a batch with inserts rewrites small base files instead, leaving nothing to compact).
    """
    records: list[KafkaRecord] = []
    events: list[Event] = []
    live = list(range(keys))
    for i in range(changes):
        order = f"{i:07d}"
        if i < keys:
            key, op = i, "c"
        elif len(live) > min_live and rng.random() < delete_rate:
            key = live.pop(rng.randrange(len(live)))
            records += [source.change("d", before={"id": key}, pos=1000 + i), source.tombstone({"id": key})]
            events.append(Event((key,), "d", order))
            continue
        else:
            key, op = rng.choice(live), "u"
        row = {"id": key, "name": rng.choice(["a", "b", None]), "qty": i}
        records.append(source.change(op, after=row, pos=1000 + i))
        events.append(Event((key,), op, order, {c: row[c] for c in DATA}))
    return records, events


def produce_streams(
    job: Job, rng: random.Random, changes: int, *, partitions: int | None = None, **shape: Any
) -> tuple[int, Rows]:
    """Produce a `random_stream` of `changes` into each of the job's tables' topics (created with
    `partitions` when given): (records produced, expected rows per table)."""
    produced = 0
    expected: Rows = {}
    for table in job.tables:
        name = table["name"]
        if partitions is not None:
            job.kafka.create_topics([job.topic(name)], partitions=partitions)
            job.created.add(job.topic(name))
        source = DebeziumTable(server=f"srv{job.suffix}", database="db", table=name, columns=COLUMNS, key=["id"])
        records, events = random_stream(rng, source, changes, **shape)
        job.produce(name, records)
        produced += len(records)
        reference = ReferenceTable(["id", *DATA], ["id"], soft_deletes=False)
        reference.apply_all(events)
        expected[name] = exact_rows(reference.rows().values())
    return produced, expected


def exact_rows(rows: Any) -> list[dict[str, Any]]:
    """`rows` cut to id and DATA, in one order."""
    return sorted(({c: r[c] for c in ["id", *DATA]} for r in rows), key=str)


def check_landed_exactly(
    spark: SparkSession,
    job: Job,
    produced: int,
    expected: Rows,
    context: str,
    readers: tuple[Callable[[str], list[dict[str, Any]]], ...] = (),
) -> None:
    """Exact rows through each reader (default: Spark and hudi-rs), committed counts adding up to
    the records in Kafka, nothing dead-lettered."""
    for name in expected:
        for reader in readers or (job.rows_spark, job.rows_hudi_rs):
            assert exact_rows(reader(name)) == expected[name], f"{name} read by {reader.__name__} ({context})"
    committed = [table_status(spark, job.config.table(name)).committed_counts for name in expected]
    assert sum(c["read"] for c in committed) == produced, f"committed counts {committed} ({context})"
    for counts in committed:
        outcomes = sum(v for k, v in counts.items() if k not in ("read", "isolated", "behind_watermark"))
        assert outcomes == counts["read"], f"committed outcomes do not add up: {counts} ({context})"
        assert counts["dead_letter"] == 0, f"{counts} ({context})"
    dead_letters = job.location("dead_letter")
    assert not fs.exists(spark, dead_letters) or not any(
        path.endswith(".parquet") for path, _ in fs.list_files(spark, dead_letters)
    ), f"dead letters in {dead_letters} ({context})"
