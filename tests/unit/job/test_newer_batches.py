"""A large merge-on-read table's batch of full images newer than everything it holds, folded by
rank without reading its stored rows (`job.table_batch._newer_than_table`): the same rows and
counts as the fold of stored rows, and only for the batches where that holds.

The same batches run twice through `run_batch`, into two lakes, with every table's batch planned
as a large table's (a small table, folded in one task, always reads its stored rows): once as the
job runs them by default (`job.newer_by_rank: true`), and once with `job.newer_by_rank: false`,
the stored rows always read. A spy on `_newer_than_table` shows which tables' batches were folded
by rank.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from devkit.debezium import KafkaRecord
from hudi_cdc.commit.offsets import NEWEST_ORDER_KEY
from hudi_cdc.hudi.timeline import latest_job_metadata
from hudi_cdc.job import table_batch
from tests.support.lake import Lake, counts, mixed_batches, source

BY_RANK = {"newer_by_rank": True}
"""The job setting that turns it on (the default)."""
READ = {"newer_by_rank": False}
"""The job setting that turns it off: every batch reads its stored rows."""


def spied(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Every `_newer_than_table` answer, as (table, newer)."""
    answers: list[tuple[str, bool]] = []
    real = table_batch._newer_than_table

    def spy(*args: Any) -> bool:
        newer = real(*args)
        answers.append((args[-1].name, newer))
        return newer

    monkeypatch.setattr(table_batch, "_newer_than_table", spy)
    return answers


def large_mor_lake(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Lake, list[tuple[str, bool]]]:
    """A lake of merge-on-read tables, each batch planned as a large table's, and the spied answers."""
    monkeypatch.setattr(table_batch, "_in_one_task", lambda *_: False)
    answers = spied(monkeypatch)
    return Lake(spark, tmp_path, together=False, settings={"type": "MERGE_ON_READ"}, job=BY_RANK), answers


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_batch_newer_than_its_table_folds_by_rank_to_the_rows_and_counts_of_the_stored_fold(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table_type: str
) -> None:
    monkeypatch.setattr(table_batch, "_in_one_task", lambda *_: False)
    answers = spied(monkeypatch)
    settings = {"type": table_type}
    ranked = Lake(spark, tmp_path / "ranked", together=False, settings=settings)  # the default: newer_by_rank on
    read = Lake(spark, tmp_path / "read", together=False, settings=settings, job=READ)
    by_batch: list[set[tuple[str, bool]]] = []
    for number, batch in enumerate(mixed_batches()):
        before = len(answers)
        read.run(batch)
        assert len(answers) == before, "with the setting off a batch is never checked for being newer than its table"
        ranked.run(batch)
        by_batch.append(set(answers[before:]))  # tables run concurrently: in any order
        assert counts(ranked.batches[-1]) == counts(read.batches[-1]), f"batch {number}"
        for table in sorted(topic.rsplit(".", 1)[1] for topic in batch):
            assert ranked.state(table) == read.state(table), f"batch {number}, table {table}"
    if table_type == "COPY_ON_WRITE":  # its stored rows cost less to read than Hudi's lookup: never checked
        assert by_batch == [set()] * 4
        return
    assert by_batch == [
        set(),  # every table's first load: nothing stored
        # a has a partial update and a delete, b a late image; c's one full image is newer than its rows
        {("a", False), ("b", False), ("c", True)},
        {("a", True), ("b", False)},  # a re-creates a deleted key with a full image; b has a delete
        {("b", True)},  # one full image, newer than b's rows
    ]
    written = {m.table: m.write for m in ranked.batches[3].tables}
    assert written == {"b": "upsert_prepped"}, "a batch folded by rank takes its keys' locations from the base files"
    # a deleted key re-created by rank (a's key 2) went to the file group its base file holds it in
    assert ranked.rows("a") == read.rows("a")


