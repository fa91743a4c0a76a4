"""Typed column values of each record, converted by the record's own profile (see decode_schema)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructType

from hudi_cdc.config.models import TableConfig
from hudi_cdc.decode.debezium_types import ColumnType, fits
from hudi_cdc.decode.schema import BatchTypes

_TYPED = "__typed"
_KEYED = "__keyed"


@dataclass(frozen=True)
class Values:
    """Per-column Spark expressions over the records with `typed_values`' parse columns added."""

    unmasked: dict[str, Column]
    """Column -> typed value (key columns: Kafka key first, then the image), before PRESENT masks it."""
    image_only: dict[str, Column]
    """Column -> typed value of the image alone (a NULL here under a non-NULL JSON value is a bad value)."""
    conflicts: list[tuple[str, list[int], str]]
    """(column, profile indices, message) where a profile's type cannot fit the target type."""

    def key(self, name: str) -> Column:
        """A key column's value, NULL when no profile types it."""
        return self.unmasked.get(name, F.lit(None))


def _converted(column_type: ColumnType, wire_value: Column, target: DataType) -> Column:
    value = column_type.convert(wire_value)
    # only exact casts reach here (same type or a widening, see debezium_types.fits)
    return value if column_type.spark == target else value.cast(target)


def _pick(
    profile: Column, branches: list[tuple[list[int], Column]], profiles: int, target: DataType
) -> Column:
    """One expression choosing each record's branch by its profile index."""
    if len(branches) == 1 and len(branches[0][0]) == profiles:
        return branches[0][1]
    choice: Column | None = None
    for indices, value in branches:
        condition = profile.isin(*indices)
        choice = F.when(condition, value) if choice is None else choice.when(condition, value)
    return choice if choice is not None else F.lit(None).cast(target)


@dataclass(frozen=True)
class KeyReader:
    """How the key columns are read from a record's Kafka key, in two steps so that the key is
    parsed once per record: `parse(key_wire)`, a column of its own, and `field(parsed, key_wire,
    name)`, each key column from that column."""

    parse: Callable[[StructType], Column]
    field: Callable[[Column, StructType, str], Column]


def typed_values(
    types: BatchTypes,
    table: TableConfig,
    *,
    typed_image: Callable[[StructType], Column],
    key: KeyReader,
    top: Column | None,
    profile: Column,
) -> tuple[dict[str, Column], Values]:
    """Parse each record's image (and Kafka key) once per distinct wire struct; return typed values.

    Returns the parse columns to add to the records (one level, see `plan_cache.with_levels`) and the typed values over
    them. `typed_image(wire)` is each record's image parsed as that struct, `key` reads the key columns from the Kafka
    key. `top` is the parsed top level of a patch message, whose key columns come before
    the Kafka key.
    """
    parses: dict[str, Column] = {}
    wires: list[StructType] = []
    parse_of: list[int] = []
    for p in types.profiles:
        if p.wire not in wires:
            wires.append(p.wire)
        parse_of.append(wires.index(p.wire))
    count = len(types.profiles)
    keyed: dict[int, StructType] = {}
    for j, wire in enumerate(wires):
        if not wire.fields:
            continue
        users = [i for i, pj in enumerate(parse_of) if pj == j]
        # parse only the records of this wire struct (CASE evaluates one branch per row)
        only = profile.isin(*users) if len(users) < count else None
        parsed = typed_image(wire)
        parses[f"{_TYPED}{j}"] = parsed if only is None else F.when(only, parsed)
        key_wire = StructType([f for f in wire.fields if f.name in table.key])
        if key_wire.fields:
            key_parsed = key.parse(key_wire)
            parses[f"{_KEYED}{j}"] = key_parsed if only is None else F.when(only, key_parsed)
            keyed[j] = key_wire

    unmasked: dict[str, Column] = {}
    image_only: dict[str, Column] = {}
    conflicts: list[tuple[str, list[int], str]] = []
    for name, target in types.target.items():
        # profiles converting alike share one branch (usually there is a single one)
        branches: dict[str, tuple[list[int], Column, Column]] = {}
        misfits: dict[str, list[int]] = {}
        for i, p in enumerate(types.profiles):
            column_type = p.columns.get(name)
            if column_type is None:
                continue
            if not fits(column_type.spark, target):
                text = f"{name} is {column_type.spark.simpleString()} in this record's schema, {target.simpleString()} in the batch"
                misfits.setdefault(text, []).append(i)
                continue
            j = parse_of[i]
            from_image = _converted(column_type, F.col(f"{_TYPED}{j}")[name], target)
            value = from_image
            if name in table.key:
                sources = [_converted(column_type, top[name], target)] if top is not None else []
                if j in keyed:
                    sources.append(_converted(column_type, key.field(F.col(f"{_KEYED}{j}"), keyed[j], name), target))
                value = F.coalesce(*sources, from_image)
            signature = (
                f"{j}|{column_type.kind}|{column_type.wire.simpleString()}|{column_type.spark.simpleString()}"
            )
            branches.setdefault(signature, ([], from_image, value))[0].append(i)
        unmasked[name] = _pick(profile, [(ix, v) for ix, _, v in branches.values()], count, target)
        image_only[name] = _pick(profile, [(ix, v) for ix, v, _ in branches.values()], count, target)
        conflicts += [(name, indices, text) for text, indices in misfits.items()]
    return parses, Values(unmasked=unmasked, image_only=image_only, conflicts=conflicts)
