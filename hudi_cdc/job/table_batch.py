"""One table's records of a batch: decode -> schema check -> fold -> count -> write, as named steps.

`apply_table` is the order; each step below takes values and returns values. Failure isolation
around it is `job/isolation.py`; the batch over every table is `job/pipeline.py`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import asdict, dataclass, replace

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from hudi_cdc.avro.registry import fetcher_for
from hudi_cdc.avro.wire import avro_as_json, uses_avro
from hudi_cdc.commit.metrics import COUNTED, TableMetrics
from hudi_cdc.commit.offsets import (
    BATCH_KEY,
    JOB_KEY,
    NEWEST_ORDER_KEY,
    SOURCE_TYPES_KEY,
    TRUNCATE_KEY,
    KafkaRange,
    commit_metadata,
)
from hudi_cdc.commit.progress import Mark, Progress, counts_of
from hudi_cdc.config.models import TableConfig
from hudi_cdc.dead_letters.store import raw_as_rejects
from hudi_cdc.decode.envelope import ENVELOPE_COLUMNS
from hudi_cdc.decode.records import DecodeResult, decode
from hudi_cdc.errors import KeyColumnsMissing, RelayoutError, SchemaChangeError
from hudi_cdc.events import OP, ORDER, Op, Outcome
from hudi_cdc.fold.collapse import (
    FoldResult,
    Truncation,
    first_load,
    fold,
    keeps_a_stored_value,
    writes_every_column,
)
from hudi_cdc.fold.merge import DELETE, NEW_KEY, UNLOCATED, UPSERT, key_state, rows_to_write, write_kind
from hudi_cdc.fold.stored_state import (
    INDEX_LOOKUP_MAX_KEYS,
    conform_events,
    data_schema,
    index_lookup_column,
    touched_rows,
    value_columns,
)
from hudi_cdc.fold.tally import DecodedTally, TableRecords, tally
from hudi_cdc.hudi import prepped, relayout, writer
from hudi_cdc.hudi.schema_check import check, source_types_after
from hudi_cdc.hudi.table import keeps_metadata_table, read_base_locations, read_keys, read_table, stored_bytes
from hudi_cdc.hudi.table_options import (
    index_layout,
    key_lookup_options,
    trailing_columns,
    write_options,
)
from hudi_cdc.hudi.timeline import TableTimeline
from hudi_cdc.hudi.writer import RowCounts, WriteResult
from hudi_cdc.job.context import BatchContext, dead_letter
from hudi_cdc.job.sizing import in_one_task, tasks_for
from hudi_cdc.spark.lineage import checkpointed, release

log = logging.getLogger(__name__)


def apply_table(records: DataFrame, received: TableRecords, table: TableConfig, ctx: BatchContext) -> TableMetrics:
    """decode -> schema check -> fold -> count -> write, for one table's records of the batch."""
    prepared = prepare(records, received, table, ctx)
    if isinstance(prepared, TableMetrics):
        return prepared
    return complete(prepared, ctx)


@dataclass(frozen=True)
class Prepared:
    """A table's batch decoded and checked, ready to fold (`complete`, or `job.table_group` with
    other tables). Holds the decode's cache: `complete` releases it."""

    table: TableConfig
    records: DataFrame
    received: TableRecords
    decoded: DecodeResult
    stored: DataFrame | None
    """The stored table (None before its first commit)."""
    committed: dict[str, str]
    """The job metadata of the table's newest commit."""
    timeline: TableTimeline | None
    """The stored table's timeline, as read for `committed` (None before its first commit)."""
    previous: Progress
    schema: StructType
    """The table's columns after the schema check: what the fold folds."""
    recorded_sources: dict[str, str] | None
    one_task: bool
    metrics: TableMetrics


