"""Debezium / Kafka Connect schemas -> Spark types, and exact wire-value conversions as Spark SQL.

Each column is read from JSON with its *wire* type (what the JSON converter writes) and then
converted by a Spark expression to its table type. Nothing goes through floats or Python.

Choices where Spark 3.5 has no exact type (documented in the README):
- io.debezium.data.VariableScaleDecimal -> string holding the exact decimal;
- Time / MicroTime / NanoTime -> string 'HH:MM:SS.ffffff' (no TIME type in Spark 3.5);
- NanoTimestamp -> timestamp truncated to microseconds (Spark's precision);
- struct / array / map columns -> their JSON text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
    _parse_datatype_string,
)

Converter = Callable[[Column], Column]

DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
CONNECT_DATE = "org.apache.kafka.connect.data.Date"
CONNECT_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
_STRING_LOGICAL = {
    "io.debezium.data.Json",
    "io.debezium.data.Enum",
    "io.debezium.data.EnumSet",
    "io.debezium.data.Uuid",
    "io.debezium.data.Xml",
    "io.debezium.time.ZonedTime",
}
_PRIMITIVES: dict[str, DataType] = {
    "int8": ByteType(),
    "int16": ShortType(),
    "int32": IntegerType(),
    "int64": LongType(),
    "float32": FloatType(),
    "float64": DoubleType(),
    "float": FloatType(),
    "double": DoubleType(),
    "boolean": BooleanType(),
    "string": StringType(),
}


@dataclass(frozen=True)
class ColumnType:
    """How one column travels (wire type in JSON) and what it becomes (Spark type)."""

    wire: DataType
    spark: DataType
    convert: Converter


def _same(column: Column) -> Column:
    return column


def _let(value: Column, body: Callable[[Column], Column]) -> Column:
    """Evaluate `value` once per row and use it several times in `body` (a one-element transform)."""
    return F.element_at(F.transform(F.array(value), body), 1)


def _signed_integer_from_base64(b64: Column) -> Column:
    """Big-endian two's-complement bytes (base64) -> decimal(38,0), exactly (NULL beyond 38 digits)."""

    def from_hex(hexed: Column) -> Column:
        count = (F.length(hexed) / 2).cast("int")
        byte_values = F.transform(
            F.sequence(F.lit(0), count - 1),
            lambda i: F.conv(hexed.substr(i * 2 + 1, F.lit(2)), 16, 10).cast("int"),
        )

        def fold(values: Column) -> Column:
            first = F.element_at(values, 1)
            signed_first = F.when(first >= 128, first - 256).otherwise(first).cast("decimal(38,0)")
            rest = F.slice(values, 2, F.greatest(F.size(values) - 1, F.lit(0)))
            return F.aggregate(rest, signed_first, lambda acc, b: (acc * 256 + b).cast("decimal(38,0)"))

        return F.when(count > 0, _let(byte_values, fold))

    return _let(F.hex(F.unbase64(b64)), from_hex)


def decimal_text(b64: Column, scale: Column | int) -> Column:
    """Exact decimal text of Connect Decimal bytes at `scale`, e.g. (bytes of -12345, 2) -> '-123.45'."""
    scale_col = F.lit(scale) if isinstance(scale, int) else scale

    def text(integer: Column) -> Column:
        digits = F.abs(integer).cast("string")
        # left-pad with zeros to at least scale + 1 digits ("5" at scale 2 -> "005" -> "0.05")
        width = F.greatest(F.length(digits), scale_col + 1)
        padded = F.call_function("lpad", digits, width, F.lit("0"))

        def split(p: Column) -> Column:
            int_len = F.length(p) - scale_col
            body = F.when(
                scale_col > 0, F.concat(p.substr(F.lit(1), int_len), F.lit("."), p.substr(int_len + 1, scale_col))
            ).otherwise(p)
            return F.concat(F.when(integer < 0, F.lit("-")).otherwise(F.lit("")), body)

        return F.when(integer.isNotNull(), _let(padded, split))

    return _let(_signed_integer_from_base64(b64), text)


