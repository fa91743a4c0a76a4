"""A scheduled run pushes its metrics to a real Pushgateway, where Prometheus scrapes them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable
from devkit.services.hms import LocalMetastore
from devkit.services.kafka import LocalKafka
from devkit.services.pushgateway import LocalPushgateway
from hudi_cdc import __version__
from hudi_cdc.errors import TableFailure
from tests.support.harness import Job

pytestmark = pytest.mark.integration

COLUMNS = [Column("id", "int64", optional=False), Column("name", "string")]


def _corrupt_metadata_table(base_path: str) -> None:
    """Overwrite the files of the metadata table's `files` partition: the table's next write fails (TableFailure)."""
    partition = Path(base_path) / ".hoodie" / "metadata" / "files"
    corrupted = [p for p in partition.iterdir() if p.is_file() and ".hoodie_partition_metadata" not in p.name]
    assert corrupted, f"no metadata table files in {partition}"
    for path in corrupted:
        path.write_bytes(b"not an hfile or a log block " * 4)


def test_a_once_run_pushes_its_counts_process_metrics_and_build_info_also_when_it_fails(
    spark: SparkSession, kafka: LocalKafka, metastore: LocalMetastore, pushgateway: LocalPushgateway, tmp_path: Path
) -> None:
    # `pets` keeps a metadata table (unpartitioned tables keep none unless asked) for the failure below
    pets = {"name": "pets", "key": ["id"], "hoodie_options": {"hoodie.metadata.enable": True}}
    job = Job(spark, kafka, tmp_path, [{"name": "people", "key": ["id"]}, pets],
              metastore_uris=metastore.uri, job_settings={"metrics_pushgateway": pushgateway.url})  # fmt: skip
    published = {"people": 3, "pets": 2}
    sources: dict[str, DebeziumTable] = {}
    for table, count in published.items():
        sources[table] = DebeziumTable(server=f"srv{job.suffix}", database="db", table=table, columns=COLUMNS, key=["id"])
        job.produce(table, [sources[table].change("c", after={"id": i, "name": "n"}, pos=100 + i) for i in range(count)])
    pipeline = f"test-{job.suffix}"
    assert pushgateway.samples(pipeline=pipeline) == {}, "another run pushed this group"

    began = time.time()
    batches = job.run()

    assert sum(t.applied for b in batches for t in b.tables) == 5
    # the group Prometheus stores: job="hudi_cdc" from the push, pipeline from the job's name
    samples = pushgateway.samples(job="hudi_cdc", pipeline=pipeline)
    applied = {dict(labels)["table"]: value for (name, labels), value in samples.items()
               if name == "hudi_cdc_records_total" and dict(labels)["outcome"] == "applied"}  # fmt: skip
    assert applied == published
    read = {dict(labels)["table"]: value for (name, labels), value in samples.items() if name == "hudi_cdc_records_read_total"}
    assert read == published
    names = {name for name, _ in samples}
    assert {"process_cpu_seconds_total", "process_resident_memory_bytes", "python_info"} <= names
    assert "push_time_seconds" in names  # the gateway's own: when this run last pushed
    info = [dict(labels) for (name, labels), value in samples.items() if name == "hudi_cdc_build_info" and value == 1]
    assert [i["version"] for i in info] == [__version__]
    # each table registered in the metastore by this run, and nothing waiting for it
    synced = {dict(labels)["table"]: value for (name, labels), value in samples.items()
              if name == "hudi_cdc_hive_last_sync_timestamp_seconds"}  # fmt: skip
    assert set(synced) == set(published) and all(began <= at <= time.time() for at in synced.values())
    lagging = {dict(labels)["table"]: value for (name, labels), value in samples.items() if name == "hudi_cdc_hive_sync_lagging"}
    assert lagging == {"people": 0, "pets": 0}

    # a run that ends with an error pushes too: its own counts replace the last run's
    pushed_at = samples[("push_time_seconds", (("instance", ""), ("job", "hudi_cdc"), ("pipeline", pipeline)))]
    _corrupt_metadata_table(job.path("pets"))
    job.job_settings = {**job.job_settings, "on_table_failure": "stop"}
    job.produce("pets", [sources["pets"].change("c", after={"id": 9, "name": "n"}, pos=200)])
    with pytest.raises(TableFailure):
        job.run()
    after = pushgateway.samples(job="hudi_cdc", pipeline=pipeline)
    read = {dict(labels)["table"]: value for (name, labels), value in after.items() if name == "hudi_cdc_records_read_total"}
    assert read == {"people": 0, "pets": 0}  # the failed batch is not counted: Kafka keeps it for the next run
    assert after[("push_time_seconds", (("instance", ""), ("job", "hudi_cdc"), ("pipeline", pipeline)))] > pushed_at