def prepare(
    records: DataFrame, received: TableRecords, table: TableConfig, ctx: BatchContext
) -> Prepared | TableMetrics:
    """The table's stored state, its batch decoded and schema-checked; or its final metrics when
    nothing is left to fold (a replayed batch, tombstones only, a refused schema change)."""
    spark = records.sparkSession
    stored, stored_timeline, committed = _stored_state(spark, table)
    if _committed_already(committed, received.kafka, ctx):
        return _as_committed(table, committed, received.kafka, ctx)
    previous = Progress.from_metadata(committed)
    metrics = TableMetrics(
        table=table.name, read=received.read, watermark_ts_ms=previous.watermark_ts_ms, applied_through=received.kafka.last
    )
    metrics.tombstone = received.tombstones
    if received.tombstones == received.read:
        return metrics  # tombstones only: nothing to decode
    columns = data_schema(stored)
    decoded = decode(_as_json(records, table, ctx), table, envelopes=received.envelopes, stored=columns).cached()
    # None until a commit records them (a new table, or one written before they were recorded)
    recorded_sources = json.loads(committed[SOURCE_TYPES_KEY]) if SOURCE_TYPES_KEY in committed else None
    handed_on = False
    try:
        try:
            schema = check(decoded.schema, columns, table, recorded_sources)
        except SchemaChangeError as exc:
            return _schema_change(exc, records, decoded, table, previous.watermark_ts_ms, metrics, ctx)
        if not schema.fields:
            # no schema of the batch types a column and the table holds none: every record is
            # rejected or skipped, and the fold has no column to fold
            _count_unapplied(decoded, tally(decoded, watermark=previous.watermark_ts_ms), metrics, ctx)
            return metrics
        _require_key_columns(schema, table, received)
        prepared = Prepared(
            table=table, records=records, received=received, decoded=decoded, stored=stored, committed=committed,
            timeline=stored_timeline, previous=previous, schema=schema, recorded_sources=recorded_sources,
            one_task=_in_one_task(stored, received, schema, table), metrics=metrics,
        )  # fmt: skip
        handed_on = True
        return prepared
    finally:
        if not handed_on:
            release(decoded.parsed)


def complete(prepared: Prepared, ctx: BatchContext, folded: Folded | None = None) -> TableMetrics:
    """Fold (unless `folded`, by `job.table_group`), count and write a prepared table's batch;
    releases the decode's cache and the table's own fold."""
    p, metrics = prepared, prepared.metrics
    try:
        if folded is None:
            folded = _fold_and_count(
                p.decoded, p.stored, p.schema, p.committed, p.previous, p.table, metrics, one_task=p.one_task,
                newer_by_rank=ctx.config.job.newer_by_rank,
            )  # fmt: skip
        _count_unapplied(p.decoded, folded.counted, metrics, ctx)
        if folded.counted.events == 0:
            return metrics  # tombstones, skipped or rejected records only: nothing to write
        written, progress = _count_written(folded, p.received.kafka, p.previous, metrics)
        commit_metadata_ = _commit_metadata(folded, p, progress, ctx)
        _write(folded, written, p.timeline, p.schema, commit_metadata_, p.table, metrics)
        if metrics.commit_time:
            metrics.watermark_ts_ms = progress.watermark_ts_ms
        return metrics
    finally:
        release(p.decoded.parsed)
        if folded is not None and folded.held is not None:
            release(folded.held)


def _stored_state(
    spark: SparkSession, table: TableConfig
) -> tuple[DataFrame | None, TableTimeline | None, dict[str, str]]:
    """The stored table and its timeline (both None before its first commit), and its newest
    commit's job metadata."""
    stored = read_table(spark, table.base_path, locations=prepped.applies(table))
    if stored is None:
        if problem := relayout.unfinished(spark, table):
            raise RelayoutError(problem)
        return None, None, {}
    stored_timeline = TableTimeline(spark, table.base_path)
    return stored, stored_timeline, stored_timeline.job_metadata()


def _require_key_columns(schema: StructType, table: TableConfig, received: TableRecords) -> None:
    """Stop the table, before any Spark job, when its key names a column none of its records carry.

    Caught here rather than by Spark's analysis of the fold: that error would read as a failure of
    some records, and failure isolation would split the batch to find records that are not at fault.
    """
    carried = schema.fieldNames()
    missing = [k for k in table.key if k not in carried]
    if missing:
        raise KeyColumnsMissing(table.name, missing=missing, carried=carried, positions=received.kafka.describe())


def _in_one_task(stored: DataFrame | None, received: TableRecords, schema: StructType, table: TableConfig) -> bool:
    """Whether the table's fold and counts run in one task each (`job.sizing.in_one_task`).

    Only where the fold reads the whole stored table: sizing it lists its files, which such a read
    does anyway. A table whose index names the files holding the batch's keys reads only those,
    and listing all of them to size it would cost more than the shuffles it saves.
    """
    if tasks_for(received.read) > 1:
        return False  # the records alone need more than one task: no listing
    if stored is None:
        return in_one_task(received.read, 0)
    if index_lookup_column(table, schema) is not None:
        return False
    size = stored_bytes(stored)
    return size is not None and in_one_task(received.read, size)


