"""The Python API on real Kafka, Spark and Hudi: a session of the caller's own keeps its settings
through run_once, apply_batch (a backfill), status and, in the notebook example, start and stop;
the Airflow example's commands run as its tasks would."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from devkit.services.kafka import LocalKafka
from hudi_cdc import apply_batch, load_config, run_once, status
from hudi_cdc.spark.session import for_job, local_jars
from tests.support.accounts import account, accounts_source
from tests.support.harness import Job

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).parents[2] / "examples"
SOURCE_TIME = "2023-11-14T22:13:20.000Z"
"""The source time devkit's change events carry (ts_ms 1_700_000_000_000): the tables' watermark."""

USER_SETTINGS = {"spark.sql.shuffle.partitions": "7", "spark.sql.session.timeZone": "America/Los_Angeles"}


@pytest.fixture
def own_settings(spark: SparkSession) -> Iterator[dict[str, str]]:
    """The shared session tuned as a user's notebook might be, restored afterwards for the other tests."""
    before = {key: spark.conf.get(key) for key in USER_SETTINGS}
    for key, value in USER_SETTINGS.items():
        spark.conf.set(key, value)
    yield USER_SETTINGS
    for key, previous in before.items():
        spark.conf.set(key, previous)


def _settings(spark: SparkSession) -> dict[str, str | None]:
    return {key: spark.conf.get(key) for key in USER_SETTINGS}


def test_run_once_and_a_backfill_leave_the_callers_session_as_it_was(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path, own_settings: dict[str, str]
) -> None:
    job = Job(spark, kafka, tmp_path, [{"name": "accounts", "key": ["id"]}])
    src = accounts_source(job)
    job.produce("accounts", [src.change("c", after=account(i, f"n{i}", "1.00"), pos=100 + i) for i in range(1, 4)])
    config = load_config(job.config_dict())

    summary = run_once(spark, config)
    assert summary.read == 3 and summary.parked == {}
    assert [(t.table, t.applied) for b in summary.batches for t in b.tables] == [("accounts", 3)]
    assert _settings(spark) == own_settings

    # a backfill: the topic as archived (the Kafka source's rows in Parquet), applied as one batch;
    # the 3 events already applied are duplicates, the checkpoint does not move
    job.produce("accounts", [src.change("c", after=account(i, f"n{i}", "2.00"), pos=100 + i) for i in range(4, 6)])
    archive = str(tmp_path / "archive")
    topic = spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap_servers)
    topic.option("subscribe", job.topic("accounts")).load().write.parquet(archive)
    backfill = apply_batch(spark, config, spark.read.parquet(archive))
    (table,) = backfill.tables
    assert (table.read, table.applied, table.duplicate) == (5, 2, 3), table
    assert [r["id"] for r in job.rows_spark("accounts")] == [1, 2, 3, 4, 5]
    assert _settings(spark) == own_settings

    (state,) = status(spark, config)
    assert (state.table, state.created, state.watermark) == ("accounts", True, SOURCE_TIME)
    assert state.committed_counts["applied"] == 5, state.committed_counts
    assert _settings(spark) == own_settings


def test_the_notebook_example_starts_watches_and_stops_a_job_in_the_callers_session(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_settings: dict[str, str]
) -> None:
    job = Job(spark, kafka, tmp_path, [])
    src = accounts_source(job)
    job.produce("accounts", [src.change("c", after=account(i, f"n{i}", "1.00"), pos=100 + i) for i in range(1, 4)])
    lake = tmp_path / "lake"
    for name, value in {
        "KAFKA_BOOTSTRAP": kafka.bootstrap_servers, "TOPIC": job.topic("accounts"), "LAKE": str(lake), "WATCH_SECONDS": "180",
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)

    notebook = runpy.run_path(str(EXAMPLES / "notebook.py"), run_name="__main__")

    assert notebook["spark"]._jsparkSession.equals(spark._jsparkSession)  # the running session, as it was
    assert _settings(spark) == own_settings
    query = notebook["query"]
    assert not query.isActive
    assert query.lastProgress is not None and query.summary.batches
    assert query.summary.read == 3 and query.last_batch is query.summary.batches[-1], query.summary
    # the job's own queries: the time zone and rebase modes the job needs, the caller's tuning
    assert query.session.conf.get("spark.sql.session.timeZone") == "UTC"
    assert query.session.conf.get("spark.sql.parquet.datetimeRebaseModeInWrite") == "CORRECTED"
    assert query.session.conf.get("spark.sql.shuffle.partitions") == "7"
    assert notebook["config"].table("customers").base_path == f"{lake}/customers"  # from ${LAKE}
    rows = spark.read.format("hudi").load(str(lake / "customers")).select("id", "name").collect()
    assert sorted((r["id"], r["name"]) for r in rows) == [(1, "n1"), (2, "n2"), (3, "n3")]


@pytest.mark.deep
def test_the_airflow_example_commands_ingest_and_then_satisfy_the_freshness_sensor(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    job = Job(spark, kafka, tmp_path, [{"name": "accounts", "key": ["id"]}])
    src = accounts_source(job)
    job.produce("accounts", [src.change("c", after=account(i, f"n{i}", "1.00"), pos=100 + i) for i in range(1, 4)])
    config = str(job.config_file())
    dag = runpy.run_path(str(EXAMPLES / "airflow_dag.py"))  # importable without Airflow
    venv = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{venv}:{os.environ['PATH']}", "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}  # fmt: skip

    def shell(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=600)

    sensor = dag["freshness_command"]("accounts", config=config, wait_until=SOURCE_TIME)
    jars = ",".join(local_jars())
    ingest = shell(dag["ingest_command"](config=config, submit_options=f"--master local[2] --driver-memory 1g --jars {jars}"))
    assert ingest.returncode == 0, ingest.stdout[-3000:] + ingest.stderr[-5000:]
    assert [r["id"] for r in job.rows_spark("accounts")] == [1, 2, 3]

    after = shell(sensor)
    assert after.returncode == 0, after.stdout + after.stderr


def test_a_session_with_the_job_settings_is_used_as_it_is_and_another_is_copied(spark: SparkSession) -> None:
    # the tests' session is made by hudi_cdc: no copy, so `spark.streams` and its listeners see the job
    assert for_job(spark) is spark
    zone = "spark.sql.session.timeZone"
    spark.conf.set(zone, "America/Los_Angeles")
    try:
        copy = for_job(spark)
        assert copy is not spark and not copy._jsparkSession.equals(spark._jsparkSession)
        assert (copy.conf.get(zone), spark.conf.get(zone)) == ("UTC", "America/Los_Angeles")
    finally:
        spark.conf.set(zone, "UTC")
