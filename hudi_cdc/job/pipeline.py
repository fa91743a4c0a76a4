"""run_batch(): the only module that knows the order of a batch's steps over every table.

Kafka rows -> routed to tables -> surveyed (counts, envelopes) -> unrouted records dead-lettered ->
small tables that fold alike prepared and folded as one, a part per table thread (`job/table_group.py`) ->
each table's batch (`job/table_batch.py`: decode -> schema check -> fold -> count -> write), inside
failure isolation (`job/isolation.py`), tables side by side -> BatchMetrics. A table that must stop
(incompatible schema) sends its records to the dead-letter store and the other tables keep flowing.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.util import inheritable_thread_target

from hudi_cdc.avro.wire import uses_avro
from hudi_cdc.commit.metrics import BatchMetrics, TableMetrics
from hudi_cdc.commit.offsets import first_offsets
from hudi_cdc.config.models import TableConfig
from hudi_cdc.dead_letters.store import raw_as_rejects
from hudi_cdc.decode.envelope import KNOWN, sampled_schemas, with_envelope, with_schema_text
from hudi_cdc.errors import CdcError, KeyColumnsMissing, TableFailure
from hudi_cdc.fold.tally import TableRecords, survey, survey_table
from hudi_cdc.job.catalog import Unmade
from hudi_cdc.job.context import BatchContext, dead_letter
from hudi_cdc.job.isolation import apply_isolating
from hudi_cdc.job.sizing import tasks_for
from hudi_cdc.job.table_batch import Prepared, apply_table, complete, prepare
from hudi_cdc.job.table_group import GroupFold, candidates, fold_together, groups_of, parts
from hudi_cdc.kafka.routing import TABLE_COLUMN, route, templated_topic, unrouted_reason
from hudi_cdc.kafka.source import kafka_range
from hudi_cdc.spark.lineage import release
from hudi_cdc.spark.session import error_summary

__all__ = ["BatchContext", "catch_up", "each_table", "oldest_first", "run_batch"]

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


def run_batch(raw: DataFrame, ctx: BatchContext) -> BatchMetrics:
    """Apply one micro-batch of Kafka records (Spark Kafka source rows) to every routed table."""
    started = time.monotonic()
    metrics = BatchMetrics(batch_id=ctx.batch_id)
    # JSON values' envelope parts are found once, as the batch is read, for the survey and decode
    json_tables = [t.name for t in ctx.config.tables if not uses_avro(t)]
    read_envelope = F.col(TABLE_COLUMN).isin(*json_tables) if json_tables else F.lit(False)
    json_templates = [t for t in ctx.config.templates if not uses_avro(t.sample())]
    if json_templates:  # tables a template makes in this batch read theirs too
        read_envelope = read_envelope | (F.col(TABLE_COLUMN).isNotNull() & templated_topic(json_templates))
    # records whose schema an earlier batch showed are split by bytes, the rest parsed
    routed = route(raw, ctx.config)
    known: Mapping[str, Sequence[str]] = KNOWN.by_table()
    if (json_tables or json_templates) and KNOWN.sample_now():
        known = sampled_schemas(routed, read_envelope, TABLE_COLUMN)
    routed = with_envelope(routed, read_envelope, known=known, table_column=TABLE_COLUMN).persist()
    try:
        # tables typed by their JSON envelopes: the survey finds their schemas for decode
        enveloped = [t.name for t in ctx.config.tables if t.mode != "patch" and not uses_avro(t)]
        received = survey(routed, schemas_of=enveloped, split_by=known)
        KNOWN.learn({name: r.envelopes for name, r in received.items() if name is not None and r.envelopes})
        metrics.first_read = first_offsets(r.kafka for r in received.values())
        unrouted = received.pop(None, None)
        metrics.unrouted = unrouted.read if unrouted else 0
        if metrics.unrouted:
            dead_letter(
                raw_as_rejects(
                    routed.filter(F.col(TABLE_COLUMN).isNull()),
                    table=None,
                    error_class="UnroutedTopic",
                    message=unrouted_reason(ctx.config),
                ),
                ctx,
            )
        tables = {t.name: t for t in ctx.config.tables}
        tables.update(_made_tables([n for n in received if n not in tables], routed, received, ctx))
        parked = {p.table for p in ctx.parking.parked()} if ctx.parking is not None else set()
        parked_now: list[TableFailure | KeyColumnsMissing] = []  # list.append is atomic: tables may run in threads
        present = [table for name, table in tables.items() if name in received or name in parked]

        def records_of(name: str) -> DataFrame:
            batch = received[name]
            records = routed.filter(F.col(TABLE_COLUMN) == name).drop(TABLE_COLUMN).coalesce(tasks_for(batch.read))
            return with_schema_text(records, known.get(name, ()))

        def one_table(table: TableConfig) -> TableMetrics:
            batch = received.get(table.name)
            if ctx.parking is not None and ctx.parking.get(table.name) is not None:
                with ctx.parking.handling():
                    if ctx.parking.get(table.name) is not None:  # not caught up meanwhile
                        return _parked_table(table, batch, ctx)
            if batch is None:
                return TableMetrics(table=table.name)  # caught up meanwhile, nothing in this batch
            try:
                return apply_isolating(resume, records_of(table.name), batch, table, ctx)
            except (TableFailure, KeyColumnsMissing) as failure:
                kafka = isinstance(failure, TableFailure) and failure.kafka
                if ctx.parking is None or kafka or ctx.config.job.on_table_failure == "stop":
                    raise
                ctx.parking.park(failure, batch.kafka, batch.read)
                parked_now.append(failure)
                return TableMetrics(table=table.name, parked=batch.read, error=f"parked: {_first_line(failure.cause)}")

        ordered = oldest_first(present, received)
        small = candidates(ordered, received, parked=parked) if ctx.config.job.fold_together else []
        units = _units(ordered, parts(small, ctx.config.job.table_concurrency) if len(small) > 1 else [])
        ready: dict[str, _Ready] = {}  # each part's tables' states; parts write disjoint keys

        def resume(records: DataFrame, batch: TableRecords, table: TableConfig, ctx: BatchContext) -> TableMetrics:
            # the state `_folded_together` left, once: a retry, or a part of a split batch, starts over
            state = ready.pop(table.name, None)
            if state is None:
                return apply_table(records, batch, table, ctx)
            if isinstance(state, TableMetrics):
                return state
            prepared, group = state
            return complete(prepared, ctx, group.folded_for(prepared) if group is not None else None)

        def one_unit(unit: list[TableConfig]) -> list[TableMetrics]:
            if len(unit) == 1:
                return [one_table(unit[0])]
            states, shared = _folded_together(unit, records_of, received, ctx)
            ready.update(states)
            try:
                return [one_table(table) for table in unit]
            finally:
                for group in shared:
                    group.release()
                for table in unit:  # a state left by a table that never ran (a failure stopped the batch)
                    state = ready.pop(table.name, None)
                    if isinstance(state, tuple):
                        release(state[0].decoded.parsed)

        results = each_table(one_unit, units, ctx.config.job.table_concurrency)
        applied = {t.name: m for unit, done in zip(units, results, strict=True) for t, m in zip(unit, done, strict=True)}
        metrics.tables.extend(applied[t.name] for t in present)  # reported in the job's table order
    finally:
        routed.unpersist()
    if ctx.parking is not None:
        # before the batch returns, so before Spark records its offsets: a parked table's records
        # are only skipped once the lot says where they start
        try:
            ctx.parking.save()
        except Exception as exc:
            if parked_now:  # the checkpoint's storage fails too (one lake): stop, Kafka keeps the batch
                raise parked_now[0] from exc
            raise
        metrics.parked = {p.table: p.backlog for p in ctx.parking.parked()}
    metrics.seconds = time.monotonic() - started
    return metrics


_Ready = TableMetrics | tuple[Prepared, GroupFold | None]
"""A table's batch as `_folded_together` left it: done (nothing to fold), or prepared, with the
group whose shared fold holds its rows (None: it folds alone)."""


def _folded_together(
    tables: Sequence[TableConfig], records_of: Callable[[str], DataFrame], received: Mapping[str | None, TableRecords],
    ctx: BatchContext,
) -> tuple[dict[str, _Ready], list[GroupFold]]:  # fmt: skip
    """Prepare the batches of small `tables` (a part), then fold those that fold alike as one (`job.table_group`).

    A table whose preparation fails is left out: its own path (`apply_table` under failure
    isolation) meets the failure again and handles it as for any table. A group whose fold fails
    leaves each of its tables to fold on its own.
    """
    if len(tables) < 2:
        return {}, []

    def prepared_or_none(table: TableConfig) -> Prepared | TableMetrics | None:
        try:
            return prepare(records_of(table.name), received[table.name], table, ctx)
        except Exception as exc:
            log.info("table %s: not folded with others (%s); it takes its own path", table.name, error_summary(exc))
            return None

    states = [prepared_or_none(table) for table in tables]  # on the part's own table thread
    ready: dict[str, _Ready] = {}
    for table, state in zip(tables, states, strict=True):
        if state is not None:
            ready[table.name] = state if isinstance(state, TableMetrics) else (state, None)
    shared: list[GroupFold] = []
    for group in groups_of([s for s in states if isinstance(s, Prepared)]):
        names = [p.table.name for p in group]
        try:
            together = fold_together(group)
        except Exception as exc:
            log.warning("tables %s: folding them as one failed (%s); each folds on its own", names, error_summary(exc))
            continue
        shared.append(together)
        for p in group:
            ready[p.table.name] = (p, together)
        log.debug("tables %s folded as one", names)
    return ready, shared


def _units(ordered: Sequence[TableConfig], cut: Sequence[list[TableConfig]]) -> list[list[TableConfig]]:
    """The batch's work for the table threads, in `ordered`'s order: each part of `cut` (`table_group.parts`)
    as one unit where its first table stands, every other table as a unit of its own."""
    part_of = {table.name: i for i, part in enumerate(cut) for table in part}
    units: list[list[TableConfig]] = []
    placed: set[int] = set()
    for table in ordered:
        i = part_of.get(table.name)
        if i is None:
            units.append([table])
        elif i not in placed:
            placed.add(i)
            units.append(cut[i])
    return units


def catch_up(table: TableConfig, ctx: BatchContext) -> TableMetrics | None:
    """Try parked `table` again when it is due: read what it has not applied from Kafka and apply it.

    None when it is not parked or not due. On success the table leaves the lot; on a failure it
    stays parked with the new cause and a longer wait. Needs `ctx.parking`.
    """
    lot = ctx.parking
    assert lot is not None, "catch_up needs a parking lot"
    with lot.handling():
        parked = lot.get(table.name)
        if parked is None or not lot.due(table.name):
            return None
        log.info("table %s: catching up %s", table.name, parked.pending.describe())
        try:
            records = kafka_range(lot.spark, ctx.config, parked.pending)
            received = survey_table(records, table.name)
            metrics = apply_isolating(apply_table, records, received, table, ctx)
        except (TableFailure, KeyColumnsMissing) as failure:
            lot.failed_again(failure)
            return TableMetrics(table=table.name, error=f"parked: {_first_line(failure.cause)}")
        except CdcError:
            raise
        except Exception as exc:  # its records could not be read again (Kafka deleted them?)
            unread = TableFailure(
                table.name, batch_id=ctx.batch_id, positions=parked.pending.describe(),
                reason="its records could not be read again from Kafka", error=error_summary(exc), kafka=True,
            )  # fmt: skip
            lot.failed_again(unread)
            return TableMetrics(table=table.name, error=f"parked: {unread.reason}")
        lot.release(table.name)
        return metrics


def _parked_table(table: TableConfig, batch: TableRecords | None, ctx: BatchContext) -> TableMetrics:
    """A parked table in a batch: its records set aside, then a catch-up when one is due (that
    includes them: nothing newer than what the table missed is ever applied first)."""
    assert ctx.parking is not None
    if batch is not None:
        ctx.parking.hold(table.name, batch.kafka, batch.read)
    caught = catch_up(table, ctx)
    if caught is not None and caught.error is None:
        return caught
    parked = ctx.parking.get(table.name)
    reason = _first_line(parked.cause) if parked is not None else "parked"
    metrics = caught or TableMetrics(table=table.name, error=f"parked: {reason}")
    metrics.parked = batch.read if batch is not None else 0
    return metrics


def _made_tables(
    names: list[str | None], routed: DataFrame, received: dict[str | None, TableRecords], ctx: BatchContext
) -> dict[str, TableConfig]:
    """The tables templates name for the first time in this batch, made; the records of those that
    cannot be made are dead-lettered (`TableNotMade`, with why) and left out."""
    made: dict[str, TableConfig] = {}
    for name in names:
        if name is None:
            continue
        try:
            if ctx.catalog is None:
                raise Unmade(
                    f"table {name!r} is not made here (only a running job makes tables); run the job first"
                )
            made[name] = ctx.catalog.make(name, list(received[name].kafka.first), routed)
        except Unmade as exc:
            log.error("topic(s) %s: %s", sorted(received[name].kafka.first), exc)
            records = routed.filter(F.col(TABLE_COLUMN) == name)
            dead_letter(
                raw_as_rejects(records, table=name, error_class="TableNotMade", message=str(exc)), ctx
            )
            received.pop(name)
    if made and ctx.catalog is not None:
        ctx.catalog.save()
    return made


def oldest_first(tables: Sequence[TableConfig], received: Mapping[str | None, TableRecords]) -> list[TableConfig]:
    """`tables` in the order a batch applies them: the one whose oldest record waited longest
    first; tables without a timestamped record in the batch (a parked table's catch-up) last;
    ties in `tables`' order.

    Why: a record waits for the batch running when it arrived and then for its table's turn in
    the next one. In a fixed order the last tables wait out a whole second batch, every time,
    and p95 freshness is about two batches. Oldest first, a record that waited long for its
    batch to start is applied early in it, and one that arrived just before the cut waits for
    the rest: the waits even out at the same CPU (docs/performance-journal.md, round 30).
    """

    def waited(indexed: tuple[int, TableConfig]) -> tuple[bool, dt.datetime, int]:
        index, table = indexed
        batch = received.get(table.name)
        oldest = batch.oldest if batch is not None else None
        return (oldest is None, oldest or dt.datetime.min, index)

    return [table for _, table in sorted(enumerate(tables), key=waited)]


def _first_line(text: str) -> str:
    return text.partition("\n")[0]


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