@dataclass(frozen=True)
class _FoldRun:
    """One fold of a table's batch, over one checkpoint that both its outputs read."""

    rows: DataFrame
    """The folded rows (`FoldResult.rows`' columns)."""
    outcomes: DataFrame
    """Every event's outcome: topic, partition, offset, outcome."""
    held: DataFrame
    """The checkpoint under both: release it when the batch is done with them."""
    first_load: bool
    """Folded by `collapse.first_load`: right only if every event wrote every column."""
    values_read: bool = True
    """False: the stored rows were read without their values (`_ValueReads`): right only where no
    folded row keeps one (`collapse.keeps_a_stored_value`)."""
    keys_known: bool = True
    """False: folded without the stored rows, newer than all of them (`_newer_than_table`): which
    keys the table holds, and where, is not known."""


@dataclass(frozen=True)
class Folded:
    """The fold's rows (over a checkpoint, `held`: the caller releases it) and the batch's counts."""

    rows: DataFrame
    held: DataFrame | None
    """None: the checkpoint is shared by tables folded as one, and `job.table_group` releases it."""
    counted: DecodedTally
    truncation: Truncation | None
    """The batch's newest truncate, applied as a table-wide delete (None: none, or ignored)."""
    remembered: Truncation | None
    """The newest truncate an earlier commit recorded."""
    keys_known: bool = True
    """False: which of the written keys the table holds is not known (`_FoldRun.keys_known`):
    the write upserts through Hudi's index, unless `located`."""
    located: bool = False
    """With `keys_known` False: the rows carry each stored key's location all the same, read from
    the table's base files (`_with_base_locations`), and the write is prepped."""
    newest_stored: str | None = None
    """The newest order among the stored rows and the remembered truncate, where the fold found
    it for a table whose commits do not record it yet (`NEWEST_ORDER_KEY`)."""


def _fold_and_count(
    decoded: DecodeResult, stored: DataFrame | None, schema: StructType, committed: dict[str, str],
    previous: Progress, table: TableConfig, metrics: TableMetrics, *, one_task: bool, newer_by_rank: bool,
) -> Folded:  # fmt: skip
    """Folded first, counted after: one Spark job counts both the decoded batch and the fold's
    outcomes. The fold assumes the batch truncates nothing, and a table's first batch that it
    holds only full images (`collapse.first_load`); that count then confirms both. `one_task`:
    both run in one task, with no shuffle (`job.sizing.in_one_task`)."""
    remembered = Truncation(**json.loads(committed[TRUNCATE_KEY])) if TRUNCATE_KEY in committed else None
    changes = without_truncates(decoded.events)
    newest_stored = None
    if newer_by_rank and stored is not None and _rank_may_pay(table, one_task):
        if NEWEST_ORDER_KEY not in committed:
            newest_stored = _newest_stored_order(stored, remembered, table)
        if _newer_than_table(decoded, schema, committed.get(NEWEST_ORDER_KEY, newest_stored), table):
            run = _fold(changes, None, None, schema, None, table, first_load_=True, one_task=False, keys_known=False)
            return _counted_newer(run, decoded, changes, schema, previous, table, newest_stored)
    # a table read in one task is small: reading its values costs less than a second fold would
    values = stored is None or one_task or not VALUE_READS.apart(table)
    run = _fold(
        changes, None, stored, schema, remembered, table, first_load_=stored is None, one_task=one_task, values=values
    )
    try:
        labels = _outcome_labels(run, changes, schema, table)
        counted = tally(decoded, watermark=previous.watermark_ts_ms, labels=labels, one_task=one_task)
        truncation, metrics.truncate_ignored = truncation_of(counted, table)
        if partial := counted.labelled.get(_NOT_FIRST_LOAD, 0):
            log.info("table %s: %d event(s) of its first batch are not full images; folded again", table.name, partial)
        kept = counted.labelled.get(_STORED_VALUE_KEPT, 0)
        if not values:
            VALUE_READS.note(table, needed=kept > 0)
        if kept:
            log.info(
                "table %s: %d row(s) keep a stored value or last event the fold read without; folded again with them",
                table.name,
                kept,
            )
        if truncation is not None or partial or kept:
            # rare: fold again, the general way, with every stored value and, after a truncate,
            # every stored row deleted up to it
            release(run.held)
            run = _fold(changes, truncation, stored, schema, remembered, table, first_load_=False, one_task=one_task)
            labelled = _count_labels(_outcome_labels(run, changes, schema, table), one_task=one_task)
            counted = replace(counted, labelled=labelled)
    except BaseException:
        release(run.held)
        raise
    return Folded(
        rows=run.rows, held=run.held, counted=counted, truncation=truncation, remembered=remembered,
        newest_stored=newest_stored,
    )  # fmt: skip


