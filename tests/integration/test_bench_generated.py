"""`make bench --load-by generate` builds the tables a load through Kafka would have left.

A generated table stands in for hours of loading in the 10M-row measurements, so it must be the
same table: the same rows, column for column (`_cdc_*` and `_pos` included), the same schema and
nullability, and, for hudi_cdc, the same commit metadata; and hudi_cdc must go on from it as from
its own table. Each job loads 300 snapshot reads from Kafka into one folder and builds them by
`generated.build` into another.

Deep: about 40 s on 2 cores.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from devkit.bench import generated
from devkit.bench.jobs import JobSpec, run_job
from devkit.bench.run import produce
from devkit.bench.workloads import (
    KEY,
    final_versions,
    load_topic,
    records,
    row,
    snapshot_changes,
    source,
    update_changes,
)
from devkit.services.kafka import LocalKafka
from hudi_cdc import events
from hudi_cdc.commit.offsets import JOB_KEY
from hudi_cdc.hudi import timeline

pytestmark = [pytest.mark.integration, pytest.mark.deep]

ROWS = 300
NOT_COMPARED = {events.INGESTED_AT, "_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_file_name"}
"""The write's time and its file names: every load has its own."""


def _spec(job: str, kafka: LocalKafka, topic: str, folder: Path) -> JobSpec:
    return JobSpec(
        job=job, bootstrap=kafka.bootstrap_servers, topics=[topic], batch=1000, table_path=str(folder / job),
        type="COPY_ON_WRITE", partitioned=False, work_dir=str(folder / f"work-{job}"),
    )  # fmt: skip


def _table(spark: SparkSession, path: str) -> DataFrame:
    table = spark.read.format("hudi").load(path)
    table = table.select(*[c for c in table.columns if c not in NOT_COMPARED])
    if events.COLUMN_ORDERS in table.columns:  # set operations take no maps
        table = table.withColumn(events.COLUMN_ORDERS, F.array_sort(F.map_entries(events.COLUMN_ORDERS)))
    return table


def _same(spark: SparkSession, loaded: str, built: str) -> None:
    def shape(path: str) -> list[tuple[str, str, bool]]:
        return [(f.name, f.dataType.simpleString(), f.nullable) for f in spark.read.format("hudi").load(path).schema]

    assert shape(built) == shape(loaded)
    assert spark.read.format("hudi").load(built).schema == spark.read.format("hudi").load(loaded).schema
    ours, theirs = _table(spark, loaded), _table(spark, built)
    assert ours.count() == theirs.count() == ROWS
    assert ours.exceptAll(theirs).count() == 0, ours.exceptAll(theirs).limit(3).collect()
    assert theirs.exceptAll(ours).count() == 0, theirs.exceptAll(ours).limit(3).collect()


def test_a_generated_table_is_the_table_a_load_through_kafka_leaves(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    topic = load_topic(ROWS)
    kafka.create_topics([topic])
    assert produce(kafka.bootstrap_servers, topic, records(source(f"rows_{ROWS}"), snapshot_changes(ROWS))) == ROWS
    for job in ("hudi_cdc", "plain"):
        run_job(spark, _spec(job, kafka, topic, tmp_path / "kafka"), lambda: None)
        generated.build(spark, _spec(job, kafka, topic, tmp_path / "generated"), ROWS)
        _same(spark, str(tmp_path / "kafka" / job), str(tmp_path / "generated" / job))

    loaded = timeline.latest_job_metadata(spark, str(tmp_path / "kafka" / "hudi_cdc"))
    built = timeline.latest_job_metadata(spark, str(tmp_path / "generated" / "hudi_cdc"))
    assert loaded[JOB_KEY] == "bench"
    assert {k: v for k, v in built.items() if k.startswith(events.CDC_PREFIX)} == {
        k: v for k, v in loaded.items() if k.startswith(events.CDC_PREFIX)
    }

    # hudi_cdc goes on from the generated table as from its own: updates land, the rest is as loaded
    changes = list(update_changes(40, ROWS))
    updates = source("generated_updates").topic
    kafka.create_topics([updates])
    produce(kafka.bootstrap_servers, updates, records(source("generated_updates"), changes))
    run_job(spark, _spec("hudi_cdc", kafka, updates, tmp_path / "generated"), lambda: None)
    stored = {r[KEY]: r["email"] for r in spark.read.format("hudi").load(str(tmp_path / "generated" / "hudi_cdc")).collect()}
    expected = {key: row(key, final_versions(changes).get(key) or 0)["email"] for key in range(ROWS)}
    assert stored == expected
    newest = timeline.latest_job_metadata(spark, str(tmp_path / "generated" / "hudi_cdc"))
    assert json.loads(newest[events.CDC_PREFIX + "counts_total"])["read"] == ROWS + len(changes)
