"""Kafka (Spark Structured Streaming source) -> foreachBatch -> pipeline.run_batch -> metastore sync.

This module sequences everything around a batch's data work: checks at start (`job.preflight`), the metastore
sync after each batch's commits (and its retries between batches), metrics listeners.

Records are read by the executors; the driver only sees per-batch counts. The checkpoint
location makes a rerun continue where the last one stopped. Kafka positions advance only
after run_batch returned, i.e. after every table's Hudi commit; a batch that failed midway
is replayed whole, and the fold makes the replay change nothing already applied.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

from hudi_cdc.commit.metrics import BatchMetrics
from hudi_cdc.config.durations import spark_interval
from hudi_cdc.config.models import Config
from hudi_cdc.dead_letters.ops import purge
from hudi_cdc.errors import CdcError, KafkaDataLossError, KafkaLostError, TablesParked
from hudi_cdc.hudi.hive_sync import MetastoreSync, state_path
from hudi_cdc.job.catalog import TableCatalog
from hudi_cdc.job.failures import kafka_data_loss, kafka_fault
from hudi_cdc.job.parking import ParkingLot
from hudi_cdc.job.pipeline import BatchContext, catch_up, run_batch
from hudi_cdc.job.preflight import preflight
from hudi_cdc.job.prometheus import JobMetrics, RunListener
from hudi_cdc.job.query import JobQuery, RunSummary
from hudi_cdc.kafka.gaps import LenientGaps
from hudi_cdc.kafka.source import kafka_source
from hudi_cdc.spark.session import activated, apply_hadoop_conf, for_job

__all__ = [
    "CATCH_UP_BATCH",
    "BatchListener",
    "apply_retention",
    "metastore_sync",
    "prometheus_listener",
    "run",
    "start",
    "sync_after_batch",
]

log = logging.getLogger(__name__)

BatchListener = Callable[[BatchMetrics], None]

CATCH_UP_BATCH = -1
"""The batch id of a parked table's catch-up outside a stream batch (recorded in its commit, as a replay's)."""


def metastore_sync(config: Config) -> MetastoreSync | None:
    """The job's metastore syncer; every table is re-checked once at start (its last sync may have failed)."""
    if not config.job.metastore_uris:
        return None
    sync = MetastoreSync(config.job.metastore_uris, state_path(config.job.checkpoint_dir))
    for table in config.tables:
        sync.note_commit(table, None)
    return sync


def sync_after_batch(spark: SparkSession, metastore: MetastoreSync, config: Config, metrics: BatchMetrics) -> list[str]:
    """Register the batch's commits in the metastore; the tables whose sync is still lagging."""
    for t in metrics.tables:
        if t.commit_time:
            metastore.note_commit(config.table(t.table), t.commit_time)
    states = metastore.sync_due(spark, config.tables)
    return sorted(name for name, state in states.items() if state.lagging)


def prometheus_listener(
    spark: SparkSession, catalog: TableCatalog, *, once: bool, metastore: MetastoreSync | None = None
) -> RunListener | None:
    """Prometheus metrics fed by every batch: served on `job.metrics_port` (continuous runs), written to
    `job.metrics_textfile`, pushed to `job.metrics_pushgateway`; None when none is configured."""
    config = catalog.config
    port, textfile, gateway = config.job.metrics_port, config.job.metrics_textfile, config.job.metrics_pushgateway
    if (port is None or once) and textfile is None and gateway is None:
        return None
    from hudi_cdc.hudi.timeline import pending_compactions
    from hudi_cdc.kafka.lag import Watermarks
    from hudi_cdc.kafka.offset_log import planned_end

    metrics = JobMetrics(
        config,
        end_offsets=Watermarks(config.kafka).ends,
        pending_compactions=lambda name: pending_compactions(spark, catalog.config.table(name).base_path),
        synced_at=None if metastore is None else lambda: {t: s.last_synced_at for t, s in metastore.states.items()},
    )
    if port is not None and not once:
        metrics.serve(port)
        log.info("prometheus metrics on port %d", port)
    if textfile is not None:
        metrics.write_textfile(textfile)  # the tables at zero before the first batch
    return RunListener(
        metrics,
        config=lambda: catalog.config,
        consumed=lambda batch_id: planned_end(spark, config.job.checkpoint_dir, batch_id),
    )


