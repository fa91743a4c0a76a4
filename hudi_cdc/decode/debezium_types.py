"""Debezium / Kafka Connect schemas -> Spark types, and exact wire-value conversions as Spark SQL.

Each column is read from JSON with its *wire* type (what Kafka Connect's JSON converter writes)
and then converted by a Spark expression to its table type. Nothing goes through floats or
Python UDFs.

Choices where Spark 3.5 or Hudi has no exact type (documented in semantics §8):
- int8 / int16 -> int (Hudi's Avro schema has no narrower integer: `storable`);
- PostgreSQL's +/-infinity dates and timestamps -> 9999-12-31 23:59:59.999999 / 0001-01-01;
- io.debezium.data.VariableScaleDecimal -> string holding the exact decimal (no fixed Spark
  decimal holds every scale);
- Time / MicroTime / NanoTime -> string '[-]HH:MM:SS.ffffff' (no TIME type in Spark 3.5; hours
  may exceed 23 because MySQL TIME is a duration);
- NanoTimestamp / NanoTime -> truncated to microseconds (Spark's precision), towards the past;
- Decimal with more than 38 digits of precision (or scale) -> string holding the exact decimal;
- io.debezium.data.Bits (BIT(n > 1)), little-endian on the wire -> the database's byte order;
- map -> its JSON text (Spark cannot order maps, which the fold needs); struct and array map to
  Spark structs and arrays, their elements converted like columns.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
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
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    _parse_datatype_string,
)

from hudi_cdc.events import SMT_DELETED

Converter = Callable[[Column], Column]

DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
MAX_PRECISION = 38
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
    # not Connect names, but written by some hand-made producers
    "float": FloatType(),
    "double": DoubleType(),
    "boolean": BooleanType(),
    "string": StringType(),
}
_MICROS_PER_HOUR = 3_600_000_000
_MICROS_PER_MINUTE = 60_000_000
_MICROS_PER_SECOND = 1_000_000


def _same(column: Column) -> Column:
    return column


@dataclass(frozen=True)
class ColumnType:
    """How one column travels (wire type in JSON), what it becomes (Spark type) and how."""

    kind: str
    """Names the conversion: two columns convert alike iff kind, wire and spark are equal."""
    wire: DataType
    spark: DataType
    convert: Converter = field(default=_same, compare=False, repr=False)

    @property
    def is_identity(self) -> bool:
        """True when the wire value is already the Spark value."""
        return self.convert is _same


def _let(value: Column, body: Callable[[Column], Column]) -> Column:
    """Evaluate `value` once per row and use it several times in `body` (a one-element transform)."""
    return F.element_at(F.transform(F.array(value), body), 1)


def floor_div(value: Column, divisor: int) -> Column:
    """Exact integer floor division of a long (no double on the way, unlike `/`)."""
    # pmod is non-negative for a positive divisor, so the `div` below divides an exact multiple
    return F.call_function("div", value - F.pmod(value, F.lit(divisor)), F.lit(divisor))


def _twos_complement(binary: Column, body: Callable[[Column, Column], Column]) -> Column:
    """`body(negative, magnitude_bytes)` of big-endian two's-complement bytes; NULL for no bytes.

    A negative number is -(~bytes + 1): for one, `magnitude_bytes` are ~bytes (the body adds the
    1), else the bytes themselves; either way as an array of longs 0..255.
    """

    def from_hex(hexed: Column) -> Column:
        count = (F.length(hexed) / 2).cast("int")
        byte_values = F.transform(
            F.sequence(F.lit(0), count - 1),
            lambda i: F.conv(hexed.substr(i * 2 + 1, F.lit(2)), 16, 10).cast("long"),
        )

        def split(values: Column) -> Column:
            negative = F.element_at(values, 1) >= 128
            return body(negative, F.transform(values, lambda b: F.when(negative, 255 - b).otherwise(b)))

        return F.when(count > 0, _let(byte_values, split))

    return _let(F.hex(binary), from_hex)


def _signed_integer(binary: Column) -> Column:
    """Big-endian two's-complement bytes -> decimal(38,0), exactly (NULL beyond 38 digits)."""

    def fold(negative: Column, digits: Column) -> Column:
        # Folding the magnitude keeps every partial sum between 0 and the result, so only a
        # value beyond 38 digits overflows (to NULL, non-ANSI), which the caller reports as a
        # bad value.
        zero = F.lit(0).cast("decimal(38,0)")
        magnitude = F.aggregate(digits, zero, lambda acc, b: (acc * 256 + b).cast("decimal(38,0)"))
        return F.when(negative, -(magnitude + 1)).otherwise(magnitude).cast("decimal(38,0)")

    return _twos_complement(binary, fold)


