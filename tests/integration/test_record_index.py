"""`index: record_level` and `bucket` end to end: partial updates and moves keep their stored values, and the read prunes.

The stored-row read of a record-level or bucket table reads only the files the index names for a batch's
keys. A file pruned by mistake would hide a stored row from the fold and silently drop the
stored values a partial update keeps, so the checks below are partial updates and partition
moves, whose stored values only the stored row has. A batch with more distinct keys than one
lookup takes reads by the scan and must keep them too.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pyspark.sql import DataFrame, SparkSession

from devkit.debezium import Column, DebeziumTable, KafkaRecord
from devkit.services.kafka import LocalKafka
from hudi_cdc.cli.console import cli
from hudi_cdc.commit.offsets import INDEX_KEY
from hudi_cdc.errors import ConfigError, RelayoutError
from hudi_cdc.fold.stored_state import INDEX_LOOKUP_MAX_KEYS
from hudi_cdc.hudi import relayout as relayout_module
from hudi_cdc.hudi.relayout import relayout
from hudi_cdc.hudi.table import meta_client, read_keys, read_table
from hudi_cdc.hudi.table_options import key_lookup_options
from hudi_cdc.hudi.timeline import latest_job_metadata
from hudi_cdc.job import stream
from hudi_cdc.spark import fs
from tests.support.harness import Job

pytestmark = pytest.mark.integration

SOURCE = (
    Column("id", "int64", optional=False),
    Column("name", "string"),
    Column("balance", "decimal", scale=2),
    Column("region", "string"),
)
KEYS = 40
BULK = range(1000, 1000 + INDEX_LOOKUP_MAX_KEYS)


def _row(i: int, name: str, region: str, balance: str = "1.00") -> dict[str, Any]:
    return {"id": i, "name": name, "balance": Decimal(balance), "region": region}


def _region(i: int) -> str:
    return "eu" if i % 2 else "us"


def _batches(src: DebeziumTable) -> list[list[KafkaRecord]]:
    snapshot = [src.change("r", after=_row(i, f"n{i}", _region(i), f"{i}.00"), pos=100 + i) for i in range(1, KEYS + 1)]
    changes = [
        # minimal row images: the stored balance must survive, which needs the stored row
        src.change("u", after={"id": 3, "name": "renamed", "region": _region(3)}, partial=True, pos=1000),
        src.change("u", after={"id": 4, "name": "moved", "region": "eu"}, partial=True, pos=1001),
        src.change("d", before=_row(5, "n5", _region(5)), pos=1002),
        src.change("c", after=_row(KEYS + 1, "new", "us", "9.99"), pos=1003),
        src.change("u", after=_row(7, "full", "us", "7.77"), pos=1004),
    ]
    again = [
        # a second change to a moved row and to a partially updated one, in a later commit
        src.change("u", after={"id": 4, "name": "moved twice", "region": "us"}, partial=True, pos=2000),
        src.change("u", after={"id": 3, "balance": Decimal("33.00"), "region": _region(3)}, partial=True, pos=2001),
    ]
    # more distinct keys than one lookup takes: the stored-row read falls back to the scan
    bulk = [src.change("c", after=_row(i, f"bulk{i}", _region(i)), pos=3000 + i) for i in BULK]
    bulk.append(src.change("u", after={"id": 3, "name": "renamed again", "region": _region(3)}, partial=True, pos=9000))
    return [snapshot, changes, again, bulk]


def _expected() -> dict[int, dict[str, Any]]:
    rows = {i: _row(i, f"n{i}", _region(i), f"{i}.00") for i in range(1, KEYS + 1)}
    rows[3] |= {"name": "renamed again", "balance": Decimal("33.00")}
    rows[4] |= {"name": "moved twice", "region": "us"}
    del rows[5]
    rows[7] = _row(7, "full", "us", "7.77")
    rows[KEYS + 1] = _row(KEYS + 1, "new", "us", "9.99")
    rows |= {i: _row(i, f"bulk{i}", _region(i)) for i in BULK}
    return rows


def _compactions(spark: SparkSession, path: str) -> int:
    """Completed compaction commits on a merge-on-read table's timeline."""
    timeline = meta_client(spark, path).getActiveTimeline().getCommitTimeline().filterCompletedInstants()
    return int(timeline.countInstants())