def _rank_may_pay(table: TableConfig, one_task: bool) -> bool:
    """Whether a batch newer than the table (`_newer_than_table`) is worth checking for.

    A small table's stored rows cost little to read: only a large one's are worth the check's job.
    A merge-on-read table's read merges its log files; the rank fold and the locations of its base
    files cost 1.13x and 1.23x the plain job over 20 batches against 1.59x and 1.48x with the read
    (docs/performance-journal.md, round 47). A copy-on-write table's read merges no log files, and
    its rank fold was measured only with Hudi's own lookup and an upsert not prepped, which cost
    more than the read (1.49x against 1.36x, round 46). A partitioned table's row may move: its
    stored partition is needed.
    """
    return not one_task and table.type == "MERGE_ON_READ" and not table.partition_by


def _newest_stored_order(stored: DataFrame, remembered: Truncation | None, table: TableConfig) -> str:
    """The newest order the table holds: of its stored rows and its remembered truncate. Read once
    for a table whose commits do not record it (`NEWEST_ORDER_KEY`); its next commit records it.

    A hard-delete table has forgotten the orders of its deleted keys: an older event for such a key
    re-creates its row whichever fold takes it (a documented limit), so the mark need not know them.
    """
    row = stored.select(F.max(ORDER)).first()
    newest = max(row[0] if row is not None and row[0] is not None else "", remembered.order if remembered else "")
    log.info("table %s: its newest stored order is %r; its commits record it from now on", table.name, newest)
    return str(newest)


def _newer_than_table(decoded: DecodeResult, schema: StructType, newest: str | None, table: TableConfig) -> bool:
    """Whether every event of the batch is a full image (c, r or u with every column of `schema`)
    newer than `newest`, the newest order the table holds.

    Then no event can be late, a duplicate of a stored one or keep a stored value: each key's
    newest event is its whole row, as in a table's first load (`collapse.first_load`), and the
    stored rows need not be read. One Spark job over the decoded batch, whose checkpoint later
    jobs read anyway.
    """
    if newest is None:
        return False
    eligible = writes_every_column(schema.fieldNames()) & F.col(ORDER).isNotNull()
    # an event that is not eligible (a patch, a delete, a truncate) counts as older than any
    oldest = decoded.events.select(F.min(F.when(eligible, F.col(ORDER)).otherwise(F.lit(""))).alias("o")).first()
    newer = oldest is not None and oldest["o"] is not None and str(oldest["o"]) > newest
    if newer:
        log.info("table %s: every event is a full image newer than its rows; folded without reading them", table.name)
    return newer


def _counted_newer(
    run: _FoldRun, decoded: DecodeResult, changes: DataFrame, schema: StructType, previous: Progress,
    table: TableConfig, newest_stored: str | None,
) -> Folded:  # fmt: skip
    """`_fold_and_count`'s counts of a fold by `_newer_than_table`: one counting job, never a second
    fold. Where the base files name every stored key's file group, the rows take their locations
    from there for the write (after the count, which does not need them)."""
    try:
        labels = _outcome_labels(run, changes, schema, table)
        counted = tally(decoded, watermark=previous.watermark_ts_ms, labels=labels)
    except BaseException:
        release(run.held)
        raise
    located = _base_files_locate(table)
    return Folded(
        rows=_with_base_locations(run.rows, table) if located else run.rows, held=run.held, counted=counted,
        truncation=None, remembered=None, keys_known=False, located=located, newest_stored=newest_stored,
    )  # fmt: skip


