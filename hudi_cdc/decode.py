"""Kafka rows -> typed change events + rejects + tombstones, as Spark SQL (events.py contract).

Handles Debezium JSON with the schema envelope (`schemas.enable=true`) and without it, mixed
in one batch, and patch messages (`mode: patch`). With the envelope the column types come from
the batch's distinct schemas (one small aggregation, never the records themselves); without it
from the table's declared `columns`.

A record that cannot be used becomes a reject with its position and the reason; the rest of
the batch goes on (spec §6).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DateType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from hudi_cdc.config import TableConfig
from hudi_cdc.debezium_types import ColumnType, column_type, declared_type, row_fields
from hudi_cdc.events import (
    KAFKA_OFFSET,
    KAFKA_PARTITION,
    KAFKA_TOPIC,
    OP,
    ORDER,
    ORDER_SHIFT,
    PRESENT,
    SOURCE,
    TS_MS,
    Op,
)

TOAST_PLACEHOLDER = "__debezium_unavailable_value"
_VALID_OPS = [o.value for o in Op]

# working columns
_JSON = "__json"
_PAYLOAD = "__payload"
_ENV = "__env"
_IMAGE = "__image"
_KEY_IMAGE = "__key_image"
_RAW = "__raw"
_TYPED = "__typed"
_ERROR = "__error"
_ERROR_CLASS = "__error_class"
_OK = "__ok"
_EVENT = "__event"
_REJECT = "__reject"

_ENVELOPE = StructType(
    [
        StructField("op", StringType()),
        StructField("ts_ms", LongType()),
        StructField("before", StringType()),
        StructField("after", StringType()),
        StructField(
            "source",
            StructType(
                [
                    StructField("file", StringType()),
                    StructField("pos", LongType()),
                    StructField("row", LongType()),
                    StructField("lsn", LongType()),
                    StructField("ts_ms", LongType()),
                    StructField("snapshot", StringType()),
                ]
            ),
        ),
    ]
)


@dataclass(frozen=True)
class DecodeResult:
    """One table's decoded batch. Persist `parsed` (see `cached`) when both outputs are used."""

    parsed: DataFrame
    """One row per non-tombstone record: its event or its reject."""
    tombstones: DataFrame
    """topic, partition, offset of records with a null value."""
    schema: StructType
    """The table's columns as decoded (key columns included)."""

    @property
    def events(self) -> DataFrame:
        """events.py contract: table columns, PRESENT, OP, ORDER, TS_MS, SOURCE, Kafka position."""
        return self.parsed.filter(F.col(_OK)).select(f"{_EVENT}.*")

    @property
    def rejects(self) -> DataFrame:
        """Dead-letter rows: table, topic, partition, offset, key, value, error_class, error_message."""
        return self.parsed.filter(~F.col(_OK)).select(f"{_REJECT}.*")

    def cached(self) -> DecodeResult:
        """The same result over a persisted parse (the caller unpersists `parsed`)."""
        return DecodeResult(parsed=self.parsed.persist(), tombstones=self.tombstones, schema=self.schema)


def column_types(raw: DataFrame, table: TableConfig) -> dict[str, ColumnType]:
    """Column name -> type: declared columns, then the union of the batch's envelope schemas."""
    types: dict[str, ColumnType] = {name: declared_type(ddl) for name, ddl in table.columns.items()}
    if table.mode == "patch":
        return types
    schemas = (
        raw.filter(F.col("value").isNotNull())
        .select(F.get_json_object(F.col("value").cast("string"), "$.schema").alias("s"))
        .filter(F.col("s").isNotNull())
        .groupBy(F.sha2("s", 256))
        .agg(F.first("s").alias("s"))
        .collect()
    )
    for row in schemas:
        for field in row_fields(json.loads(row["s"])):
            # declared types win: they are the table owner's explicit choice
            types.setdefault(field["field"], column_type(field))
    return types


def _ordering_long(table: TableConfig, values: dict[str, Column], types: dict[str, ColumnType], payload: Column) -> Column:
    """A configured ordering column as a number: timestamps as epoch µs, dates as epoch days.

    Looked up among the row's columns, else at the top level of the message (patch `ts`).
    """
    name = table.ordering
    if name in values:
        spark_type = types[name].spark
        if isinstance(spark_type, TimestampType):
            return F.unix_micros(values[name]).cast("decimal(20,0)")
        if isinstance(spark_type, DateType):
            return F.unix_date(values[name]).cast("decimal(20,0)")
        return values[name].cast("decimal(20,0)")
    return F.get_json_object(payload, f"$.{name}").cast("decimal(20,0)")