def _files_read(df: DataFrame) -> int:
    """Data files the scan of a fresh DataFrame reads, run once (Spark's `numFiles` metric of the file scan)."""
    df.collect()
    plan = df._jdf.queryExecution().executedPlan()
    if plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
        plan = plan.executedPlan()
    leaves = plan.collectLeaves()
    counts = [leaves.apply(i).metrics() for i in range(leaves.size())]
    return sum(int(m.apply("numFiles").value()) for m in counts if m.contains("numFiles"))


@pytest.mark.parametrize(
    "table",
    [
        # merge-on-read: inserts may land in log files, where the index must find them too
        {"type": "MERGE_ON_READ", "partition_by": ["region"], "index": "record_level"},
        # a bucket index finds keys within a partition only: unpartitioned, the region is a plain column;
        # compacted every 2 commits, so later lookups read compacted buckets and their new logs
        {"type": "MERGE_ON_READ", "index": "bucket", "buckets": 4, "compaction": {"max_delta_commits": 2}},
    ],
    ids=["record-level", "bucket"],
)
def test_an_index_that_names_files_keeps_partial_updates_and_moves_and_prunes_the_read(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path, caplog: pytest.LogCaptureFixture, table: dict[str, Any]
) -> None:
    job = Job(spark, kafka, tmp_path, [{"name": "accounts", "key": ["id"], **table}])
    src = DebeziumTable(server=f"srv{job.suffix}", database="db", table="accounts", columns=list(SOURCE), key=["id"])
    with caplog.at_level(logging.INFO, logger="hudi_cdc.job.table_batch"):
        for records in _batches(src):
            job.produce("accounts", records)
            job.run()
    assert sum("the stored-row read scans the table" in m for m in caplog.messages) == 1

    expected = sorted(_expected().values(), key=lambda r: r["id"])
    columns = ("id", "name", "balance", "region")
    for reader in (job.rows_spark, job.rows_hudi_rs):
        rows = sorted(({c: r[c] for c in columns} for r in reader("accounts")), key=lambda r: r["id"])
        assert rows == expected, reader.__name__
    if "compaction" in table:
        assert _compactions(spark, job.path("accounts")) == 2
    index_folder = tmp_path / "warehouse" / "accounts" / ".hoodie" / "metadata" / "record_index"
    assert index_folder.is_dir() == (table["index"] == "record_level")

    # the lookup reads the files of its keys only, and finds a moved row in its new partition
    path, options = job.path("accounts"), key_lookup_options(job.config.tables[0])
    every_file = _files_read(spark.read.format("hudi").load(path))
    looked_up = read_keys(spark, path, "id", [4], options)
    assert [(r["id"], r["region"], r["name"]) for r in looked_up.collect()] == [(4, "us", "moved twice")]
    assert 0 < _files_read(read_keys(spark, path, "id", [4], options)) < every_file


