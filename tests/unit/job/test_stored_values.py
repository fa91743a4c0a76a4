"""A table's fold read without its stored values (`job.table_batch._ValueReads`): the same rows and
counts as the fold that reads them, and a second fold only for a batch where a row keeps one.

The same batches run twice through `run_batch`, into two lakes, with every table's batch planned
as a large table's (not in one task, where a small table always reads its values): once as the
job runs them, and once with every stored value read. A spy on `_ValueReads.note` shows which
batches were folded without values and whether they needed them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from hudi_cdc.config.models import TableConfig
from hudi_cdc.job import table_batch
from tests.support.lake import Lake, counts, mixed_batches


def batch_tables(batch: dict[str, object]) -> list[str]:
    """The tables a batch of `mixed_batches` has records of (topic `shop.inv.<table>`)."""
    return sorted(topic.rsplit(".", 1)[1] for topic in batch)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_fold_without_stored_values_holds_and_counts_what_the_fold_with_them_does(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table_type: str
) -> None:
    monkeypatch.setattr(table_batch, "_in_one_task", lambda *_: False)
    noted: list[tuple[str, bool]] = []
    reads = table_batch.VALUE_READS
    real_note = reads.note

    def note(table: TableConfig, *, needed: bool) -> None:
        noted.append((table.name, needed))
        real_note(table, needed=needed)

    monkeypatch.setattr(reads, "note", note)
    settings = {"type": table_type}
    # every batch through the fold of stored rows: none folded by rank for being newer than its table
    job = {"newer_by_rank": False}
    apart = Lake(spark, tmp_path / "apart", together=False, settings=settings, job=job)
    whole = Lake(spark, tmp_path / "whole", together=False, settings=settings, job=job)
    by_batch: list[set[tuple[str, bool]]] = []
    for number, batch in enumerate(mixed_batches()):
        with monkeypatch.context() as always:
            always.setattr(reads, "apart", lambda _table: False)
            whole.run(batch)
        before = len(noted)
        apart.run(batch)
        by_batch.append(set(noted[before:]))  # tables run concurrently: in any order
        assert counts(apart.batches[-1]) == counts(whole.batches[-1]), f"batch {number}"
        for table in batch_tables(batch):  # after every batch: a later full image would hide a wrong row
            assert apart.state(table) == whole.state(table), f"batch {number}, table {table}"
    assert by_batch == [
        set(),  # every table's first load: nothing stored to read
        # a's partial update is followed by a full image; b's late image changes nothing; c's is full
        {("a", False), ("b", False), ("c", False)},
        {("a", False), ("b", True)},  # b's partial update keeps its stored name: folded again
        set(),  # b reads its values in the batches after one that needed them
    ]
