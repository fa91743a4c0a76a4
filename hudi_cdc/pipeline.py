"""run_batch(): the only module that knows the order of the steps.

decode -> schema_check -> collapse -> merge -> hudi/writer (+ offsets) -> metrics,
with rejects branching to dead_letter at decode. Each table is handled on its own: a table
that must stop (incompatible schema) sends its records to the dead-letter store and the
other tables keep flowing.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from hudi_cdc import dead_letter
from hudi_cdc.collapse import Truncation, fold
from hudi_cdc.config import Config, TableConfig
from hudi_cdc.decode import decode
from hudi_cdc.errors import SchemaChangeError
from hudi_cdc.events import COLUMN_ORDERS, DELETED, OP, ORDER, SOURCE, TS_MS, Op
from hudi_cdc.hudi import writer
from hudi_cdc.hudi.hive_sync import MetastoreSync
from hudi_cdc.hudi.options import write_options
from hudi_cdc.hudi.table import read_table
from hudi_cdc.merge import rows_to_write, stored_columns
from hudi_cdc.metrics import BatchMetrics, TableMetrics
from hudi_cdc.offsets import batch_positions, commit_metadata
from hudi_cdc.routing import TABLE_COLUMN, route
from hudi_cdc.schema_check import check

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchContext:
    """What every step of one batch may need to know."""

    config: Config
    batch_id: int
    metastore: MetastoreSync | None = None
    """Keeps Hive registrations current across batches; None when no metastore is configured."""


def run_batch(raw: DataFrame, ctx: BatchContext) -> BatchMetrics:
    """Apply one micro-batch of Kafka records (Spark Kafka source rows) to every routed table."""
    started = time.monotonic()
    metrics = BatchMetrics(batch_id=ctx.batch_id)
    routed = route(raw, ctx.config).persist()
    try:
        counts = {row[TABLE_COLUMN]: int(row["count"]) for row in routed.groupBy(TABLE_COLUMN).count().collect()}
        metrics.unrouted = counts.pop(None, 0)
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
        for table in ctx.config.tables:
            if counts.get(table.name):
                records = routed.filter(F.col(TABLE_COLUMN) == table.name).drop(TABLE_COLUMN)
                metrics.tables.append(_run_table(records, counts[table.name], table, ctx))
    finally:
        routed.unpersist()
    if ctx.metastore is not None:
        # after every data commit of the batch: an outage delays registration, never data
        for t in metrics.tables:
            if t.commit_time:
                ctx.metastore.note_commit(ctx.config.table(t.table), t.commit_time)
        states = ctx.metastore.sync_due(raw.sparkSession, ctx.config.tables)
        metrics.hive_sync_lagging = sorted(name for name, state in states.items() if state.lagging)
    metrics.seconds = time.monotonic() - started
    metrics.log()
    return metrics


def _run_table(records: DataFrame, read: int, table: TableConfig, ctx: BatchContext) -> TableMetrics:
    metrics = TableMetrics(table=table.name, read=read)
    spark = records.sparkSession
    decoded = decode(records, table).cached()
    events = decoded.events
    folded: DataFrame | None = None
    try:
        metrics.tombstone = decoded.tombstones.count()
        rejects = decoded.rejects
        metrics.dead_letter = rejects.count()
        if metrics.dead_letter:
            _dead_letter(rejects, ctx)

        stored = read_table(spark, table.base_path)
        try:
            schema = check(decoded.schema, _data_schema(stored, table), table)
        except SchemaChangeError as exc:
            log.error("%s", exc)
            # the table stops for this batch; none of its records is lost
            _dead_letter(
                dead_letter.raw_as_rejects(records, table=table.name, error_class="SchemaChangeError", message=str(exc)),
                ctx,
            )
            return TableMetrics(table=table.name, read=read, dead_letter=read, error=str(exc))

        changes, truncation, ignored = _split_truncates(events, table)
        metrics.truncate_ignored = ignored
        result = fold(
            events=_conform_events(changes, schema),
            stored=_stored_for(stored, changes, schema, table, truncation),
            schema=schema,
            key=table.key,
            soft_deletes=table.deletes == "soft",
            truncation=truncation,
            sticky=frozenset(table.partition_by),
        )
        # the fold result feeds both the counts and the write: compute it once
        folded = result.rows.persist()
        outcomes = result.outcomes_for(folded)
        for row in outcomes.groupBy("outcome").count().collect():
            setattr(metrics, row["outcome"], int(row["count"]))
        if truncation is not None:
            metrics.deleted += _count_applied_truncates(events, table)
        written = writer.write(
            rows_to_write(folded, schema, table),
            table=table.name,
            base_path=table.base_path,
            options=write_options(table),
            commit_metadata=commit_metadata(
                job=ctx.config.job.name, batch_id=ctx.batch_id, positions=batch_positions(records)
            ),
        )
        metrics.upserted_rows, metrics.deleted_rows = written.upserted, written.deleted
        metrics.commit_time = written.commit_time
        return metrics
    finally:
        decoded.parsed.unpersist()
        if folded is not None:
            folded.unpersist()


def _dead_letter(rejects: DataFrame, ctx: BatchContext) -> None:
    dead_letter.store(rejects, path=ctx.config.job.dead_letter_path, job=ctx.config.job.name, batch_id=ctx.batch_id)


def _data_schema(stored: DataFrame | None, table: TableConfig) -> StructType | None:
    """The stored table's data columns: everything but the framework's and Hudi's own."""
    if stored is None:
        return None
    return StructType([f for f in stored.schema.fields if not f.name.startswith("_cdc_") and f.name != "_hoodie_is_deleted"])


