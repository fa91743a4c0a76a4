"""The Spark fold (collapse + merge) against the pure-Python reference of change-semantics §3."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, LongType, StringType, StructField, StructType

from hudi_cdc.config.models import TableConfig
from hudi_cdc.events import (
    COLUMN_ORDERS,
    DELETED,
    HOODIE_IS_DELETED,
    KAFKA_OFFSET,
    KAFKA_PARTITION,
    KAFKA_TOPIC,
    OP,
    ORDER,
    PRESENT,
    SOURCE,
    TS_MS,
    ts_order,
)
from hudi_cdc.fold.collapse import Truncation, fold
from hudi_cdc.fold.merge import rows_to_write
from hudi_cdc.fold.stored_state import stored_columns
from tests.reference_model import Event, ReferenceTable

SCHEMA = StructType(
    [StructField("id", LongType()), StructField("name", StringType()), StructField("age", LongType())]
)
COLUMNS = ["id", "name", "age"]
EVENT_SCHEMA = StructType(
    [
        *SCHEMA.fields,
        StructField(PRESENT, ArrayType(StringType())),
        StructField(OP, StringType()),
        StructField(ORDER, StringType()),
        StructField(TS_MS, LongType()),
        StructField(SOURCE, StringType()),
        StructField(KAFKA_TOPIC, StringType()),
        StructField(KAFKA_PARTITION, IntegerType()),
        StructField(KAFKA_OFFSET, LongType()),
    ]
)


def _table(deletes: str) -> TableConfig:
    return TableConfig(name="t", key=["id"], base_path="/unused", deletes=deletes)


def _events_df(spark: SparkSession, events: list[tuple[Event, int]]) -> DataFrame:
    rows = []
    for event, offset in events:
        image = dict(event.image)
        present = sorted({*image, "id"}) if event.op in "cru" else []
        rows.append(
            (
                event.key[0],
                image.get("name"),
                image.get("age"),
                present,
                event.op,
                event.order,
                offset,
                f"src{offset}",
                "topic",
                0,
                offset,
            )
        )
    return spark.createDataFrame(rows, EVENT_SCHEMA)


class FakeStore:
    """Holds a table's stored rows the way Hudi would after each upsert (latest write per key)."""

    def __init__(self, spark: SparkSession, table: TableConfig) -> None:
        self.table = table
        self.rows = spark.createDataFrame([], self._schema(spark))

    def _schema(self, spark: SparkSession) -> StructType:
        probe = rows_to_write(
            spark.createDataFrame([], SCHEMA)
            .withColumn(OP, F.lit(None).cast("string"))
            .withColumn(ORDER, F.lit(None).cast("string"))
            .withColumn(TS_MS, F.lit(None).cast("long"))
            .withColumn(SOURCE, F.lit(None).cast("string"))
            .withColumn(COLUMN_ORDERS, F.create_map().cast("map<string,string>"))
            .withColumn("__exists", F.lit(True))
            .withColumn("__had_row", F.lit(True))
            .withColumn("__changed", F.lit(True)),
            SCHEMA,
            self.table,
        )
        return probe.drop(HOODIE_IS_DELETED).schema

    def apply(self, written: DataFrame) -> None:
        written = written.localCheckpoint()
        keep = written.filter(~F.col(HOODIE_IS_DELETED)) if HOODIE_IS_DELETED in written.columns else written
        self.rows = (
            self.rows.join(written.select("id"), "id", "left_anti")
            .unionByName(keep.select(*stored_columns(SCHEMA, self.table)))
            .localCheckpoint()
        )


def run_batches(spark: SparkSession, table: TableConfig, batches: list[list[tuple[Event, int]]]) -> dict[Any, Any]:
    store = FakeStore(spark, table)
    remembered: Truncation | None = None  # what the pipeline keeps in commit metadata
    for batch in batches:
        events = _events_df(spark, batch)
        truncates = [e for e, _ in batch if e.op == "t"]
        truncation = Truncation(max(e.order for e in truncates), None, None) if truncates else None
        result = fold(
            events=events.filter(F.col(OP) != "t"),
            stored=store.rows,
            schema=SCHEMA,
            key=["id"],
            soft_deletes=table.deletes == "soft",
            truncation=truncation,
            remembered=remembered,
        )
        store.apply(rows_to_write(result.rows, SCHEMA, table))
        if truncation is not None and (remembered is None or truncation.order > remembered.order):
            remembered = truncation
    out = {}
    for row in store.rows.collect():
        d = row.asDict()
        out[(d["id"],)] = {
            **{c: d[c] for c in COLUMNS},
            "_cdc_deleted": d.get(DELETED, False),
            "_cdc_op": d[OP],
            "_cdc_order": d[ORDER],
        }
    return out


