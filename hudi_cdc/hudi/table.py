"""Read a Hudi table: whether it exists, its latest commit, a snapshot of its rows.

The writer only writes; everything that asks a table what it holds is here (the timeline's
details are in `hudi/timeline.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_cdc.config.models import TableConfig
from hudi_cdc.hoodie_keys import DATA_SKIPPING, QUERY_READ_OPTIMIZED, QUERY_TYPE
from hudi_cdc.hudi.prepped import LOCATION_COLUMNS
from hudi_cdc.hudi.table_options import metadata_table_kept
from hudi_cdc.spark import fs
from hudi_cdc.spark.session import hadoop_conf, jvm

log = logging.getLogger(__name__)


def table_exists(spark: SparkSession, base_path: str) -> bool:
    """Whether a Hudi table has been created at `base_path` (any Hadoop file system)."""
    return fs.exists(spark, base_path.rstrip("/") + "/.hoodie")


def has_metadata_table(spark: SparkSession, base_path: str) -> bool:
    """Whether the Hudi table at `base_path` has a metadata table (`.hoodie/metadata`)."""
    return fs.exists(spark, base_path.rstrip("/") + "/.hoodie/metadata")


def keeps_metadata_table(spark: SparkSession, table: TableConfig) -> bool:
    """Whether the next commit to `table` keeps Hudi's metadata table: by `metadata_table_kept`'s
    rule, or because the table has one already (asked of the file system only when the rule says no)."""
    return metadata_table_kept(table, has_one=False) or has_metadata_table(spark, table.base_path)


def latest_commit(spark: SparkSession, base_path: str) -> str | None:
    """The newest completed commit/deltacommit instant, or None for no table or none completed yet."""
    if not table_exists(spark, base_path):
        return None
    file_system, _ = fs.open_fs(spark, base_path)
    helpers = jvm(spark).org.apache.hudi.HoodieDataSourceHelpers
    # not helpers.latestCommit: it fails on a table whose first commit is still inflight
    instant = helpers.allCompletedCommitsCompactions(file_system, base_path).lastInstant()
    return str(instant.get().requestedTime()) if instant.isPresent() else None


def table_version(spark: SparkSession, base_path: str) -> int | None:
    """The Hudi table version in the table's `hoodie.properties` (6, 8, 9), or None for no table."""
    if not table_exists(spark, base_path):
        return None
    return int(meta_client(spark, base_path).getTableConfig().getTableVersion().versionCode())


@dataclass(frozen=True)
class CreatedWith:
    """What Hudi fixed in a table's `hoodie.properties` when it created it."""

    key: tuple[str, ...]
    partition_by: tuple[str, ...]
    type: str
    """COPY_ON_WRITE or MERGE_ON_READ."""


def created_with(spark: SparkSession, base_path: str) -> CreatedWith | None:
    """The key, partition columns and type the table at `base_path` was created with, or None for no table."""
    if not table_exists(spark, base_path):
        return None
    config = meta_client(spark, base_path).getTableConfig()
    key = config.getRecordKeyFieldProp()
    # Hudi 1.x may keep a partition field's key generator type after a colon (`region:simple`)
    partitions = config.getPartitionFieldProp()
    return CreatedWith(
        key=_fields(key),
        partition_by=tuple(field.split(":")[0] for field in _fields(partitions)),
        type=str(config.getTableType().name()),
    )


def _fields(prop: Any) -> tuple[str, ...]:
    return tuple(field.strip() for field in str(prop or "").split(",") if field.strip())


def meta_client(spark: SparkSession, base_path: str) -> Any:
    """Hudi's HoodieTableMetaClient of the table at `base_path` (JVM object)."""
    gateway = jvm(spark)
    conf = gateway.org.apache.hudi.hadoop.fs.HadoopFSUtils.getStorageConfWithCopy(hadoop_conf(spark))
    return gateway.org.apache.hudi.common.table.HoodieTableMetaClient.builder().setConf(conf).setBasePath(base_path).build()


def read_table(spark: SparkSession, base_path: str, *, locations: bool = False) -> DataFrame | None:
    """Snapshot read (MOR: base + logs merged) without Hudi's meta columns, or None for no table.

    `locations`: keep the meta columns that name each row's file group (`prepped.LOCATION_COLUMNS`).

    Data skipping is off: the job joins this read with a batch's keys, where the column-stats
    index prunes nothing, and Hudi's lookup persists and unpersists a Dataset while Spark runs
    the plan. With tables applied concurrently (`job.table_concurrency`) that unpersist inside
    a running plan deadlocked Spark's cache manager (measured: a thread dump showed every table
    thread blocked on another's in-memory cache lock).
    """
    if not table_exists(spark, base_path):
        return None
    df = spark.read.format("hudi").option(DATA_SKIPPING, "false").load(base_path)
    return _without_meta_columns(df, keep=LOCATION_COLUMNS if locations else ())


def read_base_locations(spark: SparkSession, base_path: str, key: Sequence[str]) -> DataFrame:
    """The key columns and location (`prepped.LOCATION_COLUMNS`) of every row of the table's latest
    base files: Hudi's read-optimized query, which opens no log file.

    Where the simple index keeps a table (every key is inserted into a base file, and a key's file
    group never changes), this names the file group of every key the table holds, as Hudi's own
    lookup finds it, at the cost of reading the key column of the base files. A key deleted in a
    log file is still there: an upsert of it goes to its old file group, as Hudi's lookup sends it.
    """
    df = spark.read.format("hudi").option(QUERY_TYPE, QUERY_READ_OPTIMIZED).option(DATA_SKIPPING, "false").load(base_path)
    return df.select(*key, *LOCATION_COLUMNS)


def stored_bytes(stored: DataFrame) -> int | None:
    """Spark's estimate of a table's read (`read_table`): the bytes of the files Hudi's file index
    lists, scaled to the columns read.

    The index lists the table's latest file slices when asked for its files, as the read itself
    would when it runs (and it keeps the listing for the read); until then it reports Spark's
    "size unknown". No file is opened. None if Spark's plan statistics cannot be read.
    """
    try:
        stored.inputFiles()
        return int(stored._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())
    except Exception:  # an internal API: if it changes, a batch only loses the one-task plan
        log.debug("no size estimate for a table's read", exc_info=True)
        return None


def read_keys(
    spark: SparkSession,
    base_path: str,
    column: str,
    keys: Sequence[object],
    options: Mapping[str, str],
    *,
    locations: bool = False,
) -> DataFrame:
    """The stored rows whose record key `column` is one of `keys`, read from the files that hold them only.

    Hudi's data skipping names the file groups the keys live in: from the record-level index
    (metadata table), or from the keys' hashes for a bucket index. `options`: the table's
    `hudi.table_options.key_lookup_options`; with a table that keeps neither index, nothing is pruned
    and the read scans. `locations` as for `read_table`.
    """
    df = spark.read.format("hudi").options(**options).load(base_path)
    return _without_meta_columns(df.filter(F.col(column).isin(*keys)), keep=LOCATION_COLUMNS if locations else ())


def _without_meta_columns(df: DataFrame, *, keep: Sequence[str] = ()) -> DataFrame:
    return df.drop(*[c for c in df.columns if c.startswith("_hoodie_") and c not in keep])
