"""Run the real job (Kafka -> Spark -> Hudi) on generated topics and read the tables back two ways."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml
from hudi import HudiTableBuilder
from pyspark.sql import SparkSession

from devkit.debezium import KafkaRecord
from devkit.metrics_plot import scrape
from devkit.services import free_port
from devkit.services.kafka import LocalKafka
from hudi_cdc.commit.metrics import BatchMetrics
from hudi_cdc.config.models import Config, parse_config
from hudi_cdc.job import stream

META = ("_hoodie_", "_cdc_ingested_at", "_cdc_column_orders")


@dataclass
class Job:
    """One job over uuid-named topics and tables; `run()` is a scheduled (--once) run."""

    spark: SparkSession
    kafka: LocalKafka
    root: Path
    tables: list[dict[str, Any]]
    batches: list[BatchMetrics] = field(default_factory=list)
    suffix: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    checkpoint: str = "cp"
    created: set[str] = field(default_factory=set)
    metastore_uris: str | None = None
    schema_registry: dict[str, Any] | None = None
    job_settings: dict[str, Any] = field(default_factory=dict)
    """`job:` settings of every run (e.g. `table_concurrency`)."""
    lake: str | None = None
    """Where tables, checkpoint and dead letters live (an `s3a://` URI), instead of under `root`."""
    templates: list[dict[str, Any]] = field(default_factory=list)
    """`templates:` of the configuration (beside `tables`, which may then be empty)."""

    @property
    def database(self) -> str:
        return f"db_{self.suffix}"

    def topic(self, table: str) -> str:
        return f"srv{self.suffix}.db.{table}"

    def location(self, name: str) -> str:
        """`name` under the lake URI, or under `root`."""
        return f"{self.lake}/{name}" if self.lake else str(self.root / name)

    def path(self, table: str) -> str:
        return self.location(f"warehouse/{table}")

    def config_dict(
        self, *, job: dict[str, Any] | None = None, kafka: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The job's configuration as a user's YAML file holds it, plus `job:` and `kafka:` settings."""
        return {
            "kafka": {"bootstrap_servers": self.kafka.bootstrap_servers, **(kafka or {})},
            "job": {
                "name": f"test-{self.suffix}",
                "checkpoint_dir": self.location(self.checkpoint),
                "dead_letter_path": self.location("dead_letter"),
                "metastore_uris": self.metastore_uris,
                **self.job_settings,
                **(job or {}),
            },
            "routes": [{"topic": self.topic(t["name"]), "table": t["name"]} for t in self.tables],
            "tables": [
                {"base_path": self.path(t["name"]), "hive": {"database": self.database}, **t}
                for t in self.tables
            ],
            **({"templates": self.templates} if self.templates else {}),
            **({"schema_registry": self.schema_registry} if self.schema_registry else {}),
        }

    def config_file(self, *, job: dict[str, Any] | None = None, kafka: dict[str, Any] | None = None) -> Path:
        """Write the configuration to `<root>/job.yaml` for the CLI."""
        path = self.root / "job.yaml"
        path.write_text(yaml.safe_dump(self.config_dict(job=job, kafka=kafka)))
        return path

    @property
    def config(self) -> Config:
        return parse_config(self.config_dict())

    def produce(self, table: str, records: Iterable[KafkaRecord]) -> None:
        topic = self.topic(table)
        if topic not in self.created:
            self.kafka.create_topics([topic])
            self.created.add(topic)
        self.kafka.produce(topic, records)

    def run(self, *, kafka: dict[str, Any] | None = None) -> list[BatchMetrics]:
        """One scheduled run to the end of the topics (`kafka`: settings such as `max_offsets_per_trigger`)."""
        before = len(self.batches)
        config = parse_config(self.config_dict(kafka=kafka))
        stream.run(self.spark, config, once=True, on_batch=self.batches.append)
        new = self.batches[before:]
        for batch in new:
            for t in batch.tables:
                assert t.balanced(), f"counts do not add up: {t}"
        return new

    def rows_spark(self, table: str) -> list[dict[str, Any]]:
        df = self.spark.read.format("hudi").load(self.path(table))
        keep = [c for c in df.columns if not c.startswith(META)]
        return sorted((r.asDict() for r in df.select(*keep).collect()), key=_sort_key)

    def rows_hudi_rs(self, table: str) -> list[dict[str, Any]]:
        """An independent reader (hudi-rs), merging MOR log files itself."""
        hudi_table = HudiTableBuilder.from_base_uri(self.path(table)).build()
        batches = hudi_table.read()
        if not batches:
            return []
        arrow = pa.Table.from_batches(batches)
        keep = [c for c in arrow.column_names if not c.startswith(META)]
        rows = [_naive(r) for r in arrow.select(keep).to_pylist()]
        return sorted(rows, key=_sort_key)

    def dead_letters(self) -> list[dict[str, Any]]:
        return [r.asDict() for r in self.spark.read.parquet(self.location("dead_letter")).collect()]


def wait_for(what: str, condition: Callable[[], Any], timeout: float = 300.0, interval: float = 1.0) -> None:
    """Call `condition` until it is true; fail the test after `timeout` seconds, naming `what`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(interval)


def _sort_key(row: dict[str, Any]) -> str:
    return repr(sorted((k, repr(v)) for k, v in row.items() if k in ("id", "order_id", "k")))


def _naive(row: dict[str, Any]) -> dict[str, Any]:
    """hudi-rs returns tz-aware UTC timestamps; Spark (session zone UTC) returns naive ones."""
    return {k: _naive_value(v) for k, v in row.items()}


def _naive_value(value: Any) -> Any:
    if isinstance(value, list):  # also inside arrays
        return [_naive_value(v) for v in value]
    return value.replace(tzinfo=None) if hasattr(value, "tzinfo") and value.tzinfo else value


@dataclass
class ContinuousJob:
    """`hudi-cdc run` (continuous, a 2 s trigger) in a process of its own, serving its metrics."""

    process: subprocess.Popen[bytes]
    metrics_port: int
    log: Path

    def output(self, tail: int = 3000) -> str:
        return self.log.read_text()[-tail:]

    def metrics(self) -> dict[tuple[str, str, str], float]:
        """The scraped samples; empty while the endpoint is not up."""
        try:
            return scrape(f"http://127.0.0.1:{self.metrics_port}/metrics")
        except (urllib.error.URLError, ConnectionError):
            return {}

    def read(self, table: str) -> float:
        return self.metrics().get(("hudi_cdc_records_read_total", table, ""), 0)

    def wait_read(self, table: str, records: int, seconds: float = 300) -> None:
        """Until the job has read `records` records of `table`; it must still run."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self.process.poll() is None and self.read(table) < records:
            time.sleep(0.5)  # a scrape is one local HTTP request
        assert self.process.poll() is None, f"the job stopped: {self.output()}"
        assert self.read(table) == records, self.output()


@contextlib.contextmanager
def continuous(job: Job, *, kafka: dict[str, Any] | None = None) -> Iterator[ContinuousJob]:
    """Run `job` continuously through the CLI until the block ends (then SIGTERM)."""
    port = free_port()
    config = job.config_file(job={"metrics_port": port, "trigger_interval": "2 seconds"}, kafka=kafka)
    log = job.root / "job.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "hudi_cdc.cli.console", "run", "--config", str(config)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        yield ContinuousJob(process, port, log)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=60)
