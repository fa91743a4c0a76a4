"""Folded key states -> the rows to upsert into Hudi, with the `_cdc_*` columns of semantics §5.

The fold (collapse.py) already produced each touched key's final, complete row, so Hudi only
has to keep the latest write of a key: the table uses COMMIT_TIME_ORDERING and every reader
(Spark, Trino, hudi-rs, compaction) agrees on the result without a custom merger. Keys whose
state did not change are not written at all.
"""

from __future__ import annotations

import time
from decimal import Decimal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from hudi_cdc.config.models import TableConfig
from hudi_cdc.events import DELETED, HOODIE_IS_DELETED, INGESTED_AT
from hudi_cdc.fold.collapse import CHANGED, EXISTS, HAD_ROW
from hudi_cdc.fold.stored_state import stored_columns
from hudi_cdc.hudi import prepped

UPSERT = "write:upsert"
DELETE = "write:delete"
"""Labels of `write_kind`: a folded row written as an upsert, or as a Hudi delete."""
NEW_KEY = "write:new-key"
"""Label of `key_state`: a written row whose key has no stored row."""
UNLOCATED = "write:unlocated"
"""Label of `key_state`: a written row of a stored key whose location the stored read lacks."""


def _written(table: TableConfig) -> Column:
    """Which folded rows are written: changed ones, and on hard-delete tables only keys that exist or existed."""
    if table.deletes == "hard":
        # a key that existed and no longer does is removed; one that never existed is not written
        return F.col(CHANGED) & (F.col(EXISTS) | F.col(HAD_ROW))
    return F.col(CHANGED)


def write_kind(table: TableConfig) -> Column:
    """UPSERT or DELETE for a folded row `rows_to_write` writes, NULL for one it does not.

    Lets the caller count the write in the same job as the outcomes, from the persisted fold,
    instead of counting the written rows once more before the write.
    """
    deleted = ~F.col(EXISTS) if table.deletes == "hard" else F.lit(False)
    return F.when(_written(table), F.when(deleted, F.lit(DELETE)).otherwise(F.lit(UPSERT)))


def key_state(table: TableConfig) -> Column:
    """For a folded row `rows_to_write` writes: NEW_KEY when the table does not hold its key,
    UNLOCATED when it does, the table writes prepped and the stored read gave no location; NULL otherwise.

    When every written row is of a new key, Hudi need not look the keys up (see `writer.operation`);
    when none is unlocated, the rows can tell Hudi where they live (`hudi.prepped`). A table that
    never writes prepped reads no locations, so none of its keys is unlocated.
    """
    written = _written(table)
    unlocated = prepped.unlocated(written) if prepped.applies(table) else F.lit(False)
    return F.when(written & ~F.col(HAD_ROW), F.lit(NEW_KEY)).when(unlocated, F.lit(UNLOCATED))


def ingested_now() -> Column:
    """This moment as a timestamp, the same in every row, written into no generated class.

    Why not `current_timestamp()`: the optimizer replaces it with a timestamp literal, and Spark
    writes such literals into the Java source it generates, so every table's write compiled two
    classes of its own in every batch (and the JIT compiled their methods again). A decimal
    literal reaches generated code by reference, so the source stays the same from batch to
    batch; the non-deterministic `spark_partition_id() * 0` keeps the optimizer from folding the
    conversion back into a timestamp literal. It costs a decimal addition per written row.
    """
    micros = F.lit(Decimal(time.time_ns() // 1_000))
    now = F.timestamp_micros((micros + F.spark_partition_id() * 0).cast("long"))
    # never NULL, but decimal arithmetic is typed nullable: the stored column stays NOT NULL, as
    # current_timestamp() made it (the epoch is the same literal in every batch)
    return F.coalesce(now, F.timestamp_micros(F.lit(0)))


def rows_to_write(folded: DataFrame, schema: StructType, table: TableConfig, *, located: bool = False) -> DataFrame:
    """The upserts (and, on hard-delete tables, `_hoodie_is_deleted` rows) for one batch.

    `located`: Hudi's meta columns in front, from each key's stored location (`hudi.prepped`).
    """
    out = folded.filter(_written(table)).withColumn(INGESTED_AT, ingested_now())
    location = [prepped.LOCATION] if located else []
    if table.deletes == "soft":
        out = out.withColumn(DELETED, ~F.col(EXISTS)).select(*stored_columns(schema, table), *location)
    else:
        out = out.withColumn(HOODIE_IS_DELETED, ~F.col(EXISTS)).select(
            *stored_columns(schema, table), HOODIE_IS_DELETED, *location
        )
    return prepped.with_meta_columns(out) if located else out
