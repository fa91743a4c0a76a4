"""Repair what a crash (kill -9, a lost node) can leave in a table's `.hoodie` folder, before a run.

Hudi changes `hoodie.properties` in steps: copy it to `hoodie.properties.backup`, delete it,
write the new file, delete the backup. A crash between the last two leaves an empty
`hoodie.properties` (measured: a SIGKILL while Hudi registered its metadata table after the
first commit). Hudi reads the backup only when the file is missing, not when it is empty, so
every later read fails with "Hoodie table not found" and the job could never start again.
A crash while Hudi creates a table can also leave a `.hoodie` folder with neither file: no
data file can exist yet then (Hudi writes the table config before any data).
"""

from __future__ import annotations

import logging
import time

from pyspark.sql import SparkSession

from hudi_cdc.hudi.table import has_metadata_table, meta_client
from hudi_cdc.spark import fs
from hudi_cdc.spark.session import hadoop_conf, jvm

log = logging.getLogger(__name__)

PROPERTIES = "hoodie.properties"
BACKUP = "hoodie.properties.backup"


def recover_table_config(spark: SparkSession, base_path: str) -> str | None:
    """Make the table at `base_path` readable again after a crash; what was done, or None.

    - an empty or missing `hoodie.properties` with a backup: the backup is copied back (the
      table config as it was before the interrupted change; Hudi redoes the change);
    - neither file, and no completed instant: the table was never created; its `.hoodie`
      folder is moved aside (`.hoodie.incomplete-<ms>`) so the next write creates the table.
    """
    meta = base_path.rstrip("/") + "/.hoodie"
    if not fs.exists(spark, meta) or _size(spark, f"{meta}/{PROPERTIES}") > 0:
        return None
    file_system, _ = fs.open_fs(spark, meta)
    hadoop = jvm(spark).org.apache.hadoop.fs
    if _size(spark, f"{meta}/{BACKUP}") > 0:
        hadoop.FileUtil.copy(
            file_system, hadoop.Path(f"{meta}/{BACKUP}"), file_system, hadoop.Path(f"{meta}/{PROPERTIES}"),
            False, True, hadoop_conf(spark),
        )  # fmt: skip
        done = f"restored {PROPERTIES} from {BACKUP} (a crash interrupted a change of the table config)"
    elif not _has_completed_instant(spark, meta):
        aside = f"{meta}.incomplete-{int(time.time() * 1000)}"
        file_system.rename(hadoop.Path(meta), hadoop.Path(aside))
        done = f"moved a table creation a crash interrupted aside to {aside}; the next commit creates the table"
    else:
        return None  # commits without a table config: not something to guess about; Hudi's error stands
    log.warning("table at %s: %s", base_path, done)
    return done


def _size(spark: SparkSession, path: str) -> int:
    """The length of the file at `path`, -1 when there is none."""
    file_system, target = fs.open_fs(spark, path)
    return int(file_system.getFileStatus(target).getLen()) if file_system.exists(target) else -1


def _has_completed_instant(spark: SparkSession, meta: str) -> bool:
    """Whether the timeline (version 8+ `timeline/` or version 6 flat) holds a completed commit of any kind."""
    for folder in (meta, f"{meta}/timeline"):
        for name in fs.names(spark, folder):
            if name.startswith(".") or "." not in name:
                continue
            # `<instant>.commit` (version 6) or `<requested>_<completed>.commit` (version 8+)
            if not name.endswith((".requested", ".inflight", ".crc")) and name.split(".")[0].replace("_", "").isdigit():
                return True
    return False


def drop_metadata_table(spark: SparkSession, base_path: str) -> str | None:
    """Delete the table's metadata table so that Hudi rebuilds it from the data files at the next commit.

    The repair for a metadata table that can no longer be read (TableFailure says when). Hudi's own
    deletion also marks its partitions unavailable in `hoodie.properties`; deleting the folder by hand
    would not, and every later write would fail to find it. The old folder is kept as a backup
    beside it. Returns the backup's path; None when the table has no metadata table. Run it while
    no job writes the table.
    """
    if not has_metadata_table(spark, base_path):
        return None
    client = meta_client(spark, base_path)
    gateway = jvm(spark)
    context = gateway.org.apache.hudi.common.engine.HoodieLocalEngineContext(client.getStorageConf())
    backup = gateway.org.apache.hudi.metadata.HoodieTableMetadataUtil.deleteMetadataTable(client, context, True)
    log.warning("table at %s: metadata table deleted (backup at %s); the next commit rebuilds it", base_path, backup)
    return str(backup) if backup else None
