"""What must hold before the streaming query starts, checked where the job runs."""

from __future__ import annotations

import logging

from pyspark.sql import SparkSession

from hudi_cdc.commit.offsets import INDEX_KEY
from hudi_cdc.config import route_regex
from hudi_cdc.config.models import Config, TableConfig, check_base_paths
from hudi_cdc.errors import ConfigError
from hudi_cdc.hudi import relayout
from hudi_cdc.hudi.recovery import recover_table_config
from hudi_cdc.hudi.table import created_with, table_exists, table_version
from hudi_cdc.hudi.table_options import BUCKET_LAYOUT, index_layout
from hudi_cdc.hudi.timeline import latest_job_metadata
from hudi_cdc.kafka import check as kafka_check
from hudi_cdc.spark import fs
from hudi_cdc.spark.session import jvm

log = logging.getLogger(__name__)


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
    patterns = [r.pattern for r in config.routes if r.pattern is not None]
    problems = route_regex.jvm_problems(jvm(spark), patterns)
    if problems:
        raise ConfigError(source, [f"routes: {p}" for p in problems])
    check_base_paths(config, fs.HadoopFiles(spark), source=source, local_only=False)
    problems = table_problems(spark, config.tables)
    if problems:
        raise ConfigError(source, problems)
    kafka_check.check_reachable(config.kafka)


def table_problems(spark: SparkSession, tables: list[TableConfig]) -> list[str]:
    """Steps 3-6 of `preflight` for `tables` (also run for each table a template makes while the job runs)."""
    for table in tables:
        recover_table_config(spark, table.base_path)
    problems = version_problems(spark, tables) + shape_problems(spark, tables) + index_problems(spark, tables)
    return problems + [p for p in (relayout.unfinished(spark, table) for table in tables) if p]


def version_problems(spark: SparkSession, tables: list[TableConfig]) -> list[str]:
    """Tables stored at a higher Hudi table version than their `table_version` (see `preflight`)."""
    problems = []
    for table in tables:
        stored = table_version(spark, table.base_path)
        if stored is None or stored == table.table_version:
            continue
        if stored > table.table_version:
            problems.append(
                f"tables.{table.name}.table_version: {table.table_version}, but the table at {table.base_path} "
                f"is at Hudi table version {stored} and Hudi does not downgrade; remove the setting, or stop "
                f"the job and run `hudi-cdc relayout --table {table.name}` to rewrite the table at that version"
            )
        else:
            log.warning(
                "table %s: Hudi table version %d is upgraded to %d at its next commit (`table_version`); "
                "PrestoDB 0.287 cannot read it after that",
                table.name, stored, table.table_version,
            )  # fmt: skip
    return problems


def shape_problems(spark: SparkSession, tables: list[TableConfig]) -> list[str]:
    """Tables whose `key`, `partition_by` or `type` differ from what their Hudi table was created with.

    Hudi fixes them in `hoodie.properties` and refuses every write that asks for others ("Config
    conflict"); the job would stop on every batch (measured: before this check, each record was
    isolated alone and dead-lettered).
    """
    problems = []
    for table in tables:
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


def index_problems(spark: SparkSession, tables: list[TableConfig]) -> list[str]:
    """Tables whose `index`/`buckets` would change a bucket layout their files were written with.

    Hudi keeps a bucket table's layout in its file names only: written with another number of
    buckets, or with another index, it keeps a key in two file groups (measured: 4 buckets into
    an 8-bucket table duplicated 144 of 300 rows). hudi_cdc records the layout in every commit
    (`offsets.INDEX_KEY`); a table with no such record was not written with a bucket index.
    """
    problems = []
    for table in tables:
        if not table_exists(spark, table.base_path):
            continue
        wanted = index_layout(table)
        stored = latest_job_metadata(spark, table.base_path).get(INDEX_KEY)
        if stored != wanted and BUCKET_LAYOUT in (wanted.split(":")[0], (stored or "").split(":")[0]):
            problems.append(
                f"tables.{table.name}.index: the settings ask for {_layout_text(wanted)}, but the table at "
                f"{table.base_path} was written with {_layout_text(stored)}; a bucket index is fixed when "
                "the table is created. Restore the table's settings, or rewrite the table with the new ones: "
                f"stop the job and run `hudi-cdc relayout --table {table.name}`"
            )
    return problems


def _layout_text(layout: str | None) -> str:
    if layout is None:
        return "an index other than `bucket`"
    kind, _, buckets = layout.partition(":")
    return f"`index: {kind}`" + (f" with `buckets: {buckets}`" if buckets else "")
