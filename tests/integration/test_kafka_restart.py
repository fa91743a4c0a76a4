"""The Kafka broker goes away and comes back (a restart, a rolling upgrade): the job stops with
a clear error while it is down and, once it is back, applies what came after exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable
from devkit.metrics_plot import scrape
from devkit.services import free_port
from devkit.services.kafka import LocalKafka
from hudi_cdc.errors import KafkaUnreachableError
from tests.integration.harness import Job

pytestmark = pytest.mark.integration

OUTAGE_SECONDS = 20
"""A broker restart, not an outage: shorter than the Kafka clients' own retry budget."""
COLUMNS = [
    Column("id", "int64", optional=False),
    Column("owner", "string"),
    Column("balance", "decimal", scale=2),
]


def _account(i: int, owner: str, balance: str) -> dict[str, object]:
    return {"id": i, "owner": owner, "balance": Decimal(balance)}


def test_a_broker_restart_stops_the_run_clearly_and_the_next_run_applies_the_rest_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    # a broker of its own: stopping the session's broker would break the other tests
    broker = LocalKafka(directory=tmp_path / "kafka").start()
    try:
        job = Job(spark, broker, tmp_path, [{"name": "accounts", "key": ["id"]}])
        source = DebeziumTable(
            server=f"srv{job.suffix}", database="db", table="accounts", columns=COLUMNS, key=["id"]
        )
        job.produce(
            "accounts",
            [source.change("c", after=_account(i, f"o{i}", f"{i}.00"), pos=100 + i) for i in (1, 2, 3)],
        )
        (first,) = job.run()
        assert first.tables[0].upserted_rows == 3

        port = broker.port
        broker.stop()
        with pytest.raises(KafkaUnreachableError, match=f"127.0.0.1:{port}"):
            job.run(kafka={"connect_timeout": "3 seconds"})

        broker.start(fresh=False)
        assert broker.port == port
        deleted = _account(2, "o2", "2.00")
        job.produce(
            "accounts",
            [
                source.change(
                    "u", before=_account(1, "o1", "1.00"), after=_account(1, "o1", "10.00"), pos=200
                ),
                source.change("d", before=deleted, pos=201),
                source.tombstone(deleted),
                source.change("c", after=_account(4, "o4", "4.00"), pos=202),
            ],
        )
        after = job.run()
        # only the 4 records produced after the restart: the checkpoint's offsets held across it
        assert sum(t.read for b in after for t in b.tables) == 4
        assert all(t.balanced() for b in after for t in b.tables)
        rows = [{c: r[c] for c in ("id", "owner", "balance")} for r in job.rows_spark("accounts")]
        assert rows == [_account(1, "o1", "10.00"), _account(3, "o3", "3.00"), _account(4, "o4", "4.00")]
    finally:
        broker.stop()


def _read_total(port: int) -> float:
    try:
        return scrape(f"http://127.0.0.1:{port}/metrics").get(
            ("hudi_cdc_records_read_total", "accounts", ""), 0
        )
    except (urllib.error.URLError, ConnectionError):
        return -1


def _wait_for(
    read: float, port: int, process: subprocess.Popen[bytes], log: Path, seconds: float = 300
) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None and _read_total(port) < read:
        time.sleep(2)
    assert process.poll() is None, f"the job stopped: {log.read_text()[-3000:]}"
    assert _read_total(port) == read, log.read_text()[-3000:]


def test_a_continuous_job_rides_out_a_short_broker_restart(spark: SparkSession, tmp_path: Path) -> None:
    broker = LocalKafka(directory=tmp_path / "kafka").start()
    process: subprocess.Popen[bytes] | None = None
    try:
        job = Job(spark, broker, tmp_path, [{"name": "accounts", "key": ["id"]}])
        source = DebeziumTable(
            server=f"srv{job.suffix}", database="db", table="accounts", columns=COLUMNS, key=["id"]
        )
        job.produce(
            "accounts",
            [source.change("c", after=_account(i, f"o{i}", f"{i}.00"), pos=100 + i) for i in (1, 2, 3)],
        )
        port = free_port()
        config = job.config_file(job={"metrics_port": port, "trigger_interval": "2 seconds"})
        log = tmp_path / "job.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "hudi_cdc.cli.console", "run", "--config", str(config)],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        _wait_for(3, port, process, log)

        broker.stop()
        time.sleep(OUTAGE_SECONDS)
        broker.start(fresh=False)
        job.produce("accounts", [source.change("u", after=_account(1, "o1", "10.00"), pos=200),
                                 source.change("c", after=_account(4, "o4", "4.00"), pos=201)])  # fmt: skip
        _wait_for(5, port, process, log)
        rows = [{c: r[c] for c in ("id", "owner", "balance")} for r in job.rows_spark("accounts")]
        assert rows == [
            _account(1, "o1", "10.00"),
            _account(2, "o2", "2.00"),
            _account(3, "o3", "3.00"),
            _account(4, "o4", "4.00"),
        ]
    finally:
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=60)
        broker.stop()


def test_an_outage_longer_than_the_kafka_source_retries_stops_the_job_clearly_and_loses_nothing(
    spark: SparkSession, tmp_path: Path
) -> None:
    broker = LocalKafka(directory=tmp_path / "kafka").start()
    process: subprocess.Popen[bytes] | None = None
    try:
        job = Job(spark, broker, tmp_path, [{"name": "accounts", "key": ["id"]}])
        source = DebeziumTable(
            server=f"srv{job.suffix}", database="db", table="accounts", columns=COLUMNS, key=["id"]
        )
        job.produce(
            "accounts",
            [source.change("c", after=_account(i, f"o{i}", f"{i}.00"), pos=100 + i) for i in (1, 2)],
        )
        port = free_port()
        # the admin client gives up each offset fetch after 3 s instead of 60 s: the outage that
        # outlasts Spark's 3 tries is seconds long, not minutes
        config = job.config_file(
            job={"metrics_port": port, "trigger_interval": "2 seconds"},
            kafka={"properties": {"default.api.timeout.ms": "3000", "request.timeout.ms": "2000"}},
        )
        log = tmp_path / "job.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "hudi_cdc.cli.console", "run", "--config", str(config)],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        _wait_for(2, port, process, log)

        broker.stop()
        assert process.wait(timeout=240) == 1, log.read_text()[-3000:]
        output = log.read_text()
        assert f"error: Kafka at 127.0.0.1:{broker.port} stopped answering while the job ran" in output
        assert "org.apache.kafka.common.errors.TimeoutException" in output and "Nothing was lost" in output
        assert "Traceback" not in output

        broker.start(fresh=False)
        job.produce("accounts", [source.change("u", after=_account(2, "o2", "20.00"), pos=200)])
        after = job.run()
        assert sum(t.read for b in after for t in b.tables) == 1  # the record after the outage, once
        rows = [{c: r[c] for c in ("id", "owner", "balance")} for r in job.rows_spark("accounts")]
        assert rows == [_account(1, "o1", "1.00"), _account(2, "o2", "20.00")]
    finally:
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=60)
        broker.stop()
