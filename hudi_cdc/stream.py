"""Kafka (Spark Structured Streaming source) -> foreachBatch -> pipeline.run_batch -> metastore sync.

This module sequences everything around a batch's data work: checks at start, the metastore
sync after each batch's commits (and its retries between batches), metrics listeners.

Records are read by the executors; the driver only sees per-batch counts. The checkpoint
location makes a rerun continue where the last one stopped. Kafka positions advance only
after run_batch returned, i.e. after every table's Hudi commit; a batch that failed midway
is replayed whole, and the fold makes the replay change nothing already applied.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

from hudi_cdc import kafka_check, locations, route_regex
from hudi_cdc.config import Config, check_base_paths
from hudi_cdc.dead_letter_ops import Selection, purge, select
from hudi_cdc.durations import spark_interval
from hudi_cdc.errors import CdcError, ConfigError, KafkaDataLossError, KafkaLostError
from hudi_cdc.failures import kafka_data_loss, kafka_fault
from hudi_cdc.hudi import relayout
from hudi_cdc.hudi.hive_sync import MetastoreSync, state_path
from hudi_cdc.hudi.options import BUCKET_LAYOUT, index_layout
from hudi_cdc.hudi.recovery import recover_table_config
from hudi_cdc.hudi.table import created_with, table_exists, table_version
from hudi_cdc.hudi.timeline import latest_job_metadata
from hudi_cdc.kafka_gaps import LenientGaps
from hudi_cdc.kafka_headers import KAFKA_HEADERS, with_headers
from hudi_cdc.metrics import BatchMetrics
from hudi_cdc.offsets import INDEX_KEY
from hudi_cdc.pipeline import BatchContext, run_batch
from hudi_cdc.spark_session import apply_hadoop_conf

log = logging.getLogger(__name__)

BatchListener = Callable[[BatchMetrics], None]


def kafka_source(spark: SparkSession, config: Config) -> DataFrame:
    """The streaming DataFrame of every routed topic."""
    kafka = config.kafka
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("subscribePattern", config.topic_pattern())
        .option("startingOffsets", kafka.starting_offsets)
        .option("failOnDataLoss", str(kafka.fail_on_data_loss).lower())
        .option("includeHeaders", str(config.reads_headers).lower())
    )
    if kafka.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(kafka.max_offsets_per_trigger))
    if kafka.min_partitions:
        # Why it keeps the semantics: each record keeps its topic, partition and offset, and the
        # fold orders by the event's position, not by the task that read it.
        reader = reader.option("minPartitions", str(kafka.min_partitions))
    # Kafka Connect with exactly-once source support writes in transactions: records of an
    # aborted one were never committed by Connect and must not be applied. Same as
    # read_uncommitted for topics written without transactions; `kafka.properties` may override.
    reader = reader.option("kafka.isolation.level", "read_committed")
    for key, value in kafka.properties.items():
        reader = reader.option(f"kafka.{key}", value)
    return reader.load()


def metastore_sync(config: Config) -> MetastoreSync | None:
    """The job's metastore syncer; every table is re-checked once at start (its last sync may have failed)."""
    if not config.job.metastore_uris:
        return None
    sync = MetastoreSync(config.job.metastore_uris, state_path(config.job.checkpoint_dir))
    for table in config.tables:
        sync.note_commit(table, None)
    return sync


def preflight(spark: SparkSession, config: Config, *, source: str = "the configuration") -> None:
    """What must hold before the query starts, checked where the job runs (steps in order).

    1. Route patterns compile in the JVM (Spark's Kafka source uses java.util.regex).
    2. Every base path that exists is a Hudi table, on any file system (Hadoop FileSystem).
    3. A table config a crash left broken is repaired (`hudi.recovery`).
    4. No existing table is at a higher Hudi table version than its `table_version` (Hudi never
       downgrades: measured, a version-9 table keeps being written at 9 with `table_version: 6`).
       A lower one is upgraded at the next commit (measured: 6 -> 9), logged as a warning.
    5. A table's key, partition columns and type are those it was created with (`shape_problems`),
       and its bucket index and number of buckets those its files were written with (`index_problems`).
    6. No `hudi-cdc relayout` stopped between moving a table aside and moving its copy in
       (`hudi.relayout.unfinished`; each batch checks it again before creating a table).
    7. Kafka answers within `kafka.connect_timeout`.
    """
    from hudi_cdc.spark_session import hadoop_conf, jvm

    patterns = [r.pattern for r in config.routes if r.pattern is not None]
    problems = route_regex.jvm_problems(jvm(spark), patterns)
    if problems:
        raise ConfigError(source, [f"routes: {p}" for p in problems])
    check_base_paths(config, locations.HadoopFiles(jvm(spark), hadoop_conf(spark)), source=source, local_only=False)
    for table in config.tables:
        recover_table_config(spark, table.base_path)
    problems = version_problems(spark, config) + shape_problems(spark, config) + index_problems(spark, config)
    problems += [p for p in (relayout.unfinished(spark, table) for table in config.tables) if p]
    if problems:
        raise ConfigError(source, problems)
    kafka_check.check_reachable(config.kafka)