def start(
    spark: SparkSession,
    config: Config,
    *,
    once: bool = False,
    on_batch: BatchListener | None = None,
    source: str = "the configuration",
) -> JobQuery:
    """Start the job in the background: `once` processes what is in Kafka now and stops; otherwise a
    batch every trigger interval until the query is stopped.

    The job's queries run in `for_job(spark)`, a copy of the session with the settings the job
    needs; `spark` keeps its own. `on_batch` is called with each batch's metrics, in Spark's
    streaming thread. `source` names the configuration file in errors found at start (`preflight`).
    """
    spark = for_job(spark)
    with activated(spark):
        return _start(spark, config, once=once, on_batch=on_batch, source=source)


def _start(spark: SparkSession, config: Config, *, once: bool, on_batch: BatchListener | None, source: str) -> JobQuery:
    apply_hadoop_conf(spark, config.job.hadoop_conf)  # the session may come from spark-submit or a script
    catalog = TableCatalog(spark, config)
    config = catalog.config  # with the tables templates made in earlier runs
    preflight(spark, config, source=source)
    apply_retention(spark, config)
    metastore = metastore_sync(config)
    prometheus = prometheus_listener(spark, catalog, once=once, metastore=metastore)
    summary = RunSummary()  # the query's record of every batch
    listeners = [listener for listener in (summary.batches.append, on_batch, prometheus) if listener is not None]

    lot = ParkingLot(spark, config.job.checkpoint_dir) if config.job.on_table_failure == "park" else None

    def catch_up_parked() -> None:
        """Parked tables that are due, caught up outside a batch (at start, and while no batch comes)."""
        if lot is None or not lot.parked():
            return
        ctx = BatchContext(config=catalog.config, batch_id=CATCH_UP_BATCH, catalog=catalog, parking=lot)
        tables = [t for t in catalog.config.tables if lot.get(t.name) is not None]
        caught = [m for m in (catch_up(t, ctx) for t in tables) if m is not None]
        if caught:
            lot.save()  # the new causes and waits, for `status`
            metrics = BatchMetrics(batch_id=CATCH_UP_BATCH, tables=caught, parked={p.table: p.backlog for p in lot.parked()})
            if metastore is not None:
                metrics.hive_sync_lagging = sync_after_batch(spark, metastore, catalog.config, metrics)
            metrics.log()
            for listener in listeners:
                listener(metrics)

    stopped_by: list[CdcError] = []
    # a lenient run counts what it goes past; otherwise Spark stops at a gap
    gaps = None if config.kafka.fail_on_data_loss else LenientGaps(spark, config)

    def handle(batch: DataFrame, batch_id: int) -> None:
        try:
            ctx = BatchContext(config=catalog.config, batch_id=batch_id, catalog=catalog, parking=lot)
            metrics = run_batch(batch, ctx)
        except Exception as exc:
            # records the batch's plan names but Kafka deleted meanwhile fail where they are read
            lost = _data_loss(catalog.config, exc)
            if lost is not None:
                stopped_by.append(lost)
                raise lost from exc
            if isinstance(exc, CdcError):
                stopped_by.append(exc)
            raise  # ours keeps its own cause (e.g. Hudi's exception)
        if gaps is not None:
            gaps.count(batch_id, metrics)
        if metastore is not None:
            # after every data commit of the batch: an outage delays registration, never data
            metrics.hive_sync_lagging = sync_after_batch(spark, metastore, catalog.config, metrics)
        metrics.log()
        for listener in listeners:
            listener(metrics)

    def between_batches() -> None:
        """Every trigger interval even when no batch runs: retry lagging metastore syncs, catch up parked tables."""
        if metastore is not None:
            metastore.sync_due(spark, catalog.config.tables)
        catch_up_parked()

    def failure(exc: StreamingQueryException) -> BaseException:
        """What stopped the query, as the error that says what to do."""
        if stopped_by:
            # the query's error wraps ours in py4j's and Spark's text; ours says what to do
            return stopped_by[-1]
        lost = _data_loss(catalog.config, exc)  # found while planning a batch
        if lost is not None:
            return lost
        reason = kafka_fault(exc)
        if reason is not None:  # the brokers, not the job: say so, and that nothing was lost
            return KafkaLostError(config.kafka.bootstrap_servers, reason=reason)
        return exc

    def wrap_up(failed: bool) -> dict[str, str]:
        """After the query ended: the last counts, the last metastore sync; the tables still parked."""
        try:
            if gaps is not None:
                gaps.close()
        finally:
            if prometheus is not None:
                prometheus.close()  # the last counts, also of a run that failed
        if failed:
            return {}
        if metastore is not None:
            metastore.sync_due(spark, catalog.config.tables)
        configured = {t.name for t in catalog.config.tables}
        return {p.table: p.cause for p in lot.parked() if p.table in configured} if lot is not None else {}

    writer = (
        kafka_source(spark, config)
        .writeStream.queryName(config.job.name)
        .foreachBatch(handle)
        .option("checkpointLocation", config.job.checkpoint_dir)
    )
    interval = config.job.trigger_interval
    writer = writer.trigger(availableNow=True) if once else writer.trigger(processingTime=spark_interval(interval))
    if metastore is not None:
        # a sync that failed before a restart, or tables never registered
        metastore.sync_due(spark, catalog.config.tables)
    catch_up_parked()  # what parked tables missed comes before anything newer
    query = JobQuery(
        writer.start(),
        spark=spark,
        interval=max(1, round(interval.total_seconds())),
        between_batches=between_batches,
        failure=failure,
        wrap_up=wrap_up,
        summary=summary,
    )
    log.info("job %s started (%s), checkpoint %s", config.job.name, "once" if once else "continuous", config.job.checkpoint_dir)
    return query


