"""Hive Metastore registration of Hudi tables (`hms` mode), run after each data commit.

The sync is a separate step from the write on purpose: a metastore outage must not block or
fail a data commit. A failed sync is logged, kept as lag, and retried at the next batch (even
one that brings no data for the table); the commit it would register stands either way.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import asdict, dataclass, fields
from typing import Any

from pydantic import BaseModel, ConfigDict
from pyspark.sql import SparkSession

from hudi_cdc.commit.progress import Progress, iso_utc
from hudi_cdc.config.models import TableConfig, TableType
from hudi_cdc.hudi.table import table_exists
from hudi_cdc.hudi.timeline import TableTimeline
from hudi_cdc.spark import fs
from hudi_cdc.spark.session import error_summary, hadoop_conf, jvm

log = logging.getLogger(__name__)

ENABLE = "hoodie.datasource.hive_sync.enable"
MODE = "hoodie.datasource.hive_sync.mode"
MODE_DEFAULT = "hms"
METASTORE_URIS = "hoodie.datasource.hive_sync.metastore.uris"
DATABASE = "hoodie.datasource.hive_sync.database"
DATABASE_DEFAULT = "default"
TABLE = "hoodie.datasource.hive_sync.table"
PARTITION_FIELDS = "hoodie.datasource.hive_sync.partition_fields"
PARTITION_EXTRACTOR = "hoodie.datasource.hive_sync.partition_extractor_class"
PARTITION_EXTRACTOR_DEFAULT = "org.apache.hudi.hive.MultiPartKeysValueExtractor"
NON_PARTITIONED_EXTRACTOR = "org.apache.hudi.hive.NonPartitionedExtractor"
SUPPORT_TIMESTAMP = "hoodie.datasource.hive_sync.support_timestamp"
SUPPORT_TIMESTAMP_DEFAULT = True
AUTO_CREATE_DATABASE = "hoodie.datasource.hive_sync.auto_create_database"
AUTO_CREATE_DATABASE_DEFAULT = "true"
BASE_PATH = "hoodie.datasource.meta.sync.base.path"
BASE_FILE_FORMAT = "hoodie.datasource.hive_sync.base_file_format"
BASE_FILE_FORMAT_DEFAULT = "PARQUET"
# MOR only: pinned rather than left to Hudi's defaults, because readers address `<t>_ro` / `<t>_rt`
TABLE_STRATEGY = "hoodie.datasource.hive_sync.table.strategy"
TABLE_STRATEGY_DEFAULT = "ALL"
SKIP_RO_SUFFIX = "hoodie.datasource.hive_sync.skip_ro_suffix"
SKIP_RO_SUFFIX_DEFAULT = "false"
# true (Hudi's default since 0.14) also registers a MOR table under its plain name, as a third,
# snapshot-style table; Trino reads it as stale as `_rt`, so only `_ro` and `_rt` are registered
SNAPSHOT_WITH_TABLE_NAME = "hoodie.meta.sync.sync_snapshot_with_table_name"
SNAPSHOT_WITH_TABLE_NAME_DEFAULT = "false"
TABLE_PROPERTIES = "hoodie.datasource.hive_sync.table_properties"
"""Extra metastore table properties, one `key=value` per line; Hudi sets them at every sync."""
WATERMARK_PROPERTY = "hudi_cdc.commit.watermark"
"""Published with every sync: the registered commit's freshness watermark (ISO-8601 UTC)."""
WATERMARK_TS_MS_PROPERTY = "hudi_cdc.watermark_ts_ms"
RO_SUFFIX = "_ro"
RT_SUFFIX = "_rt"