def _base_files_locate(table: TableConfig) -> bool:
    """Whether the table's latest base files name the file group of every key it holds
    (`table.read_base_locations`): a table that writes prepped (`prepped.applies`) with the simple
    index, which inserts every new key into a base file. The record-level index may insert a key
    into a log file, which the base files do not show: such a key would be inserted a second time."""
    return prepped.applies(table) and table.index == "simple"


def _with_base_locations(rows: DataFrame, table: TableConfig) -> DataFrame:
    """The folded `rows` with each key's location (`prepped.LOCATION`) read from the table's base
    files, NULL for a key they do not hold (a new key, which the write inserts).

    Why not the stored-row read: on a merge-on-read table it merges the log files of every file
    group it reads, and only the location is needed here, which a key keeps for its life (the
    simple index never moves a key to another file group). Reading the key and location columns
    of the base files is what Hudi's own lookup of the keys reads, without the workload profile an
    upsert that is not prepped builds (docs/performance-journal.md, round 47).
    """
    base = read_base_locations(rows.sparkSession, table.base_path, table.key)
    keys = rows.select(*table.key)
    located = base.join(keys, on=table.key, how="left_semi").select(
        *table.key, prepped.location(base).alias(prepped.LOCATION)
    )
    return rows.drop(prepped.LOCATION).join(located, on=table.key, how="left")


def _count_written(
    folded: Folded, kafka: KafkaRange, previous: Progress, metrics: TableMetrics
) -> tuple[RowCounts, Progress]:
    """Count every event's outcome into `metrics`; what the write will write, and the progress it records."""
    counted = folded.counted
    written = _count_outcomes(counted.labelled, metrics)
    if not folded.keys_known:
        written = replace(written, new_keys=None, unlocated=0 if folded.located else None)
    if folded.truncation is not None:
        metrics.deleted += counted.truncates
    marks, metrics.behind_watermark = _batch_marks(counted, kafka), counted.behind_watermark
    return written, previous.after(counts_of(metrics), marks)


def _commit_metadata(folded: Folded, p: Prepared, progress: Progress, ctx: BatchContext) -> dict[str, str]:
    """What the commit records beside the rows: the batch, its Kafka range, progress, index, source
    types, truncate, and the newest order the table has taken."""
    newest_truncate = max((t for t in (folded.truncation, folded.remembered) if t), key=lambda t: t.order, default=None)
    return commit_metadata(
        job=ctx.config.job.name,
        batch_id=ctx.batch_id,
        kafka=p.received.kafka,
        progress=progress,
        index=index_layout(p.table),
        source_types=source_types_after(p.decoded.schema, p.recorded_sources),
        truncate=asdict(newest_truncate) if newest_truncate else None,
        newest_order=_newest_order_after(folded, p),
    )


def _newest_order_after(folded: Folded, p: Prepared) -> str | None:
    """NEWEST_ORDER_KEY after this commit: the newer of the table's before it and the batch's
    newest event (late ones included: none is newer than what the table holds); None while not known."""
    # a new table holds nothing; one whose commits have not recorded it, what the fold found
    before = "" if p.stored is None else p.committed.get(NEWEST_ORDER_KEY, folded.newest_stored)
    if before is None:
        return None
    return max(before, folded.counted.newest_order or "")


def _write(
    folded: Folded, written: RowCounts, stored_timeline: TableTimeline | None, schema: StructType,
    metadata: dict[str, str], table: TableConfig, metrics: TableMetrics,
) -> None:  # fmt: skip
    """One Hudi commit of the folded rows, with `metadata`; its counts and times into `metrics`.
    `stored_timeline`: the stored table's (None: a new table)."""
    table_exists = stored_timeline is not None
    spark = folded.rows.sparkSession
    began = time.monotonic()
    operation = writer.operation(written, table_exists=table_exists)
    located = prepped.use(table, operation, written.unlocated)
    if written.unlocated:
        log.warning(
            "table %s: %d stored key(s) of this batch were read without Hudi's location; it upserts with an index lookup",
            table.name,
            written.unlocated,
        )
    options = write_options(
        table,
        operation=operation,
        parallelism=spark.sparkContext.defaultParallelism,
        prepped=located,
        # a new table has none to keep: the rule alone decides, without asking the file system
        has_metadata_table=table_exists and keeps_metadata_table(spark, table),
    )
    commit: WriteResult = writer.write(
        rows_to_write(folded.rows, schema, table, located=located),
        table=table.name,
        base_path=table.base_path,
        options=options,
        trailing_columns=trailing_columns(table),
        commit_metadata=metadata,
        counts=written,
        archive_after_hours=table.archive_after_hours,
        timeline=stored_timeline,
    )
    metrics.upserted_rows, metrics.deleted_rows = commit.upserted, commit.deleted
    metrics.commit_time = commit.commit_time
    if commit.commit_time:
        metrics.write = f"{operation}_prepped" if located else operation
        metrics.commit_seconds = time.monotonic() - began
        metrics.committed_at = time.time()


