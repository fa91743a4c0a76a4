"""Rows flattened by Debezium's ExtractNewRecordState SMT (`mode: flattened`) as the envelope decode reads.

The SMT replaces the envelope by the row itself and, when configured, adds metadata fields:
`__deleted` (`delete.tombstone.handling.mode=rewrite`, named so whatever the prefix), `__op`,
`__ts_ms`, and `__source_*` or the unqualified `__lsn`, `__file`... (`add.fields`), `__` being
the SMT's `add.fields.prefix` (the table's `flattened_prefix`). Its `add.headers` puts the same
metadata in Kafka headers of the same names behind `add.headers.prefix` (the table's
`flattened_header_prefix`), as text (Kafka Connect's default SimpleHeaderConverter). This module
turns those back into the envelope's op, before/after and source, so decode orders, judges and
types flattened rows exactly like enveloped ones.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, LongType, StringType, StructField, StructType

from hudi_cdc.decode.order import SOURCE_STRUCT
from hudi_cdc.events import SMT_DELETED, Op
from hudi_cdc.kafka.headers import last_header

_UNQUALIFIED_SOURCE = [f.name for f in SOURCE_STRUCT.fields if f.name != "ts_ms"]
"""`source` fields the SMT also takes from `add.fields` without the struct's name (`lsn`, not
`source.lsn`), naming them `prefix` + field; an unqualified `ts_ms` is the envelope's."""


def _metadata_fields(prefix: str) -> list[StructField]:
    """The metadata the SMT adds behind `prefix`, as fields or as headers: `op`, `ts_ms`, and each
    `source` field, qualified (`source_pos`) and unqualified (`pos`)."""
    return [
        StructField(f"{prefix}op", StringType()),
        StructField(f"{prefix}ts_ms", LongType()),
        *[StructField(f"{prefix}source_{f.name}", f.dataType) for f in SOURCE_STRUCT.fields],
        *[StructField(f"{prefix}{name}", SOURCE_STRUCT[name].dataType) for name in _UNQUALIFIED_SOURCE],
    ]


def _flat_metadata(prefix: str) -> StructType:
    """The fields ExtractNewRecordState adds to a flattened row that decode reads (`add.fields=op,
    ts_ms,source.ts_ms,source.file,...`, each behind the SMT's `add.fields.prefix`, and the
    `rewrite` delete handling's SMT_DELETED), and the top-level fields of the records it passes
    through. All in one parse of the row."""
    return StructType(
        [
            *_metadata_fields(prefix),
            # "true"/"false" (a JSON boolean reads as the same text)
            StructField(SMT_DELETED, StringType()),
            # what tells a record the SMT passed through unchanged (`_passed_through`)
            StructField("op", StringType()),
            StructField("source", StringType()),
            StructField("status", StringType()),
        ]
    )


TRANSACTION_MARKER_FIELDS = ("status", "id", "ts_ms", "event_count", "data_collections")
"""Every field of a Debezium transaction marker (`<prefix>.transaction` topic)."""


def _passed_through(row_text: Column, meta: Column) -> Column:
    """The record is not a row but a Debezium record the SMT leaves alone: one with the
    connector's `source` block (a schema change, a PostgreSQL message), or a transaction marker.

    Columns live at the top level of a flattened row, so a field name alone proves nothing (a
    table may well have `status` and `id`): a marker must have only a marker's fields, and a
    `source` must be the connector's. The checks past the first condition run only where it holds.
    """
    connector_source = meta["source"].startswith("{") & F.get_json_object(meta["source"], "$.connector").isNotNull()
    marker = meta["status"].isin("BEGIN", "END") & (
        F.size(F.array_except(F.json_object_keys(row_text), F.array(*map(F.lit, TRANSACTION_MARKER_FIELDS)))) == 0
    )
    return F.coalesce(connector_source | marker, F.lit(False))


