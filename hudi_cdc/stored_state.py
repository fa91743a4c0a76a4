"""The stored state of a table as the fold must see it: conformed rows of the touched keys.

The fold (collapse.py) unions a batch's events with the stored rows of the keys they touch.
Both sides must have the same columns and types: the table's columns after the schema check
(new columns added, widenings applied), then the `_cdc_*` state columns of spec §5.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from hudi_cdc.config import TableConfig
from hudi_cdc.events import (
    CDC_PREFIX,
    COLUMN_ORDERS,
    DELETED,
    HOODIE_IS_DELETED,
    INGESTED_AT,
    OP,
    ORDER,
    SOURCE,
    TS_MS,
)

CDC_COLUMNS = [OP, ORDER, TS_MS, SOURCE, INGESTED_AT, COLUMN_ORDERS]
"""The `_cdc_*` columns every table stores after its data columns (soft-delete tables add DELETED)."""

_CDC_TYPES = {
    OP: "string",
    ORDER: "string",
    TS_MS: "bigint",
    SOURCE: "string",
    COLUMN_ORDERS: "map<string,string>",
    DELETED: "boolean",
    INGESTED_AT: "timestamp",
}


def stored_columns(schema: StructType, table: TableConfig) -> list[str]:
    """Every column the Hudi table holds, in order (data columns, then `_cdc_*`)."""
    extra = [DELETED] if table.deletes == "soft" else []
    return [f.name for f in schema.fields] + CDC_COLUMNS + extra


def data_schema(stored: DataFrame | None) -> StructType | None:
    """The stored table's data columns: everything but the framework's and Hudi's own."""
    if stored is None:
        return None
    return StructType(
        [f for f in stored.schema.fields if not f.name.startswith(CDC_PREFIX) and f.name != HOODIE_IS_DELETED]
    )


def conform_events(events: DataFrame, schema: StructType) -> DataFrame:
    """Give the events every table column (NULL and absent where the event lacks it), typed as the table."""
    names = set(schema.fieldNames())
    data = [
        (F.col(f.name) if f.name in events.columns else F.lit(None)).cast(f.dataType).alias(f.name)
        for f in schema.fields
    ]
    return events.select(*data, *[c for c in events.columns if c not in names])


def _column_type(column: str, schema: StructType) -> str:
    if column in schema.fieldNames():
        return schema[column].dataType.simpleString()
    return _CDC_TYPES[column]


def touched_rows(
    stored: DataFrame | None,
    events: DataFrame,
    schema: StructType,
    table: TableConfig,
    *,
    every_row: bool,
) -> DataFrame:
    """The stored rows the fold must see: those of the keys `events` touch, or all (`every_row`, a truncate).

    Columns are conformed to `schema` plus the `_cdc_*` state; an absent table gives no rows.
    """
    wanted = stored_columns(schema, table)
    if stored is None:
        return events.limit(0).select(*[F.lit(None).cast(_column_type(c, schema)).alias(c) for c in wanted])
    conformed = stored.select(
        *[(F.col(c) if c in stored.columns else F.lit(None)).cast(_column_type(c, schema)).alias(c) for c in wanted]
    )
    if every_row:
        return conformed
    keys = events.select(*table.key).distinct()
    return conformed.join(keys, on=table.key, how="left_semi")
