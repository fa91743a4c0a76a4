"""run_batch(): the only module that knows the order of the steps.

decode -> schema_check -> collapse -> merge -> hudi/writer (+ offsets) -> metrics,
with rejects branching to dead_letter at decode. Each table is handled on its own: a table
that must stop (incompatible schema) sends its records to the dead-letter store and the
other tables keep flowing.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, replace
from typing import TypeVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from pyspark.util import inheritable_thread_target

from hudi_cdc import dead_letter
from hudi_cdc.avro.registry import fetcher_for
from hudi_cdc.avro.wire import avro_as_json, uses_avro
from hudi_cdc.collapse import FoldResult, Truncation, fold
from hudi_cdc.config import Config, TableConfig
from hudi_cdc.decode import ENVELOPE_COLUMNS, DecodeResult, decode, with_envelope
from hudi_cdc.errors import CdcError, RelayoutError, SchemaChangeError, TableFailure
from hudi_cdc.events import OP, Op, Outcome
from hudi_cdc.failures import environment_fault, held_by_a_fresh_heartbeat
from hudi_cdc.hudi import prepped, relayout, timeline, writer
from hudi_cdc.hudi.options import (
    heartbeat_expiry_seconds,
    index_layout,
    key_lookup_options,
    trailing_columns,
    write_options,
)
from hudi_cdc.hudi.table import read_keys, read_table
from hudi_cdc.hudi.writer import RowCounts
from hudi_cdc.lineage import checkpointed, release
from hudi_cdc.merge import DELETE, NEW_KEY, UNLOCATED, UPSERT, key_state, rows_to_write, write_kind
from hudi_cdc.metrics import COUNTED, BatchMetrics, TableMetrics
from hudi_cdc.offsets import (
    BATCH_KEY,
    JOB_KEY,
    SOURCE_TYPES_KEY,
    TRUNCATE_KEY,
    KafkaRange,
    commit_metadata,
    first_offsets,
)
from hudi_cdc.progress import Mark, Progress, counts_of
from hudi_cdc.routing import TABLE_COLUMN, route
from hudi_cdc.schema_check import check, source_types_after
from hudi_cdc.spark_session import error_summary
from hudi_cdc.stored_state import (
    INDEX_LOOKUP_MAX_KEYS,
    conform_events,
    data_schema,
    index_lookup_column,
    touched_rows,
)
from hudi_cdc.tally import DecodedTally, TableRecords, survey, survey_table, tally

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

MAX_ISOLATED_RECORDS = 20
"""Records a table may lose to failure isolation in one batch before the job stops instead."""
HEARTBEAT_WAIT_MARGIN_SECONDS = 30.0
"""How long past the heartbeat's expiry (`options.heartbeat_expiry_seconds`: 120 s by Hudi's
defaults) a table's batch keeps waiting for a killed predecessor's pending instant before it stops."""
HEARTBEAT_POLL_SECONDS = 15.0
"""How often a batch refused for a fresh heartbeat is tried again."""


@dataclass(frozen=True)
class BatchContext:
    """What every step of one batch may need to know."""

    config: Config
    batch_id: int


def run_batch(raw: DataFrame, ctx: BatchContext) -> BatchMetrics:
    """Apply one micro-batch of Kafka records (Spark Kafka source rows) to every routed table."""
    started = time.monotonic()
    metrics = BatchMetrics(batch_id=ctx.batch_id)
    # JSON values' envelope parts are found once, as the batch is read, for the survey and decode
    json_tables = [t.name for t in ctx.config.tables if not uses_avro(t)]
    read_envelope = F.col(TABLE_COLUMN).isin(*json_tables) if json_tables else F.lit(False)
    routed = with_envelope(route(raw, ctx.config), read_envelope).persist()
    try:
        # tables typed by their JSON envelopes: the survey finds their schemas for decode
        enveloped = [t.name for t in ctx.config.tables if t.mode != "patch" and not uses_avro(t)]
        received = survey(routed, schemas_of=enveloped)
        metrics.first_read = first_offsets(r.kafka for r in received.values())
        unrouted = received.pop(None, None)
        metrics.unrouted = unrouted.read if unrouted else 0
        if metrics.unrouted:
            _dead_letter(
                dead_letter.raw_as_rejects(
                    routed.filter(F.col(TABLE_COLUMN).isNull()),
                    table=None,
                    error_class="UnroutedTopic",
                    message="no route maps this topic to a table; add a `routes` entry or narrow the subscription",
                ),
                ctx,
            )
        present = [table for table in ctx.config.tables if table.name in received]

        def one_table(table: TableConfig) -> TableMetrics:
            records = routed.filter(F.col(TABLE_COLUMN) == table.name).drop(TABLE_COLUMN)
            return _run_table_isolating(records, received[table.name], table, ctx)

        metrics.tables.extend(each_table(one_table, present, ctx.config.job.table_concurrency))
    finally:
        routed.unpersist()
    metrics.seconds = time.monotonic() - started
    return metrics


def each_table(apply: Callable[[T], R], tables: list[T], concurrency: int) -> list[R]:
    """`apply` to every table, at most `concurrency` at once, results in table order.

    Why threads: a table's batch is mostly driver work (planning, Hudi's commit) waiting on
    Spark jobs; while one table plans, another's tasks use the executors, and Spark schedules
    the jobs of concurrent threads side by side. A failure is raised once every started table
    has finished, so no table's commit is cut off halfway.
    """
    if concurrency <= 1 or len(tables) <= 1:
        return [apply(table) for table in tables]
    with ThreadPoolExecutor(max_workers=min(concurrency, len(tables)), thread_name_prefix="hudi-cdc-table") as pool:
        # each table's thread gets its own copy of this thread's Spark local properties (job group,
        # scheduler pool): wrapping clones them, so one wrap per table
        futures = [pool.submit(inheritable_thread_target(apply), table) for table in tables]
        wait(futures)
    return [future.result() for future in futures]


def _run_table_isolating(
    records: DataFrame, received: TableRecords, table: TableConfig, ctx: BatchContext
) -> TableMetrics:
    """Apply one table's records; a failure tied to some records never stops the table.

    A record can break a Spark job in ways decoding did not foresee (an expression that throws on
    one value). Retrying the batch would fail forever (a poison pill), so the records are split
    in halves until each failing record stands alone; those are dead-lettered with the error
    (`error_class` BatchFailure) and the rest is committed. Transient and configuration errors
    are raised, and so is the original error once more than MAX_ISOLATED_RECORDS records fail
    alone: that is no longer a bad record but a broken job, and Kafka keeps the batch. A failure
    of the table, its storage or Kafka (failures.py) is raised as TableFailure before any split:
    every part would fail alike.
    """
    try:
        return _run_table_waiting(records, received, table, ctx)
    except CdcError:
        raise  # configuration or an unavailable service: not the fault of a record
    except Exception as first:
        _raise_if_environment_fault(first, received, table, ctx)
        log.warning(
            "table %s: batch %d failed (%s); splitting it to isolate the records that fail",
            table.name,
            ctx.batch_id,
            error_summary(first),
        )
        return _isolate(records.persist(), table, ctx, first)


def _run_table_waiting(records: DataFrame, received: TableRecords, table: TableConfig, ctx: BatchContext) -> TableMetrics:
    """`_run_table`, tried again while Hudi waits for a killed run's heartbeat to expire
    (`failures.held_by_a_fresh_heartbeat`): at most the table's heartbeat expiry plus
    HEARTBEAT_WAIT_MARGIN_SECONDS from the first try, the tries' own time included; past that,
    another writer really runs."""
    deadline = time.monotonic() + heartbeat_expiry_seconds(table) + HEARTBEAT_WAIT_MARGIN_SECONDS
    while True:
        try:
            return _run_table(records, received, table, ctx)
        except CdcError:
            raise
        except Exception as exc:
            if time.monotonic() >= deadline or not held_by_a_fresh_heartbeat(exc):
                raise
            log.warning(
                "table %s: batch %d: Hudi waits for the heartbeat of a pending instant of an earlier run "
                "(killed moments ago?) to expire; trying again in %.0f s",
                table.name, ctx.batch_id, HEARTBEAT_POLL_SECONDS,
            )  # fmt: skip
            time.sleep(HEARTBEAT_POLL_SECONDS)


def _isolate(records: DataFrame, table: TableConfig, ctx: BatchContext, first: Exception) -> TableMetrics:
    metrics = TableMetrics(table=table.name)
    pending = [records]
    try:
        while pending:
            part = pending.pop()
            if part.isEmpty():
                continue
            received = survey_table(part, table.name)
            n = received.read
            try:
                metrics.absorb(_run_table(part, received, table, ctx))
                continue
            except CdcError:
                raise
            except Exception as exc:
                _raise_if_environment_fault(exc, received, table, ctx)
                if n > 1:
                    pending.extend(reversed(_halves(part)))
                    continue
                if metrics.isolated >= MAX_ISOLATED_RECORDS:
                    raise first from exc
                _dead_letter(
                    dead_letter.raw_as_rejects(
                        part,
                        table=table.name,
                        error_class="BatchFailure",
                        message=f"this record alone fails the batch: {error_summary(exc)}; "
                        "it was isolated so the rest of the batch could be committed",
                    ),
                    ctx,
                )
                metrics.absorb(
                    TableMetrics(table=table.name, read=1, dead_letter=1, isolated=1,
                                 dead_letters_by_class={"BatchFailure": 1})
                )  # fmt: skip
    finally:
        records.unpersist()
    log.warning(
        "table %s: batch %d: %d record(s) isolated to the dead-letter store",
        table.name,
        ctx.batch_id,
        metrics.isolated,
    )
    return metrics


def _raise_if_environment_fault(exc: Exception, received: TableRecords, table: TableConfig, ctx: BatchContext) -> None:
    """Raise TableFailure when `exc` is a failure of the table, its storage or Kafka, not a record's."""
    reason = environment_fault(exc)
    if reason is None:
        return
    failure = TableFailure(
        table.name,
        batch_id=ctx.batch_id,
        positions=received.kafka.describe(),
        reason=reason,
        error=error_summary(exc),
    )
    log.error("%s", failure)
    raise failure from exc