def _stored_for_keys(
    stored: DataFrame | None, changes: DataFrame, schema: StructType, table: TableConfig
) -> DataFrame | None:
    """The stored table as the fold's key lookup reads it: only the files holding `changes`' keys,
    when the table's index can name them (`stored_state.index_lookup_column`), else all."""
    column = index_lookup_column(table, schema)
    if stored is None or column is None:
        return stored
    # the batch's distinct keys, at most one more than the limit: never the batch itself
    keys = [row[0] for row in changes.select(column).distinct().limit(INDEX_LOOKUP_MAX_KEYS + 1).collect()]
    if len(keys) > INDEX_LOOKUP_MAX_KEYS:
        log.info(
            "table %s: more than %d distinct keys; the stored-row read scans the table", table.name, INDEX_LOOKUP_MAX_KEYS
        )
        return stored
    options = key_lookup_options(table)
    return read_keys(changes.sparkSession, table.base_path, column, keys, options, locations=prepped.applies(table))


def _fold(
    changes: DataFrame,
    truncation: Truncation | None,
    stored: DataFrame | None,
    schema: StructType,
    remembered: Truncation | None,
    table: TableConfig,
    *,
    first_load_: bool,
    one_task: bool,
    values: bool = True,
    keys_known: bool = True,
) -> _FoldRun:
    """The fold of `changes` onto their keys' stored rows; checkpointed, for the counts and the
    write both read it (the caller releases `held`).

    `first_load_`: the table holds no row, and the fold assumes every event writes every column
    (`collapse.first_load`, the cheapest exact fold); `_outcome_labels` then labels the events
    that do not, and a batch with any such event is folded again without it. `one_task`: the fold
    runs in one task, with no shuffle (`job.sizing.in_one_task`). `values=False`: the stored rows
    are read without the values of their `value_columns` (`_ValueReads`); `_outcome_labels` then
    labels the folded rows that needed one, and a batch with any is folded again with them.
    """
    if first_load_:
        loaded = first_load(
            events=conform_events(changes, schema), schema=schema, key=table.key, carried=_carried_types(table),
            one_task=one_task,
        )  # fmt: skip
        held = checkpointed(loaded.judged)
        return _FoldRun(
            rows=loaded.rows_of(held), outcomes=loaded.outcomes_of(held), held=held, first_load=True,
            keys_known=keys_known,
        )  # fmt: skip
    every_row = truncation is not None  # a truncate deletes every stored row: the fold sees them all
    lookup = stored if every_row else _stored_for_keys(stored, changes, schema, table)
    values = values or every_row
    stored_rows = touched_rows(lookup, changes, schema, table, every_row=every_row, one_task=one_task, values=values)
    result = fold_table(
        conform_events(changes, schema), stored_rows, schema, table,
        truncation=truncation, remembered=remembered, one_task=one_task,
    )  # fmt: skip
    rows = checkpointed(result.rows)
    return _FoldRun(rows=rows, outcomes=result.outcomes_for(rows), held=rows, first_load=False, values_read=values)


def fold_table(
    events: DataFrame, stored: DataFrame, schema: StructType, table: TableConfig, *,
    truncation: Truncation | None, remembered: Truncation | None, one_task: bool,
) -> FoldResult:  # fmt: skip
    """`collapse.fold` of conformed `events` onto the `stored` rows they touch, keyed by
    `table.key`, with the table's settings (delete mode, partition columns, carried locations)."""
    return fold(
        # only a table that writes prepped needs its rows' locations through the fold
        carried=tuple(_carried_types(table)),
        events=events,
        stored=stored,
        schema=schema,
        key=table.key,
        soft_deletes=table.deletes == "soft",
        truncation=truncation,
        remembered=remembered,
        sticky=frozenset(table.partition_by),
        one_task=one_task,
    )


