"""Prepped writes (hudi.prepped) end to end: `prepped_writes` switches them per batch, and the
table holds the same rows either way. (Hudi's timeline cannot tell: its MERGE INTO switch only
swaps the index for a pass-through, and the commit still records an UPSERT.)"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable
from devkit.services.kafka import LocalKafka
from tests.support.harness import Job

pytestmark = pytest.mark.integration

SOURCE = Column("id", "int64", optional=False), Column("name", "string"), Column("balance", "decimal", scale=2)


def _row(i: int, name: str) -> dict[str, object]:
    return {"id": i, "name": name, "balance": Decimal(f"{i}.25")}


def _data(rows: list[dict[str, Any]]) -> list[tuple[object, ...]]:
    return sorted((r["id"], r["name"], r["balance"]) for r in rows)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_prepped_writes_switch_per_batch_and_never_change_the_rows(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path, table_type: str
) -> None:
    job = Job(spark, kafka, tmp_path, [{"name": "t", "key": ["id"], "type": table_type, "index": "record_level",
                                        "compaction": {"mode": "off"}}])  # fmt: skip
    src = DebeziumTable(server=f"srv{job.suffix}", database="db", table="t", columns=list(SOURCE), key=["id"])
    expected = {i: _row(i, "v0") for i in range(6)}
    job.produce("t", [src.change("c", after=row, pos=100 + i) for i, row in expected.items()])
    (created,) = job.run()
    assert created.tables[0].write == "bulk_insert"
    position = 200
    # on, off, on: each batch updates two stored keys, deletes one and inserts a new one
    batches = [(True, [0, 1], 5, 11), (False, [1, 2], 4, 12), (True, [0, 11], 3, 13)]
    for batch, (prepped, updated, deleted, new) in enumerate(batches, start=1):
        job.tables[0]["prepped_writes"] = prepped
        events = [src.change("u", after=_row(i, f"v{batch}"), pos=position + i) for i in updated]
        events.append(src.change("d", before=expected[deleted], pos=position + 50))
        events.append(src.change("c", after=_row(new, f"v{batch}"), pos=position + 60))
        position += 100
        job.produce("t", events)
        (metrics,) = job.run()
        assert metrics.tables[0].error is None
        assert metrics.tables[0].write == ("upsert_prepped" if prepped else "upsert")
        expected.update({i: _row(i, f"v{batch}") for i in [*updated, new]})
        del expected[deleted]
        want = _data(list(expected.values()))
        assert _data(job.rows_spark("t")) == want
        assert _data(job.rows_hudi_rs("t")) == want
        # a prepped row hands Hudi NULL for its key's meta column (hudi.prepped.LOCATION_COLUMNS):
        # Hudi's key generator must still have written every row's record key
        meta = spark.read.format("hudi").load(job.path("t")).select("_hoodie_record_key", "id").collect()
        assert sorted(r["_hoodie_record_key"] for r in meta) == sorted(str(i) for i in expected)
