"""The Spark fold (collapse + merge) run batch by batch over a fake store, and the reference model
over the same batches: what the fold tests compare."""

from __future__ import annotations

from typing import Any

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
from hudi_cdc.fold.collapse import FoldResult, Truncation, fold, keeps_a_stored_value
from hudi_cdc.fold.merge import rows_to_write
from hudi_cdc.fold.stored_state import stored_columns, touched_rows, value_columns
from tests.support.reference_model import Event, ReferenceTable

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


def fold_table(deletes: str) -> TableConfig:
    """Table `t` keyed by `id`, with hard or soft `deletes`."""
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


def run_batches(
    spark: SparkSession, table: TableConfig, batches: list[list[tuple[Event, int]]], *,
    values: bool = True, kept: list[int] | None = None,
) -> dict[Any, Any]:  # fmt: skip
    """The Spark fold over `batches`, one upsert each, as the pipeline runs it: the stored rows by key.

    `values=False`: each batch without a truncate is folded first from stored rows read without
    their values (`touched_rows(..., values=False)`), and again with them where a folded row keeps
    one, as `job.table_batch` does; `kept` receives each such batch's count of those rows.
    """
    store = FakeStore(spark, table)
    remembered: Truncation | None = None  # what the pipeline keeps in commit metadata
    for batch in batches:
        events = _events_df(spark, batch)
        truncates = [e for e, _ in batch if e.op == "t"]
        truncation = Truncation(max(e.order for e in truncates), None, None) if truncates else None
        changes = events.filter(F.col(OP) != "t")

        def folded(
            with_values: bool, changes: DataFrame = changes, truncation: Truncation | None = truncation,
            remembered: Truncation | None = remembered,
        ) -> FoldResult:  # fmt: skip
            stored = store.rows
            if not with_values:
                stored = touched_rows(stored, changes, SCHEMA, table, every_row=False, values=False)
            return fold(
                events=changes,
                stored=stored,
                schema=SCHEMA,
                key=["id"],
                soft_deletes=table.deletes == "soft",
                truncation=truncation,
                remembered=remembered,
            )

        apart = not values and truncation is None
        result = folded(not apart)
        if apart:
            count = result.rows.filter(keeps_a_stored_value(COLUMNS, value_columns(SCHEMA, table))).count()
            if kept is not None:
                kept.append(count)
            if count:
                result = folded(True)
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
    """The reference model over the same `batches`: the rows by key."""
    ref = ReferenceTable(COLUMNS, ["id"], soft_deletes=table.deletes == "soft")
    for batch in batches:
        ref.apply_all(e for e, _ in batch)
        ref.end_batch()
    return ref.rows()


def ev(key: int, op: str, ts: int, offset: int, **image: Any) -> tuple[Event, int]:
    """A change of `key` at time `ts` and Kafka offset `offset`, with its offset."""
    return Event(key=(key,), op=op, order=ts_order(ts_ms=ts, partition=0, offset=offset), image=image), offset