_FAST_BYTES = 15
"""The most bytes `_signed_integer` always holds: 2^119 has 36 digits."""

_LIMB = 1_000_000_000
"""Base of `_wide_integer_text`'s limbs: a limb times 256 plus a carry still fits a long."""


def _times_plus(limbs: Column, factor: Column | int, add: Column) -> Column:
    """limbs * factor + add, limbs little-endian in base _LIMB (factor <= 256, add < _LIMB)."""
    start = F.struct(_no_longs().alias("out"), add.cast("long").alias("carry"))

    def step(state: Column, limb: Column) -> Column:
        total = limb * factor + state["carry"]
        return F.struct(
            F.concat(state["out"], F.array(F.pmod(total, F.lit(_LIMB)))).alias("out"),
            floor_div(total, _LIMB).alias("carry"),
        )

    def finish(state: Column) -> Column:
        return F.when(state["carry"] > 0, F.concat(state["out"], F.array(state["carry"]))).otherwise(state["out"])

    return F.aggregate(limbs, start, step, finish)


def _no_longs() -> Column:
    return F.array().cast("array<bigint>")


def _wide_integer_text(binary: Column) -> Column:
    """Big-endian two's-complement bytes of any length -> exact decimal text ('-' for a negative)."""

    def fold(negative: Column, digits: Column) -> Column:
        magnitude = F.aggregate(digits, F.array(F.lit(0).cast("long")), lambda acc, b: _times_plus(acc, 256, b))
        magnitude = F.when(negative, _times_plus(magnitude, 1, F.lit(1))).otherwise(magnitude)
        # most significant limb first, the others zero-padded to 9 digits
        limbs = F.reverse(magnitude)
        text = F.concat(
            F.element_at(limbs, 1).cast("string"),
            F.array_join(F.transform(F.slice(limbs, 2, F.size(limbs)), lambda x: F.lpad(x.cast("string"), 9, "0")), ""),
        )
        return F.concat(F.when(negative, F.lit("-")).otherwise(F.lit("")), text)

    return _twos_complement(binary, fold)


def decimal_text(binary: Column, scale: Column | int, *, wide: bool = False) -> Column:
    """Exact decimal text of Connect Decimal bytes at `scale`, e.g. (bytes of -12345, 2) -> '-123.45'.

    Up to 38 digits unless `wide` (NULL beyond them); `wide` takes any number of digits at a
    higher cost per value.
    """
    scale_col = F.lit(scale) if isinstance(scale, int) else scale

    def text(signed: Column) -> Column:
        negative = signed.startswith("-")
        digits = F.when(negative, signed.substr(F.lit(2), F.length(signed))).otherwise(signed)
        # left-pad with zeros to at least scale + 1 digits ("5" at scale 2 -> "005" -> "0.05")
        width = F.greatest(F.length(digits), scale_col + 1)
        padded = F.call_function("lpad", digits, width, F.lit("0"))

        def split(p: Column) -> Column:
            int_len = F.length(p) - scale_col
            body = (
                F.when(
                    scale_col > 0,
                    F.concat(p.substr(F.lit(1), int_len), F.lit("."), p.substr(int_len + 1, scale_col)),
                )
                # a negative scale (BigDecimal 1E+3) appends zeros
                .when(scale_col < 0, F.concat(p, F.call_function("repeat", F.lit("0"), -scale_col)))
                .otherwise(p)
            )
            return F.concat(F.when(negative, F.lit("-")).otherwise(F.lit("")), body)

        return F.when(signed.isNotNull(), _let(padded, split))

    integer = _signed_integer(binary).cast("string")
    if wide:
        # up to 15 bytes (< 2^119, 36 digits) the cheaper 38-digit fold is exact
        integer = F.when(F.length(binary) <= _FAST_BYTES, integer).otherwise(_wide_integer_text(binary))
    return _let(integer, text)


