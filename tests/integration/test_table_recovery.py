"""A table config a crash left broken does not stop the job for good (see `hudi_cdc.hudi.recovery`).

The states are the ones a SIGKILL left behind in `test_kill9` (found there): Hudi interrupted
while it rewrote `hoodie.properties`, and while it created the table.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable
from devkit.services.kafka import LocalKafka
from hudi_cdc.hudi.table import table_exists, table_version
from tests.support.harness import Job

pytestmark = pytest.mark.integration

COLUMNS = [Column("id", "int64", optional=False), Column("name", "string")]


def _source(job: Job) -> DebeziumTable:
    return DebeziumTable(server=f"srv{job.suffix}", database="db", table="people", columns=COLUMNS, key=["id"])


def test_an_empty_table_config_left_by_a_crash_is_restored_from_its_backup(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    job = Job(spark, kafka, tmp_path, [{"name": "people", "key": ["id"]}])
    people = _source(job)
    job.produce("people", [people.change("c", after={"id": i, "name": f"n{i}"}, pos=100 + i) for i in range(3)])
    job.run()
    # Hudi copied the config to the backup, then died writing the new file
    meta = Path(job.path("people")) / ".hoodie"
    shutil.copy(meta / "hoodie.properties", meta / "hoodie.properties.backup")
    (meta / "hoodie.properties").write_bytes(b"")
    (meta / ".hoodie.properties.crc").unlink(missing_ok=True)

    job.produce("people", [people.change("u", after={"id": 1, "name": "renamed"}, pos=200)])
    (batch,) = job.run()
    assert batch.tables[0].applied == 1
    assert table_version(spark, job.path("people")) == 9
    assert [(r["id"], r["name"]) for r in job.rows_spark("people")] == [(0, "n0"), (1, "renamed"), (2, "n2")]


def test_a_table_creation_cut_off_by_a_crash_is_set_aside_and_the_table_created(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    job = Job(spark, kafka, tmp_path, [{"name": "people", "key": ["id"]}])
    people = _source(job)
    # Hudi made the folders, then died before writing the table config
    (Path(job.path("people")) / ".hoodie" / "timeline" / "history").mkdir(parents=True)
    job.produce("people", [people.change("c", after={"id": i, "name": f"n{i}"}, pos=100 + i) for i in range(2)])
    (batch,) = job.run()
    assert batch.tables[0].applied == 2
    assert table_exists(spark, job.path("people"))
    assert [(r["id"], r["name"]) for r in job.rows_spark("people")] == [(0, "n0"), (1, "n1")]
    assert [p.name.split("-")[0] for p in Path(job.path("people")).glob(".hoodie.incomplete-*")] == [".hoodie.incomplete"]
