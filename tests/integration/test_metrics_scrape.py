"""Issue 11: Prometheus metrics scraped over HTTP from a running job (`hudi-cdc run`, its own process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable
from devkit.metrics_plot import scrape
from devkit.services import free_port
from devkit.services.kafka import LocalKafka
from tests.integration.harness import Job

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
    port = free_port()
    config = job.config_file(job={"metrics_port": port, "trigger_interval": "2 seconds"})
    log = tmp_path / "job.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "hudi_cdc.cli.console", "run", "--config", str(config)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        samples: dict[tuple[str, str, str], float] = {}
        while time.monotonic() < deadline and process.poll() is None:
            try:
                samples = scrape(f"http://127.0.0.1:{port}/metrics")
            except (urllib.error.URLError, ConnectionError):
                samples = {}
            if samples.get(("hudi_cdc_records_read_total", "people", ""), 0) >= 8:
                break
            time.sleep(2)
        assert process.poll() is None, f"the job stopped: {log.read_text()[-3000:]}"
        assert samples.get(("hudi_cdc_records_read_total", "people", "")) == 8, log.read_text()[-3000:]
        assert samples[("hudi_cdc_records_total", "people", "applied")] == 5
        assert samples[("hudi_cdc_records_total", "people", "collapsed")] == 1
        assert samples[("hudi_cdc_records_total", "people", "deleted")] == 1
        assert samples[("hudi_cdc_records_total", "people", "tombstone")] == 1
        assert samples[("hudi_cdc_kafka_lag_records", "people", "")] == 0
        assert samples[("hudi_cdc_watermark_timestamp_seconds", "people", "")] == (ts + 50) / 1000
        assert samples[("hudi_cdc_hive_sync_lagging", "people", "")] == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