def _order(table: TableConfig, env: Column, ordering_value: Column | None) -> Column:
    """ORDER string of events.py, as one Spark expression."""
    kafka = F.format_string("%05d%020d", F.col("partition"), F.col("offset"))
    if ordering_value is not None:
        shifted = (ordering_value + F.lit(str(ORDER_SHIFT)).cast("decimal(20,0)")).cast("string")
        return F.when(ordering_value.isNotNull(), F.concat(F.lit("c"), F.lpad(shifted, 20, "0"), kafka))
    source = env["source"]
    rank = F.when(env["op"] == Op.READ.value, F.lit(0)).otherwise(F.lit(1))
    file_seq = F.substring_index(source["file"], ".", -1).cast("long")
    binlog = F.format_string(
        "b%010d%020d%d%010d", file_seq, source["pos"], rank, F.coalesce(source["row"], F.lit(0))
    )
    lsn = F.format_string("l%020d%d", source["lsn"], rank)
    ts = F.format_string("t%020d", F.coalesce(source["ts_ms"], env["ts_ms"]))
    position = (
        F.when(source["file"].isNotNull() & source["pos"].isNotNull(), binlog)
        .when(source["lsn"].isNotNull(), lsn)
        .when(F.coalesce(source["ts_ms"], env["ts_ms"]).isNotNull(), ts)
    )
    return F.concat(position, kafka)


def _source_text(env: Column) -> Column:
    source = env["source"]
    return (
        F.when(
            source["file"].isNotNull(),
            F.format_string("%s:%d:%d", source["file"], source["pos"], F.coalesce(source["row"], F.lit(0))),
        )
        .when(source["lsn"].isNotNull(), source["lsn"].cast("string"))
        .otherwise(F.coalesce(source["ts_ms"], env["ts_ms"]).cast("string"))
    )


def _where() -> Column:
    return F.format_string("%s[%d]@%d", F.col("topic"), F.col("partition"), F.col("offset"))