def _halves(part: DataFrame) -> list[DataFrame]:
    """Split records in two by Kafka position: by (topic, partition) when several, else by offset."""
    bounds = (
        part.groupBy("topic", "partition")
        .agg(F.min("offset").alias("lo"), F.max("offset").alias("hi"))
        .collect()
    )
    bounds.sort(key=lambda b: (b["topic"], b["partition"]))
    if len(bounds) > 1:
        first = bounds[: len(bounds) // 2]
        in_first = F.lit(False)
        for b in first:
            in_first = in_first | ((F.col("topic") == b["topic"]) & (F.col("partition") == b["partition"]))
        return [part.filter(in_first), part.filter(~in_first)]
    middle = (int(bounds[0]["lo"]) + int(bounds[0]["hi"])) // 2
    return [part.filter(F.col("offset") <= middle), part.filter(F.col("offset") > middle)]


def _run_table(records: DataFrame, received: TableRecords, table: TableConfig, ctx: BatchContext) -> TableMetrics:
    """decode -> schema check -> fold -> write, for one table's records of the batch."""
    spark = records.sparkSession
    stored = read_table(spark, table.base_path, locations=prepped.applies(table))
    if stored is None and (problem := relayout.unfinished(spark, table)):
        raise RelayoutError(problem)
    committed = timeline.latest_job_metadata(spark, table.base_path) if stored is not None else {}
    read, kafka = received.read, received.kafka
    if _committed_already(committed, kafka, ctx):
        return _as_committed(table, committed, kafka, ctx)
    previous = Progress.from_metadata(committed)
    metrics = TableMetrics(
        table=table.name, read=read, watermark_ts_ms=previous.watermark_ts_ms, applied_through=kafka.last
    )
    metrics.tombstone = received.tombstones
    if received.tombstones == read:
        return metrics  # tombstones only: nothing to decode
    columns = data_schema(stored)
    decoded = decode(_as_json(records, table, ctx), table, envelopes=received.envelopes, stored=columns).cached()
    folded: DataFrame | None = None
    # None until a commit records them (a new table, or one written before they were recorded)
    recorded_sources = json.loads(committed[SOURCE_TYPES_KEY]) if SOURCE_TYPES_KEY in committed else None
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
        remembered = Truncation(**json.loads(committed[TRUNCATE_KEY])) if TRUNCATE_KEY in committed else None
        # Folded first, counted after: one Spark job counts both the decoded batch and the fold's
        # outcomes. The fold assumes the batch truncates nothing, which that count then confirms.
        changes = _without_truncates(decoded.events)
        folded, result = _fold(changes, None, stored, schema, remembered, table)
        counted = tally(decoded, watermark=previous.watermark_ts_ms, labels=_outcome_labels(result, folded, table))
        truncation, metrics.truncate_ignored = _truncation(counted, table)
        if truncation is not None:  # rare: fold again, every stored row deleted up to the truncate
            release(folded)
            folded, result = _fold(changes, truncation, stored, schema, remembered, table)
            counted = replace(counted, labelled=_count_labels(_outcome_labels(result, folded, table)))
        _count_unapplied(decoded, counted, metrics, ctx)
        if counted.events == 0:
            return metrics  # tombstones, skipped or rejected records only: nothing to write
        written = _count_outcomes(counted.labelled, metrics)
        if truncation is not None:
            metrics.deleted += counted.truncates
        newest_truncate = max((t for t in (truncation, remembered) if t), key=lambda t: t.order, default=None)
        marks, metrics.behind_watermark = _batch_marks(counted, kafka), counted.behind_watermark
        progress = previous.after(counts_of(metrics), marks)
        began = time.monotonic()
        operation = writer.operation(written, table_exists=stored is not None)
        located = prepped.use(table, operation, written.unlocated)
        if written.unlocated:
            log.warning(
                "table %s: %d stored key(s) of this batch were read without Hudi's location; it upserts with an index lookup",
                table.name,
                written.unlocated,
            )
        commit = writer.write(
            rows_to_write(folded, schema, table, located=located),
            table=table.name,
            base_path=table.base_path,
            options=write_options(
                table, operation=operation, parallelism=spark.sparkContext.defaultParallelism, prepped=located
            ),
            trailing_columns=trailing_columns(table),
            commit_metadata=commit_metadata(
                job=ctx.config.job.name,
                batch_id=ctx.batch_id,
                kafka=kafka,
                progress=progress,
                index=index_layout(table),
                source_types=source_types_after(decoded.schema, recorded_sources),
                truncate=asdict(newest_truncate) if newest_truncate else None,
            ),
            counts=written,
        )
        metrics.upserted_rows, metrics.deleted_rows = commit.upserted, commit.deleted
        metrics.commit_time = commit.commit_time
        if commit.commit_time:
            metrics.write = f"{operation}_prepped" if located else operation
            metrics.watermark_ts_ms = progress.watermark_ts_ms
            metrics.commit_seconds = time.monotonic() - began
            metrics.committed_at = time.time()
        return metrics
    finally:
        release(decoded.parsed)
        if folded is not None:
            release(folded)


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
) -> tuple[DataFrame, FoldResult]:
    """The fold of `changes` onto their keys' stored rows; its rows checkpointed, for the counts
    and the write both read them (the caller releases them)."""
    every_row = truncation is not None  # a truncate deletes every stored row: the fold sees them all
    lookup = stored if every_row else _stored_for_keys(stored, changes, schema, table)
    result = fold(
        # only a table that writes prepped needs its rows' locations through the fold
        carried=(prepped.LOCATION,) if prepped.applies(table) else (),
        events=conform_events(changes, schema),
        stored=touched_rows(lookup, changes, schema, table, every_row=every_row),
        schema=schema,
        key=table.key,
        soft_deletes=table.deletes == "soft",
        truncation=truncation,
        remembered=remembered,
        sticky=frozenset(table.partition_by),
    )
    return checkpointed(result.rows), result


