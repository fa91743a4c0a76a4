"""Semantics §3 truncate through the real job: applied as a table-wide delete, or ignored and counted."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable
from devkit.services.kafka import LocalKafka
from tests.support.harness import Job

pytestmark = pytest.mark.integration


def test_truncate_applies_or_is_ignored_per_table(spark: SparkSession, kafka: LocalKafka, tmp_path: Path) -> None:
    tables = [{"name": "applied", "key": ["id"]}, {"name": "kept", "key": ["id"], "truncate": "ignore"}]
    job = Job(spark, kafka, tmp_path, tables)
    sources = {
        name: DebeziumTable(server=f"srv{job.suffix}", database="db", table=name, columns=[Column("id", "int64"), Column("v", "string")], key=["id"])
        for name in ("applied", "kept")
    }
    for name, src in sources.items():
        job.produce(name, [src.change("c", after={"id": i, "v": "old"}, pos=100 + i) for i in (1, 2)])
    job.run()
    for name, src in sources.items():
        # a truncate at pos 200 and a row written after it
        job.produce(name, [src.change("t", pos=200, with_key=False), src.change("c", after={"id": 3, "v": "new"}, pos=300)])
    (batch,) = job.run()
    by_table = {t.table: t for t in batch.tables}
    assert by_table["applied"].deleted == 1 and by_table["kept"].truncate_ignored == 1
    assert [r["id"] for r in job.rows_spark("applied")] == [3]
    assert [r["id"] for r in job.rows_spark("kept")] == [1, 2, 3]
    assert [r["_cdc_op"] for r in job.rows_hudi_rs("applied")] == ["c"]