@pytest.mark.parametrize(
    ("written", "asked"),
    [
        # make test: the common move; make test-deep: the other two (same code path, 14 s each)
        pytest.param({"index": "bucket", "buckets": 4}, {"index": "bucket", "buckets": 8}, marks=pytest.mark.deep),
        pytest.param({"index": "bucket", "buckets": 4}, {"index": "simple"}, marks=pytest.mark.deep),
        ({"index": "simple"}, {"index": "bucket", "buckets": 4}),
    ],
    ids=["other-bucket-count", "bucket-to-simple", "simple-to-bucket"],
)
def test_a_bucket_layout_changes_only_through_relayout(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path, written: dict[str, Any], asked: dict[str, Any]
) -> None:
    # Hudi would write on: measured, 4 buckets into an 8-bucket table kept 144 of 300 keys twice
    job = Job(spark, kafka, tmp_path, [{"name": "accounts", "key": ["id"], **written}])
    src = DebeziumTable(server=f"srv{job.suffix}", database="db", table="accounts", columns=list(SOURCE), key=["id"])
    nothing = CliRunner().invoke(cli, ["relayout", "--table", "accounts", "--config", str(job.config_file())])
    assert nothing.exit_code == 1 and f"no Hudi table at {job.path('accounts')}" in nothing.output
    job.produce("accounts", [src.change("r", after=_row(i, f"n{i}", _region(i)), pos=i) for i in range(1, 51)])
    job.run()
    job.tables[0] = {"name": "accounts", "key": ["id"], **asked}
    job.produce("accounts", [src.change("u", after=_row(i, "again", _region(i)), pos=100 + i) for i in range(1, 51)])
    with pytest.raises(ConfigError, match=r"tables\.accounts\.index: .*bucket.* fixed when the table is created"):
        job.run()
    done = CliRunner().invoke(cli, ["relayout", "--table", "accounts", "--config", str(job.config_file())])
    assert done.exit_code == 0, done.output
    assert f"{_layout(written)} -> {_layout(asked)}, 50 rows" in done.output
    job.run()
    rows = job.rows_spark("accounts")
    assert len(rows) == 50 and {r["name"] for r in rows} == {"again"}
    assert _buckets(job.path("accounts")) == asked.get("buckets", 0)