_LONG_BYTES = 8
"""The most bytes `_small_decimal` reads: a long's."""


def _small_decimal(binary: Column, scale: int, target: DecimalType) -> Column:
    """Connect Decimal bytes (1 to 8 of them) at a fixed `scale` as `target`, exactly.

    The bytes as hex, sign-extended to a long's 16 digits, are read by `conv` as a signed long;
    "<unscaled>E-<scale>" is exact decimal text for the cast. Every step is compiled, unlike
    `decimal_text`'s byte-wise fold (a higher-order function, evaluated row by row): measured,
    the fold was about 5% of decode's CPU for one decimal column.
    """
    hexed = F.hex(binary)
    negative = hexed >= F.lit("8")  # the first byte is 0x80 or more
    extended = F.when(negative, F.lpad(hexed, 2 * _LONG_BYTES, "F")).otherwise(F.lpad(hexed, 2 * _LONG_BYTES, "0"))
    return F.concat(F.conv(extended, 16, -10), F.lit(f"E{-scale}")).cast(target)


def connect_decimal(precision: int, scale: int) -> ColumnType:
    """org.apache.kafka.connect.data.Decimal: base64 bytes -> decimal(precision, scale), or, when
    no Spark decimal holds it (precision or scale over 38), its exact text (`wide_decimal`).

    The wire type is binary, so the JSON parser accepts only a JSON string holding valid base64:
    a number or a boolean where the schema says bytes is a bad value, never text decoded as base64.
    """
    if precision > MAX_PRECISION or scale > MAX_PRECISION:
        return wide_decimal(precision, scale)
    target = DecimalType(precision, scale)

    def convert(c: Column) -> Column:
        small = (F.length(c) >= 1) & (F.length(c) <= _LONG_BYTES)
        # CASE evaluates one branch: the fold only runs for values of more than 8 bytes
        return F.when(small, _small_decimal(c, scale, target)).otherwise(decimal_text(c, scale).cast(target))

    return ColumnType(kind=f"{DECIMAL}({precision},{scale})", wire=BinaryType(), spark=target, convert=convert)


@dataclass(frozen=True)
class WideDecimal(ColumnType):
    """A Connect Decimal wider than Spark's 38 digits, stored as its exact text (`wide_decimal`)."""

    scale: int = 0

    def held_in(self, stored: DataType | None) -> ColumnType:
        """How to convert it for a table that stores the column as `stored`.

        A table created while the source column had at most 38 digits holds decimal(p, scale):
        the source's widening (semantics §7) widens it to decimal(38, scale), the most Spark and Hudi
        hold, and a value beyond 38 digits is a bad value (the 38-digit conversion gives NULL).
        A decimal column cannot become text in place (Avro has no such promotion).
        """
        if isinstance(stored, DecimalType) and stored.scale == self.scale:
            return connect_decimal(MAX_PRECISION, self.scale)
        return self


def wide_decimal(precision: int, scale: int) -> WideDecimal:
    """A Connect Decimal wider than Spark's 38 digits (MySQL DECIMAL(65,30), PostgreSQL
    numeric(50,10)) -> a string holding the exact decimal, every digit kept (as for
    VariableScaleDecimal). decimal(38, scale) would hold only 38 - scale integer digits."""
    return WideDecimal(
        kind=f"{DECIMAL}({precision},{scale})",
        wire=BinaryType(),
        spark=StringType(),
        convert=lambda c: decimal_text(c, scale, wide=True),
        scale=scale,
    )


