"""pipeline.each_table: tables of one batch applied at most N at once, results in table order;
pipeline.oldest_first: the order a batch applies its tables in;
sizing.tasks_for: how many tasks read a table's records from the batch."""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from hudi_cdc.commit.metrics import TableMetrics
from hudi_cdc.commit.offsets import KafkaRange
from hudi_cdc.config.models import TableConfig, parse_config
from hudi_cdc.fold.tally import TableRecords
from hudi_cdc.job import pipeline
from hudi_cdc.job.pipeline import BatchContext, each_table, oldest_first, run_batch
from hudi_cdc.job.sizing import tasks_for
from tests.support.decode_rows import KAFKA_COLUMNS, T0


class _Gauge:
    """How many calls run at once, and the most seen."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.finished: list[str] = []

    def run(self, name: str, seconds: float) -> str:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(seconds)
        with self.lock:
            self.now -= 1
            self.finished.append(name)
        return name.upper()


def test_tables_run_concurrently_up_to_the_bound_and_results_keep_table_order() -> None:
    gauge = _Gauge()
    tables = ["a", "b", "c", "d", "e", "f"]
    # earlier tables take longer, so they finish after later ones
    pause = {t: 0.3 - 0.04 * i for i, t in enumerate(tables)}
    got = each_table(lambda t: gauge.run(t, pause[t]), tables, concurrency=3)
    assert got == ["A", "B", "C", "D", "E", "F"]
    assert gauge.most == 3
    assert gauge.finished != tables  # they did overlap


def test_concurrency_one_runs_tables_one_after_another() -> None:
    gauge = _Gauge()
    tables = ["a", "b", "c"]
    assert each_table(lambda t: gauge.run(t, 0.05), tables, concurrency=1) == ["A", "B", "C"]
    assert gauge.most == 1
    assert gauge.finished == tables


def test_a_failing_table_raises_after_every_other_table_finished() -> None:
    gauge = _Gauge()

    def apply(table: str) -> str:
        if table == "a":
            raise RuntimeError("table a failed")
        return gauge.run(table, 0.2)

    with pytest.raises(RuntimeError, match="table a failed"):
        each_table(apply, ["a", "b", "c"], concurrency=2)
    assert sorted(gauge.finished) == ["b", "c"]


def test_a_tables_records_are_read_by_one_task_per_ten_thousand() -> None:
    assert [tasks_for(n) for n in (0, 1, 10_000, 10_001, 1_000_000)] == [1, 1, 1, 2, 100]


def _received(oldest: dt.datetime | None) -> TableRecords:
    return TableRecords(read=1, tombstones=0, kafka=KafkaRange(first={}, last={}), oldest=oldest)


def test_a_batch_applies_the_table_whose_oldest_record_waited_longest_first() -> None:
    tables = [TableConfig(name=n, key=["id"], base_path=f"/unused/{n}") for n in ("a", "b", "c", "d", "e", "f")]
    t0 = dt.datetime(2026, 12, 5, 12, 0, 0)
    received = {
        "a": _received(t0 + dt.timedelta(seconds=30)),
        "b": _received(None),  # records without a timestamp
        "c": _received(t0),
        "d": _received(t0 + dt.timedelta(seconds=30)),  # a tie with a: the job's order
        "e": _received(t0 + dt.timedelta(seconds=5)),
        # f: parked, nothing of its own in this batch
    }
    assert [t.name for t in oldest_first(tables, received)] == ["c", "e", "a", "d", "b", "f"]
    # without timestamps the job's own order stands
    assert oldest_first(tables, {}) == tables


def test_run_batch_applies_its_tables_oldest_record_first_and_reports_them_in_the_jobs_order(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = ("a", "b", "c")
    config = parse_config(
        {
            "job": {"name": "order", "checkpoint_dir": str(tmp_path / "cp"), "dead_letter_path": str(tmp_path / "dl")},
            "kafka": {"bootstrap_servers": "localhost:1"},
            "tables": [{"name": n, "key": ["id"], "base_path": str(tmp_path / n)} for n in names],
            "routes": [{"topic": f"shop.{n}", "table": n} for n in names],
        },
        source="test",
    )
    # a's record is the newest, b's the oldest; c's second record is older than a's
    at = [("a", 0, 30), ("b", 0, 10), ("c", 0, 40), ("c", 1, 20)]
    rows = [(b"{}", b"{}", f"shop.{n}", 0, offset, T0 + dt.timedelta(seconds=s)) for n, offset, s in at]
    applied: list[str] = []

    def record_order(_apply: object, _records: object, _batch: object, table: TableConfig, _ctx: object) -> TableMetrics:
        applied.append(table.name)
        return TableMetrics(table=table.name)

    monkeypatch.setattr(pipeline, "apply_isolating", record_order)
    metrics = run_batch(spark.createDataFrame(rows, KAFKA_COLUMNS), BatchContext(config=config, batch_id=0))
    assert applied == ["b", "c", "a"]
    assert [m.table for m in metrics.tables] == ["a", "b", "c"]