def test_relayout_keeps_rows_state_and_position_and_finishes_when_interrupted(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = {"name": "accounts", "key": ["id"], "type": "MERGE_ON_READ", "index": "bucket", "buckets": 2}
    job = Job(spark, kafka, tmp_path, [table])
    src = DebeziumTable(server=f"srv{job.suffix}", database="db", table="accounts", columns=list(SOURCE), key=["id"])
    snapshot, changes, _, _ = _batches(src)
    for records in (snapshot, changes):
        job.produce("accounts", records)
        job.run()
    path = job.path("accounts")
    assert any(".log." in f.name for f in Path(path).iterdir()), "updates and deletes wait in log files"

    job.tables[0] = table | {"buckets": 4}
    # a job that writes on while the copy is written: refused before anything moves
    job.produce("accounts", [src.change("u", after={"id": 3, "name": "meanwhile", "region": _region(3)}, partial=True, pos=1500)])
    writing_on = replace(job, tables=[table])
    monkeypatch.setattr(relayout_module, "read_table", lambda s, p: (writing_on.run(), read_table(s, p))[1])
    with pytest.raises(RelayoutError, match=r"a commit landed on .* while it was being rewritten"):
        relayout(spark, job.config.tables[0])
    monkeypatch.undo()
    assert sorted(p.name for p in Path(path).parent.iterdir()) == ["accounts"]
    before, committed = _stored(spark, path), latest_job_metadata(spark, path)
    assert ("meanwhile", "3.00") in {(r[1], str(r[2])) for r in before}
    moves = fs.rename
    # a crash at the first move: the table stays, but the job may not write it until the moves are done
    monkeypatch.setattr(fs, "rename", lambda s, a, b: _crash())
    with pytest.raises(OSError, match="crashed"):
        relayout(spark, job.config.tables[0])
    monkeypatch.undo()
    assert _stored(spark, path) == before
    with pytest.raises(ConfigError, match=r"stopped while it moved .* run `hudi-cdc relayout --table accounts` to finish"):
        job.run()
    # a crash between moving the table aside and moving its new copy in: no table at its path
    monkeypatch.setattr(fs, "rename", lambda s, a, b: moves(s, a, b) if a == path else _crash())
    with pytest.raises(OSError, match="crashed"):
        relayout(spark, job.config.tables[0])
    assert not Path(path).exists()
    monkeypatch.undo()

    # meanwhile the job refuses to create a table there: at start, and in a batch (a job started before)
    job.produce("accounts", [src.change("u", after={"id": 6, "name": "while away", "region": _region(6)}, partial=True, pos=1600)])
    with pytest.raises(ConfigError, match=r"stopped while it moved .* run `hudi-cdc relayout --table accounts` to finish"):
        job.run()
    monkeypatch.setattr(stream, "preflight", lambda *args, **kwargs: None)
    with pytest.raises(RelayoutError, match=r"run `hudi-cdc relayout --table accounts` to finish it before the job writes"):
        job.run()
    assert not Path(path).exists()
    # a table created there anyway (by a job that raced the moves): a rerun overwrites neither
    monkeypatch.setattr(relayout_module, "unfinished", lambda spark, table: None)
    job.run()
    monkeypatch.undo()
    with pytest.raises(RelayoutError, match=r"holds files again: .* Nothing was changed"):
        relayout(spark, job.config.tables[0])
    (backup,) = (p for p in Path(path).parent.iterdir() if ".before-relayout-" in p.name)
    left = ["accounts", "accounts.relayout", "accounts.relayout-moving", backup.name]
    assert sorted(p.name for p in Path(path).parent.iterdir() if not p.name.startswith(".")) == sorted(left)

    # the way out the error names: move that table aside, finish, read the topic again from the start
    Path(path).rename(Path(path).with_name("accounts.created-meanwhile"))
    deletes = fs.delete
    # (and a crash once both moves are made, before the marker is deleted: the rerun only deletes it)
    monkeypatch.setattr(fs, "delete", lambda s, p: _crash() if p.endswith(".relayout-moving") else deletes(s, p))
    with pytest.raises(OSError, match="crashed"):
        relayout(spark, job.config.tables[0])
    monkeypatch.undo()
    assert _stored(spark, path) == before
    done = relayout(spark, job.config.tables[0])
    assert (done.rows, done.backup, done.layout) == (None, None, "bucket:4")
    # every stored column, `_cdc_*` state and ingestion times included, and the job's position
    assert _stored(spark, path) == before and len(before) == KEYS
    assert latest_job_metadata(spark, path) == committed | {INDEX_KEY: "bucket:4"}
    assert not Path(path).with_name("accounts.relayout-moving").exists()
    assert _buckets(path) == 4
    assert _stored(spark, str(backup)) == before
    # the job goes on, and partial updates keep the values stored before the rewrite
    _, _, again, _ = _batches(src)
    job.produce("accounts", again)
    replace(job, checkpoint="cp-again").run()
    rows = {r["id"]: r for r in job.rows_spark("accounts")}
    assert len(rows) == KEYS and (rows[3]["name"], rows[3]["balance"]) == ("meanwhile", Decimal("33.00"))
    assert (rows[4]["name"], rows[4]["balance"]) == ("moved twice", Decimal("4.00"))
    assert (rows[6]["name"], rows[6]["balance"]) == ("while away", Decimal("6.00"))
    assert 5 not in rows


def _layout(settings: dict[str, Any]) -> str:
    return f"bucket:{settings['buckets']}" if settings["index"] == "bucket" else str(settings["index"])


def _crash() -> None:
    raise OSError("crashed")


def _stored(spark: SparkSession, path: str) -> list[tuple[Any, ...]]:
    df = spark.read.format("hudi").load(path)
    return sorted(tuple(r) for r in df.select(*[c for c in df.columns if not c.startswith("_hoodie_")]).collect())


def _buckets(path: str) -> int:
    """Bucket file groups of a bucket table (Hudi names them `<8-digit bucket>-…`); 0 for another index."""
    groups = {f.name.split("-")[0] for f in Path(path).rglob("*.parquet") if ".hoodie" not in f.parts}
    return len(groups) if groups == {f"{i:08d}" for i in range(len(groups))} else 0