def time_text(micros: Column) -> Column:
    """Microseconds since midnight (or a signed duration) -> '[-]HH:MM:SS.ffffff', hours unbounded."""

    def text(a: Column) -> Column:
        return F.format_string(
            "%s%02d:%02d:%02d.%06d",
            F.when(micros < 0, F.lit("-")).otherwise(F.lit("")),
            floor_div(a, _MICROS_PER_HOUR),
            F.pmod(floor_div(a, _MICROS_PER_MINUTE), F.lit(60)),
            F.pmod(floor_div(a, _MICROS_PER_SECOND), F.lit(60)),
            F.pmod(a, F.lit(_MICROS_PER_SECOND)),
        )

    return F.when(micros.isNotNull(), _let(F.abs(micros.cast("long")), text))


def _nanos_to_micros_towards_zero(nanos: Column) -> Column:
    return F.when(nanos < 0, -floor_div(-nanos, 1000)).otherwise(floor_div(nanos, 1000))


def _time(kind: str, wire: DataType, to_micros: Converter) -> ColumnType:
    return ColumnType(kind, wire, StringType(), lambda c: time_text(to_micros(c)))


def _timestamp(kind: str, convert: Converter, infinities: Infinities) -> ColumnType:
    """A timestamp sent as a number; `infinities`: the numbers PostgreSQL's +/-infinity arrive as."""
    return ColumnType(
        kind,
        LongType(),
        TimestampType(),
        lambda c: _finite(c, infinities, _micros(LATEST_MICROS), _micros(EARLIEST_MICROS), convert),
    )


# PostgreSQL's 'infinity' and '-infinity' dates and timestamps. No reader of a lakehouse table
# has an infinite value, so they become the latest and earliest values of Spark's (and Trino's,
# Hive's) documented range: 9999-12-31 23:59:59.999999 and 0001-01-01 00:00:00 UTC (dates
# 9999-12-31 and 0001-01-01), which keep their order against every real value. Debezium sends
# them as the values below (read off its real events; the same for the snapshot and the stream
# unless said), and ZonedTimestamp as the words. None of these numbers is a date or time
# PostgreSQL or MySQL can hold otherwise.
Infinities = tuple[tuple[object, ...], tuple[object, ...]]
"""(what +infinity arrives as, what -infinity arrives as)."""
LATEST_MICROS, EARLIEST_MICROS = 253_402_300_799_999_999, -62_135_596_800_000_000
LATEST_DAY, EARLIEST_DAY = 2_932_896, -719_162
PG_INFINITY_MICROS: Infinities = ((9_223_372_036_825_200_000,), (-9_223_372_036_832_400_000,))
"""MicroTimestamp (and NanoTimestamp): the JDBC driver's +/-infinity milliseconds, sent unscaled."""
PG_INFINITY_MILLIS: Infinities = ((9_223_372_036_825_200,), (-9_223_372_036_832_400,))
"""Timestamp (milliseconds: `timestamp(0..3)` columns)."""
PG_INFINITY_DAYS: Infinities = ((-622_191_234, -2_147_472_692), (-625_821_272, -2_147_472_691))
"""Date, (snapshot, stream) each: int overflows of the driver's sentinels and of PostgreSQL's own
(its int32 extremes, counted from 2000-01-01), all before the year -1,000,000."""
PG_INFINITY_WORDS: Infinities = (("infinity", "+infinity"), ("-infinity",))
"""ZonedTimestamp (compared lower-case)."""
PG_NEGATIVE_INFINITY_IN_ARRAY = r"^\+292269055-12-02t23:00:00(\.0+)?z$"
"""ZonedTimestamp inside a timestamptz[] (snapshot and stream): the driver's -infinity (the
earliest Java date, 292269055 BC) printed without its era. PostgreSQL ends at the year 294276."""