def connect_decimal(precision: int, scale: int) -> ColumnType:
    """org.apache.kafka.connect.data.Decimal: base64 bytes -> decimal(precision, scale)."""
    return ColumnType(
        wire=StringType(),
        spark=DecimalType(precision, scale),
        convert=lambda c: decimal_text(c, scale).cast(DecimalType(precision, scale)),
    )


def _time_text(micros: Column) -> Column:
    return F.date_format(F.timestamp_micros(micros), "HH:mm:ss.SSSSSS")


_LOGICAL: dict[str, Callable[[dict[str, Any]], ColumnType]] = {
    VARIABLE_SCALE_DECIMAL: lambda _f: ColumnType(
        wire=StructType([StructField("scale", IntegerType()), StructField("value", StringType())]),
        spark=StringType(),
        convert=lambda c: decimal_text(c["value"], c["scale"]),
    ),
    "io.debezium.time.Date": lambda _f: ColumnType(IntegerType(), DateType(), F.date_from_unix_date),
    CONNECT_DATE: lambda _f: ColumnType(IntegerType(), DateType(), F.date_from_unix_date),
    "io.debezium.time.Time": lambda _f: ColumnType(IntegerType(), StringType(), lambda c: _time_text(c.cast("long") * 1000)),
    "io.debezium.time.MicroTime": lambda _f: ColumnType(LongType(), StringType(), _time_text),
    "io.debezium.time.NanoTime": lambda _f: ColumnType(LongType(), StringType(), lambda c: _time_text(F.floor(c / 1000))),
    "io.debezium.time.Timestamp": lambda _f: ColumnType(LongType(), TimestampType(), F.timestamp_millis),
    CONNECT_TIMESTAMP: lambda _f: ColumnType(LongType(), TimestampType(), F.timestamp_millis),
    "io.debezium.time.MicroTimestamp": lambda _f: ColumnType(LongType(), TimestampType(), F.timestamp_micros),
    "io.debezium.time.NanoTimestamp": lambda _f: ColumnType(
        LongType(), TimestampType(), lambda c: F.timestamp_micros(F.floor(c / 1000))
    ),
    "io.debezium.time.ZonedTimestamp": lambda _f: ColumnType(StringType(), TimestampType(), lambda c: c.cast("timestamp")),
    "io.debezium.time.Year": lambda _f: ColumnType(IntegerType(), IntegerType(), _same),
}


def column_type(field: dict[str, Any]) -> ColumnType:
    """One field of a Connect JSON schema -> its ColumnType."""
    logical = field.get("name")
    if logical == DECIMAL:
        params = field.get("parameters") or {}
        scale = int(params.get("scale", 0))
        precision = int(params.get("connect.decimal.precision", 38))
        return connect_decimal(min(max(precision, scale, 1), 38), scale)
    if logical in _LOGICAL:
        return _LOGICAL[logical](field)
    if logical in _STRING_LOGICAL:
        return ColumnType(StringType(), StringType(), _same)
    kind = field.get("type")
    if kind == "bytes":
        return ColumnType(StringType(), BinaryType(), F.unbase64)
    if kind in _PRIMITIVES:
        dtype = _PRIMITIVES[kind]
        return ColumnType(dtype, dtype, _same)
    # struct / array / map: kept as their JSON text
    return ColumnType(StringType(), StringType(), _same)


def declared_type(ddl: str) -> ColumnType:
    """A column declared in TableConfig.columns (Spark SQL type), read as Spark's JSON reader reads it."""
    dtype = _parse_datatype_string(ddl)
    return ColumnType(dtype, dtype, _same)


def row_fields(envelope_schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The column fields of an envelope schema (`after`, else `before`), in order."""
    by_name = {f.get("field"): f for f in envelope_schema.get("fields", [])}
    image = by_name.get("after") or by_name.get("before") or {}
    return list(image.get("fields", []))
