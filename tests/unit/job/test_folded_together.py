"""A batch's small tables folded as one (`job.table_group`): the same rows and counts as each on its own.

Every test runs the same batches twice through `run_batch`, into two lakes: once with
`job.fold_together` (the default) and once without, and compares what each table holds and
counted. A spy on the real `fold_together` shows which tables were folded as one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hudi_cdc.commit.offsets import KafkaRange
from hudi_cdc.config.models import TableConfig
from hudi_cdc.fold.tally import TableRecords
from hudi_cdc.job import pipeline, table_group
from hudi_cdc.job.sizing import ROWS_PER_TASK
from hudi_cdc.job.table_batch import Prepared
from tests.support.lake import Lake, counts, mixed_batches, source
from tests.support.storage_faults import refusing_writes


@pytest.fixture
def grouped(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The names of each group `run_batch` folds as one (a spy on the real `fold_together`)."""
    seen: list[list[str]] = []
    real = pipeline.fold_together

    def spy(group: list[Prepared]) -> Any:
        seen.append([p.table.name for p in group])
        return real(group)

    monkeypatch.setattr(pipeline, "fold_together", spy)
    return seen


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_tables_folded_as_one_hold_and_count_what_each_folded_alone_does(
    spark: SparkSession, tmp_path: Path, grouped: list[list[str]], table_type: str
) -> None:
    settings = {"type": table_type}
    together = Lake(spark, tmp_path / "together", together=True, settings=settings)
    alone = Lake(spark, tmp_path / "alone", together=False, settings=settings)
    for batch in mixed_batches():
        before = len(grouped)
        alone.run(batch)
        assert len(grouped) == before, "a job without fold_together folded tables as one"
        together.run(batch)
        assert counts(together.batches[-1]) == counts(alone.batches[-1])

    # the first batch is each table's first load (its own fold), the last has one table
    assert [sorted(g) for g in grouped] == [["a", "b"], ["a", "b"]]
    for table in ("a", "b", "c"):
        assert together.rows(table) == alone.rows(table), table
    assert together.rows("a") == [(1, "a1x", 11, "u"), (2, "a2again", 22, "c"), (3, "a3", 3, "c"), (9, "a9", 9, "c")]
    assert together.rows("b") == [(2, "b2", 2, "c"), (3, "b3", 34, "u")]
    second = {t.table: t for t in together.batches[1].tables}
    assert (second["b"].late, second["b"].collapsed, second["a"].deleted, second["a"].dead_letter) == (1, 1, 1, 1)


def test_a_truncate_among_tables_folded_as_one_is_folded_on_its_own(
    spark: SparkSession, tmp_path: Path, grouped: list[list[str]]
) -> None:
    a, b = source("a"), source("b")
    first = {s.topic: [s.change("c", after={"id": i, "name": "x", "qty": i}, pos=100 + i) for i in (1, 2)] for s in (a, b)}
    second = {
        a.topic: [a.change("t", pos=200, with_key=False), a.change("c", after={"id": 5, "name": "y", "qty": 5}, pos=201)],
        b.topic: [b.change("u", after={"id": 1, "name": "z", "qty": 7}, pos=210)],
    }
    together = Lake(spark, tmp_path / "together", together=True, settings={})
    alone = Lake(spark, tmp_path / "alone", together=False, settings={})
    for batch in (first, second):
        alone.run(batch)
        together.run(batch)
        assert counts(together.batches[-1]) == counts(alone.batches[-1])
    assert [sorted(g) for g in grouped] == [["a", "b"]]
    assert together.rows("a") == alone.rows("a") == [(5, "y", 5, "c")]
    assert together.rows("b") == alone.rows("b") == [(1, "z", 7, "u"), (2, "x", 2, "c")]