def _carried_types(table: TableConfig) -> dict[str, str]:
    """The columns the fold carries from stored rows (name -> type): a prepped table's row locations."""
    return {prepped.LOCATION: prepped.LOCATION_TYPE} if prepped.applies(table) else {}


_NOT_FIRST_LOAD = "fold:not-first-load"
"""Label of an event `collapse.first_load` cannot fold (a delete, or a column absent)."""

_STORED_VALUE_KEPT = "fold:stored-value-kept"
"""Label of a folded row that keeps a stored value or last event the fold was read without
(`collapse.keeps_a_stored_value`)."""


class _ValueReads:
    """Which tables' stored rows the fold reads without their values.

    A fold needs a stored row's values only where the row keeps one: a column no event of the
    batch writes newer (a patch, a late event, an image without the column). Where every touched
    key gets a full image newer than its row, as MySQL's full row images give, the key, the
    `_cdc_*` orders and the location are all it needs, and that read of a large table costs 0.64x
    of reading every column, less the wider the table (docs/performance-journal.md, round 45).
    A batch where a row does keep one is folded again with the values, so a table whose batches
    often need them would read twice: after such a batch the table's next `AFTER_A_KEPT_VALUE`
    batches read its values at once. Per process: a restart starts every table without values.
    """

    AFTER_A_KEPT_VALUE = 10

    def __init__(self) -> None:
        self._whole: dict[str, int] = {}
        self._lock = threading.Lock()  # tables are folded in concurrent threads (`job.table_concurrency`)

    def apart(self, table: TableConfig) -> bool:
        """Whether this batch of `table` reads its stored rows without their values."""
        with self._lock:
            left = self._whole.get(table.base_path, 0)
            if left:
                self._whole[table.base_path] = left - 1
            return left == 0

    def note(self, table: TableConfig, *, needed: bool) -> None:
        """Record whether a batch read without values had a row that needed one."""
        if needed:
            with self._lock:
                self._whole[table.base_path] = self.AFTER_A_KEPT_VALUE


VALUE_READS = _ValueReads()


def _outcome_labels(run: _FoldRun, changes: DataFrame, schema: StructType, table: TableConfig) -> DataFrame:
    """A `label` row per event outcome, per folded row's write kind and per new key (`tally` counts
    them); after a first-load fold, also one per event it cannot have folded right (`_NOT_FIRST_LOAD`);
    after a fold without stored values, one per row that needed one (`_STORED_VALUE_KEPT`)."""
    # each folded row labels its write, its key's state and, read without values, whether it kept
    # one (as the first load's check below: counted in the counting job itself): one scan for all
    # without the stored rows (`_newer_than_table`) no key's state is known: none is labelled
    per_row = [write_kind(table), key_state(table)] if run.keys_known else [write_kind(table)]
    if not run.values_read:
        kept = keeps_a_stored_value(schema.fieldNames(), value_columns(schema, table))
        per_row.append(F.when(kept, F.lit(_STORED_VALUE_KEPT)))
    writes = run.rows.select(F.explode(F.array(*per_row)).alias("label"))
    labels = run.outcomes.select(F.col("outcome").alias("label")).unionByName(writes.filter(F.col("label").isNotNull()))
    if not run.first_load or not run.keys_known:
        return labels  # `_newer_than_table` checked that every event writes every column
    # checked in the counting job itself: a separate check would cost a Spark job of its own
    partial = changes.filter(~writes_every_column(schema.fieldNames())).select(F.lit(_NOT_FIRST_LOAD).alias("label"))
    return labels.unionByName(partial)


def _count_labels(labels: DataFrame, *, one_task: bool) -> dict[str, int]:
    if one_task:
        labels = labels.coalesce(1)
    return {row["label"]: int(row["count"]) for row in labels.groupBy("label").count().collect()}


def _count_outcomes(by_label: dict[str, int], metrics: TableMetrics) -> RowCounts:
    """Count every event's outcome into `metrics`, and return what the write will write."""
    for label, count in by_label.items():
        if label not in (UPSERT, DELETE, NEW_KEY, UNLOCATED):
            metrics.add(Outcome(label), count)
    return RowCounts(
        upserted=by_label.get(UPSERT, 0),
        deleted=by_label.get(DELETE, 0),
        new_keys=by_label.get(NEW_KEY, 0),
        unlocated=by_label.get(UNLOCATED, 0),
    )