def run(
    spark: SparkSession,
    config: Config,
    *,
    once: bool,
    on_batch: BatchListener | None = None,
    source: str = "the configuration",
) -> None:
    """Run the job until it ends: `once` processes what is in Kafka now and stops; otherwise runs every
    trigger interval (`start`, then waiting on the query).

    `source` names the configuration file in errors found at start (`preflight`). A CdcError that
    stops a batch (TableFailure, RegistryUnavailableError...) is raised as itself, not wrapped in
    Spark's StreamingQueryException, so the CLI prints its text alone.
    """
    query = start(spark, config, once=once, on_batch=on_batch, source=source)
    query.awaitTermination()
    if query.summary.parked:
        # a scheduled run tells its orchestrator: the other tables were written, these were not
        raise TablesParked(query.summary.parked)


def _data_loss(config: Config, exc: BaseException) -> KafkaDataLossError | None:
    """`exc` (or the error it was raised from) as Spark's Kafka data-loss stop, naming the tables fed."""
    lost = kafka_data_loss(exc, exc.__cause__)
    if lost is None:
        return None
    tables = sorted({t for t in (config.table_of_topic(topic) for topic in lost.topics) if t is not None})
    return KafkaDataLossError(lost.findings, tables=tables)


def apply_retention(spark: SparkSession, config: Config) -> None:
    """Purge dead letters older than `job.dead_letter_retention` (nothing when it is not set)."""
    retention = config.job.dead_letter_retention
    if retention is not None:
        purge(spark, config.job.dead_letter_path, older_than=retention)
