"""Which tables keep Hudi's metadata table (`hudi.table_options.metadata_table_kept`), through real commits.

A new unpartitioned table with the simple index is written without one (its commits skip the
metadata table's own delta commit); a table that has one keeps it, and every commit still
updates it, when its settings no longer ask for one, since turning it off would make Hudi delete it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from devkit.debezium import DebeziumTable
from devkit.services.kafka import LocalKafka
from hudi_cdc.hudi.compactor import run_compaction
from tests.support.accounts import COLUMNS, account, accounts_source
from tests.support.harness import Job

pytestmark = pytest.mark.integration


def _metadata_commits(base_path: str) -> int:
    """Completed delta commits of the table's metadata table (0 without one)."""
    timeline = Path(base_path) / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    return sum(1 for p in timeline.iterdir() if p.suffix == ".deltacommit") if timeline.is_dir() else 0


def test_a_new_unpartitioned_table_keeps_no_metadata_table_and_one_that_has_it_keeps_updating_it(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    asked = {"name": "orders", "key": ["id"], "hoodie_options": {"hoodie.metadata.enable": True}}
    job = Job(spark, kafka, tmp_path, [{"name": "accounts", "key": ["id"]}, asked])
    accounts = accounts_source(job)
    orders = DebeziumTable(server=f"srv{job.suffix}", database="db", table="orders", columns=COLUMNS, key=["id"])
    for table, source in (("accounts", accounts), ("orders", orders)):
        job.produce(table, [source.change("c", after=account(i, f"n{i}", "1.00"), pos=100 + i) for i in range(3)])
    job.run()
    assert not (Path(job.path("accounts")) / ".hoodie" / "metadata").exists()
    created = _metadata_commits(job.path("orders"))
    assert created >= 1, "the table whose hoodie_options ask for a metadata table has none"

    # the option taken away: the metadata table stays and the next commit updates it
    job.tables[1] = {"name": "orders", "key": ["id"]}
    for table, source in (("accounts", accounts), ("orders", orders)):
        job.produce(table, [
            source.change("u", before=account(1, "n1", "1.00"), after=account(1, "m1", "2.00"), pos=200),
            source.change("d", before=account(2, "n2", "1.00"), pos=201),
        ])  # fmt: skip
    (batch,) = job.run()
    assert sorted((t.table, t.applied, t.deleted) for t in batch.tables) == [("accounts", 1, 1), ("orders", 1, 1)]
    assert _metadata_commits(job.path("orders")) > created
    assert not (Path(job.path("accounts")) / ".hoodie" / "metadata").exists()
    expected = [{"id": 0, "name": "n0"}, {"id": 1, "name": "m1"}]
    for table in ("accounts", "orders"):
        assert [{"id": r["id"], "name": r["name"]} for r in job.rows_spark(table)] == expected, table


# deep: a narrow path (the compaction procedure's options), and make test is near its budget
@pytest.mark.deep
def test_a_compaction_off_the_ingestion_path_makes_no_metadata_table_for_a_table_kept_without(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    """`hudi-cdc compact` runs Hudi's procedure, whose write client would make a metadata table by
    Hudi's default: it gets the writer's choice."""
    mor = {"name": "accounts", "key": ["id"], "type": "MERGE_ON_READ", "compaction": {"mode": "schedule_only"}}
    job = Job(spark, kafka, tmp_path, [mor])
    source = accounts_source(job)
    job.produce("accounts", [source.change("c", after=account(i, f"n{i}", "1.00"), pos=100 + i) for i in range(3)])
    job.run()
    job.produce("accounts", [source.change("u", before=account(1, "n1", "1.00"), after=account(1, "m1", "2.00"), pos=200)])
    job.run()
    path = Path(job.path("accounts"))
    assert any(".log." in f.name for f in path.iterdir()), "the update wrote no log file to compact"

    compacted = run_compaction(spark, job.config.table("accounts"), force=True)

    assert compacted["compacted"] != "-"
    assert (path / ".hoodie" / "timeline").is_dir() and any(
        p.suffix == ".commit" for p in (path / ".hoodie" / "timeline").iterdir()
    ), "no compaction commit"
    assert not (path / ".hoodie" / "metadata").exists()
    assert [{"id": r["id"], "name": r["name"]} for r in job.rows_spark("accounts")] == [
        {"id": 0, "name": "n0"}, {"id": 1, "name": "m1"}, {"id": 2, "name": "n2"},
    ]  # fmt: skip
