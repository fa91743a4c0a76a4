"""Run the compactions of a merge-on-read table off the ingestion path (`hudi-cdc compact`, jobs/compact.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.sql import SparkSession

from hudi_cdc.config.models import TableConfig
from hudi_cdc.errors import SessionSettingsError
from hudi_cdc.hoodie_keys import (
    MAX_DELTA_COMMITS,
    MAX_DELTA_SECONDS,
    METADATA_TABLE,
    TRIGGER_STRATEGY,
    WRITE_TABLE_VERSION,
)
from hudi_cdc.hudi.retention import archival_options
from hudi_cdc.hudi.table import keeps_metadata_table
from hudi_cdc.hudi.table_options import index_options, write_options
from hudi_cdc.spark.session import HUDI_SQL_STATIC_CONF, has_hudi_sql

log = logging.getLogger(__name__)


def run_compaction(spark: SparkSession, table: TableConfig, *, force: bool = False) -> dict[str, Any]:
    """Schedule (when the table's trigger is due, or `force`) and execute compactions of one MOR table.

    Raises:
        SessionSettingsError: `spark` was started without Hudi's SQL, whose procedure this calls
            (`get_or_create_session(hudi_sql=True)` starts one with it, as `hudi-cdc compact` does).
    """
    if not has_hudi_sql(spark):
        raise SessionSettingsError([
            f"compaction runs Hudi's SQL procedure: build the session with {key}={value}"
            for key, value in HUDI_SQL_STATIC_CONF.items()
        ] + ["or run `hudi-cdc compact` (or jobs/compact.py), whose session has them"])  # fmt: skip
    policy = table.compaction
    options = {
        TRIGGER_STRATEGY: "NUM_COMMITS" if force else policy.strategy,
        MAX_DELTA_COMMITS: "1" if force else str(policy.max_delta_commits),
        MAX_DELTA_SECONDS: str(policy.max_delta_seconds),
        # the procedure's write client archives after the compaction commit: same bound as the writer
        **archival_options(spark, table.base_path, table.archive_after_hours),
        # without it the procedure upgrades the metadata table of a version-6 table to 9 (measured),
        # which PrestoDB's Hudi 0.14 then fails to open
        WRITE_TABLE_VERSION: str(table.table_version),
        # a write client whose config lacks the record-level index deletes it from the metadata table
        # (Hudi's HoodieTable.deleteMetadataIndexIfNecessary): the same index settings as the writer
        **index_options(table),
        # the writer's choice of metadata table: Hudi's default would make one for a table kept without
        METADATA_TABLE: write_options(table, has_metadata_table=keeps_metadata_table(spark, table))[METADATA_TABLE],
    }
    # the procedure splits its `options` on commas: a value with one (a composite key's fields)
    # goes through the session's conf, which the procedure reads just below its options
    inline, by_session = procedure_options(options)
    rendered = ",".join(f"{k}={v}" for k, v in inline.items())
    # a table path, never a user string, goes into the statement
    path = table.base_path.replace("'", "")
    with session_conf(spark, by_session):
        rows = spark.sql(
            f"call run_compaction(op => 'scheduleAndExecute', path => '{path}', options => '{rendered}')"
        ).collect()
    instants = [str(r["timestamp"]) for r in rows]
    log.info("table %s: compacted %s", table.name, instants or "nothing (not due)")
    return {"table": table.name, "compacted": ",".join(instants) or "-", "strategy": options[TRIGGER_STRATEGY]}


def procedure_options(options: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Split a Hudi procedure's options into those its `options` string can carry and those with a comma."""
    inline = {k: v for k, v in options.items() if "," not in v}
    return inline, {k: v for k, v in options.items() if k not in inline}


@contextmanager
def session_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Set `settings` in the session's SQL conf for the block, then restore what was there.

    The session's `hoodie.*` conf reaches every Hudi call of the session meanwhile: the callers
    (`hudi-cdc compact`, jobs/compact.py) compact one table at a time and write nothing else.
    """
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, previous in before.items():
            if previous is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, previous)
