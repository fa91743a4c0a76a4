"""`hudi-cdc status`: per table, what is committed and how the table is doing."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from hudi_cdc.config import TableConfig
from hudi_cdc.hudi import retention, writer
from hudi_cdc.hudi.timeline import summary
from hudi_cdc.spark_session import hadoop_conf, jvm


def _data_files(spark: SparkSession, base_path: str) -> tuple[int, int]:
    """(count, total bytes) of base and log files, excluding Hudi's metadata folder."""
    gateway = jvm(spark)
    root = gateway.org.apache.hadoop.fs.Path(base_path)
    fs = root.getFileSystem(hadoop_conf(spark))
    files = fs.listFiles(root, True)
    count = size = 0
    while files.hasNext():
        status = files.next()
        path = str(status.getPath())
        name = path.rsplit("/", 1)[-1]
        if "/.hoodie/" in path:
            continue
        # base files are *.parquet; MOR log files are hidden: .<file id>_<instant>.log.<version>_<token>
        if name.endswith(".parquet") or ".log." in name:
            count += 1
            size += int(status.getLen())
    return count, size


def table_status(spark: SparkSession, table: TableConfig, sync_state: dict[str, Any] | None = None) -> dict[str, Any]:
    """One row of `hudi-cdc status`; `sync_state` is the job's hive sync state file, if any."""
    row: dict[str, Any] = {"table": table.name, "type": table.type}
    state = (sync_state or {}).get(table.name)
    row["hive_sync"] = (
        "off"
        if state is None
        else "ok"
        if state.get("synced_commit") == state.get("pending_commit")
        else f"lagging ({state.get('failed_attempts', 0)} failed: {state.get('last_error')})"
    )
    if state is not None:
        # the newest commit the metastore (and so Trino) knows about
        row["hive_synced_commit"] = state.get("synced_commit")
    if not writer.table_exists(spark, table.base_path):
        return {**row, "last_commit": None, "note": "not created yet"}
    timeline = summary(spark, table.base_path)
    files, size = _data_files(spark, table.base_path)
    row.update(
        last_commit=timeline.last_commit,
        last_action=timeline.last_action,
        applied_through=timeline.applied_through,
        last_batch=timeline.last_batch_id,
        pending_compactions=len(timeline.pending_compactions),
        last_compaction=timeline.last_compaction,
        files=files,
        avg_file_kb=round(size / files / 1024, 1) if files else 0,
    )
    # Trino <= 479 fails on every query once an instant of its last 72 h is archived
    row.update(retention.trino_archive_check(spark, table.base_path))
    return row
