"""Prometheus metrics scraped over HTTP from a running job (`hudi-cdc run`, its own process)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable
from devkit.services.kafka import LocalKafka
from tests.support.harness import Job, continuous

pytestmark = pytest.mark.integration

COLUMNS = [Column("id", "int64", optional=False), Column("name", "string")]


def test_a_continuous_job_serves_its_counts_lag_and_watermark(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    job = Job(spark, kafka, tmp_path, [{"name": "people", "key": ["id"]}])
    people = DebeziumTable(server=f"srv{job.suffix}", database="db", table="people", columns=COLUMNS, key=["id"])
    ts = 1_763_892_000_000
    job.produce("people", [people.change("c", after={"id": i, "name": "n"}, pos=100 + i, ts_ms=ts + i) for i in range(6)]
                + [people.change("d", before={"id": 0}, pos=200, ts_ms=ts + 50), people.tombstone({"id": 0})])  # fmt: skip
    with continuous(job) as running:
        deadline = time.monotonic() + 300
        samples: dict[tuple[str, str, str], float] = {}
        # a batch's counters are set before its lag (which asks Kafka for its ends), so a scrape
        # may fall between them: wait for both (a lag that never comes down to 0 fails below)
        lag = ("hudi_cdc_kafka_lag_records", "people", "")
        while time.monotonic() < deadline and running.process.poll() is None:
            samples = running.metrics()
            if samples.get(("hudi_cdc_records_read_total", "people", ""), 0) >= 8 and samples.get(lag) == 0:
                break
            time.sleep(0.5)
        assert running.process.poll() is None, f"the job stopped: {running.output()}"
        assert samples.get(("hudi_cdc_records_read_total", "people", "")) == 8, running.output()
        assert samples[("hudi_cdc_records_total", "people", "applied")] == 5
        assert samples[("hudi_cdc_records_total", "people", "collapsed")] == 1
        assert samples[("hudi_cdc_records_total", "people", "deleted")] == 1
        assert samples[("hudi_cdc_records_total", "people", "tombstone")] == 1
        assert samples[lag] == 0
        assert samples[("hudi_cdc_watermark_timestamp_seconds", "people", "")] == (ts + 50) / 1000
        assert samples[("hudi_cdc_hive_sync_lagging", "people", "")] == 0
