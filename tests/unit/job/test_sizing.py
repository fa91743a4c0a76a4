"""sizing.in_one_task: which table batches run their fold and counts in one task; and the rule
applied to a real table, whose size Hudi's file index gives after listing it."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

from devkit.debezium import Column, DebeziumTable
from hudi_cdc.commit.offsets import KafkaRange
from hudi_cdc.config.models import parse_config
from hudi_cdc.fold.tally import TableRecords
from hudi_cdc.hudi.table import read_table, stored_bytes
from hudi_cdc.job import table_batch
from hudi_cdc.job.pipeline import BatchContext, run_batch
from hudi_cdc.job.sizing import ONE_TASK_TABLE_BYTES, ROWS_PER_TASK, in_one_task
from tests.support.decode_rows import kafka_rows


def test_a_batch_runs_in_one_task_only_when_its_records_and_its_table_are_small() -> None:
    assert in_one_task(8, 0)  # a table not made yet
    assert in_one_task(ROWS_PER_TASK, ONE_TASK_TABLE_BYTES)
    assert not in_one_task(ROWS_PER_TASK + 1, 0)  # its records alone are read by two tasks
    assert not in_one_task(8, ONE_TASK_TABLE_BYTES + 1)
    assert not in_one_task(8, 2**63 - 1)  # what Spark reports for a size it does not know


SOURCE = DebeziumTable(
    server="shop", database="db", table="t", key=["id"],
    columns=[Column("id", "int64", optional=False), Column("v", "string")],
)  # fmt: skip
ROW = StructType([StructField("id", LongType(), False), StructField("v", StringType(), True)])


def test_a_small_tables_batch_is_sized_by_the_files_its_read_lists(spark: SparkSession, tmp_path: Path) -> None:
    config = parse_config(
        {
            "job": {"name": "sizing", "checkpoint_dir": str(tmp_path / "cp"), "dead_letter_path": str(tmp_path / "dl")},
            "kafka": {"bootstrap_servers": "localhost:1"},
            "tables": [{"name": "t", "key": ["id"], "base_path": str(tmp_path / "t")}],
            "routes": [{"topic": SOURCE.topic, "table": "t"}],
        },
        source="test",
    )
    [table] = config.tables
    creates = [SOURCE.change("c", after={"id": i, "v": "x" * 50}, pos=154 + i) for i in range(200)]
    run_batch(kafka_rows(spark, creates, topic=SOURCE.topic), BatchContext(config=config, batch_id=0))
    stored = read_table(spark, table.base_path)
    assert stored is not None
    size = stored_bytes(stored)
    # the base file the first commit wrote, scaled to the columns read (Hudi's meta columns are
    # not): some kilobytes, not Spark's "unknown"
    written = sum(p.stat().st_size for p in (tmp_path / "t").iterdir() if p.suffix == ".parquet")
    assert size is not None and written / 4 < size <= written < 10_000_000

    def received(records: int) -> TableRecords:
        return TableRecords(read=records, tombstones=0, kafka=KafkaRange(first={}, last={}))

    assert table_batch._in_one_task(stored, received(8), ROW, table)
    assert not table_batch._in_one_task(stored, received(ROWS_PER_TASK + 1), ROW, table)
    assert table_batch._in_one_task(None, received(8), ROW, table)  # its first batch
