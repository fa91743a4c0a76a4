"""The Spark fold (collapse + merge) against the pure-Python reference of semantics §3."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from hudi_cdc.events import ts_order
from tests.support.fold_builders import ev, fold_table, reference, run_batches
from tests.support.reference_model import Event


def test_three_updates_in_one_batch_leave_the_last(spark: SparkSession) -> None:
    batch = [
        ev(1, "c", 1, 0, name="a", age=1),
        ev(1, "u", 3, 2, name="c", age=3),
        ev(1, "u", 2, 1, name="b", age=2),
    ]
    rows = run_batches(spark, fold_table("hard"), [batch])
    assert rows[(1,)]["name"] == "c" and rows[(1,)]["age"] == 3


def test_older_event_in_later_batch_does_not_overwrite(spark: SparkSession) -> None:
    rows = run_batches(
        spark, fold_table("hard"), [[ev(1, "u", 5, 1, name="new", age=5)], [ev(1, "u", 4, 0, name="old", age=4)]]
    )
    assert rows[(1,)]["name"] == "new"


def test_late_patch_fills_only_unwritten_columns(spark: SparkSession) -> None:
    batches = [[ev(1, "u", 5, 1, name="new")], [ev(1, "u", 4, 0, name="old", age=44)]]
    rows = run_batches(spark, fold_table("hard"), batches)
    assert rows[(1,)]["name"] == "new" and rows[(1,)]["age"] == 44


def test_explicit_null_is_a_write(spark: SparkSession) -> None:
    rows = run_batches(spark, fold_table("hard"), [[ev(1, "c", 1, 0, name="a", age=1)], [ev(1, "u", 2, 1, age=None)]])
    assert rows[(1,)] == {**rows[(1,)], "name": "a", "age": None}


def test_delete_removes_row_and_soft_delete_keeps_it(spark: SparkSession) -> None:
    batch = [ev(1, "c", 1, 0, name="a", age=1), ev(1, "d", 2, 1)]
    assert run_batches(spark, fold_table("hard"), [batch]) == {}
    soft = run_batches(spark, fold_table("soft"), [batch])
    assert soft[(1,)]["_cdc_deleted"] is True and soft[(1,)]["name"] is None


def test_event_older_than_a_remembered_truncate_is_late_even_for_a_new_key(spark: SparkSession) -> None:
    truncate = (Event(key=(None,), op="t", order=ts_order(ts_ms=4, partition=0, offset=1)), 1)
    batches = [[ev(1, "c", 1, 0, name="a"), truncate], [ev(2, "c", 3, 2, name="old"), ev(3, "c", 5, 3, name="new")]]
    for deletes in ("hard", "soft"):
        rows = run_batches(spark, fold_table(deletes), batches)
        assert rows == reference(fold_table(deletes), batches)
        live = {k for k, r in rows.items() if not r["_cdc_deleted"]}
        assert live == {(3,)}, deletes


def test_truncate_deletes_older_rows_and_keeps_newer_events(spark: SparkSession) -> None:
    first = [ev(1, "c", 1, 0, name="a"), ev(2, "c", 2, 1, name="b")]
    second = [ev(3, "c", 5, 3, name="c"), (Event(key=(None,), op="t", order=ts_order(ts_ms=4, partition=0, offset=2)), 2)]
    rows = run_batches(spark, fold_table("hard"), [first, second])
    assert set(rows) == {(3,)}


events_strategy = st.lists(
    st.tuples(
        st.integers(1, 3),
        st.sampled_from(["c", "u", "u", "d", "c", "u", "u", "d", "t"]),
        st.integers(1, 6),
        st.booleans(),
        st.booleans(),
        st.sampled_from(["x", "y", None]),
    ),
    min_size=1,
    max_size=12,
)


def _events_and_batches(raw: list[Any], seed: int) -> tuple[list[Any], list[list[Any]]]:
    """The drawn events in source order, and the same shuffled and cut into batches."""
    events = []
    for offset, (key, op, ts, has_name, has_age, name) in enumerate(raw):
        image: dict[str, Any] = {}
        if op != "d":
            if has_name or op == "c":
                image["name"] = name
            if has_age or op == "c":
                image["age"] = ts * 10
        if op == "t":
            events.append((Event(key=(None,), op="t", order=ts_order(ts_ms=ts, partition=0, offset=offset)), offset))
            continue
        events.append(ev(key, op, ts, offset, **image))
    rng = random.Random(seed)
    shuffled = events[:]
    rng.shuffle(shuffled)
    cuts = sorted(rng.sample(range(1, len(shuffled)), k=min(len(shuffled) - 1, rng.randint(0, 3))))
    return events, [shuffled[i:j] for i, j in zip([0, *cuts], [*cuts, len(shuffled)], strict=True)]


# About 3.5 s an example on 2 cores (two tables, up to four batches each): 12 examples keep
# the property under a minute in `make test`; the deep profile runs more.
@settings(max_examples=max(settings.default.max_examples, 12))
@given(raw=events_strategy, seed=st.integers(0, 10_000))
def test_any_batching_and_arrival_order_matches_reference(spark: SparkSession, raw: list[Any], seed: int) -> None:
    events, batches = _events_and_batches(raw, seed)
    table = fold_table("soft")
    expected = reference(table, [events])
    assert run_batches(spark, table, batches) == expected
    hard = fold_table("hard")
    assert run_batches(spark, hard, batches) == reference(hard, batches)


def test_a_fold_read_without_stored_values_folds_again_only_where_a_row_keeps_one(spark: SparkSession) -> None:
    table = fold_table("hard")
    first = [ev(1, "c", 1, 0, name="a", age=10), ev(2, "c", 2, 1, name="b", age=20), ev(3, "c", 3, 2, name="c", age=30)]
    # full images newer than the stored rows, and a delete: no stored value is kept
    full = [ev(1, "u", 5, 3, name="a2", age=11), ev(3, "d", 6, 4)]
    kept: list[int] = []
    assert run_batches(spark, table, [first, full], values=False, kept=kept) == reference(table, [first, full])
    assert kept == [0, 0]
    # a patch keeps the stored age, and a late image keeps every stored value it is older than
    patch = [ev(2, "u", 7, 5, name="b2"), ev(1, "u", 4, 6, name="late", age=0)]
    kept = []
    rows = run_batches(spark, table, [first, full, patch], values=False, kept=kept)
    assert kept == [0, 0, 1]  # key 1's late image changes nothing: its row is not written
    assert rows == reference(table, [first, full, patch])
    assert rows[(2,)]["age"] == 20


def test_a_fold_read_without_stored_values_folds_again_where_the_row_keeps_its_last_event(
    spark: SparkSession,
) -> None:
    table = fold_table("hard")
    first = [ev(1, "c", 1, 0, name="a", age=10)]
    touch = [ev(1, "u", 5, 1)]  # writes the key alone: the row's order moves on, its values' do not
    # older than the row, newer than its values: both change, the row's last event stays touch's
    late = [ev(1, "u", 3, 2, name="late", age=0)]
    kept: list[int] = []
    rows = run_batches(spark, table, [first, touch, late], values=False, kept=kept)
    assert rows == reference(table, [first, touch, late])
    assert rows[(1,)]["_cdc_op"] == "u" and rows[(1,)]["name"] == "late"
    assert kept == [0, 1, 1]  # touch keeps the stored values; late keeps none, but the last event


# Each example folds every batch up to twice, about 5 s: 8 keep it under a minute.
@settings(max_examples=max(settings.default.max_examples, 8))
@given(raw=events_strategy, seed=st.integers(0, 10_000))
def test_a_fold_read_without_stored_values_matches_reference_under_any_batching(
    spark: SparkSession, raw: list[Any], seed: int
) -> None:
    _, batches = _events_and_batches(raw, seed)
    for deletes in ("soft", "hard"):
        table = fold_table(deletes)
        assert run_batches(spark, table, batches, values=False) == reference(table, batches)