def _finite(
    value: Column, infinities: Infinities, latest: Column, earliest: Column, convert: Converter
) -> Column:
    """`convert(value)`, with PostgreSQL's infinities as `latest` and `earliest`."""
    positive, negative = infinities
    return (
        F.when(value.isin(*positive), latest).when(value.isin(*negative), earliest).otherwise(convert(value))
    )


def _date() -> ColumnType:
    def convert(days: Column) -> Column:
        latest, earliest = (
            F.date_from_unix_date(F.lit(LATEST_DAY)),
            F.date_from_unix_date(F.lit(EARLIEST_DAY)),
        )
        return _finite(days, PG_INFINITY_DAYS, latest, earliest, F.date_from_unix_date)

    return ColumnType("date", IntegerType(), DateType(), convert)


def _zoned_timestamp(text: Column) -> Column:
    """ISO-8601 with an offset ('2024-03-01T12:30:15.5+02:00', 'Z') -> the instant, in UTC."""
    latest, earliest = _micros(LATEST_MICROS), _micros(EARLIEST_MICROS)
    word = F.lower(text)
    # the prefix test first: it spares every other value the regular expression
    in_array = word.startswith("+292269055-") & word.rlike(PG_NEGATIVE_INFINITY_IN_ARRAY)
    word = F.when(in_array, F.lit(PG_INFINITY_WORDS[1][0])).otherwise(word)
    return _finite(word, PG_INFINITY_WORDS, latest, earliest, lambda _word: text.cast("timestamp"))


def _micros(value: int) -> Column:
    return F.timestamp_micros(F.lit(value))


def _big_endian(bits: Column) -> Column:
    """io.debezium.data.Bits (BIT(n > 1)) -> the bytes as the database holds them.

    Debezium sends the bits little-endian (MySQL's b'0000000011' as 03 00); stored in the
    database's order (00 03), a table reads like its source.
    """

    def reverse(hexed: Column) -> Column:
        pairs = F.transform(
            F.sequence(F.lit(0), (F.length(hexed) / 2).cast("int") - 1), lambda i: hexed.substr(i * 2 + 1, F.lit(2))
        )
        return F.unhex(F.array_join(F.reverse(pairs), ""))

    return F.when(F.length(bits) > 1, _let(F.hex(bits), reverse)).otherwise(bits)


def _variable_scale_decimal(_field: dict[str, Any]) -> ColumnType:
    return ColumnType(
        kind=VARIABLE_SCALE_DECIMAL,
        wire=StructType([StructField("scale", IntegerType()), StructField("value", BinaryType())]),
        spark=StringType(),
        convert=lambda c: decimal_text(c["value"], c["scale"], wide=True),
    )


_LOGICAL: dict[str, Callable[[dict[str, Any]], ColumnType]] = {
    VARIABLE_SCALE_DECIMAL: _variable_scale_decimal,
    "io.debezium.time.Date": lambda _f: _date(),
    "org.apache.kafka.connect.data.Date": lambda _f: _date(),
    "io.debezium.time.Time": lambda _f: _time("time-ms", IntegerType(), lambda c: c.cast("long") * 1000),
    "org.apache.kafka.connect.data.Time": lambda _f: _time(
        "time-ms", IntegerType(), lambda c: c.cast("long") * 1000
    ),
    "io.debezium.time.MicroTime": lambda _f: _time("time-us", LongType(), _same),
    "io.debezium.time.NanoTime": lambda _f: _time("time-ns", LongType(), _nanos_to_micros_towards_zero),
    "io.debezium.time.Timestamp": lambda _f: _timestamp(
        "timestamp-ms", F.timestamp_millis, PG_INFINITY_MILLIS
    ),
    "org.apache.kafka.connect.data.Timestamp": lambda _f: _timestamp(
        "timestamp-ms", F.timestamp_millis, PG_INFINITY_MILLIS
    ),
    "io.debezium.time.MicroTimestamp": lambda _f: _timestamp(
        "timestamp-us", F.timestamp_micros, PG_INFINITY_MICROS
    ),
    # floor (towards the past, also before 1970): Spark timestamps hold microseconds
    "io.debezium.time.NanoTimestamp": lambda _f: _timestamp(
        "timestamp-ns", lambda c: F.timestamp_micros(floor_div(c, 1000)), PG_INFINITY_MICROS
    ),
    "io.debezium.time.ZonedTimestamp": lambda _f: ColumnType(
        "zoned-timestamp", StringType(), TimestampType(), _zoned_timestamp
    ),
    "io.debezium.time.Year": lambda _f: ColumnType("year", IntegerType(), IntegerType()),
    "io.debezium.data.Bits": lambda _f: ColumnType("bits", BinaryType(), BinaryType(), _big_endian),
}


