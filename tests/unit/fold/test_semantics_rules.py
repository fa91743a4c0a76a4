"""Named scenarios of semantics §2-§4, each run through the Spark fold and the reference model."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from hudi_cdc.events import column_order
from tests.support.fold_builders import ev, fold_table, reference, run_batches
from tests.support.reference_model import Event


def _both(spark: SparkSession, deletes: str, batches: list[list[tuple[Event, int]]]) -> dict[Any, Any]:
    table = fold_table(deletes)
    got = run_batches(spark, table, batches)
    assert got == reference(table, batches)
    return got


def test_delete_then_reinsert_in_one_batch_keeps_the_reinsert(spark: SparkSession) -> None:
    rows = _both(spark, "hard", [[ev(1, "c", 1, 0, name="a", age=1), ev(1, "d", 2, 1), ev(1, "c", 3, 2, name="b", age=None)]])
    assert rows[(1,)]["name"] == "b" and rows[(1,)]["age"] is None


def test_delete_then_reinsert_across_batches(spark: SparkSession) -> None:
    rows = _both(spark, "soft", [[ev(1, "c", 1, 0, name="a", age=1)], [ev(1, "d", 2, 1)], [ev(1, "c", 3, 2, name="b")]])
    assert rows[(1,)]["_cdc_deleted"] is False and rows[(1,)]["name"] == "b" and rows[(1,)]["age"] is None


def test_reinsert_older_than_delete_stays_deleted_on_soft_table(spark: SparkSession) -> None:
    rows = _both(spark, "soft", [[ev(1, "c", 1, 0, name="a")], [ev(1, "d", 3, 1)], [ev(1, "c", 2, 2, name="late")]])
    assert rows[(1,)]["_cdc_deleted"] is True and rows[(1,)]["name"] is None


def test_primary_key_change_is_delete_old_plus_create_new(spark: SparkSession) -> None:
    rows = _both(spark, "hard", [[ev(1, "c", 1, 0, name="a", age=7)], [ev(1, "d", 2, 1), ev(2, "c", 2, 2, name="a", age=7)]])
    assert set(rows) == {(2,)} and rows[(2,)]["name"] == "a"


def test_duplicate_event_in_batch_and_replayed_later_changes_nothing(spark: SparkSession) -> None:
    event = ev(1, "c", 1, 0, name="a", age=1)
    rows = _both(spark, "hard", [[event, event], [event]])
    assert rows[(1,)]["name"] == "a"


def test_equal_ordering_values_later_offset_wins(spark: SparkSession) -> None:
    first = (Event((1,), "u", column_order(value=5, partition=0, offset=10), {"name": "first"}), 10)
    second = (Event((1,), "u", column_order(value=5, partition=0, offset=11), {"name": "second"}), 11)
    rows = _both(spark, "hard", [[second, first]])
    assert rows[(1,)]["name"] == "second"


def test_late_delete_does_not_remove_a_newer_row(spark: SparkSession) -> None:
    rows = _both(spark, "hard", [[ev(1, "c", 5, 0, name="new")], [ev(1, "d", 3, 1)]])
    assert rows[(1,)]["name"] == "new"