class HiveSyncOptions(BaseModel):
    """Hudi hive sync in `hms` mode (thrift straight to the metastore, no HiveServer2) for one table."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    metastore_uris: str
    """thrift://host:port[,thrift://...] of the Hive Metastore."""
    database: str = DATABASE_DEFAULT
    table: str
    """Name in the metastore; a MERGE_ON_READ table is registered as `<table>_ro` and `<table>_rt`."""
    base_path: str
    table_type: TableType = "COPY_ON_WRITE"
    partition_fields: tuple[str, ...] = ()
    """Partition columns, in order (hive-style `col=value` folders); empty for an unpartitioned table."""
    support_timestamp: bool = SUPPORT_TIMESTAMP_DEFAULT
    """Register timestamp columns as TIMESTAMP (not BIGINT) so Hive/Trino read instants."""

    @classmethod
    def for_table(cls, table: TableConfig, metastore_uris: str) -> HiveSyncOptions:
        """The sync options of a configured table."""
        return cls(
            metastore_uris=metastore_uris,
            database=table.hive.database,
            table=table.hive_table,
            base_path=table.base_path,
            table_type=table.type,
            partition_fields=tuple(table.partition_by),
        )

    @property
    def registered_tables(self) -> tuple[str, ...]:
        """The metastore tables the sync creates: `<t>` (COW) or `<t>_ro`, `<t>_rt` (MOR)."""
        if self.table_type == "MERGE_ON_READ":
            return (self.table + RO_SUFFIX, self.table + RT_SUFFIX)
        return (self.table,)

    def as_hoodie_options(self) -> dict[str, str]:
        """Hudi options: pass to a datasource write (sync inline) or to `HiveSyncTool` (sync later)."""
        options = {
            ENABLE: "true",
            MODE: MODE_DEFAULT,
            METASTORE_URIS: self.metastore_uris,
            DATABASE: self.database,
            TABLE: self.table,
            BASE_PATH: self.base_path,
            BASE_FILE_FORMAT: BASE_FILE_FORMAT_DEFAULT,
            PARTITION_FIELDS: ",".join(self.partition_fields),
            PARTITION_EXTRACTOR: PARTITION_EXTRACTOR_DEFAULT if self.partition_fields else NON_PARTITIONED_EXTRACTOR,
            SUPPORT_TIMESTAMP: str(self.support_timestamp).lower(),
            AUTO_CREATE_DATABASE: AUTO_CREATE_DATABASE_DEFAULT,
        }
        if self.table_type == "MERGE_ON_READ":
            options |= {
                TABLE_STRATEGY: TABLE_STRATEGY_DEFAULT,
                SKIP_RO_SUFFIX: SKIP_RO_SUFFIX_DEFAULT,
                SNAPSHOT_WITH_TABLE_NAME: SNAPSHOT_WITH_TABLE_NAME_DEFAULT,
            }
        return options


def sync_options(table: TableConfig, metastore_uris: str) -> dict[str, str]:
    """Hudi hive-sync options for one table. MOR tables register `<t>_ro` and `<t>_rt`."""
    return HiveSyncOptions.for_table(table, metastore_uris).as_hoodie_options()


def sync_table(spark: SparkSession, table: TableConfig, metastore_uris: str, job_metadata: dict[str, str]) -> None:
    """Register (or update: new columns, partitions) one table in the metastore; raises on failure.

    `job_metadata`: the table's newest job metadata (`hudi.timeline`), whose freshness watermark
    is registered with it."""
    gateway = jvm(spark)
    props = gateway.java.util.Properties()
    for key, value in sync_options(table, metastore_uris).items():
        props.setProperty(key, value)
    # readers of the metastore (schedulers, catalog tools) see how fresh the registered data is
    watermark = Progress.from_metadata(job_metadata).watermark_ts_ms
    if watermark is not None:
        props.setProperty(
            TABLE_PROPERTIES, f"{WATERMARK_PROPERTY}={iso_utc(watermark)}\n{WATERMARK_TS_MS_PROPERTY}={watermark}"
        )
    conf = gateway.org.apache.hadoop.conf.Configuration(hadoop_conf(spark))
    conf.set("hive.metastore.uris", metastore_uris)
    # fail fast while the metastore is down instead of retrying for minutes inside the batch
    conf.set("hive.metastore.connect.retries", "1")
    conf.set("hive.metastore.client.connect.retry.delay", "1")
    conf.set("hive.metastore.client.socket.timeout", "20")
    tool = gateway.org.apache.hudi.hive.HiveSyncTool(props, conf)
    try:
        tool.syncHoodieTable()
    finally:
        tool.close()


UNKNOWN_COMMIT = "unknown"
"""The pending commit of a table that may be unregistered (start-up) when no commit is known."""