def test_a_batch_folded_by_rank_into_a_record_level_table_upserts_through_hudis_index(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record-level index may insert a key into a log file, where the base files do not show it:
    its locations cannot come from them, and the write looks the keys up itself."""
    monkeypatch.setattr(table_batch, "_in_one_task", lambda *_: False)
    answers = spied(monkeypatch)
    lake = Lake(spark, tmp_path, together=False, settings={"type": "MERGE_ON_READ", "index": "record_level"}, job=BY_RANK)
    t = source("t")
    lake.run({t.topic: [t.change("c", after={"id": i, "name": f"n{i}", "qty": i}, pos=100 + i) for i in (1, 2)]})
    newer = lake.run({t.topic: [t.change("u", after={"id": 1, "name": "x", "qty": 7}, pos=200),
                                t.change("c", after={"id": 3, "name": "n3", "qty": 3}, pos=201)]})  # fmt: skip
    assert answers == [("t", True)]
    assert [m.write for m in newer.tables] == ["upsert"]
    assert lake.rows("t") == [(1, "x", 7, "u"), (2, "n2", 2, "c"), (3, "n3", 3, "c")]


def test_a_batch_with_one_event_older_than_its_table_reads_the_stored_rows_and_judges_it_late(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, answers = large_mor_lake(spark, tmp_path, monkeypatch)
    t = source("t")
    lake.run({t.topic: [t.change("c", after={"id": i, "name": f"n{i}", "qty": i}, pos=100 + i) for i in (1, 2)]})
    lake.run({t.topic: [t.change("u", after={"id": 1, "name": "x", "qty": 7}, pos=200)]})
    # older than key 1's row, newer than key 2's: by rank, key 1 would take the older image
    mixed = lake.run({t.topic: [t.change("u", after={"id": 1, "name": "old", "qty": 0}, pos=150),
                                t.change("u", after={"id": 2, "name": "y", "qty": 8}, pos=300)]})  # fmt: skip
    assert answers == [("t", True), ("t", False)]
    assert lake.rows("t") == [(1, "x", 7, "u"), (2, "y", 8, "u")]
    (metrics,) = mixed.tables
    assert (metrics.applied, metrics.late) == (1, 1)
    assert metrics.write == "upsert_prepped", "the fold of stored rows knows every row's file"


def test_every_commit_records_the_newest_order_the_table_took_and_a_table_without_it_finds_it_once(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, answers = large_mor_lake(spark, tmp_path, monkeypatch)
    t = source("t")
    base = str(tmp_path / "lake" / "t")

    def newest() -> str | None:
        return latest_job_metadata(spark, base).get(NEWEST_ORDER_KEY)

    def run(records: list[KafkaRecord]) -> None:
        lake.run({t.topic: records})

    run([t.change("c", after={"id": i, "name": "n", "qty": i}, pos=100 + i) for i in (1, 2, 3)])
    after_load = newest()
    stored = sorted(r[0] for r in spark.read.format("hudi").load(base).select("_cdc_order").collect())
    assert after_load is not None and after_load == stored[-1]
    run([t.change("u", after={"id": 1, "name": "late", "qty": 0}, pos=50)])  # late: the mark stays
    assert newest() == after_load
    # a table whose commits predate the mark: the next batch finds it in the stored rows, once
    found: list[str] = []
    real_find = table_batch._newest_stored_order
    monkeypatch.setattr(table_batch, "_newest_stored_order", lambda *a: found.append(real_find(*a)) or found[-1])
    with monkeypatch.context() as older:
        older.setattr(table_batch, "_stored_state", _without_newest_order(table_batch._stored_state))
        run([t.change("u", after={"id": 2, "name": "two", "qty": 2}, pos=400)])
    assert found == [after_load], "the stored rows' newest order is the load's"
    assert answers[-1] == ("t", True)
    recorded = newest()
    assert recorded is not None and recorded > after_load
    run([t.change("u", after={"id": 3, "name": "three", "qty": 3}, pos=500)])  # the commit told it: no read
    assert len(found) == 1 and answers[-1] == ("t", True)
    assert lake.rows("t") == [(1, "n", 1, "c"), (2, "two", 2, "u"), (3, "three", 3, "u")]


def _without_newest_order(real: Any) -> Any:
    """`_stored_state` as for a table written before its commits recorded the newest order."""

    def stored_state(*args: Any) -> Any:
        stored, timeline, committed = real(*args)
        return stored, timeline, {k: v for k, v in committed.items() if k != NEWEST_ORDER_KEY}

    return stored_state