def _outcome_labels(result: FoldResult, folded: DataFrame, table: TableConfig) -> DataFrame:
    """A `label` row per event outcome, per folded row's write kind and per new key (`tally` counts them)."""
    # each folded row labels its write and its key's state: one scan of the fold for both
    writes = folded.select(F.explode(F.array(write_kind(table), key_state(table))).alias("label"))
    return result.outcomes_for(folded).select(F.col("outcome").alias("label")).unionByName(
        writes.filter(F.col("label").isNotNull())
    )


def _count_labels(labels: DataFrame) -> dict[str, int]:
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
    _dead_letter(
        dead_letter.raw_as_rejects(records, table=table.name, error_class="SchemaChangeError", message=str(exc)), ctx
    )
    return TableMetrics(
        table=table.name, read=metrics.read, dead_letter=metrics.read, error=str(exc),
        dead_letters_by_class={"SchemaChangeError": metrics.read}, applied_through=metrics.applied_through,
    )  # fmt: skip


def _as_json(records: DataFrame, table: TableConfig, ctx: BatchContext) -> DataFrame:
    """The table's records with Avro values/keys rewritten as the JSON path reads them (issue 13)."""
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
        _dead_letter(decoded.rejects, ctx)


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


_DEAD_LETTER_WRITES = threading.Lock()
"""Concurrent tables append to one dead-letter folder; Spark's file commit is not safe for two at once."""


def _dead_letter(rejects: DataFrame, ctx: BatchContext) -> None:
    with _DEAD_LETTER_WRITES:
        dead_letter.store(
            rejects, path=ctx.config.job.dead_letter_path, job=ctx.config.job.name, batch_id=ctx.batch_id
        )


def _without_truncates(events: DataFrame) -> DataFrame:
    """The row changes among `events`: truncates become a table-wide delete (`_truncation`), or are ignored."""
    return events.filter(F.col(OP) != Op.TRUNCATE.value)


def _truncation(counted: DecodedTally, table: TableConfig) -> tuple[Truncation | None, int]:
    """The batch's newest truncate, applied as a table-wide delete; or none, and how many were ignored."""
    newest = counted.newest_truncate
    if newest is None:
        return None, 0
    if table.truncate == "ignore":
        log.warning("table %s: ignored %d truncate event(s) (truncate: ignore)", table.name, counted.truncates)
        return None, counted.truncates
    return newest, 0
