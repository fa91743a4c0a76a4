"""A small table's batch folded and counted in one task (`one_task`, `job.sizing.in_one_task`):
the same rows, outcomes and counts as the general plan, and no shuffle in any of its plans."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_cdc.events import KAFKA_OFFSET, OP, ORDER
from hudi_cdc.fold.collapse import first_load, fold
from hudi_cdc.fold.merge import rows_to_write
from hudi_cdc.fold.stored_state import conform_events, touched_rows
from hudi_cdc.fold.tally import _counts
from tests.support.fold_builders import COLUMNS, SCHEMA, FakeStore, _events_df, ev, fold_table


def _shuffles(df: DataFrame) -> int:
    """Exchanges (shuffles and broadcasts) in `df`'s physical plan, as planned before it runs
    (the plan of a cached input is printed under it: the inputs here are cached without one)."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    return plan.count("Exchange")


def _sized(df: DataFrame) -> DataFrame:
    """`df` cached, so that Spark knows its size, as it knows a batch's and a table's in the pipeline.

    Spark keeps one partition for a join only when it can bound the joined sides' size (an unknown
    size is the largest long, and a union or a join of two of them is past it).
    """
    df = df.persist()
    df.count()
    return df


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return sorted((r.asDict() for r in df.select(*COLUMNS, OP, ORDER, "__exists").collect()), key=lambda d: d["id"])


def _outcomes(df: DataFrame) -> list[tuple[int, str]]:
    return sorted((r[KAFKA_OFFSET], r["outcome"]) for r in df.collect())


@pytest.mark.parametrize("deletes", ["hard", "soft"])
def test_a_one_task_fold_gives_the_general_folds_rows_and_outcomes_with_no_shuffle(
    spark: SparkSession, deletes: str
) -> None:
    table = fold_table(deletes)
    store = FakeStore(spark, table)
    loaded = _events_df(spark, [ev(k, "c", 1, k, name=f"n{k}", age=k) for k in range(1, 6)])
    store.apply(rows_to_write(fold(events=loaded, stored=store.rows, schema=SCHEMA, key=["id"],
                                   soft_deletes=deletes == "soft", truncation=None).rows, SCHEMA, table))  # fmt: skip
    batch = [
        ev(1, "u", 5, 10, name="a"),  # a patch: age keeps its stored value
        ev(1, "u", 6, 11, name="b", age=7),
        ev(2, "d", 5, 12),
        ev(3, "u", 0, 13, name="late"),  # older than the stored row: late
        ev(6, "c", 5, 14, name="new", age=6),
        ev(6, "c", 5, 15, name="new", age=6),  # the same order again: a duplicate
    ]
    events, stored_rows = _sized(conform_events(_events_df(spark, batch), SCHEMA)), _sized(store.rows)
    results = {}
    for one_task in (False, True):
        stored = touched_rows(stored_rows, events, SCHEMA, table, every_row=False, one_task=one_task)
        result = fold(events=events, stored=stored, schema=SCHEMA, key=["id"], soft_deletes=deletes == "soft",
                      truncation=None, one_task=one_task)  # fmt: skip
        rows = result.rows.localCheckpoint()
        outcomes = result.outcomes_for(rows)
        results[one_task] = (_rows(rows), _outcomes(outcomes))
        if one_task:
            assert (_shuffles(result.rows), _shuffles(outcomes)) == (0, 0)
        else:  # the general plan groups and joins by key across partitions
            assert _shuffles(result.rows) > 0
    assert results[True] == results[False]
    assert {o for _, o in results[True][1]} >= {"applied", "late", "collapsed"}


def test_a_one_task_first_load_ranks_as_the_general_one_with_no_shuffle(spark: SparkSession) -> None:
    batch = [ev(1, "r", 1, 0, name="a", age=1), ev(1, "u", 2, 1, name="b", age=2), ev(2, "r", 1, 2, name="c", age=3)]
    events = _sized(conform_events(_events_df(spark, batch), SCHEMA))
    ranked = {one_task: first_load(events=events, schema=SCHEMA, key=["id"], one_task=one_task) for one_task in (False, True)}
    assert _shuffles(ranked[True].judged) == 0 and _shuffles(ranked[False].judged) > 0
    got = {k: _outcomes(v.outcomes_of(v.judged)) for k, v in ranked.items()}
    assert got[True] == got[False] == [(0, "collapsed"), (1, "applied"), (2, "applied")]


def test_one_task_counts_are_the_general_counts_with_no_shuffle(spark: SparkSession) -> None:
    events = _sized(_events_df(spark, [ev(k % 3, "u", k, k, name="x") for k in range(9)]))
    classified = events.select(F.lit("event").alias("kind"), F.lit(None).cast("string").alias("label"), "*")
    labels = events.select(F.when(F.col(KAFKA_OFFSET) % 2 == 0, "even").otherwise("odd").alias("label"))
    counted = {one_task: _counts(classified, labels=labels, one_task=one_task) for one_task in (False, True)}
    assert _shuffles(counted[True]) == 0 and _shuffles(counted[False]) > 0

    def rows(df: DataFrame) -> list[tuple[Any, ...]]:
        return sorted((tuple(r) for r in df.collect()), key=repr)

    assert rows(counted[True]) == rows(counted[False])