def is_passed_through_schema(schema: dict[str, Any]) -> bool:
    """A Connect schema of a record the SMT passes through (see `_passed_through`), not of a row:
    it has the connector's `source` struct, or only a transaction marker's fields."""
    fields = [f for f in schema.get("fields", []) if isinstance(f, dict)]
    names = {str(f.get("field")) for f in fields}
    has_source = any(f.get("field") == "source" and f.get("type") == "struct" for f in fields)
    return has_source or ("status" in names and names <= set(TRANSACTION_MARKER_FIELDS))


def _header_text(headers: Column, name: str) -> Column:
    """The text of the record's last header named `name`, NULL without one."""
    return last_header(headers, name).cast(StringType())


def _from_header(text: Column, dtype: DataType) -> Column:
    """A header's text as `dtype`. SimpleHeaderConverter writes a number as its decimal digits.
    Text that is not one reads as -1, a position decode refuses (BadOrder), so the record is
    dead-lettered rather than ordered by a weaker field (semantics §3: never a guessed order)."""
    if dtype == StringType():
        return text
    number = F.when(text.rlike(r"^-?[0-9]{1,19}$"), text.cast(dtype))
    return F.when(text.isNotNull(), F.coalesce(number, F.lit(-1).cast(dtype)))


def _with_headers(meta: Column, headers: Column | None, fields_prefix: str, header_prefix: str) -> Column:
    """`meta` (the row's metadata fields, `_flat_metadata`) with each metadata field the row lacks
    taken from the header of the same name behind `header_prefix`, when there are headers."""
    if headers is None:
        return meta
    metadata = {f.name: f for f in _metadata_fields(fields_prefix)}

    def field(name: str) -> Column:
        if name not in metadata:
            return meta[name]
        header = header_prefix + name.removeprefix(fields_prefix)
        return F.coalesce(meta[name], _from_header(_header_text(headers, header), metadata[name].dataType))

    return F.struct(*[field(f.name).alias(f.name) for f in _flat_metadata(fields_prefix).fields])


def flattened_envelope(
    row_text: Column, prefix: str, headers: Column | None = None, header_prefix: str = "__"
) -> Column:
    """A flattened row (ExtractNewRecordState, metadata fields behind `prefix`, metadata headers
    behind `header_prefix` when the records have `headers`) as the Debezium envelope decode reads.
    A field wins over a header of the same meaning.

    A row marked `deleted` (or with op d) is a delete whose `before` is the row; any other row
    is the `after` of its op, an update when the SMT did not add the op. Records the SMT passes
    through keep their own op: a PostgreSQL message's `m`, none for a schema change or a
    transaction marker; decode skips all three (`decode_checks.non_data_reason`).
    """
    meta = _with_headers(F.from_json(row_text, _flat_metadata(prefix)), headers, prefix, header_prefix)
    marked = (F.lower(meta[SMT_DELETED]) == "true") | (meta[f"{prefix}op"] == Op.DELETE.value)
    deleted = F.coalesce(marked, F.lit(False))  # either field may be missing
    op = (
        F.when(_passed_through(row_text, meta), meta["op"])
        .when(deleted, F.lit(Op.DELETE.value))
        .otherwise(F.coalesce(meta[f"{prefix}op"], F.lit(Op.UPDATE.value)))
    )
    return F.struct(
        op.alias("op"),
        meta[f"{prefix}ts_ms"].alias("ts_ms"),
        F.when(deleted, row_text).alias("before"),
        F.when(~deleted, row_text).alias("after"),
        F.struct(*[_source_field(meta, prefix, f.name).alias(f.name) for f in SOURCE_STRUCT.fields]).alias("source"),
    )


def _source_field(meta: Column, prefix: str, name: str) -> Column:
    """A `source` field as the SMT added it: `source.<name>` (`<prefix>source_<name>`), else the
    unqualified `<name>` (`<prefix><name>`)."""
    qualified = meta[f"{prefix}source_{name}"]
    return F.coalesce(qualified, meta[f"{prefix}{name}"]) if name in _UNQUALIFIED_SOURCE else qualified
