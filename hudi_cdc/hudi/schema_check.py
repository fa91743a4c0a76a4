"""Incoming columns vs the stored table -> SchemaDiff; the table policy decides (semantics §7).

Every mismatch is listed, then one error is raised, so a person sees the whole problem at once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pyspark.sql.types import (
    ByteType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StructField,
    StructType,
)

from hudi_cdc.config.models import TableConfig
from hudi_cdc.decode.schema import NARROW_INTEGERS, SOURCE_TYPE
from hudi_cdc.errors import SchemaChangeError

log = logging.getLogger(__name__)

_INTEGRAL_RANK: dict[type[DataType], int] = {ByteType: 0, ShortType: 1, IntegerType: 2, LongType: 3}
_SOURCE_RANK = {kind: rank for rank, kind in enumerate([*NARROW_INTEGERS, "int32"])}

SourceTypes = dict[str, str]
"""Column -> its integer type at the source where narrower than stored (`int8`, `int16`): what
the table's commits record, since the stored `int` alone cannot tell an INT from a SMALLINT."""


def source_types(incoming: StructType) -> SourceTypes:
    """The decoded columns' narrow source integer types (`decode_schema.SOURCE_TYPE`)."""
    return {f.name: str(f.metadata[SOURCE_TYPE]) for f in incoming.fields if SOURCE_TYPE in f.metadata}


def source_types_after(incoming: StructType, recorded: SourceTypes | None) -> SourceTypes:
    """What the table records once this batch is written: its columns' types, other columns' as they were."""
    names = set(incoming.fieldNames())
    kept = {name: kind for name, kind in (recorded or {}).items() if name not in names}
    return {**kept, **source_types(incoming)}


def is_widening(old: DataType, new: DataType) -> bool:
    """int -> bigint (any integral to a wider one), float -> double, decimal precision up, same scale."""
    if type(old) in _INTEGRAL_RANK and type(new) in _INTEGRAL_RANK:
        return _INTEGRAL_RANK[type(new)] > _INTEGRAL_RANK[type(old)]
    if isinstance(old, FloatType) and isinstance(new, DoubleType):
        return True
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        return new.scale == old.scale and new.precision > old.precision
    return False


@dataclass(frozen=True)
class SchemaDiff:
    """How the incoming columns differ from the stored table's."""

    added: list[StructField] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    widened: list[tuple[str, DataType, DataType]] = field(default_factory=list)
    incompatible: list[str] = field(default_factory=list)

    def target_schema(self, stored: StructType) -> StructType:
        """The table's data columns after applying the allowed changes (new columns appended, nullable)."""
        widened = {name: new for name, _, new in self.widened}
        fields = [StructField(f.name, widened.get(f.name, f.dataType), True) for f in stored.fields]
        return StructType(fields + [StructField(f.name, f.dataType, True) for f in self.added])


def diff(
    incoming: StructType, stored: StructType, table: TableConfig, recorded: SourceTypes | None = None
) -> SchemaDiff:
    """Compare the decoded columns with the stored data columns (both without `_cdc_*`).

    `recorded`: the narrow source integers the table's last commit recorded (None for a table
    that records none yet: then an INT narrowed to SMALLINT at the source cannot be told).
    """
    old = {f.name: f.dataType for f in stored.fields}
    new = {f.name: f.dataType for f in incoming.fields}
    result = SchemaDiff(
        added=[f for f in incoming.fields if f.name not in old],
        gone=[name for name in old if name not in new],
    )
    if table.table_version == 6 and table.type == "MERGE_ON_READ":
        # Measured with PrestoDB 0.287 (Hudi 0.14): after a column is added, `_rt` fails with
        # "Field <column> not found in log schema" while file slices have log files, and base files
        # written afterwards put the column behind the partition column, so it reads as NULL
        result.incompatible.extend(
            f"column {f.name}: new column on a table_version 6 merge-on-read table "
            "(PrestoDB's `_rt` cannot read it: query failures, then NULLs)"
            for f in result.added
        )
    for name, new_type in new.items():
        old_type = old.get(name)
        if old_type is None:
            continue
        if old_type == new_type:
            if recorded is not None and isinstance(new_type, IntegerType):
                result.incompatible.extend(_narrowed_at_source(name, recorded, source_types(incoming)))
            continue
        if is_widening(old_type, new_type) and name not in table.key:
            result.widened.append((name, old_type, new_type))
        else:
            what = "key column type" if name in table.key else "type"
            result.incompatible.append(
                f"column {name}: {what} {old_type.simpleString()} -> {new_type.simpleString()} is not a widening"
            )
    return result


def _narrowed_at_source(name: str, recorded: SourceTypes, incoming: SourceTypes) -> list[str]:
    """A column stored as `int` whose source type narrowed (INT -> SMALLINT, SMALLINT -> TINYINT)."""
    old, new = recorded.get(name, "int32"), incoming.get(name, "int32")
    if _SOURCE_RANK.get(new, len(NARROW_INTEGERS)) >= _SOURCE_RANK.get(old, len(NARROW_INTEGERS)):
        return []
    return [f"column {name}: type {old} -> {new} at the source is not a widening (stored as int)"]


_UNTIL_COMPACTED = (
    "; until its file groups are compacted (`hudi-cdc compact` or the next inline compaction), log"
    " files hold both types: Spark reads them, readers built on hudi-rs refuse them"
)
"""Why a MOR widening is worth a word: hudi-rs 0.5.0 refuses a file slice whose older log block
holds the narrower type (docs/limits.md)."""


def check(
    incoming: StructType, stored: StructType | None, table: TableConfig, recorded: SourceTypes | None = None
) -> StructType:
    """The schema to write with, or SchemaChangeError when the change is not safe.

    A brand-new table takes the incoming schema. Added columns and widenings are applied,
    gone columns stay (and are logged), anything else stops the table unless it opted in.
    """
    if stored is None:
        return StructType([StructField(f.name, f.dataType, True) for f in incoming.fields])
    result = diff(incoming, stored, table, recorded)
    for name in result.gone:
        log.warning("table %s: column %s is gone at the source; it stays, new rows carry NULL", table.name, name)
    for f in result.added:
        log.info("table %s: new column %s %s", table.name, f.name, f.dataType.simpleString())
    for name, old_type, new_type in result.widened:
        log.info(
            "table %s: column %s widened %s -> %s%s", table.name, name, old_type.simpleString(),
            new_type.simpleString(), _UNTIL_COMPACTED if table.type == "MERGE_ON_READ" else "",
        )  # fmt: skip
    if result.incompatible and table.schema_policy != "allow_incompatible":
        raise SchemaChangeError(table.name, result.incompatible)
    return result.target_schema(stored)
