"""The column types of one decode batch: the table's declared columns plus the batch's envelope schemas.

A batch may mix records with and without the schema envelope, and records written before and
after a source schema change. Each distinct way of typing a record is a `Profile`; every record
is converted with its own profile (so a `Timestamp` column that became a `MicroTimestamp` is
read right on both sides of the change), then cast to the batch's target type when that is
exact (same type or a widening). A value that cannot fit the target is reported, never cast.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, DecimalType, MapType, StructField, StructType

from hudi_cdc.config.models import TableConfig
from hudi_cdc.decode.debezium_types import (
    ColumnType,
    WideDecimal,
    column_type,
    declared_type,
    fits,
    flat_fields,
    row_fields,
)
from hudi_cdc.decode.flattened import is_passed_through_schema
from hudi_cdc.errors import ConfigError
from hudi_cdc.events import UNSTORABLE, column_names_problem, storable_name

log = logging.getLogger(__name__)

DECLARED = 0
"""Index of the profile of records without an envelope (typed by TableConfig.columns)."""
SOURCE_TYPE = "source_type"
"""Metadata of a decoded column (`BatchTypes.schema`): its integer type at the source, when that
is narrower than the `int` it is stored as (`debezium_types.storable`): `int8` or `int16`."""

NARROW_INTEGERS = ("int8", "int16")
"""Connect's integer types stored as `int`, narrowest first."""


@dataclass(frozen=True)
class Profile:
    """One way records of the batch are typed."""

    envelope: str | None
    """The envelope's `schema` JSON text; None for records without an envelope (declared columns)."""
    columns: dict[str, ColumnType]
    problem: str | None = None
    """Why the `schema` types nothing (not a Connect schema, or columns a table cannot hold):
    its records are rejected with it (BadSchema)."""

    @property
    def wire(self) -> StructType:
        """The struct to parse an image of this profile with."""
        return StructType([StructField(name, t.wire) for name, t in self.columns.items()])


@dataclass(frozen=True)
class BatchTypes:
    """Target column types of a batch and the profiles its records are typed by."""

    target: dict[str, DataType]
    """Column -> Spark type of the decoded events, in column order."""
    profiles: list[Profile]
    """profiles[DECLARED] types records without an envelope; then one per envelope schema, most used first."""

    @property
    def schema(self) -> StructType:
        """The decoded columns as a nullable StructType, narrow integers marked (SOURCE_TYPE)."""
        fields = []
        for name, dtype in self.target.items():
            source = self.source_type(name)
            fields.append(StructField(name, dtype, True, {SOURCE_TYPE: source} if source else None))
        return StructType(fields)

    def source_type(self, name: str) -> str | None:
        """`int8` or `int16` when every envelope schema of the batch sends column `name` as that
        narrow an integer (the widest of them), else None; None for a declared column."""
        if name in self.profiles[DECLARED].columns:
            return None  # the table owner chose its type
        kinds = [p.columns[name].kind for p in self.profiles[DECLARED + 1 :] if name in p.columns]
        if not kinds or any(kind not in NARROW_INTEGERS for kind in kinds):
            return None
        return max(kinds, key=NARROW_INTEGERS.index)

    def fits(self, index: int, name: str) -> bool:
        """True when profile `index` types column `name` exactly into the target type."""
        column = self.profiles[index].columns.get(name)
        return column is not None and fits(column.spark, self.target[name])


def declared_columns(table: TableConfig) -> dict[str, ColumnType]:
    """TableConfig.columns parsed; a type that cannot be parsed is a ConfigError (not a data error).

    A Spark SQL type reads values as Spark's JSON reader does; a Kafka Connect field schema
    (a mapping) reads them in Debezium's encodings, exactly as an envelope schema would.
    """
    types: dict[str, ColumnType] = {}
    problems: list[str] = []
    for name, ddl in table.columns.items():
        if isinstance(ddl, dict):
            if not isinstance(ddl.get("type"), str):
                problems.append(f"tables[{table.name}].columns.{name}: a Connect schema needs `type` (e.g. bytes, int64)")
                continue
            types[name] = column_type(ddl)
            continue
        try:
            types[name] = declared_type(ddl)
        except Exception as exc:  # Spark raises ParseException (or ValueError) for a bad DDL string
            problems.append(f"tables[{table.name}].columns.{name}: {ddl!r} is not a Spark SQL type ({exc})")
    if problems:
        raise ConfigError("<config>", problems)
    return types


def _connect_schema(text: str) -> dict[str, Any] | None:
    """The Connect schema an envelope's `schema` text holds: a JSON object, else None."""
    try:
        schema: Any = json.loads(text)
    except ValueError:
        return None
    return schema if isinstance(schema, dict) else None