def _schema_change(
    exc: SchemaChangeError, records: DataFrame, decoded: DecodeResult, table: TableConfig,
    watermark: int | None, metrics: TableMetrics, ctx: BatchContext,
) -> TableMetrics:  # fmt: skip
    """A batch whose columns the table cannot take: the table stops for this batch and every
    record goes to the dead-letter store, none lost. A batch without a change event changes no
    column: its records are counted as they are (skipped, rejected, tombstones)."""
    counted = tally(decoded, watermark=watermark)
    if counted.events == 0:
        _count_unapplied(decoded, counted, metrics, ctx)
        return metrics
    log.error("%s", exc)
    dead_letter(
        raw_as_rejects(records, table=table.name, error_class="SchemaChangeError", message=str(exc)), ctx
    )
    return TableMetrics(
        table=table.name, read=metrics.read, dead_letter=metrics.read, error=str(exc),
        dead_letters_by_class={"SchemaChangeError": metrics.read}, applied_through=metrics.applied_through,
    )  # fmt: skip


def _as_json(records: DataFrame, table: TableConfig, ctx: BatchContext) -> DataFrame:
    """The table's records with Avro values/keys rewritten as the JSON path reads them."""
    registry = ctx.config.schema_registry
    if not uses_avro(table) or registry is None:  # config validation requires a registry for Avro tables
        return records
    # the envelope columns describe the Avro bytes: decode finds the JSON's own
    return avro_as_json(records.drop(*ENVELOPE_COLUMNS), table, fetcher_for(registry))


def _count_unapplied(decoded: DecodeResult, counted: DecodedTally, metrics: TableMetrics, ctx: BatchContext) -> None:
    """Count skipped records; dead-letter and count rejects."""
    metrics.skipped = counted.skipped
    if metrics.skipped:
        log.info(
            "table %s: skipped %d record(s) without a row change (%s)",
            metrics.table,
            metrics.skipped,
            ", ".join(counted.skip_reasons),
        )
    metrics.dead_letters_by_class = dict(counted.rejects_by_class)
    metrics.dead_letter = sum(metrics.dead_letters_by_class.values())
    if metrics.dead_letter:
        dead_letter(decoded.rejects, ctx)


def _committed_already(committed: dict[str, str], kafka: KafkaRange, ctx: BatchContext) -> bool:
    """Is the table's newest commit this very batch (Hudi committed it, then the job died before
    Spark's checkpoint moved, so Spark replays it)?"""
    return (
        committed.get(BATCH_KEY) == str(ctx.batch_id)
        and committed.get(JOB_KEY) == ctx.config.job.name
        and kafka.is_range_of(committed)
    )


def _as_committed(
    table: TableConfig, committed: dict[str, str], kafka: KafkaRange, ctx: BatchContext
) -> TableMetrics:
    """The counts of the commit that already applied this batch; nothing is applied or counted twice."""
    progress = Progress.from_metadata(committed)
    log.info("table %s: batch %d was committed before a restart; not applied again", table.name, ctx.batch_id)
    metrics = TableMetrics(
        table=table.name, replayed=True, watermark_ts_ms=progress.watermark_ts_ms, applied_through=kafka.last
    )
    for name, count in progress.counts.items():
        if name in COUNTED:
            setattr(metrics, name, count)
    return metrics


def _batch_marks(counted: DecodedTally, kafka: KafkaRange) -> dict[str, dict[str, Mark]]:
    """Per topic partition, the newest source time of the batch's events and its last offset."""
    return {
        topic: {p: Mark(ts_ms=counted.newest_ts_ms.get((topic, p)), offset=last) for p, last in partitions.items()}
        for topic, partitions in kafka.last.items()
    }


def without_truncates(events: DataFrame) -> DataFrame:
    """The row changes among `events`: truncates become a table-wide delete (`truncation_of`), or are ignored."""
    return events.filter(F.col(OP) != Op.TRUNCATE.value)


def truncation_of(counted: DecodedTally, table: TableConfig) -> tuple[Truncation | None, int]:
    """The batch's newest truncate, applied as a table-wide delete; or none, and how many were ignored."""
    newest = counted.newest_truncate
    if newest is None:
        return None, 0
    if table.truncate == "ignore":
        log.warning("table %s: ignored %d truncate event(s) (truncate: ignore)", table.name, counted.truncates)
        return None, counted.truncates
    return newest, 0
