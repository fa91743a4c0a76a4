"""Why a record being decoded is rejected or skipped, as Spark SQL.

The checks run in a fixed order and the first failing one names the record's error class and
message (`failed_check`, `error_of`); `reject_columns` builds its dead-letter row. Records that
carry no row change are skipped with a reason instead (`non_data_reason`). decode.py owns the
columns these read (`Record`); this module owns only the judgement.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, DataType, DateType, DecimalType, TimestampType

from hudi_cdc.avro.wire import WIRE_KEY, WIRE_VALUE
from hudi_cdc.config.models import TableConfig
from hudi_cdc.decode.debezium_types import JSON_NUMBER, MAX_PRECISION
from hudi_cdc.decode.schema import BatchTypes
from hudi_cdc.decode.values import Values
from hudi_cdc.events import KAFKA_POSITION, Op
from hudi_cdc.kafka.headers import headers_column

VALID_OPS = ", ".join(o.value for o in Op)
IMAGE_OPS = (Op.CREATE.value, Op.READ.value, Op.UPDATE.value)
"""Ops whose record carries a row image (`after`)."""

Check = tuple[Column, str, Column]
"""(has the record failed it?, error class, message)."""


@dataclass(frozen=True)
class Record:
    """The columns of a record being decoded that the checks read."""

    json: Column
    """The Kafka value as text."""
    payload: Column
    """The envelope's payload, or the whole value without an envelope."""
    has_envelope: Column
    """The value is a Connect envelope with a schema."""
    may_be_malformed: Column
    """False where the payload's parse shows it is a JSON object: only the other records pay for
    testing it (a whole parse of the payload)."""
    has_image: Column
    """The record carries a row image (`before` for a delete, else `after`) of any JSON type."""
    raw_map: Column
    """The image as map<string,string> (NULL when it is not a JSON object)."""
    profile: Column
    """Index of the record's profile in BatchTypes.profiles."""
    op: Column
    present: Column
    """PRESENT: the columns the record carries."""


@dataclass(frozen=True)
class Order:
    """A record's ORDER, the ordering value behind it, and why it may be missing."""

    order: Column
    number: Column | None
    malformed: Column
    """A position is given but unusable (semantics §3: never replaced by a weaker one)."""
    missing_reason: str


def non_data_reason(op: Column, payload: Column) -> Column:
    """Why a record that Debezium writes next to change events carries no row change, else NULL.

    PostgreSQL logical-decoding messages (op `m`), schema-change and schema-history records
    (`ddl`/`tableChanges`, no op) and transaction markers (`status` BEGIN/END, no op) are
    counted as skipped with this reason, never dead-lettered as bad data.
    """
    no_op = op.isNull()
    return (
        F.when(op == "m", F.lit("logical decoding message (op m)"))
        .when(no_op & F.get_json_object(payload, "$.ddl").isNotNull(), F.lit("schema change record (ddl)"))
        .when(no_op & F.get_json_object(payload, "$.tableChanges").isNotNull(), F.lit("schema change record (tableChanges)"))
        .when(
            no_op & F.get_json_object(payload, "$.status").isin("BEGIN", "END")
            & F.get_json_object(payload, "$.id").isNotNull(),
            F.lit("transaction marker"),
        )
    )


def failed_check(checks: list[Check]) -> Column:
    """Index of the first failing check, NULL when every check passes."""
    index: Column | None = None
    for i, (condition, _, _) in enumerate(checks):
        failed = F.coalesce(condition, F.lit(False))
        index = F.when(failed, F.lit(i)) if index is None else index.when(failed, F.lit(i))
    return index if index is not None else F.lit(None).cast("int")


def error_of(checks: list[Check], failed: Column) -> tuple[Column, Column]:
    """(error class, message) of the check at index `failed` (see `failed_check`)."""
    names = F.array(*[F.lit(name) for _, name, _ in checks])
    message: Column | None = None
    for i, (_, _, text) in enumerate(checks):
        message = F.when(failed == i, text) if message is None else message.when(failed == i, text)
    return F.element_at(names, failed + 1), message if message is not None else F.lit(None).cast("string")


