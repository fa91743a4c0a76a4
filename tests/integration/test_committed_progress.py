"""Committed counts that stay exact across a crash, and the freshness watermark.

The crash is the one that matters for counts: Hudi has committed a batch, and the job dies
before Spark records the batch as done (its `commits/<batch>` file is missing), so Spark
replays the batch on restart.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable
from devkit.services.hms import LocalMetastore
from devkit.services.kafka import LocalKafka
from hudi_cdc.cli.console import cli
from hudi_cdc.commit.metrics import COUNTED, TableMetrics
from hudi_cdc.commit.progress import iso_utc
from hudi_cdc.commit.watermark import EXIT_NOT_REACHED
from hudi_cdc.hudi import hive_sync
from hudi_cdc.hudi.status import table_status
from hudi_cdc.hudi.timeline import summary
from hudi_cdc.spark.session import jvm
from tests.support.harness import Job

pytestmark = pytest.mark.integration

COLUMNS = [Column("id", "int64", optional=False), Column("name", "string")]
T0 = 1_763_892_000_000  # source time of the first change (ms)


def _counts(metrics: TableMetrics) -> dict[str, int]:
    return {name: getattr(metrics, name) for name in COUNTED}


def _metastore_parameters(spark: SparkSession, uri: str, database: str, table: str) -> dict[str, str]:
    """The table's parameters as the Hive Metastore holds them (its own Thrift client)."""
    gateway = jvm(spark)
    conf = gateway.org.apache.hadoop.hive.conf.HiveConf()
    conf.set("hive.metastore.uris", uri)
    client = gateway.org.apache.hadoop.hive.metastore.HiveMetaStoreClient(conf)
    try:
        return {str(k): str(v) for k, v in dict(client.getTable(database, table).getParameters()).items()}
    finally:
        client.close()


def test_a_batch_replayed_after_a_crash_is_neither_applied_nor_counted_twice(
    spark: SparkSession, kafka: LocalKafka, metastore: LocalMetastore, tmp_path: Path
) -> None:
    job = Job(spark, kafka, tmp_path, [{"name": "people", "key": ["id"]}], metastore_uris=metastore.uri)
    people = DebeziumTable(server=f"srv{job.suffix}", database="db", table="people", columns=COLUMNS, key=["id"])
    records = [people.change("c", after={"id": i, "name": f"n{i}"}, pos=100 + i, ts_ms=T0 + i) for i in range(5)]
    records += [people.change("u", after={"id": 1, "name": "renamed"}, pos=200, ts_ms=T0 + 100)]
    records += [people.change("d", before={"id": 2}, pos=300, ts_ms=T0 + 200), people.tombstone({"id": 2})]
    job.produce("people", records)
    (first,) = job.run()
    (applied,) = first.tables
    assert (applied.read, applied.applied, applied.collapsed, applied.deleted, applied.tombstone) == (8, 4, 2, 1, 1)
    assert applied.watermark_ts_ms == T0 + 200
    commits = summary(spark, job.path("people"))

    # the job dies after Hudi's commit, before Spark's: Spark runs the same batch again
    commits_log = Path(job.root) / job.checkpoint / "commits"
    for name in (str(first.batch_id), f".{first.batch_id}.crc"):
        (commits_log / name).unlink(missing_ok=True)
    (replay,) = job.run()
    assert replay.batch_id == first.batch_id
    (again,) = replay.tables
    assert again.replayed
    assert _counts(again) == _counts(applied), "a replay reports the committed counts, not duplicates"
    assert summary(spark, job.path("people")).last_commit == commits.last_commit, "nothing was applied again"

    # a later batch adds to the committed totals, and an event older than the watermark is flagged
    job.produce("people", [people.change("u", after={"id": 3, "name": "old"}, pos=90, ts_ms=T0 - 50),
                           people.change("c", after={"id": 9, "name": "n9"}, pos=400, ts_ms=T0 + 500)])  # fmt: skip
    (later,) = job.run()
    (table,) = later.tables
    assert (table.late, table.applied, table.behind_watermark) == (1, 1, 1)
    status = table_status(spark, job.config.table("people"))
    assert status.watermark == iso_utc(T0 + 500)
    assert status.committed_counts == {name: _counts(applied)[name] + _counts(table)[name] for name in COUNTED}
    assert status.last_commit_counts == _counts(table)

    # published with the registration, for schedulers that read the metastore
    parameters = _metastore_parameters(spark, metastore.uri, job.database, "people")
    assert parameters[hive_sync.WATERMARK_TS_MS_PROPERTY] == str(T0 + 500)
    assert parameters[hive_sync.WATERMARK_PROPERTY] == iso_utc(T0 + 500)

    # the scheduler's command: complete up to T0 + 500 ms, not up to a second later
    config_file = job.config_file(job={"metastore_uris": None})
    runner = CliRunner()
    reached = runner.invoke(cli, ["watermark", "--table", "people", "--config", str(config_file), "--json",
                                  "--wait-until", "2025-11-23T10:00:00.500Z", "--timeout", "0 seconds"])  # fmt: skip
    assert reached.exit_code == 0, reached.output
    document = json.loads(reached.stdout.strip().splitlines()[-1])
    assert (document["format"], document["command"], document["title"]) == (1, "watermark", "watermark")
    assert document["rows"][0]["table"] == "people" and document["rows"][0]["reached"] is True
    waited = runner.invoke(cli, ["watermark", "--table", "people", "--config", str(config_file),
                                 "--wait-until", "2025-11-23T10:00:01.500Z", "--timeout", "2 seconds", "--poll", "1 second"])  # fmt: skip
    assert waited.exit_code == EXIT_NOT_REACHED, waited.output
    unknown = runner.invoke(cli, ["watermark", "--table", "nobody", "--config", str(config_file)])
    assert unknown.exit_code == 2 and "no table 'nobody'" in unknown.output

