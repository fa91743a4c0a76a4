"""A job run batch by batch without Kafka: each batch's records as the Kafka source's rows, handed
to `pipeline.run_batch` (the job's own per-batch code), into a lake of its own. For tests that
compare two ways of running the same batches (folded together or alone, stored values read or not)."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from devkit.debezium import Column, DebeziumTable, KafkaRecord
from hudi_cdc.commit.metrics import BatchMetrics
from hudi_cdc.config.models import Config, parse_config
from hudi_cdc.job.catalog import TableCatalog
from hudi_cdc.job.parking import ParkingLot
from hudi_cdc.job.pipeline import BatchContext, run_batch
from tests.support.decode_rows import KAFKA_COLUMNS, T0

COLUMNS = [Column("id", "int64", optional=False), Column("name", "string"), Column("qty", "int32")]
WIDER = [*COLUMNS, Column("note", "string")]
TIMINGS = {"commit_seconds", "commit_time", "committed_at", "write"}


def source(table: str, columns: list[Column] = COLUMNS) -> DebeziumTable:
    return DebeziumTable(server="shop", database="inv", table=table, columns=columns, key=["id"])


class Lake:
    """One job of the template `shop.inv.<table>` over its own folder, fed batch by batch."""

    def __init__(
        self, spark: SparkSession, root: Path, *, together: bool, settings: dict[str, Any], job: dict[str, Any] | None = None
    ) -> None:
        self.spark, self.root = spark, root
        self.config: Config = parse_config(
            {
                "job": {"name": "grouped", "checkpoint_dir": str(root / "cp"), "dead_letter_path": str(root / "dl"),
                        "fold_together": together, "table_concurrency": 2, **(job or {})},
                "kafka": {"bootstrap_servers": "localhost:1"},
                "templates": [{"pattern": r"shop\.inv\.(?<table>[a-z]+)", "base_path": str(root / "lake" / "{name}"),
                               "settings": settings}],
            },
            source="test",
        )  # fmt: skip
        self.catalog = TableCatalog(spark, self.config)
        self.parking = ParkingLot(spark, str(root / "cp"))
        self.offsets: dict[str, int] = {}
        self.batches: list[BatchMetrics] = []

    def run(self, records: dict[str, list[KafkaRecord]]) -> BatchMetrics:
        frames = [self._rows(topic, batch) for topic, batch in records.items()]
        raw = frames[0]
        for frame in frames[1:]:
            raw = raw.unionByName(frame)
        ctx = BatchContext(config=self.catalog.config, batch_id=len(self.batches), catalog=self.catalog, parking=self.parking)
        metrics = run_batch(raw, ctx)
        self.batches.append(metrics)
        return metrics

    def _rows(self, topic: str, records: list[KafkaRecord]) -> DataFrame:
        first = self.offsets.get(topic, 0)
        self.offsets[topic] = first + len(records)
        rows = [(k, v, topic, 0, first + i, T0 + dt.timedelta(seconds=first + i)) for i, (k, v) in enumerate(records)]
        return self.spark.createDataFrame(rows, KAFKA_COLUMNS)

    def rows(self, table: str) -> list[tuple[Any, ...]]:
        return sorted(tuple(r) for r in self._read(table).select("id", "name", "qty", "_cdc_op").collect())

    def state(self, table: str) -> list[tuple[Any, ...]]:
        """Every stored column of `table` by key but `_cdc_ingested_at` (each write's own moment)."""
        frame = self._read(table)
        kept = [c for c in frame.columns if not c.startswith("_hoodie_") and c != "_cdc_ingested_at"]
        return sorted(tuple(r) for r in frame.select(*kept).collect())

    def _read(self, table: str) -> DataFrame:
        return self.spark.read.format("hudi").load(str(self.root / "lake" / table))


def counts(metrics: BatchMetrics) -> dict[str, dict[str, Any]]:
    return {t.table: {k: v for k, v in asdict(t).items() if k not in TIMINGS} for t in metrics.tables}


def mixed_batches() -> list[dict[str, list[KafkaRecord]]]:
    """Four batches over tables a, b and c (c with a column more, so it folds alone) of every kind
    of event: creates, full and partial updates, a delete, a late event, a duplicate, a new key."""
    a, b, c = source("a"), source("b"), source("c", WIDER)
    first = {
        s.topic: [s.change("c", after={"id": i, "name": f"{s.table}{i}", "qty": i, "note": "n"}, pos=100 + i) for i in (1, 2, 3)]
        for s in (a, b, c)
    }
    second = {
        a.topic: [
            a.change("u", after={"id": 1, "qty": 10}, pos=200, partial=True),
            a.change("u", after={"id": 1, "name": "a1x", "qty": 11}, pos=201),
            a.change("d", before={"id": 2, "name": "a2", "qty": 2}, pos=202),
            a.change("c", after={"id": 9, "name": "a9", "qty": 9}, pos=203),
            (None, b"{not json"),  # undecodable: dead-lettered, the rest of the batch applied
        ],
        b.topic: [
            b.change("u", after={"id": 3, "name": "late", "qty": 0}, pos=50),  # older than its stored row
            b.change("u", after={"id": 1, "name": "b1x", "qty": 5}, pos=210),
            b.change("u", after={"id": 1, "name": "b1x", "qty": 5}, pos=210),  # the same event twice
        ],
        c.topic: [c.change("u", after={"id": 1, "name": "c1x", "qty": 1, "note": "m"}, pos=220)],
    }
    third = {
        a.topic: [a.change("c", after={"id": 2, "name": "a2again", "qty": 22}, pos=300)],
        b.topic: [b.change("d", before={"id": 1}, pos=310), b.change("u", after={"id": 3, "qty": 33}, pos=311, partial=True)],
    }
    fourth = {b.topic: [b.change("u", after={"id": 3, "name": "b3", "qty": 34}, pos=400)]}  # one table: alone
    return [first, second, third, fourth]