def _split_truncates(events: DataFrame, table: TableConfig) -> tuple[DataFrame, Truncation | None, int]:
    """Separate truncate events: the newest one becomes a table-wide delete, or all are ignored."""
    truncates = events.filter(F.col(OP) == Op.TRUNCATE.value)
    changes = events.filter(F.col(OP) != Op.TRUNCATE.value)
    newest = truncates.agg(F.max(F.struct(ORDER, TS_MS, SOURCE)).alias("t"), F.count(F.lit(1)).alias("n")).first()
    if newest is None or not newest["n"]:
        return changes, None, 0
    if table.truncate == "ignore":
        log.warning("table %s: ignored %d truncate event(s) (truncate: ignore)", table.name, newest["n"])
        return changes, None, int(newest["n"])
    t = newest["t"]
    return changes, Truncation(order=t[ORDER], ts_ms=t[TS_MS], source=t[SOURCE]), 0


def _count_applied_truncates(events: DataFrame, table: TableConfig) -> int:
    return events.filter(F.col(OP) == Op.TRUNCATE.value).count() if table.truncate == "apply" else 0


def _conform_events(events: DataFrame, schema: StructType) -> DataFrame:
    """Give the events every table column (NULL and absent where the event lacks it), typed as the table."""
    data = [
        (F.col(f.name) if f.name in events.columns else F.lit(None)).cast(f.dataType).alias(f.name)
        for f in schema.fields
    ]
    rest = [c for c in events.columns if c not in {f.name for f in schema.fields}]
    return events.select(*data, *rest)


def _stored_for(
    stored: DataFrame | None,
    events: DataFrame,
    schema: StructType,
    table: TableConfig,
    truncation: Truncation | None,
) -> DataFrame:
    """The stored rows the fold must see: the touched keys, or every row when a truncate applies."""
    wanted = stored_columns(schema, table)
    if stored is None:
        return _empty_stored(events, schema, table)
    conformed = stored.select(
        *[
            (F.col(c) if c in stored.columns else F.lit(None)).cast(_stored_type(c, schema)).alias(c)
            for c in wanted
        ]
    )
    if truncation is not None:
        return conformed
    keys = events.select(*table.key).distinct()
    return conformed.join(keys, on=table.key, how="left_semi")


def _stored_type(column: str, schema: StructType) -> str:
    if column in schema.fieldNames():
        return schema[column].dataType.simpleString()
    return {
        OP: "string",
        ORDER: "string",
        TS_MS: "bigint",
        SOURCE: "string",
        COLUMN_ORDERS: "map<string,string>",
        DELETED: "boolean",
    }.get(column, "timestamp")


def _empty_stored(events: DataFrame, schema: StructType, table: TableConfig) -> DataFrame:
    columns = stored_columns(schema, table)
    return events.limit(0).select(
        *[F.lit(None).cast(_stored_type(c, schema)).alias(c) for c in columns]
    )

