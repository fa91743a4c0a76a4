"""The union-fold bench's honesty check: folding several tables as one, the table leading the key,
gives each table the rows and counts of its own fold, and the bench stops when it does not.
No timing is measured."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession

from devkit.bench import union_fold
from devkit.bench.union_fold import Folded, compare


def test_folding_tables_as_one_gives_each_table_its_own_rows_and_counts(spark: SparkSession) -> None:
    compared = compare(spark, tables=3, rounds=2, stored_rows=20)  # raises where a table differs
    assert set(compared.cpu) == {"one by one", "as one"}
    assert all(len(values) == 2 for values in compared.cpu.values())
    # every kind of event the batch mixes, once per table
    outcomes = compared.outcomes
    assert outcomes["late"] == 3
    assert outcomes["duplicate"] == 3
    assert outcomes["collapsed"] == 3  # key 3's partial update, then its full image
    assert outcomes["write:delete"] == 3
    assert outcomes["write:new-key"] == 3
    assert outcomes["applied"] == 3 * 4  # key 3's full image, 7's partial update, 17's first copy, the new key
    assert outcomes["deleted"] == 3


def test_the_bench_stops_when_the_union_loses_a_row(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    def one_row_short(stores: dict[str, DataFrame], events: dict[str, DataFrame]) -> Folded:
        folded = union_fold.as_one(stores, events)
        name = sorted(folded)[0]
        rows, labels = folded[name]
        return {**folded, name: (rows[1:], labels)}

    monkeypatch.setitem(union_fold.VARIANTS, "as one", one_row_short)
    with pytest.raises(AssertionError, match="differs"):
        compare(spark, tables=2, rounds=1, stored_rows=20)
