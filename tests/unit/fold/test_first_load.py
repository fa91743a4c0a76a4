"""The first-load fold (`collapse.first_load`) against the general fold, on batches it may take."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from hudi_cdc.config.models import TableConfig
from hudi_cdc.events import COLUMN_ORDERS, KAFKA_OFFSET, OP, ORDER, SOURCE, TS_MS
from hudi_cdc.fold.collapse import first_load, fold, writes_every_column
from hudi_cdc.fold.stored_state import conform_events, touched_rows
from hudi_cdc.hudi import prepped
from hudi_cdc.job import table_batch
from hudi_cdc.spark.lineage import release
from tests.support.fold_builders import COLUMNS, SCHEMA, _events_df, ev, fold_table
from tests.support.reference_model import Event

_COMPARED = [*COLUMNS, OP, ORDER, TS_MS, SOURCE, COLUMN_ORDERS, "__exists", "__had_row", "__changed",
             "__final_del", "__final_orders", "__stored_orders", "__stored_del", "__stored_r"]  # fmt: skip


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return sorted((r.asDict() for r in df.select(*_COMPARED).collect()), key=lambda d: (d["id"], d[ORDER]))


def _outcomes(df: DataFrame) -> list[tuple[int, str]]:
    return sorted((r[KAFKA_OFFSET], r["outcome"]) for r in df.collect())


def _with_replays(spark: SparkSession, batch: list[tuple[Event, int]], replays: list[tuple[int, int]]) -> DataFrame:
    """`batch`'s events, and each (index, offset) of `replays`: the index-th record again, at that offset."""
    records = [r.asDict() for r in _events_df(spark, batch).collect()]
    records += [{**records[index], KAFKA_OFFSET: offset} for index, offset in replays]
    return spark.createDataFrame(records, _events_df(spark, []).schema)


def _both(spark: SparkSession, events: DataFrame) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    events = conform_events(events, SCHEMA)
    table = fold_table("hard")
    general = fold(
        events=events,
        stored=touched_rows(None, events, SCHEMA, table, every_row=False),
        schema=SCHEMA,
        key=["id"],
        soft_deletes=False,
        truncation=None,
    )
    rows = general.rows.localCheckpoint()
    loaded = first_load(events=events, schema=SCHEMA, key=["id"])
    judged = loaded.judged.localCheckpoint()
    return (
        (_rows(rows), _outcomes(general.outcomes_for(rows))),
        (_rows(loaded.rows_of(judged)), _outcomes(loaded.outcomes_of(judged))),
    )


# About 2 s an example: a handful keep it short; the equality holds for any batch of full images.
@settings(max_examples=8, deadline=None)
@given(
    raw=st.lists(
        st.tuples(st.integers(1, 4), st.sampled_from("cru"), st.integers(0, 5), st.text("ab", max_size=2)),
        min_size=1,
        max_size=14,
    ),
    repeats=st.integers(0, 4),
    seed=st.integers(0, 10_000),
)
def test_first_load_gives_the_general_folds_rows_and_outcomes(
    spark: SparkSession, raw: list[Any], repeats: int, seed: int
) -> None:
    batch = [ev(key, op, ts, offset, name=name or None, age=ts * 10) for offset, (key, op, ts, name) in enumerate(raw)]
    rng = random.Random(seed)
    rng.shuffle(batch)
    # the same record again at a later offset (a replay in one batch): a duplicate either way
    replays = [(rng.randrange(len(batch)), len(raw) + extra) for extra in range(repeats)]
    general, loaded = _both(spark, _with_replays(spark, batch, replays))
    assert loaded == general
    outcomes = {outcome for _, outcome in loaded[1]}
    assert "applied" in outcomes  # every key's newest event lands


def test_the_same_order_twice_keeps_the_earlier_offset_and_counts_the_other_a_duplicate(spark: SparkSession) -> None:
    batch = [ev(1, "r", 5, 3, name="a", age=1), ev(1, "r", 4, 1, name="b", age=2)]
    general, loaded = _both(spark, _with_replays(spark, batch, [(0, 7)]))
    assert loaded == general
    assert loaded[1] == [(1, "collapsed"), (3, "applied"), (7, "duplicate")]


def test_only_creates_reads_and_updates_of_every_column_may_take_the_first_load(spark: SparkSession) -> None:
    batch = [
        ev(1, "r", 1, 0, name="a", age=1),
        ev(2, "u", 1, 1, name="b", age=1),
        ev(3, "u", 1, 2, name="c"),  # a patch: age absent
        ev(4, "d", 1, 3),
    ]
    full = writes_every_column(COLUMNS)
    got = {r["id"]: r["full"] for r in _events_df(spark, batch).select("id", full.alias("full")).collect()}
    assert got == {1: True, 2: True, 3: False, 4: False}


def _labels(spark: SparkSession, batch: list[tuple[Event, int]], table: TableConfig, *, first: bool) -> dict[str, int]:
    changes = _events_df(spark, batch)
    run = table_batch._fold(changes, None, None, SCHEMA, None, table, first_load_=first, one_task=False)
    try:
        labels = table_batch._outcome_labels(run, changes, SCHEMA, table)
        return {r["label"]: r["count"] for r in labels.groupBy("label").count().collect()}
    finally:
        release(run.held)


def test_a_first_load_fold_labels_every_event_it_cannot_fold_so_the_batch_is_folded_again(spark: SparkSession) -> None:
    table = fold_table("soft")
    full = [ev(1, "r", 1, 0, name="a", age=1), ev(1, "u", 2, 1, name="b", age=2), ev(2, "c", 1, 2, name="c", age=3)]
    assert _labels(spark, full, table, first=True) == {"applied": 2, "collapsed": 1, "write:upsert": 2, "write:new-key": 2}
    assert _labels(spark, full, table, first=False) == _labels(spark, full, table, first=True)
    patched = [*full, ev(2, "u", 2, 3, name="d"), ev(1, "d", 3, 4)]
    assert _labels(spark, patched, table, first=True)[table_batch._NOT_FIRST_LOAD] == 2
    assert table_batch._NOT_FIRST_LOAD not in _labels(spark, patched, table, first=False)


def test_a_prepped_tables_first_load_carries_a_null_location(spark: SparkSession) -> None:
    table = fold_table("hard")
    assert prepped.applies(table)
    events = _events_df(spark, [ev(1, "r", 1, 0, name="a", age=1)])
    run = table_batch._fold(events, None, None, SCHEMA, None, table, first_load_=True, one_task=False)
    try:
        assert "__rank" in run.held.columns
        assert run.rows.select(F.col(prepped.LOCATION).isNull().alias("none")).collect()[0]["none"]
    finally:
        release(run.held)


def _fields(schema: StructType) -> list[tuple[str, str, bool]]:
    return [(f.name, f.dataType.simpleString(), f.nullable) for f in schema.fields]


@pytest.mark.parametrize("deletes", ["hard", "soft"])
def test_a_first_load_fold_gives_the_general_folds_schema_nullability_included(spark: SparkSession, deletes: str) -> None:
    # The rows' schema is what the table's first commit stores: a column the first load made
    # required while the general fold makes it optional would change the table's schema by path.
    table = fold_table(deletes)
    events = _events_df(spark, [ev(1, "r", 1, 0, name="a", age=1), ev(1, "u", 2, 1, name="b", age=2)])
    runs = [
        table_batch._fold(events, None, None, SCHEMA, None, table, first_load_=first, one_task=False)
        for first in (True, False)
    ]
    try:
        loaded, general = (_fields(run.rows.schema) for run in runs)
        assert loaded == general
    finally:
        for run in runs:
            release(run.held)