def column_type(schema: dict[str, Any]) -> ColumnType:
    """One field (or nested schema) of a Connect JSON schema -> its ColumnType."""
    logical = schema.get("name")
    if logical == DECIMAL:
        params = schema.get("parameters") or {}
        scale = int(params.get("scale", 0))
        precision = int(params.get("connect.decimal.precision", MAX_PRECISION))
        return connect_decimal(max(precision, scale, 1), scale)
    if logical in _LOGICAL:
        return _LOGICAL[logical](schema)
    if logical in _STRING_LOGICAL:
        return ColumnType(logical, StringType(), StringType())
    kind = schema.get("type")
    if kind == "bytes":
        # binary on the wire: the JSON parser decodes base64 and rejects anything but a JSON string
        return ColumnType("bytes", BinaryType(), BinaryType())
    if kind in _PRIMITIVES:
        return _stored_as_storable(kind, _PRIMITIVES[kind])
    if kind == "array":
        return _array(column_type(schema.get("items") or {"type": "string"}))
    if kind == "map":
        return _map(schema)
    if kind == "struct":
        return _struct([(f["field"], column_type(f)) for f in schema.get("fields", [])])
    # an unknown Connect type: keep its JSON text rather than lose the value
    return ColumnType(f"json:{kind}", StringType(), StringType())


def _array(item: ColumnType) -> ColumnType:
    def convert(c: Column) -> Column:
        # An element that does not convert would be stored as NULL, and the array would quietly
        # lose it: the whole value is NULL instead, which the decode's value check rejects.
        def unless_lost(converted: Column) -> Column:
            lost = F.exists(F.zip_with(c, converted, lambda w, v: w.isNotNull() & v.isNull()), lambda x: x)
            return F.when(~lost, converted)

        return _let(F.transform(c, item.convert), unless_lost)

    return ColumnType(
        f"array<{item.kind}>",
        ArrayType(item.wire),
        ArrayType(item.spark),
        _same if item.is_identity else convert,
    )


def _map(schema: dict[str, Any]) -> ColumnType:
    # Kept as JSON text: Spark cannot order maps, and the fold (collapse.py) picks each column's
    # newest value by ordering (order, value) structs. Connect writes string-keyed maps as an
    # object, others as [[key, value], ...]; values inside keep their wire encoding.
    keys = column_type(schema.get("keys") or {"type": "string"})
    values = column_type(schema.get("values") or {"type": "string"})
    return ColumnType(f"json:map<{keys.kind},{values.kind}>", StringType(), StringType())


def _struct(fields: list[tuple[str, ColumnType]]) -> ColumnType:
    def convert(c: Column) -> Column:
        converted = {name: t.convert(c[name]) for name, t in fields}
        # as in arrays: a field that does not convert makes the whole value NULL, not just itself
        lost = [c[name].isNotNull() & converted[name].isNull() for name, t in fields if not t.is_identity]
        kept = c.isNotNull() if not lost else c.isNotNull() & ~reduce(operator.or_, lost)
        return F.when(kept, F.struct(*[value.alias(name) for name, value in converted.items()]))

    identity = all(t.is_identity for _, t in fields)
    return ColumnType(
        "struct<" + ",".join(f"{name}:{t.kind}" for name, t in fields) + ">",
        StructType([StructField(name, t.wire) for name, t in fields]),
        StructType([StructField(name, t.spark) for name, t in fields]),
        _same if identity else convert,
    )


