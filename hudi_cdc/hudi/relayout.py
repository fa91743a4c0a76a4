"""Rewrite a table's current rows with the index and table version its settings now ask for (`hudi-cdc relayout`).

A bucket table's layout is fixed when it is created: Hudi keeps a key's bucket in file names only,
so the job refuses a change of `index` or `buckets` under it (`job.preflight.index_problems`); and Hudi
does not downgrade a table's version (`job.preflight.version_problems`). Changing them means writing the
rows anew, which this does in place, without a new Debezium snapshot:

1. the current rows (a snapshot read: every stored column, the `_cdc_*` state included) are bulk
   inserted into `<base_path>.relayout` with the table's settings, and with the metadata of the
   last commit the job made (Kafka ranges, watermark, truncate) and the new layout, so the job
   resumes where it stopped and still recognizes a batch Spark replays;
2. the table is moved aside to `<base_path>.before-relayout-<instant>`, kept as the backup;
3. the new table is moved to `base_path`, where the metastore's table and partitions point.

Run it while no job writes the table: a commit that lands while the copy is written makes it
stop before step 2 and change nothing. Before step 2 it leaves `<base_path>.relayout-moving`,
naming the backup path, and removes it after step 3. Interrupted, it is finished by running it
again: without that file the staging copy is written anew; with it the moves are finished, and
while it lies there the job refuses to write the table (`unfinished`): between the two moves a
job would otherwise create a new table at `base_path` from its next batch, without the copy's
rows. On object stores a move copies file by file, so a crash can leave a move half done: the
rerun then finds a table at both ends of a move and stops, changing nothing, as it does when
a table was created at `base_path` anyway.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from hudi_cdc.commit.offsets import INDEX_KEY
from hudi_cdc.config.models import TableConfig
from hudi_cdc.errors import RelayoutError
from hudi_cdc.events import HOODIE_IS_DELETED
from hudi_cdc.hoodie_keys import OPERATION_BULK_INSERT
from hudi_cdc.hudi import writer
from hudi_cdc.hudi.table import keeps_metadata_table, latest_commit, read_table, table_exists
from hudi_cdc.hudi.table_options import index_layout, trailing_columns, write_options
from hudi_cdc.hudi.timeline import latest_job_metadata
from hudi_cdc.spark import fs

log = logging.getLogger(__name__)

STAGING_SUFFIX = ".relayout"
BACKUP_SUFFIX = ".before-relayout-"
MOVING_SUFFIX = ".relayout-moving"
"""A file that lies beside the base path while the moves are under way; it holds the backup path."""


@dataclass(frozen=True)
class Relayout:
    """What one `relayout` did."""

    table: str
    layout: str
    """The layout written (`hudi.table_options.index_layout`)."""
    previous: str
    """The layout the last job commit recorded ('-' when it recorded none)."""
    rows: int | None
    """Rows written (None: written by an earlier, interrupted run)."""
    backup: str | None
    """Where the table as it was now lies (None: moved there by an earlier, interrupted run)."""


def unfinished(spark: SparkSession, table: TableConfig) -> str | None:
    """What is wrong when a relayout of `table` stopped during its moves, else None.

    Then the table may lie at its backup path and its copy at the staging path; a job writing to
    the empty base path would create a new table there, without the copy's rows.
    """
    base = table.base_path.rstrip("/")
    if not fs.exists(spark, base + MOVING_SUFFIX):
        return None
    return (
        f"table {table.name}: a `hudi-cdc relayout` stopped while it moved the table aside and its rewritten "
        f"copy {base}{STAGING_SUFFIX} in ({base}{MOVING_SUFFIX} is left); run `hudi-cdc relayout --table {table.name}` "
        "to finish it before the job writes the table"
    )


def relayout(spark: SparkSession, table: TableConfig, *, step: Callable[[str], None] | None = None) -> Relayout:
    """Rewrite `table` at its base path with its configured settings; the old table kept beside it.

    `step` is told each phase as it starts (`hudi-cdc relayout` shows them as progress).
    """
    say = step or (lambda _: None)
    base = table.base_path.rstrip("/")
    staging = base + STAGING_SUFFIX
    backup = fs.read_text(spark, base + MOVING_SUFFIX)
    if backup is not None:  # a run stopped during the moves
        say(f"table {table.name}: finishing the moves of an interrupted relayout")
        return _resume_moves(spark, table, staging, base, backup.strip(), say)
    if not table_exists(spark, base):
        raise RelayoutError(f"table {table.name}: no Hudi table at {base}")
    read_through = latest_commit(spark, base)
    committed = latest_job_metadata(spark, base)
    if not committed:
        raise RelayoutError(f"table {table.name}: {base} holds no commit of this job; nothing to carry over")
    if fs.delete(spark, staging):
        log.warning("table %s: deleted the staging copy %s an interrupted run left", table.name, staging)
    say(f"table {table.name}: writing its rows to {staging} ({index_layout(table)})")
    rows = read_table(spark, base)
    assert rows is not None  # the table exists
    if table.deletes != "soft":
        rows = rows.withColumn(HOODIE_IS_DELETED, F.lit(False))  # as every write of a hard-delete table
    written = writer.write(
        rows,
        table=table.name,
        base_path=staging,
        options=write_options(
            table,
            operation=OPERATION_BULK_INSERT,
            parallelism=spark.sparkContext.defaultParallelism,
            has_metadata_table=keeps_metadata_table(spark, table),
        ),
        commit_metadata=committed | {INDEX_KEY: index_layout(table)},
        trailing_columns=trailing_columns(table),
        archive_after_hours=table.archive_after_hours,
    )
    if written.commit_time is None:
        raise RelayoutError(
            f"table {table.name}: {base} holds no row; move it aside and the job creates it anew with its settings"
        )
    if latest_commit(spark, base) != read_through:
        # a job wrote on meanwhile: moving the copy in would drop that commit, whose Kafka records
        # Spark's checkpoint has already passed
        fs.delete(spark, staging)
        raise RelayoutError(
            f"table {table.name}: a commit landed on {base} while it was being rewritten (is a job running?); "
            "the table was left as it was. Stop the job and run `hudi-cdc relayout` again"
        )
    log.info("table %s: %d rows written to %s (%s)", table.name, written.upserted, staging, index_layout(table))
    backup = f"{base}{BACKUP_SUFFIX}{read_through}"
    fs.write_text(spark, base + MOVING_SUFFIX, backup)
    return _move(
        spark, table, staging, base, backup, say, previous=committed.get(INDEX_KEY, "-"), rows=written.upserted
    )


def _resume_moves(
    spark: SparkSession, table: TableConfig, staging: str, base: str, backup: str, say: Callable[[str], None]
) -> Relayout:
    """Finish the moves of an interrupted run, or stop where finishing could lose rows."""
    if fs.exists(spark, backup) and not fs.exists(spark, staging) and table_exists(spark, base):
        fs.delete(spark, base + MOVING_SUFFIX)  # both moves were made; only the marker was left
        return Relayout(table=table.name, layout=index_layout(table), previous="-", rows=None, backup=None)
    if not fs.exists(spark, backup):  # the table was not moved yet
        return _move(spark, table, staging, base, backup, say)
    if not fs.exists(spark, base) and table_exists(spark, staging):
        return _move(spark, table, staging, base, None, say)
    raise RelayoutError(
        f"table {table.name}: an earlier relayout stopped while it moved the table to {backup} and the "
        f"rewritten copy {staging} to {base}, and {base} holds files again: either a move was left half done "
        "(object stores move file by file) or a job created a new table there after the table was moved aside "
        "(it then holds only the changes of Kafka records after the copy's position). Nothing was changed. "
        f"A half-done move: finish it by hand, then run `hudi-cdc relayout --table {table.name}` again. A new table: "
        "stop the job, move it aside, run the command again to move the copy in, and let the job read the "
        "topic again (a new `job.checkpoint_dir` with `kafka.starting_offsets: earliest`: a change applies by "
        "its source order, so the changes the copy already holds change nothing)"
    )


def _move(
    spark: SparkSession,
    table: TableConfig,
    staging: str,
    base: str,
    backup: str | None,
    say: Callable[[str], None],
    *,
    previous: str = "-",
    rows: int | None = None,
) -> Relayout:
    """Steps 2 and 3 (step 2 skipped when `backup` is None: done by an earlier run), then the marker goes."""
    if backup is not None:
        say(f"table {table.name}: moving the table as it was to {backup}")
        fs.rename(spark, base, backup)
    say(f"table {table.name}: moving the rewritten copy to {base}")
    fs.rename(spark, staging, base)
    fs.delete(spark, base + MOVING_SUFFIX)
    log.warning("table %s: rewritten with %s; the table as it was is at %s", table.name, index_layout(table), backup)
    return Relayout(table=table.name, layout=index_layout(table), previous=previous, rows=rows, backup=backup)
