"""hudi_cdc from Python: load a job's configuration, run it in a session of your own, apply a batch, read status.

What the CLI does, as functions for a notebook, a scheduler's Python task or a backfill script
(docs/api.md). The functions take a SparkSession and never change its settings: the job's
queries run in a copy of it (`hudi_cdc.spark.session.for_job`) with the settings they need, and a
static setting the session lacks is reported (`SessionSettingsError`), not set.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from hudi_cdc.commit.metrics import BatchMetrics, TableMetrics
from hudi_cdc.config import models
from hudi_cdc.config.models import Config
from hudi_cdc.errors import CdcError, ConfigError, SessionSettingsError, TablesParked
from hudi_cdc.hudi.hive_sync import read_state, state_path
from hudi_cdc.hudi.status import TableStatus, table_status
from hudi_cdc.job import stream
from hudi_cdc.job.catalog import TableCatalog, with_made_tables
from hudi_cdc.job.pipeline import BatchContext, run_batch
from hudi_cdc.job.query import JobQuery, RunSummary
from hudi_cdc.job.stream import BatchListener
from hudi_cdc.spark.session import activated, apply_hadoop_conf, for_job, get_or_create_session

__all__ = [
    "BACKFILL_BATCH",
    "KAFKA_COLUMNS",
    "BatchListener",
    "BatchMetrics",
    "CdcError",
    "Config",
    "ConfigError",
    "JobQuery",
    "RunSummary",
    "SessionSettingsError",
    "TableMetrics",
    "TableStatus",
    "TablesParked",
    "apply_batch",
    "get_or_create_session",
    "load_config",
    "run_once",
    "start",
    "status",
]

KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset")
"""The columns of Spark's Kafka source `apply_batch` needs (`timestamp` and `headers` are read when present)."""

BACKFILL_BATCH = -1
"""The batch id `apply_batch` records in its commits and logs (as a dead-letter replay does): not a stream batch."""


def load_config(source: str | os.PathLike[str] | Mapping[str, Any], *, environ: Mapping[str, str] | None = None) -> Config:
    """The job's configuration from a YAML file, or from a mapping holding what the file would.

    `${VAR}` and `${VAR:-default}` in string values come from `environ` (default: the process's
    environment); an error never shows a substituted value (secrets come from variables).

    Raises:
        ConfigError: every problem, each naming its field.
    """
    return models.load_config(source, environ=environ)


def start(spark: SparkSession, config: Config, *, on_batch: BatchListener | None = None) -> JobQuery:
    """Start the continuous job (a batch every `job.trigger_interval`) and return its query at once.

    The query is Spark's StreamingQuery: `stop()`, `lastProgress`, `status`, `awaitTermination()`,
    which raises what stopped the job as hudi_cdc's error. `on_batch` is called with each batch's
    metrics, in Spark's streaming thread; `query.summary.batches` keeps them all.

    Raises:
        ConfigError: the configuration does not fit what the job finds (its tables, Kafka).
        SessionSettingsError: `spark` lacks a static setting the job needs.
    """
    return stream.start(spark, config, once=False, on_batch=on_batch)


def run_once(spark: SparkSession, config: Config, *, on_batch: BatchListener | None = None) -> RunSummary:
    """Apply what Kafka holds now, from where the checkpoint stands, and return when it is applied.

    Tables parked by a failure of their own are in the summary's `parked` (the CLI's `run --once`
    exits 1 with `TablesParked` instead); the other tables' records were committed.

    Raises:
        CdcError: what stopped the run (a table's failure with `on_table_failure: stop`, Kafka away...).
    """
    query = stream.start(spark, config, once=True, on_batch=on_batch)
    query.awaitTermination()
    return query.summary


def apply_batch(spark: SparkSession, config: Config, records: DataFrame) -> BatchMetrics:
    """Apply `records` (rows of Spark's Kafka source: key, value, topic, partition, offset) as one batch.

    For a backfill from archived topics: the records run through the same steps as a stream
    batch (routing, decode, the fold in event order, the write, dead letters), so events older
    than what a table holds count as late or duplicate and change nothing. The checkpoint is not
    read or moved, and a table's failure raises instead of parking the table. Tables templates
    make are made as a running job makes them. The batch id in commits and logs is `BACKFILL_BATCH`.

    Raises:
        ValueError: `records` lacks a column of `KAFKA_COLUMNS`.
        CdcError: what stopped the batch (its commits up to then stand; applying it again is safe).
    """
    missing = [c for c in KAFKA_COLUMNS if c not in records.columns]
    if missing:
        raise ValueError(f"records lack the Kafka source's columns {missing} (they have {records.columns})")
    job = for_job(spark)
    # the records' plan, bound to the job's session: what is computed from them runs with its settings
    view = f"hudi_cdc_backfill_{uuid.uuid4().hex}"
    records.createGlobalTempView(view)
    try:
        with activated(job):
            apply_hadoop_conf(job, config.job.hadoop_conf)
            catalog = TableCatalog(job, config)
            batch = job.table(f"global_temp.{view}")
            metrics = run_batch(batch, BatchContext(config=catalog.config, batch_id=BACKFILL_BATCH, catalog=catalog))
            metastore = stream.metastore_sync(catalog.config)
            if metastore is not None:
                metrics.hive_sync_lagging = stream.sync_after_batch(job, metastore, catalog.config, metrics)
    finally:
        spark.catalog.dropGlobalTempView(view)
    metrics.log()
    return metrics


def status(spark: SparkSession, config: Config) -> list[TableStatus]:
    """Per table (declared, and made by templates so far): its last commit, what it applied, its
    watermark, committed counts, compaction and files, and its metastore sync (`hudi-cdc status`)."""
    job = for_job(spark)
    with activated(job):
        apply_hadoop_conf(job, config.job.hadoop_conf)
        config = with_made_tables(job, config)
        sync = read_state(job, state_path(config.job.checkpoint_dir)) if config.job.metastore_uris else {}
        return [table_status(job, table, sync) for table in config.tables]