def reference(table: TableConfig, batches: list[list[tuple[Event, int]]]) -> dict[Any, Any]:
    ref = ReferenceTable(COLUMNS, ["id"], soft_deletes=table.deletes == "soft")
    for batch in batches:
        ref.apply_all(e for e, _ in batch)
        ref.end_batch()
    return ref.rows()


def ev(key: int, op: str, ts: int, offset: int, **image: Any) -> tuple[Event, int]:
    return Event(key=(key,), op=op, order=ts_order(ts_ms=ts, partition=0, offset=offset), image=image), offset


def test_three_updates_in_one_batch_leave_the_last(spark: SparkSession) -> None:
    batch = [
        ev(1, "c", 1, 0, name="a", age=1),
        ev(1, "u", 3, 2, name="c", age=3),
        ev(1, "u", 2, 1, name="b", age=2),
    ]
    rows = run_batches(spark, _table("hard"), [batch])
    assert rows[(1,)]["name"] == "c" and rows[(1,)]["age"] == 3


def test_older_event_in_later_batch_does_not_overwrite(spark: SparkSession) -> None:
    rows = run_batches(
        spark, _table("hard"), [[ev(1, "u", 5, 1, name="new", age=5)], [ev(1, "u", 4, 0, name="old", age=4)]]
    )
    assert rows[(1,)]["name"] == "new"


def test_late_patch_fills_only_unwritten_columns(spark: SparkSession) -> None:
    batches = [[ev(1, "u", 5, 1, name="new")], [ev(1, "u", 4, 0, name="old", age=44)]]
    rows = run_batches(spark, _table("hard"), batches)
    assert rows[(1,)]["name"] == "new" and rows[(1,)]["age"] == 44


def test_explicit_null_is_a_write(spark: SparkSession) -> None:
    rows = run_batches(spark, _table("hard"), [[ev(1, "c", 1, 0, name="a", age=1)], [ev(1, "u", 2, 1, age=None)]])
    assert rows[(1,)] == {**rows[(1,)], "name": "a", "age": None}


def test_delete_removes_row_and_soft_delete_keeps_it(spark: SparkSession) -> None:
    batch = [ev(1, "c", 1, 0, name="a", age=1), ev(1, "d", 2, 1)]
    assert run_batches(spark, _table("hard"), [batch]) == {}
    soft = run_batches(spark, _table("soft"), [batch])
    assert soft[(1,)]["_cdc_deleted"] is True and soft[(1,)]["name"] is None


def test_event_older_than_a_remembered_truncate_is_late_even_for_a_new_key(spark: SparkSession) -> None:
    truncate = (Event(key=(None,), op="t", order=ts_order(ts_ms=4, partition=0, offset=1)), 1)
    batches = [[ev(1, "c", 1, 0, name="a"), truncate], [ev(2, "c", 3, 2, name="old"), ev(3, "c", 5, 3, name="new")]]
    for deletes in ("hard", "soft"):
        rows = run_batches(spark, _table(deletes), batches)
        assert rows == reference(_table(deletes), batches)
        live = {k for k, r in rows.items() if not r["_cdc_deleted"]}
        assert live == {(3,)}, deletes


def test_truncate_deletes_older_rows_and_keeps_newer_events(spark: SparkSession) -> None:
    first = [ev(1, "c", 1, 0, name="a"), ev(2, "c", 2, 1, name="b")]
    second = [ev(3, "c", 5, 3, name="c"), (Event(key=(None,), op="t", order=ts_order(ts_ms=4, partition=0, offset=2)), 2)]
    rows = run_batches(spark, _table("hard"), [first, second])
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


@given(raw=events_strategy, seed=st.integers(0, 10_000))
def test_any_batching_and_arrival_order_matches_reference(spark: SparkSession, raw: list[Any], seed: int) -> None:
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
    batches = [shuffled[i:j] for i, j in zip([0, *cuts], [*cuts, len(shuffled)], strict=True)]
    table = _table("soft")
    expected = reference(table, [events])
    assert run_batches(spark, table, batches) == expected
    hard = _table("hard")
    assert run_batches(spark, hard, batches) == reference(hard, batches)