# a JSON number, as its text: a declared timestamp refuses these (Debezium's are ms/µs/ns), and a
# reject says so where a schema wants base64 bytes (decode.checks)
JSON_NUMBER = r"^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$"


def declared_type(ddl: str) -> ColumnType:
    """A column declared in TableConfig.columns (Spark SQL type), read as Spark's JSON reader reads it.

    Except timestamps: Spark would read a JSON number as epoch *seconds* (and silently wrap
    Debezium's ms/µs values into garbage), so a declared timestamp takes ISO-8601 text only and a
    number does not convert (a reject that says to declare it `bigint`). Needs an active
    SparkSession (the DDL is parsed by Spark's own parser).
    """
    dtype = _parse_datatype_string(ddl)
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        return ColumnType(
            f"declared:{dtype.simpleString()}",
            StringType(),
            dtype,
            lambda c: F.when(~c.rlike(JSON_NUMBER), c.cast(dtype)),
        )
    return _stored_as_storable(f"declared:{dtype.simpleString()}", dtype)


def _stored_as_storable(kind: str, wire: DataType) -> ColumnType:
    """Read as `wire`, stored as `storable(wire)` (a cast only where they differ)."""
    stored = storable(wire)
    return ColumnType(kind, wire, stored, _same if stored == wire else lambda c: c.cast(stored))


def storable(dtype: DataType) -> DataType:
    """`dtype` with 8- and 16-bit integers as 32-bit ones, also inside arrays, maps and structs.

    Why: Hudi's table schema is Avro, which has no narrower integer, so a smallint column is an
    int in the stored table, and the next batch's smallint would read as a narrowing of it (a
    schema change that stops the table); Hudi's row writer (a first snapshot) refuses tinyint
    outright. Decoded as int from the start, the table's type is the same in every batch. The
    wire type stays narrow, so an out-of-range value is still a bad value.
    """
    if isinstance(dtype, (ByteType, ShortType)):
        return IntegerType()
    if isinstance(dtype, ArrayType):
        return ArrayType(storable(dtype.elementType), dtype.containsNull)
    if isinstance(dtype, MapType):
        return MapType(storable(dtype.keyType), storable(dtype.valueType), dtype.valueContainsNull)
    if isinstance(dtype, StructType):
        return StructType(
            [StructField(f.name, storable(f.dataType), f.nullable, f.metadata) for f in dtype.fields]
        )
    return dtype


def flat_fields(row_schema: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """The column fields of a flattened row's schema: all but the metadata ExtractNewRecordState
    adds (named `prefix` + field, the SMT's `add.fields.prefix`, and SMT_DELETED), in order."""
    fields = row_schema.get("fields", [])
    return [f for f in fields if not (str(f.get("field", "")).startswith(prefix) or f.get("field") == SMT_DELETED)]


def row_fields(envelope_schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The column fields of an envelope schema (`after`, else `before`), in order."""
    by_name = {f.get("field"): f for f in envelope_schema.get("fields", [])}
    image = by_name.get("after") or by_name.get("before") or {}
    return list(image.get("fields", []))


_INTEGRAL_RANK: dict[type[DataType], int] = {ByteType: 0, ShortType: 1, IntegerType: 2, LongType: 3}


def fits(value: DataType, target: DataType) -> bool:
    """True when every `value` converts to `target` exactly (same type or a widening)."""
    if value == target:
        return True
    if type(value) in _INTEGRAL_RANK and type(target) in _INTEGRAL_RANK:
        return _INTEGRAL_RANK[type(target)] >= _INTEGRAL_RANK[type(value)]
    if isinstance(value, FloatType) and isinstance(target, DoubleType):
        return True
    if isinstance(value, DecimalType) and isinstance(target, DecimalType):
        return target.scale == value.scale and target.precision >= value.precision
    return False