def _bad_value_reason(name: str, dtype: DataType, types: BatchTypes, record: Record, raw_map: Column) -> Column:
    """Why a present value of `name` does not convert: a JSON number where the record's schema says
    bytes (a Connect Decimal), else the column type's own reason (`_bad_value_text`)."""
    text = F.lit(_bad_value_text(name, dtype))
    as_bytes = [i for i, p in enumerate(types.profiles) if name in p.columns and isinstance(p.columns[name].wire, BinaryType)]
    if not as_bytes:
        return text
    number = record.profile.isin(*as_bytes) & raw_map[name].rlike(JSON_NUMBER)
    return F.when(number, F.lit(
        f"{name} ({dtype.simpleString()}): a JSON number where the record's schema says bytes; Kafka Connect's "
        "JsonConverter sends a Decimal as the base64 text of its unscaled value (decimal.format=BASE64, "
        "its default), and hudi_cdc does not read decimal.format=NUMERIC"
    )).otherwise(text)  # fmt: skip


def _bad_value_text(name: str, dtype: DataType) -> str:
    hint = ""
    if isinstance(dtype, (TimestampType, DateType)):
        hint = ": ISO-8601 text; declare epoch numbers as bigint"
    elif isinstance(dtype, DecimalType) and dtype.precision == MAX_PRECISION:
        # a source decimal wider than 38 digits lands here when the table was created narrower
        return (
            f"{name} ({dtype.simpleString()}): more than 38 digits, the most a decimal holds; if the source "
            "column is wider, the table was created while it was narrower: re-create the table to store it as exact text"
        )
    return f"{name} ({dtype.simpleString()}{hint})"


def _joined_texts(texts: list[Column], separator: str) -> Column:
    """The non-NULL `texts` joined by `separator`; "" when every one is NULL.

    Why not `filter(array(...), x -> x is not null)`: a higher-order function is evaluated
    without code generation, its arguments too, and these arguments test every column of every
    record (measured: 14% of decode's CPU). `concat_ws` skips NULLs and is compiled.
    """
    return F.concat_ws(separator, *texts) if texts else F.lit("")


def any_true(conditions: list[Column]) -> Column:
    """True when one of `conditions` (never NULL) is; compiled, unlike `exists(array(...), x -> x)`."""
    return reduce(operator.or_, conditions) if conditions else F.lit(False)


def _bad_schema(types: BatchTypes, profile: Column) -> list[Check]:
    """Records whose envelope schema types nothing (`Profile.problem`), with its reason."""
    unusable = [(i, p.problem) for i, p in enumerate(types.profiles) if p.problem]
    message = F.lit(None).cast("string")
    for i, problem in unusable:
        text = f"the envelope's `schema` cannot type the table: {problem}"
        message = F.when(profile == i, F.lit(text)).otherwise(message)
    return [(message.isNotNull(), "BadSchema", message)] if unusable else []


