"""Folded rows + options -> one Hudi commit per table and batch (reading a table is `hudi/table.py`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_cdc.events import HOODIE_IS_DELETED
from hudi_cdc.hoodie_keys import OPERATION_BULK_INSERT, OPERATION_INSERT, OPERATION_UPSERT
from hudi_cdc.hudi import retention
from hudi_cdc.hudi.table import latest_commit, table_exists
from hudi_cdc.hudi.timeline import TableTimeline
from hudi_cdc.spark import fs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RowCounts:
    """How many rows a write upserts and deletes (`_hoodie_is_deleted`)."""

    upserted: int
    deleted: int
    new_keys: int | None = None
    """Of those, rows whose key the table does not hold yet (None: not known)."""
    unlocated: int | None = None
    """Of those, rows of a stored key whose location the stored read lacks (None: not known)."""


def operation(counts: RowCounts, *, table_exists: bool) -> str:
    """The Hudi write operation that gives the same table as an upsert of these rows, at the least cost.

    - no table yet: `bulk_insert`. The fold made every key unique, so the rows are written as
      they are (Hudi's row writer): no index lookup, no workload profile, no Avro records.
    - only keys the table does not hold (the fold read every stored row of the touched keys):
      `insert`. It skips the index lookup, which reads the keys of every file of the table, and
      still packs the rows into small files.
    - otherwise `upsert`.
    """
    if not table_exists:
        return OPERATION_BULK_INSERT
    if counts.new_keys is not None and counts.new_keys == counts.upserted + counts.deleted:
        return OPERATION_INSERT
    return OPERATION_UPSERT


@dataclass(frozen=True)
class WriteResult:
    """What one write did."""

    table: str
    upserted: int
    deleted: int
    commit_time: str | None
    """Instant of the commit, None when there was nothing to write."""


HISTORY_KEEP_FILE = ".hoodie/timeline/history/_hudi_cdc_keep"


def keep_history_listable(spark: SparkSession, base_path: str) -> None:
    """Put a marker file in the (empty until archival) archived-timeline folder.

    Trino's Hudi connector lists that folder on every query and fails with "Could not load
    archived commit timeline" when it is empty, because its file systems have no empty folders.
    Hudi itself only reads the LSM files it wrote there.
    """
    fs.touch(spark, base_path.rstrip("/") + "/" + HISTORY_KEEP_FILE)


def write(
    rows: DataFrame,
    *,
    table: str,
    base_path: str,
    options: dict[str, str],
    commit_metadata: dict[str, str],
    trailing_columns: Sequence[str] = (),
    counts: RowCounts | None = None,
    archive_after_hours: int | None,
    timeline: TableTimeline | None = None,
) -> WriteResult:
    """Upsert `rows` (deletes flagged by `_hoodie_is_deleted`) as one Hudi commit.

    Commit order (the Kafka position moves only after this returns, see stream.py):
    1. count what will be written, unless the caller knows (`counts`, from rows it persisted);
    2. write: Hudi commits data and the commit metadata (Kafka offsets) atomically;
    3. read back the instant of that commit.

    `trailing_columns` are moved to the end of the written rows (see `options.trailing_columns`).
    `archive_after_hours`: the table's setting, which bounds Hudi's archiver (`hudi.retention`).
    `timeline`: the existing table's timeline as the caller read it this batch; the archive bound
    and whether a clean is due are taken from it, and the commit read back through it (None: the
    bound and the commit read afresh, and Hudi's cleaner checks for itself).
    """
    spark = rows.sparkSession
    if trailing_columns:
        rows = rows.select(*[c for c in rows.columns if c not in trailing_columns], *trailing_columns)
    cached = counts is None
    if cached:
        rows = rows.persist()  # counted here, then written: compute it once
    try:
        counts = counts or _count(rows)
        if counts.upserted + counts.deleted == 0:
            return WriteResult(table=table, upserted=0, deleted=0, commit_time=None)
        if timeline is not None or table_exists(spark, base_path):
            # archive only what no reader needs (see hudi_cdc.hudi.retention)
            commits = timeline.commits() if timeline is not None else None
            options = options | retention.archival_options(spark, base_path, archive_after_hours, commits=commits)
            if timeline is not None:
                # and clean only when a clean is due (the timeline is read already)
                options = options | retention.cleaning_options(timeline.commits().clean_state(), options)
        (rows.write.format("hudi").options(**options).options(**commit_metadata).mode("append").save(base_path))
        commit = timeline.newest_commit() if timeline is not None else latest_commit(spark, base_path)
        keep_history_listable(spark, base_path)
        log.info("table %s: committed %s (%d upserts, %d deletes)", table, commit, counts.upserted, counts.deleted)
        return WriteResult(table=table, upserted=counts.upserted, deleted=counts.deleted, commit_time=commit)
    finally:
        if cached:
            rows.unpersist()


def _count(rows: DataFrame) -> RowCounts:
    deleted_expr = F.col(HOODIE_IS_DELETED) if HOODIE_IS_DELETED in rows.columns else F.lit(False)
    counts = rows.agg(F.count(F.lit(1)).alias("n"), F.sum(deleted_expr.cast("int")).alias("deleted")).first()
    total = int(counts["n"]) if counts else 0
    deleted = int(counts["deleted"] or 0) if counts else 0
    return RowCounts(upserted=total - deleted, deleted=deleted)