def _envelope_profile(text: str, stored: StructType | None, table: TableConfig) -> Profile:
    """The columns an envelope schema types: its `after` struct's fields, or, for a flattened row
    (ExtractNewRecordState), its own fields but the metadata the SMT adds. A decimal wider than
    38 digits is converted for the type the table stores it as (`WideDecimal.held_in`)."""
    schema = _connect_schema(text)
    if schema is None:
        return Profile(text, {}, problem="it is not a Kafka Connect schema (not a JSON object); fix the producer's converter")
    try:
        if table.mode == "flattened" and is_passed_through_schema(schema):
            return Profile(text, {})  # a record the SMT passed through types no column of the table
        fields = flat_fields(schema, table.flattened_prefix) if table.mode == "flattened" else row_fields(schema)
        columns = {f["field"]: column_type(f) for f in fields if isinstance(f, dict) and "field" in f}
        problem = column_names_problem(columns)
        nested = [f"{name}.{field}" for name, c in columns.items() for field in _field_names(c.spark) if not storable_name(field)]
        if problem or nested:
            return Profile(text, {}, problem=problem or f"struct field(s) {', '.join(map(repr, nested))} {UNSTORABLE}")
        profile = Profile(text, {name: _held(column, name, stored) for name, column in columns.items()})
        profile.wire  # noqa: B018  (Spark checks the struct as it is built)
        return profile
    except Exception as exc:
        # a schema is producer input like the payload: whatever it holds rejects its own
        # records, and never stops the batch (it is read here, on the driver)
        log.warning("table %s: an envelope schema is not a Kafka Connect schema (%r): %s", table.name, exc, text[:200])
        problem = f"it is not a Kafka Connect schema ({type(exc).__name__}: {exc}); fix the producer's converter"
        return Profile(text, {}, problem=problem)


def _field_names(dtype: DataType) -> Iterator[str]:
    """The names of the struct fields inside a column's type, at any depth."""
    if isinstance(dtype, StructType):
        for field in dtype.fields:
            yield field.name
            yield from _field_names(field.dataType)
    elif isinstance(dtype, ArrayType):
        yield from _field_names(dtype.elementType)
    elif isinstance(dtype, MapType):
        yield from _field_names(dtype.valueType)


def _held(column: ColumnType, name: str, stored: StructType | None) -> ColumnType:
    if not isinstance(column, WideDecimal) or stored is None or name not in stored.fieldNames():
        return column
    return column.held_in(stored[name].dataType)


def held_decimals(stored: StructType | None) -> tuple[str, ...]:
    """The stored table's decimal columns: what a batch's typing depends on besides its schemas."""
    return tuple(f.simpleString() for f in stored.fields if isinstance(f.dataType, DecimalType)) if stored else ()


_NO_TIME = dt.datetime.min
"""Sorts in place of a missing timestamp (which already sorts last by the flag before it)."""


@dataclass(frozen=True)
class SchemaUse:
    """How a batch's records use one envelope schema text."""

    text: str
    records: int
    newest: dt.datetime | None
    """The newest Kafka timestamp among them (None when the source rows have none)."""
    last_offset: int

    def __add__(self, other: SchemaUse) -> SchemaUse:
        """The use of the same text in two parts of a batch (two topic partitions)."""
        stamps = [t for t in (self.newest, other.newest) if t is not None]
        return SchemaUse(self.text, self.records + other.records, max(stamps, default=None),
                         max(self.last_offset, other.last_offset))  # fmt: skip


def most_used_first(uses: Iterable[SchemaUse]) -> list[str]:
    """Schema texts, most used first; among equally used ones the newest first.

    The most used schema decides a column's type when schemas disagree, so a few contradicting
    records never decide the type of a new table: they are rejected as conflicts instead.
    Kafka timestamps (comparable across partitions), then offsets, break count ties.
    """
    ranked = sorted(uses, key=lambda u: (u.records, u.newest is not None, u.newest or _NO_TIME, u.last_offset), reverse=True)
    return [u.text for u in ranked]


def distinct_schemas(records: DataFrame, schema: Column, has_envelope: Column) -> list[str]:
    """The batch's distinct envelope schema texts, most used first (one small aggregation).

    `tally.survey` finds the same for every JSON table of a batch in its own job; this is for
    records it did not survey (Avro turned JSON, a part of a batch split to isolate a record).
    """
    newest = [F.max("timestamp").alias("ts")] if "timestamp" in records.columns else [F.lit(None).alias("ts")]
    rows = (
        records.filter(has_envelope)
        .groupBy(schema.alias("s"))
        .agg(F.count(F.lit(1)).alias("n"), *newest, F.max("offset").alias("offset"))
        .collect()
    )
    return most_used_first(SchemaUse(str(r["s"]), int(r["n"]), r["ts"], int(r["offset"])) for r in rows)


def batch_types(table: TableConfig, envelopes: list[str], stored: StructType | None = None) -> BatchTypes:
    """Merge declared columns and envelope schemas (most used first) into target types and profiles.

    `stored`: the table's data columns (None for a new table), for the decimals wider than 38
    digits it holds as decimal(38, s) (`WideDecimal.held_in`).
    """
    declared = {name: _held(column, name, stored) for name, column in declared_columns(table).items()}
    profiles = [Profile(None, declared)]
    if table.mode != "patch":
        profiles += [_envelope_profile(text, stored, table) for text in envelopes]
    # declared types are the table owner's explicit choice; otherwise the most used schema decides,
    # unless another one is wider (int32 then int64 in one batch): then every value still fits
    target: dict[str, DataType] = {name: t.spark for name, t in declared.items()}
    for profile in profiles[1:]:
        for name, column in profile.columns.items():
            if name not in target or (
                name not in declared
                and not fits(column.spark, target[name])
                and fits(target[name], column.spark)
            ):
                target[name] = column.spark
    return BatchTypes(target=target, profiles=profiles)