def checks(
    table: TableConfig, types: BatchTypes, values: Values, record: Record, order: Order,
    wire_error: Column | None = None,
) -> list[Check]:
    """Every reason a record is rejected, in the order they are tested."""
    op, present, raw_map = record.op, record.present, record.raw_map
    # an Avro record that could not be read (avro/wire.py) is not JSON at all: its reason comes first
    wire = [(wire_error.isNotNull(), "AvroDecodeError", wire_error)] if wire_error is not None else []
    unusable = _bad_schema(types, record.profile)

    # a present column whose JSON value is not NULL but whose conversion is
    def in_image(name: str) -> Column:
        return F.array_contains(present, name) & raw_map[name].isNotNull()

    conflicts = _joined_texts(
        [F.when(in_image(n) & record.profile.isin(*ix), F.lit(text)) for n, ix, text in values.conflicts], "; "
    )
    bad_values = _joined_texts(
        [
            F.when(in_image(n) & values.image_only[n].isNull(), _bad_value_reason(n, dtype, types, record, raw_map))
            for n, dtype in types.target.items()
        ],
        ", ",
    )
    key_missing = any_true([values.key(k).isNull() for k in table.key])
    image_name = {"full": "`after`", "patch": f"`{table.patch_field}`"}.get(table.mode, "row")
    return [
        *wire,
        # JSON is UTF-8; Spark would read invalid bytes as U+FFFD and store altered text
        (F.encode(record.json, "UTF-8") != F.col("value"), "MalformedJson",
         F.lit("the value is not valid UTF-8 (JSON must be); fix the producer")),
        (record.may_be_malformed & F.json_object_keys(record.payload).isNull(), "MalformedJson",
         F.lit("the value is not a JSON object (malformed JSON, or not Kafka Connect's JsonConverter); fix the producer")),
        *unusable,
        (~record.has_envelope & F.lit(not table.columns and table.mode != "patch"), "NoSchema",
         F.lit(f"no schema envelope and table {table.name} declares no `columns`: declare `columns` "
               "(column: Spark SQL type) or set value.converter.schemas.enable=true")),
        (op.isNull(), "MissingOp", F.lit(f"no `op` field; valid ops are {VALID_OPS}")),
        (~op.isin(*[o.value for o in Op]), "UnknownOp",
         F.concat(F.lit("unknown op '"), op, F.lit(f"'; valid ops are {VALID_OPS}"))),
        (op.isin(*IMAGE_OPS) & ~record.has_image, "MissingImage",
         F.lit(f"a create/read/update has no {image_name} object")),
        (record.has_image & raw_map.isNull(), "MissingImage", F.lit(f"{image_name} is not a JSON object")),
        (conflicts != "", "SchemaConflict",
         F.concat(F.lit("a column's type changed incompatibly within the batch: "), conflicts)),
        (bad_values != "", "BadValue",
         F.concat(F.lit("value(s) do not convert to the column type: "), bad_values,
                  F.lit("; fix the producer or the table's `columns`"))),
        ((op != Op.TRUNCATE.value) & key_missing, "MissingKey",
         F.lit(f"key column(s) {', '.join(table.key)} missing or NULL in both the Kafka key and the row; "
               "check the table's `key` (and the connector's message.key.columns)")),
        (order.malformed, "BadOrder",
         F.lit("malformed source position: source.file must be a binlog file name ending in .<number>, "
               "source.pos/row/lsn/ts_ms non-negative integers, source.sequence a JSON array of lsn strings; "
               "fix the producer")),
        (order.order.isNull(), "MissingOrder", F.lit(f"no order: {order.missing_reason}")),
    ]  # fmt: skip


def reject_columns(table: TableConfig, error_class: Column, error: Column, *, wire: bool, headers: bool) -> list[Column | str]:
    """The dead-letter row of a rejected record (dead_letter.py's columns).

    `wire`: the records came through avro/wire.py, whose WIRE_KEY/WIRE_VALUE hold the bytes as
    read from Kafka (Avro), so a replay sends the original record, not its JSON rendering.
    `headers`: the table reads the records' KAFKA_HEADERS, kept so a replay has them too.
    """
    return [
        F.lit(table.name).alias("table"),
        "topic",
        "partition",
        "offset",
        F.col(WIRE_KEY).alias("key") if wire else "key",
        F.col(WIRE_VALUE).alias("value") if wire else "value",
        error_class.alias("error_class"),
        F.concat(
            F.format_string(KAFKA_POSITION, F.col("topic"), F.col("partition"), F.col("offset")),
            F.lit(f" table {table.name}: "),
            error,
            F.lit(". The record is kept in the dead-letter store; replay it once the cause is fixed."),
        ).alias("error_message"),
        headers_column(headers),
    ]
