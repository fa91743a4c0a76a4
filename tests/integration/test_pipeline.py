"""End to end: Debezium records through a real Kafka and the real job into Hudi tables."""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable
from devkit.services.kafka import LocalKafka
from hudi_cdc.spark.session import jvm
from tests.support.harness import Job

pytestmark = pytest.mark.integration

SOURCE = Column("id", "int64", optional=False), Column("name", "string"), Column("balance", "decimal", scale=2)


def _table(name: str, job: Job) -> DebeziumTable:
    return DebeziumTable(server=f"srv{job.suffix}", database="db", table=name, columns=list(SOURCE), key=["id"])


def _row(i: int, name: str, balance: str = "1.00") -> dict[str, object]:
    return {"id": i, "name": name, "balance": Decimal(balance)}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_one_batch_updates_delete_tombstone_and_malformed(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path, table_type: str
) -> None:
    job = Job(spark, kafka, tmp_path, [{"name": "people", "key": ["id"], "type": table_type}])
    src = _table("people", job)
    job.produce(
        "people",
        [
            src.change("c", after=_row(1, "a"), pos=100),
            src.change("u", after=_row(1, "b"), pos=200),
            src.change("u", after=_row(1, "c", "3.50"), pos=300),
            src.change("c", after=_row(2, "x"), pos=400),
            src.change("d", before=_row(2, "x"), pos=500),
            src.tombstone(_row(2, "x")),
            (None, b"\x00not json"),
            src.change("c", after=_row(3, "z", "-7.25"), pos=600),
        ],
    )
    (batch,) = job.run()
    (metrics,) = batch.tables
    assert (metrics.read, metrics.tombstone, metrics.dead_letter, metrics.deleted) == (8, 1, 1, 1)
    expected = [
        {"id": 1, "name": "c", "balance": Decimal("3.50"), "_cdc_op": "u"},
        {"id": 3, "name": "z", "balance": Decimal("-7.25"), "_cdc_op": "c"},
    ]
    for reader in (job.rows_spark, job.rows_hudi_rs):
        rows = reader("people")
        assert [{k: r[k] for k in ("id", "name", "balance", "_cdc_op")} for r in rows] == expected
        assert rows[0]["_cdc_source"] == "mysql-bin.000003:300:0"
    (letter,) = job.dead_letters()
    assert (letter["table"], letter["partition"], letter["offset"], letter["error_class"]) == ("people", 0, 6, "MalformedJson")
    assert letter["value"] == b"\x00not json" and f"{job.topic('people')}[0]@6" in letter["error_message"]

    # an older event arriving in a later batch does not overwrite the newer row
    job.produce("people", [src.change("u", after=_row(1, "stale"), pos=250)])
    (later,) = job.run()
    assert later.tables[0].late == 1
    assert [r["name"] for r in job.rows_spark("people")] == ["c", "z"]


def test_rerun_from_scratch_and_replayed_batch_give_identical_tables(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    first = Job(spark, kafka, tmp_path / "first", [{"name": "t", "key": ["id"]}])
    src = _table("t", first)
    first.produce("t", [src.change("c", after=_row(i, f"n{i}"), pos=100 + i) for i in range(5)])
    first.run()
    first.produce("t", [src.change("u", after=_row(i, f"m{i}"), pos=200 + i) for i in range(0, 5, 2)] + [src.change("d", before=_row(1, "n1"), pos=300)])
    (second,) = first.run()
    rows = first.rows_spark("t")

    # rerun from scratch on the same topics into a new table
    again = Job(spark, kafka, tmp_path / "again", [{"name": "t", "key": ["id"]}], suffix=first.suffix)
    again.run()
    assert _data(again.rows_spark("t")) == _data(rows)

    # replay the last batch into the same table: forget that Spark committed it
    commits = tmp_path / "first" / "cp" / "commits"
    last = max(commits.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1)
    last.unlink()
    (commits / f".{last.name}.crc").unlink(missing_ok=True)
    shutil.rmtree(tmp_path / "first" / "cp" / "state", ignore_errors=True)
    (replayed,) = first.run()
    # the table's commit already holds this batch: nothing is written again, and the counts
    # reported are the committed ones (the counts kept in commit metadata), not "duplicate"
    (table,) = replayed.tables
    assert table.replayed and table.upserted_rows == 0 and table.commit_time is None
    assert (table.read, table.applied, table.deleted) == (second.tables[0].read, 3, 1)
    assert first.rows_spark("t") == rows


def test_the_local_session_runs_the_throughput_garbage_collector(spark: SparkSession) -> None:
    """The JVM the session started collects with ParallelGC (spark_session.LOCAL_DRIVER_JAVA_OPTIONS)."""
    beans = jvm(spark).java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    names = sorted(str(beans.get(i).getName()) for i in range(beans.size()))
    assert names == ["PS MarkSweep", "PS Scavenge"], names


def test_a_warm_batch_reuses_sparks_generated_code(spark: SparkSession, kafka: LocalKafka, tmp_path: Path) -> None:
    """A batch shaped like the one before compiles almost no generated class again: Spark's codegen
    cache holds a whole batch's classes (spark_session.CODEGEN_CACHE_DEFAULT). With Spark's default
    of 100, every such batch compiled about 65 again (docs/performance-journal.md, round 5)."""
    job = Job(spark, kafka, tmp_path, [{"name": "t", "key": ["id"]}])
    src = _table("t", job)
    compilations = jvm(spark).org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
    compiled: list[int] = []
    for n in range(3):  # a first write, then two upserts of the same shape
        op = "u" if n else "c"
        job.produce("t", [src.change(op, after=_row(i, f"v{n}"), pos=100 * (n + 1) + i) for i in range(5)])
        before = compilations.getCount()
        job.run()
        compiled.append(compilations.getCount() - before)
    assert compiled[2] <= 10, f"classes compiled per batch: {compiled}"
    assert [r["name"] for r in job.rows_spark("t")] == ["v2"] * 5


def _data(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    return [{k: v for k, v in r.items() if k != "_cdc_ingested_at"} for r in rows]