def version_problems(spark: SparkSession, config: Config) -> list[str]:
    """Tables stored at a higher Hudi table version than their `table_version` (see `preflight`)."""
    problems = []
    for table in config.tables:
        stored = table_version(spark, table.base_path)
        if stored is None or stored == table.table_version:
            continue
        if stored > table.table_version:
            problems.append(
                f"tables.{table.name}.table_version: {table.table_version}, but the table at {table.base_path} "
                f"is at Hudi table version {stored} and Hudi does not downgrade; remove the setting, or stop "
                f"the job and run `hudi-cdc relayout {table.name}` to rewrite the table at that version"
            )
        else:
            log.warning(
                "table %s: Hudi table version %d is upgraded to %d at its next commit (`table_version`); "
                "PrestoDB 0.287 cannot read it after that",
                table.name, stored, table.table_version,
            )  # fmt: skip
    return problems


def shape_problems(spark: SparkSession, config: Config) -> list[str]:
    """Tables whose `key`, `partition_by` or `type` differ from what their Hudi table was created with.

    Hudi fixes them in `hoodie.properties` and refuses every write that asks for others ("Config
    conflict"); the job would stop on every batch (measured: before this check, each record was
    isolated alone and dead-lettered).
    """
    problems = []
    for table in config.tables:
        created = created_with(spark, table.base_path)
        if created is None:
            continue
        asked = {"key": tuple(table.key), "partition_by": tuple(table.partition_by), "type": table.type}
        for field, value in asked.items():
            stored = getattr(created, field)
            if value != stored:
                problems.append(
                    f"tables.{table.name}.{field}: the settings ask for {_shown(value)}, but the table at "
                    f"{table.base_path} was created with {_shown(stored)}, and Hudi fixes a table's key, "
                    "partition columns and type when it creates it. Restore the setting, or land the table anew "
                    "under another base_path and hive table, from the start of its topic (a new "
                    "`job.checkpoint_dir` with `kafka.starting_offsets: earliest`) or from a new Debezium snapshot"
                )
    return problems


def _shown(value: str | tuple[str, ...]) -> str:
    return value if isinstance(value, str) else "[" + ", ".join(value) + "]"


def index_problems(spark: SparkSession, config: Config) -> list[str]:
    """Tables whose `index`/`buckets` would change a bucket layout their files were written with.

    Hudi keeps a bucket table's layout in its file names only: written with another number of
    buckets, or with another index, it keeps a key in two file groups (measured: 4 buckets into
    an 8-bucket table duplicated 144 of 300 rows). hudi_cdc records the layout in every commit
    (`offsets.INDEX_KEY`); a table with no such record was not written with a bucket index.
    """
    problems = []
    for table in config.tables:
        if not table_exists(spark, table.base_path):
            continue
        wanted = index_layout(table)
        stored = latest_job_metadata(spark, table.base_path).get(INDEX_KEY)
        if stored != wanted and BUCKET_LAYOUT in (wanted.split(":")[0], (stored or "").split(":")[0]):
            problems.append(
                f"tables.{table.name}.index: the settings ask for {_layout_text(wanted)}, but the table at "
                f"{table.base_path} was written with {_layout_text(stored)}; a bucket index is fixed when "
                "the table is created. Restore the table's settings, or rewrite the table with the new ones: "
                f"stop the job and run `hudi-cdc relayout {table.name}`"
            )
    return problems


def _layout_text(layout: str | None) -> str:
    if layout is None:
        return "an index other than `bucket`"
    kind, _, buckets = layout.partition(":")
    return f"`index: {kind}`" + (f" with `buckets: {buckets}`" if buckets else "")


def sync_after_batch(spark: SparkSession, metastore: MetastoreSync, config: Config, metrics: BatchMetrics) -> list[str]:
    """Register the batch's commits in the metastore; the tables whose sync is still lagging."""
    for t in metrics.tables:
        if t.commit_time:
            metastore.note_commit(config.table(t.table), t.commit_time)
    states = metastore.sync_due(spark, config.tables)
    return sorted(name for name, state in states.items() if state.lagging)


def prometheus_listener(spark: SparkSession, config: Config, *, once: bool) -> BatchListener | None:
    """Prometheus metrics fed by every batch: served on `job.metrics_port` (continuous runs), written to
    `job.metrics_textfile`; None when neither is configured."""
    port, textfile = config.job.metrics_port, config.job.metrics_textfile
    if (port is None or once) and textfile is None:
        return None
    from hudi_cdc.hudi.timeline import pending_compactions
    from hudi_cdc.kafka_lag import Watermarks
    from hudi_cdc.offset_log import planned_end
    from hudi_cdc.prometheus import JobMetrics

    metrics = JobMetrics(
        config,
        end_offsets=Watermarks(config.kafka).ends,
        pending_compactions=lambda name: pending_compactions(spark, config.table(name).base_path),
    )
    if port is not None and not once:
        metrics.serve(port)
        log.info("prometheus metrics on port %d", port)
    if textfile is not None:
        metrics.write_textfile(textfile)

    def observe(batch: BatchMetrics) -> None:
        metrics.observe(batch, consumed=planned_end(spark, config.job.checkpoint_dir, batch.batch_id))
        if textfile is not None:
            metrics.write_textfile(textfile)

    return observe