@dataclass
class SyncState:
    """Where one table's metastore registration stands."""

    synced_commit: str | None = None
    pending_commit: str | None = None
    last_error: str | None = None
    failed_attempts: int = 0
    last_attempt_at: float | None = None
    last_synced_at: float | None = None

    @classmethod
    def from_saved(cls, saved: dict[str, Any]) -> SyncState:
        """A state as `MetastoreSync` saved it (keys it does not know are ignored)."""
        return cls(**{f.name: saved[f.name] for f in fields(cls) if f.name in saved})

    @property
    def lagging(self) -> bool:
        """Whether a noted commit may not be registered yet.

        `synced_commit` is the newest completed commit when the last sync began, and a sync
        registers what the table holds, so it covers every commit up to that one, noted or not,
        and an unknown one. Why: the driver's wake-up may sync a table between a batch's commit
        and the batch noting it; comparing noted commits alone synced that commit twice.
        Instants are fixed-width timestamps, so text order is time order.
        """
        pending, synced = self.pending_commit, self.synced_commit
        if pending is None:
            return False
        if synced is None:
            return True
        if pending == UNKNOWN_COMMIT:
            return False
        return synced == UNKNOWN_COMMIT or pending > synced


class MetastoreSync:
    """Keeps every table's registration up to date across batches, retrying after outages."""

    def __init__(self, metastore_uris: str, state_path: str | None = None) -> None:
        self.metastore_uris = metastore_uris
        self.state_path = state_path
        self.states: dict[str, SyncState] = {}
        # foreachBatch runs on a py4j callback thread while the driver loop retries on its own
        self._lock = threading.Lock()

    def note_commit(self, table: TableConfig, commit: str | None) -> None:
        """A data commit happened (or, with None at start-up, may be unregistered)."""
        state = self.states.setdefault(table.name, SyncState())
        state.pending_commit = commit or state.pending_commit or UNKNOWN_COMMIT

    def sync_due(self, spark: SparkSession, tables: list[TableConfig]) -> dict[str, SyncState]:
        """Sync every table whose newest commit is not registered yet; never raises."""
        with self._lock:
            return self._sync_due(spark, tables)

    def _sync_due(self, spark: SparkSession, tables: list[TableConfig]) -> dict[str, SyncState]:
        for table in tables:
            if not table.hive.enabled:
                continue
            state = self.states.setdefault(table.name, SyncState(pending_commit=UNKNOWN_COMMIT))
            if not state.lagging:
                continue
            try:
                # no table, or one whose first commit has not completed, has no schema to register;
                # the driver's wake-up lands here while the batch thread is still writing that commit
                if not table_exists(spark, table.base_path):
                    continue
                # one listing of the timeline for the newest commit and its watermark
                timeline = TableTimeline(spark, table.base_path)
                newest = timeline.newest_commit()
                if newest is None:
                    continue
                state.last_attempt_at = time.time()
                sync_table(spark, table, self.metastore_uris, timeline.job_metadata())
            except Exception as exc:
                state.failed_attempts += 1
                state.last_error = error_summary(exc)
                log.warning(
                    "table %s: hive sync failed (attempt %d), commit %s stands, retrying next batch: %s",
                    table.name,
                    state.failed_attempts,
                    state.pending_commit,
                    state.last_error,
                )
                log.debug("hive sync failure", exc_info=True)
                continue
            state.synced_commit = newest
            state.last_error, state.failed_attempts = None, 0
            state.last_synced_at = time.time()
            log.info("table %s: synced to metastore as %s.%s", table.name, table.hive.database, table.hive_table)
        self._save(spark)
        return dict(self.states)

    def _save(self, spark: SparkSession) -> None:
        if self.state_path is None:
            return
        fs.replace_text(spark, self.state_path, json.dumps({k: asdict(v) for k, v in self.states.items()}, indent=2))


def state_path(checkpoint_dir: str) -> str:
    """Where a job records its metastore sync state (beside its checkpoint)."""
    return checkpoint_dir.rstrip("/") + "_hive_sync.json"


def read_state(spark: SparkSession, path: str) -> dict[str, Any]:
    """The sync state file written by a running job, or {} if there is none or it cannot be read.

    Only `status` reads it, and its sync columns are advice: a file that stays torn (a crash on a
    file system without atomic moves) leaves them empty, with a warning, rather than failing the
    command that operators run to find out what is wrong.
    """
    try:
        data: dict[str, Any] | None = fs.read_replaced_json(spark, path)
    except Exception as exc:
        log.warning(
            "%s cannot be read (%s): the metastore sync columns are left empty; the running job rewrites it "
            "after its next batch, or delete it and the job syncs every table again at its next start",
            path,
            error_summary(exc),
        )
        return {}
    return data or {}
