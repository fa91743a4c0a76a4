"""`hudi-cdc status`: per table, what is committed and how the table is doing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from hudi_cdc.commit.progress import iso_utc
from hudi_cdc.config.models import TableConfig
from hudi_cdc.hudi import retention
from hudi_cdc.hudi.hive_sync import SyncState
from hudi_cdc.hudi.table import table_exists
from hudi_cdc.hudi.timeline import summary
from hudi_cdc.spark import fs


@dataclass(frozen=True)
class TableStatus:
    """One table's state: its timeline, Kafka positions applied, metastore sync and files."""

    table: str
    type: str
    hive_sync: str
    """`off`, `ok`, or `lagging (<n> failed: <error>)`."""
    created: bool
    last_commit: str | None = None
    last_action: str | None = None
    applied_through: dict[str, dict[str, int]] = field(default_factory=dict)
    """topic -> partition -> newest Kafka offset of the last commit."""
    last_batch: int | None = None
    watermark: str | None = None
    """Source time (UTC, ISO-8601) through which every partition is applied; see hudi_cdc.commit.progress."""
    committed_counts: dict[str, int] = field(default_factory=dict)
    """Outcome counts of every committed batch, summed (exact across crashes and replays)."""
    last_commit_counts: dict[str, int] = field(default_factory=dict)
    pending_compactions: int = 0
    last_compaction: str | None = None
    files: int = 0
    """Base and log files, outside Hudi's metadata folder."""
    avg_file_kb: float = 0
    hive_synced_commit: str | None = None
    """The newest commit registered in the metastore (so visible to Trino)."""
    trino: dict[str, Any] = field(default_factory=dict)
    """archived_files, newest_archived and trino_readable (ok / warn / FAILS), see hudi/retention.py."""

    def as_row(self) -> dict[str, Any]:
        """The row `hudi-cdc status` prints (a table not created yet shows a note instead of stats)."""
        row: dict[str, Any] = {"table": self.table, "type": self.type, "hive_sync": self.hive_sync}
        if self.hive_synced_commit is not None:
            row["hive_synced_commit"] = self.hive_synced_commit
        if not self.created:
            return {**row, "last_commit": None, "note": "not created yet"}
        return {
            **row,
            "last_commit": self.last_commit,
            "last_action": self.last_action,
            "applied_through": self.applied_through,
            "last_batch": self.last_batch,
            "watermark": self.watermark,
            "committed_counts": self.committed_counts,
            "last_commit_counts": self.last_commit_counts,
            "pending_compactions": self.pending_compactions,
            "last_compaction": self.last_compaction,
            "files": self.files,
            "avg_file_kb": self.avg_file_kb,
            **self.trino,
        }


def _data_files(spark: SparkSession, base_path: str) -> tuple[int, int]:
    """(count, total bytes) of base and log files, excluding Hudi's metadata folder."""
    count = size = 0
    for path, length in fs.list_files(spark, base_path):
        name = path.rsplit("/", 1)[-1]
        if "/.hoodie/" in path:
            continue
        # base files are *.parquet; MOR log files are hidden: .<file id>_<instant>.log.<version>_<token>
        if name.endswith(".parquet") or ".log." in name:
            count += 1
            size += length
    return count, size


def _hive_sync(state: dict[str, Any] | None) -> str:
    if state is None:
        return "off"
    if not SyncState.from_saved(state).lagging:
        return "ok"
    return f"lagging ({state.get('failed_attempts', 0)} failed: {state.get('last_error')})"


def table_status(spark: SparkSession, table: TableConfig, sync_state: dict[str, Any] | None = None) -> TableStatus:
    """The status of one table; `sync_state` is the job's hive sync state file, if any."""
    state = (sync_state or {}).get(table.name)
    hive_sync = _hive_sync(state)
    synced = state.get("synced_commit") if state else None
    if not table_exists(spark, table.base_path):
        return TableStatus(
            table=table.name, type=table.type, hive_sync=hive_sync, created=False, hive_synced_commit=synced
        )
    timeline = summary(spark, table.base_path)
    files, size = _data_files(spark, table.base_path)
    return TableStatus(
        table=table.name,
        type=table.type,
        hive_sync=hive_sync,
        created=True,
        last_commit=timeline.last_commit,
        last_action=timeline.last_action,
        applied_through=timeline.applied_through,
        last_batch=timeline.last_batch_id,
        watermark=iso_utc(timeline.progress.watermark_ts_ms),
        committed_counts=timeline.progress.totals,
        last_commit_counts=timeline.progress.counts,
        pending_compactions=len(timeline.pending_compactions),
        last_compaction=timeline.last_compaction,
        files=files,
        avg_file_kb=round(size / files / 1024, 1) if files else 0,
        hive_synced_commit=synced,
        # Trino 476 fails on every query once an instant of its last 72 h is archived
        trino=retention.trino_archive_check(spark, table.base_path, table.archive_after_hours),
    )