def test_a_table_whose_commit_fails_after_the_shared_fold_is_parked_alone(
    spark: SparkSession, tmp_path: Path, grouped: list[list[str]]
) -> None:
    a, b, c = source("a"), source("b"), source("c")
    lake = Lake(spark, tmp_path, together=True, settings={"hoodie_options": {"hoodie.write.markers.type": "DIRECT"}})
    lake.run({s.topic: [s.change("c", after={"id": 1, "name": "x", "qty": 1}, pos=100)] for s in (a, b, c)})
    update = {s.topic: [s.change("u", after={"id": 1, "name": "y", "qty": 2}, pos=200)] for s in (a, b, c)}
    with refusing_writes(tmp_path / "lake" / "b"):
        refused = lake.run(update)
    assert [sorted(g) for g in grouped] == [["a", "b", "c"]], "the three tables were not folded as one"
    by_table = {t.table: t for t in refused.tables}
    assert by_table["b"].parked == 1 and by_table["b"].error and by_table["b"].error.startswith("parked:")
    assert refused.parked == {"b": 1}
    for table in ("a", "c"):
        assert (by_table[table].upserted_rows, lake.rows(table)) == (1, [(1, "y", 2, "u")])
    assert lake.rows("b") == [(1, "x", 1, "c")]

    # nothing of b was lost or dead-lettered: the lot holds its batch for the catch-up (which reads
    # Kafka again: test_table_failure runs it against a real broker)
    assert [(p.table, p.pending.first) for p in lake.parking.parked()] == [("b", {b.topic: {"0": 1}})]
    assert not (tmp_path / "dl").exists()


def test_candidates_are_small_unparked_tables_in_the_batchs_order_within_the_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def table(name: str) -> TableConfig:
        return TableConfig(name=name, key=["id"], base_path=f"/lake/{name}")

    def received(read: int) -> TableRecords:
        return TableRecords(read=read, tombstones=0, kafka=KafkaRange(first={}, last={}))

    tables = [table(n) for n in ("big", "p", "a", "quiet", "b", "c")]
    batch = {"big": received(ROWS_PER_TASK + 1), "p": received(3), "a": received(5), "b": received(7), "c": received(9)}
    chosen = table_group.candidates(tables, batch, parked={"p"})
    assert [t.name for t in chosen] == ["a", "b", "c"]

    monkeypatch.setattr(table_group, "MAX_TABLES", 2)
    assert [t.name for t in table_group.candidates(tables, batch, parked={"p"})] == ["a", "b"]
    monkeypatch.setattr(table_group, "MAX_RECORDS", 12)
    assert [t.name for t in table_group.candidates(tables, batch, parked={"p"})] == ["a", "b"]
    monkeypatch.setattr(table_group, "MAX_RECORDS", 11)
    assert [t.name for t in table_group.candidates(tables, batch, parked={"p"})] == ["a"]


def test_candidates_are_cut_into_a_part_of_two_or_more_per_table_thread() -> None:
    tables = [TableConfig(name=n, key=["id"], base_path=f"/lake/{n}") for n in "abcdefg"]

    def names(cut: list[list[TableConfig]]) -> list[str]:
        return ["".join(t.name for t in part) for part in cut]

    assert names(table_group.parts(tables, 3)) == ["abc", "de", "fg"]
    assert names(table_group.parts(tables[:5], 3)) == ["abc", "de"]  # no part of one table
    assert names(table_group.parts(tables[:3], 8)) == ["abc"]
    assert names(table_group.parts(tables[:4], 1)) == ["abcd"]

    # each part runs where its first table stands in the batch's order; the others one by one
    ordered = [tables[i] for i in (6, 0, 5, 1, 4)]
    cut = [[tables[0], tables[1]], [tables[4], tables[5]]]
    assert names(pipeline._units(ordered, cut)) == ["g", "ab", "ef"]


def test_each_table_thread_folds_its_own_part_of_the_batch(
    spark: SparkSession, tmp_path: Path, grouped: list[list[str]]
) -> None:
    sources = [source(n) for n in "abcd"]
    together = Lake(spark, tmp_path / "together", together=True, settings={"type": "MERGE_ON_READ"})
    alone = Lake(spark, tmp_path / "alone", together=False, settings={"type": "MERGE_ON_READ"})
    first = {s.topic: [s.change("c", after={"id": 1, "name": "x", "qty": 1}, pos=100)] for s in sources}
    second = {
        s.topic: [s.change("u", after={"id": 1, "qty": 2 + i}, pos=200, partial=True), s.change("c", after={"id": 2}, pos=201)]
        for i, s in enumerate(sources)
    }
    for batch in (first, second):
        alone.run(batch)
        together.run(batch)
        assert counts(together.batches[-1]) == counts(alone.batches[-1])
    assert sorted(sorted(g) for g in grouped) == [["a", "b"], ["c", "d"]], "two table threads, two parts"
    for i, table in enumerate("abcd"):
        assert together.rows(table) == alone.rows(table) == [(1, "x", 2 + i, "u"), (2, None, None, "c")], table