def decode(raw: DataFrame, table: TableConfig) -> DecodeResult:
    """Decode one table's Kafka records (Spark Kafka source rows)."""
    types = column_types(raw, table)
    names = list(types)
    wire = StructType([StructField(n, types[n].wire) for n in names])

    tombstones = raw.filter(F.col("value").isNull()).select("topic", "partition", "offset")
    records = raw.filter(F.col("value").isNotNull()).withColumn(_JSON, F.col("value").cast("string"))
    has_envelope = F.get_json_object(F.col(_JSON), "$.schema").isNotNull() & F.get_json_object(
        F.col(_JSON), "$.payload"
    ).isNotNull()
    payload = F.when(has_envelope, F.get_json_object(F.col(_JSON), "$.payload")).otherwise(F.col(_JSON))
    records = records.withColumn(_PAYLOAD, payload)

    if table.mode == "patch":
        env = F.struct(
            F.lit(Op.UPDATE.value).alias("op"),
            F.get_json_object(F.col(_PAYLOAD), f"$.{table.ordering}").cast("long").alias("ts_ms"),
            F.lit(None).cast("string").alias("before"),
            F.get_json_object(F.col(_PAYLOAD), f"$.{table.patch_field}").alias("after"),
            F.lit(None).cast(_ENVELOPE["source"].dataType).alias("source"),
        )
    else:
        env = F.from_json(F.col(_PAYLOAD), _ENVELOPE)
    records = records.withColumn(_ENV, env)
    op = F.col(f"{_ENV}.op")
    image_json = F.when(op == Op.DELETE.value, F.col(f"{_ENV}.before")).otherwise(F.col(f"{_ENV}.after"))
    key_text = F.col("key").cast("string")
    key_payload = F.when(
        F.get_json_object(key_text, "$.payload").isNotNull(), F.get_json_object(key_text, "$.payload")
    ).otherwise(key_text)
    records = (
        records.withColumn(_IMAGE, image_json)
        .withColumn(_RAW, F.from_json(F.col(_IMAGE), "map<string,string>"))
        .withColumn(_TYPED, F.from_json(F.col(_IMAGE), wire))
        .withColumn(_KEY_IMAGE, F.from_json(key_payload, wire))
    )
    if table.mode == "patch":
        # patch messages carry the key (and maybe more) at the top level
        records = records.withColumn(_KEY_IMAGE, F.from_json(F.col(_PAYLOAD), wire))

    def converted(name: str, source: str) -> Column:
        return types[name].convert(F.col(f"{source}.{name}"))

    values = {
        n: (
            F.coalesce(converted(n, _KEY_IMAGE), converted(n, _TYPED))
            if n in table.key
            else converted(n, _TYPED)
        )
        for n in names
    }
    keys = F.map_keys(F.col(_RAW))
    known = F.array(*[F.lit(n) for n in names])
    toasted = F.array(
        *[F.when(F.col(f"{_RAW}.`{n}`") == TOAST_PLACEHOLDER, F.lit(n)) for n in names if isinstance(types[n].wire, StringType)]
        or [F.lit(None).cast("string")]
    )
    present_image = F.array_except(F.array_intersect(F.coalesce(keys, F.array().cast("array<string>")), known), toasted)
    key_array = F.array(*[F.lit(k) for k in table.key])
    present = (
        F.when(op.isin(Op.CREATE.value, Op.READ.value, Op.UPDATE.value), F.array_union(present_image, key_array))
        .otherwise(F.array().cast("array<string>"))
    )
    # a present column whose JSON value does not convert to its type
    bad_values = F.filter(
        present_image,
        lambda c: F.col(_RAW)[c].isNotNull()
        & F.array_contains(
            F.array(*[F.when(values[n].isNull(), F.lit(n)) for n in names] or [F.lit(None).cast("string")]), c
        ),
    )
    ordering = None if table.ordering == "source" else _ordering_long(table, values, types, F.col(_PAYLOAD))
    order = _order(table, F.col(_ENV), ordering)
    key_missing = F.exists(F.array(*[values[k].isNull() for k in table.key]), lambda x: x)
    error_class, message = _first_error(
        [
            (F.json_object_keys(F.col(_JSON)).isNull(), "MalformedJson", "the value is not a JSON object"),
            (op.isNull(), "MissingOp", f"no `op` field; valid ops are {', '.join(_VALID_OPS)}"),
            (~op.isin(*_VALID_OPS), "UnknownOp", f"unknown op; valid ops are {', '.join(_VALID_OPS)}"),
            (
                op.isin(Op.CREATE.value, Op.READ.value, Op.UPDATE.value) & F.col(_IMAGE).isNull(),
                "MissingImage",
                "a create/read/update without `after`" if table.mode == "full" else f"no `{table.patch_field}` object",
            ),
            (F.size(bad_values) > 0, "BadValue", "value(s) do not match the column type"),
            (
                (op != Op.TRUNCATE.value) & key_missing,
                "MissingKey",
                f"key column(s) {table.key} missing from the Kafka key and the row",
            ),
            (order.isNull(), "MissingOrder", f"no order: ordering `{table.ordering}` has no value"),
        ]
    )
    checked = records.withColumn(_ERROR_CLASS, error_class).withColumn(_ERROR, message)
    # one parse for both outputs: compute every output column once, split by the error column
    reject_columns: list[Column | str] = [
        F.lit(table.name).alias("table"),
        "topic",
        "partition",
        "offset",
        "key",
        "value",
        F.col(_ERROR_CLASS).alias("error_class"),
        F.concat(
            _where(),
            F.lit(f" table {table.name}: "),
            F.col(_ERROR),
            F.when(F.size(bad_values) > 0, F.concat(F.lit(" "), F.array_join(bad_values, ","))).otherwise(F.lit("")),
            F.lit(". The record is kept here; fix the producer or the table's `columns`, then replay it."),
        ).alias("error_message"),
    ]
    event_columns: list[Column | str] = [
        *[values[n].alias(n) for n in names],
        present.alias(PRESENT),
        op.alias(OP),
        order.alias(ORDER),
        F.coalesce(F.col(f"{_ENV}.source.ts_ms"), F.col(f"{_ENV}.ts_ms")).alias(TS_MS),
        _source_text(F.col(_ENV)).alias(SOURCE),
        F.col("topic").alias(KAFKA_TOPIC),
        F.col("partition").alias(KAFKA_PARTITION),
        F.col("offset").alias(KAFKA_OFFSET),
    ]
    parsed = checked.select(
        F.col(_ERROR_CLASS).isNull().alias(_OK),
        F.struct(*event_columns).alias(_EVENT),
        F.when(F.col(_ERROR_CLASS).isNotNull(), F.struct(*reject_columns)).alias(_REJECT),
    )
    schema = StructType([StructField(n, types[n].spark, True) for n in names])
    return DecodeResult(parsed=parsed, tombstones=tombstones, schema=schema)


def _first_error(checks: list[tuple[Column, str, str]]) -> tuple[Column, Column]:
    """(error class, message) of the first failing check, NULL when every check passes."""
    error_class: Column = F.lit(None).cast("string")
    message: Column = F.lit(None).cast("string")
    for condition, name, text in reversed(checks):
        error_class = F.when(F.coalesce(condition, F.lit(False)), F.lit(name)).otherwise(error_class)
        message = F.when(F.coalesce(condition, F.lit(False)), F.lit(text)).otherwise(message)
    return error_class, message