def run(
    spark: SparkSession,
    config: Config,
    *,
    once: bool,
    on_batch: BatchListener | None = None,
    source: str = "the configuration",
) -> None:
    """Run the job: `once` processes what is in Kafka now and stops; otherwise runs every trigger interval.

    `source` names the configuration file in errors found at start (`preflight`). A CdcError that
    stops a batch (TableFailure, RegistryUnavailableError...) is raised as itself, not wrapped in
    Spark's StreamingQueryException, so the CLI prints its text alone.
    """
    apply_hadoop_conf(spark, config.job.hadoop_conf)  # the session may come from spark-submit or a script
    preflight(spark, config, source=source)
    apply_retention(spark, config)
    metastore = metastore_sync(config)
    listeners = [listener for listener in (on_batch, prometheus_listener(spark, config, once=once)) if listener is not None]

    stopped_by: list[CdcError] = []
    # a lenient run counts what it goes past; otherwise Spark stops at a gap
    gaps = None if config.kafka.fail_on_data_loss else LenientGaps(spark, config)

    def handle(batch: DataFrame, batch_id: int) -> None:
        try:
            metrics = run_batch(batch, BatchContext(config=config, batch_id=batch_id))
        except Exception as exc:
            # records the batch's plan names but Kafka deleted meanwhile fail where they are read
            lost = _data_loss(config, exc)
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
            metrics.hive_sync_lagging = sync_after_batch(spark, metastore, config, metrics)
        metrics.log()
        for listener in listeners:
            listener(metrics)

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
        metastore.sync_due(spark, config.tables)
    query = writer.start()
    log.info("job %s started (%s), checkpoint %s", config.job.name, "once" if once else "continuous", config.job.checkpoint_dir)
    try:
        # wake up every trigger interval even when no batch runs, to retry lagging metastore syncs
        while not query.awaitTermination(timeout=max(1, round(interval.total_seconds()))):
            if metastore is not None:
                metastore.sync_due(spark, config.tables)
    except StreamingQueryException as exc:
        if not stopped_by:
            lost = _data_loss(config, exc)  # found while planning a batch
            if lost is not None:
                raise lost from exc
            reason = kafka_fault(exc)
            if reason is not None:  # the brokers, not the job: say so, and that nothing was lost
                raise KafkaLostError(config.kafka.bootstrap_servers, reason=reason) from exc
            raise
    finally:
        if gaps is not None:
            gaps.close()
    if stopped_by:
        # the query's error wraps ours in py4j's and Spark's text; ours says what to do (and
        # keeps its own cause, e.g. Hudi's exception)
        raise stopped_by[-1]
    if metastore is not None:
        metastore.sync_due(spark, config.tables)


def _data_loss(config: Config, exc: BaseException) -> KafkaDataLossError | None:
    """`exc` (or the error it was raised from) as Spark's Kafka data-loss stop, naming the tables fed."""
    lost = kafka_data_loss(exc, exc.__cause__)
    if lost is None:
        return None
    tables = sorted({t for t in (config.table_of_topic(topic) for topic in lost.topics) if t is not None})
    return KafkaDataLossError(lost.findings, tables=tables)


def replay_dead_letters(
    spark: SparkSession,
    config: Config,
    *,
    tables: list[str],
    error_class: str | None = "SchemaChangeError",
    since: datetime | None = None,
    until: datetime | None = None,
) -> BatchMetrics:
    """Run dead-lettered records of `tables` through the pipeline again (e.g. after a schema fix).

    `error_class` None replays every class. Replaying is safe to repeat: the fold judges each
    event by its order, so events already applied count as duplicates and change nothing;
    a record that fails again is not stored twice (`dead_letter.store`).
    """
    selection = Selection(
        tables=tuple(tables), error_classes=(error_class,) if error_class else (), since=since, until=until
    )
    letters = select(spark, config.job.dead_letter_path, selection)
    if letters is None:
        return BatchMetrics(batch_id=-1)
    raw = with_headers(letters).select("key", "value", "topic", "partition", "offset", KAFKA_HEADERS)
    raw = raw.dropDuplicates(["topic", "partition", "offset"])
    # batch id -1 marks a replay in the commit metadata and the logs
    metrics = run_batch(raw, BatchContext(config=config, batch_id=-1))
    metrics.log()
    return metrics


def apply_retention(spark: SparkSession, config: Config) -> None:
    """Purge dead letters older than `job.dead_letter_retention` (nothing when it is not set)."""
    retention = config.job.dead_letter_retention
    if retention is not None:
        purge(spark, config.job.dead_letter_path, older_than=retention)
