"""Writes that tell Hudi where each stored row lives, so that it skips its own index lookup.

The fold already read the stored row of every key it writes (`stored_state.touched_rows`), and
Hudi's meta columns of that row name its file group and last commit. Handed to the writer in
front of the rows, with the switch Hudi's own MERGE INTO uses (`options.MERGE_INTO_PREPPED`), they are
the rows' locations: Hudi's index is a pass-through, and the lookup it replaces (for the simple
index, a read of every key of the table) is not run: it pays on larger tables (docs/performance-journal.md,
round 15). A row of a new key carries no location and is inserted. Hudi's key
generator still makes every record key, so keys are what a plain upsert would make.

Only where a read location stays right: tables without partition columns (a global index also
moves a row whose partition changed, which a location cannot express) that use the simple or
the record-level index (a bucket index places new keys by their hash). A written row of a stored
key with no location would be inserted a second time: such a batch upserts the usual way.
`prepped_writes: false` turns it off for a table.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from hudi_cdc.config.models import TableConfig
from hudi_cdc.hoodie_keys import OPERATION_UPSERT

META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)
"""Hudi's meta columns, in the order its writer reads them by position."""
LOCATION_COLUMNS = ("_hoodie_commit_time", "_hoodie_file_name")
"""The meta columns a merge-into write reads: a row's location is its file group (from the file
name) at its last commit. Hudi's key generator makes the record key and partition path, and the
write gives every meta column a new value, so the stored read leaves the other three out: the
record key and the sequence number are unique per row, and reading them made the stored-row read
of 20k keys from a 1M-row table 1.17x dearer (docs/performance-journal.md, round 44)."""
LOCATION = "__stored_location"
"""The fold's column carrying each key's stored `LOCATION_COLUMNS` as a struct (NULL for a new key)."""
LOCATED_BY = "_hoodie_file_name"
"""The meta column without which a stored row has no location."""
LOCATION_TYPE = "struct<" + ",".join(f"{c}:string" for c in LOCATION_COLUMNS) + ">"


def applies(table: TableConfig) -> bool:
    """Whether `table`'s stored rows keep the location a prepped write needs (module docstring)."""
    return table.prepped_writes and not table.partition_by and table.index in ("simple", "record_level")


def location(stored: DataFrame) -> Column:
    """The stored row's `LOCATION_COLUMNS` as one struct (fields NULL where the read has none)."""
    fields = [(F.col(c) if c in stored.columns else F.lit(None).cast("string")).alias(c) for c in LOCATION_COLUMNS]
    return F.struct(*fields)


def unlocated(written: Column) -> Column:
    """True for a written row of a stored key that carries no location."""
    return written & F.col(LOCATION).isNotNull() & F.col(f"{LOCATION}.{LOCATED_BY}").isNull()


def use(table: TableConfig, operation: str, unlocated_rows: int | None) -> bool:
    """Whether this write goes prepped: an upsert of an eligible table whose stored keys all have locations."""
    return operation == OPERATION_UPSERT and applies(table) and unlocated_rows == 0


def with_meta_columns(rows: DataFrame) -> DataFrame:
    """`rows` with Hudi's meta columns in front: `LOCATION_COLUMNS` taken from LOCATION (NULL for
    new keys), the others NULL (a merge-into write does not read them)."""
    meta = [
        (F.col(f"{LOCATION}.{c}") if c in LOCATION_COLUMNS else F.lit(None).cast("string")).alias(c)
        for c in META_COLUMNS
    ]
    return rows.select(*meta, *[c for c in rows.columns if c != LOCATION])
