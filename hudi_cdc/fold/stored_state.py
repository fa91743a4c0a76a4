"""The stored state of a table as the fold must see it: conformed rows of the touched keys.

The fold (collapse.py) unions a batch's events with the stored rows of the keys they touch.
Both sides must have the same columns and types: the table's columns after the schema check
(new columns added, widenings applied), then the `_cdc_*` state columns of semantics §5.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, ShortType, StringType, StructType

from hudi_cdc.config.models import TableConfig
from hudi_cdc.events import (
    CDC_PREFIX,
    COLUMN_ORDERS,
    DELETED,
    INGESTED_AT,
    OP,
    ORDER,
    SOURCE,
    TS_MS,
)
from hudi_cdc.hudi import prepped
from hudi_cdc.hudi.table_options import key_generator

HOODIE_PREFIX = "_hoodie_"
"""Hudi's meta columns and `_hoodie_is_deleted`: never data columns."""
CDC_COLUMNS = [OP, ORDER, TS_MS, SOURCE, INGESTED_AT, COLUMN_ORDERS]
"""The `_cdc_*` columns every table stores after its data columns (soft-delete tables add DELETED)."""

INDEX_LOOKUP_MAX_KEYS = 256
"""Distinct keys a batch may look up in the table's index; with more, the stored-row read
scans the table. The keys travel to the driver and into the read's key filter, and the code
Spark generates for that read grows with the keys (measured: 256 keys plan and run; 400 exceed
the 64 KB limit of a generated method, so Spark falls back to interpreting it; 1,000 overflow
the compiler's stack and fail the batch). The optimized plan holds the filter as one InSet,
so the oversized code comes from elsewhere in the read; which part was not found."""

_INDEX_KEY_GENERATORS = ("NonpartitionedKeyGenerator", "SimpleKeyGenerator")
_INDEX_KEY_TYPES = (StringType, LongType, IntegerType, ShortType)

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


LAST_EVENT_COLUMNS = (OP, TS_MS, SOURCE, INGESTED_AT)
"""What a stored row says of the event that last wrote it: a fold whose events are newer than the
row takes them from its newest event (and the merge sets `_cdc_ingested_at` anew in every row it
writes), so `touched_rows(..., values=False)` skips them as it skips the values."""


def value_columns(schema: StructType, table: TableConfig) -> list[str]:
    """The data columns a fold may fold without their stored values: all but the key and the
    partition columns (a key's and its partition's values are the stored row's either way)."""
    return [f.name for f in schema.fields if f.name not in table.key and f.name not in table.partition_by]


def data_schema(stored: DataFrame | None) -> StructType | None:
    """The stored table's data columns: everything but the framework's and Hudi's own."""
    if stored is None:
        return None
    return StructType(
        [f for f in stored.schema.fields if not f.name.startswith((CDC_PREFIX, HOODIE_PREFIX))]
    )


def conform_events(events: DataFrame, schema: StructType) -> DataFrame:
    """Give the events every table column (NULL and absent where the event lacks it), typed as the table."""
    names = set(schema.fieldNames())
    data = [
        (F.col(f.name) if f.name in events.columns else F.lit(None)).cast(f.dataType).alias(f.name)
        for f in schema.fields
    ]
    return events.select(*data, *[c for c in events.columns if c not in names])


def index_lookup_column(table: TableConfig, schema: StructType) -> str | None:
    """The key column whose values the stored-row read may look up in the table's index, or None.

    The record-level and the bucket index can name a key's files. Only where the record key
    Hudi stores (and hashes into a bucket) is the column's value as text: one key column of a
    string or integer type, written by the non-partitioned or simple key generator. A decimal,
    date or timestamp key, or a composite one, is stored in an encoding the read's key filter
    does not reproduce, and a file pruned by mistake would hide a stored row from the fold.
    """
    if table.index == "simple" or len(table.key) != 1:
        return None
    column = table.key[0]
    if column not in schema.fieldNames() or not isinstance(schema[column].dataType, _INDEX_KEY_TYPES):
        return None
    return column if key_generator(table).endswith(_INDEX_KEY_GENERATORS) else None


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
    one_task: bool = False,
    values: bool = True,
) -> DataFrame:
    """The stored rows the fold must see: those of the keys `events` touch, or all (`every_row`, a truncate).

    Columns are conformed to `schema` plus the `_cdc_*` state and, for a table that writes
    prepped (`prepped.applies`), each row's location in the table (`prepped.LOCATION`, its fields
    NULL where the read dropped Hudi's meta columns); an absent table gives no rows. `one_task`:
    the stored rows are read and matched with the keys in one task, with no shuffle (as the fold's).
    `values=False`: the `value_columns` and `LAST_EVENT_COLUMNS` are NULL, never read
    (`collapse.keeps_a_stored_value` finds the folded rows that needed them).
    """
    wanted = stored_columns(schema, table)
    unread = set() if values else {*value_columns(schema, table), *LAST_EVENT_COLUMNS}
    located = prepped.applies(table)
    if stored is None:
        nothing = [F.lit(None).cast(_column_type(c, schema)).alias(c) for c in wanted]
        no_location = [F.lit(None).cast(prepped.LOCATION_TYPE).alias(prepped.LOCATION)] if located else []
        return events.limit(0).select(*nothing, *no_location)
    conformed = stored.select(
        *[
            (F.col(c) if c in stored.columns and c not in unread else F.lit(None)).cast(_column_type(c, schema)).alias(c)
            for c in wanted
        ],
        *([prepped.location(stored).alias(prepped.LOCATION)] if located else []),
    )
    if one_task:
        conformed, events = conformed.coalesce(1), events.coalesce(1)
    if every_row:
        return conformed
    keys = events.select(*table.key).distinct()
    if one_task:
        # A merge join of two single partitions needs no shuffle (a broadcast would cost a job of
        # its own). Inner, not semi: the optimizer pushes a semi join below the coalesce, back onto
        # the scan's partitions. The keys are distinct, so each stored row matches at most once.
        return conformed.join(keys.hint("merge"), on=table.key, how="inner").select(*conformed.columns)
    return conformed.join(keys, on=table.key, how="left_semi")
