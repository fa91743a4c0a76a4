"""An Airflow DAG: every hour a scheduled run of the job, then a sensor per table that waits for its freshness.

`ingest` runs `hudi-cdc run --once` under spark-submit (what Kafka holds now, from the
checkpoint, then it stops); each `fresh_<table>` sensor asks `hudi-cdc watermark` whether the
table holds every source change up to the end of the DAG run's data interval, so tasks after
it (a report, an export) read a complete hour. Exit codes say what to do (docs/operations.md):
the sensor pokes again on 3 (not reached yet) and fails on anything else; `ingest` fails on
2 (fix the configuration), and its retries cover 75 (a service or the storage was away).

The worker needs `spark-submit` and `hudi-cdc` (`pip install hudi-cdc`) on its PATH. The
commands are plain functions, so this file imports without Airflow (tests run the commands).
"""

from __future__ import annotations

import os
import shlex
from datetime import datetime, timedelta

CONFIG = os.environ.get("HUDI_CDC_CONFIG", "/opt/hudi-cdc/shop.yaml")
"""The job's YAML file, as the worker sees it."""

TABLES = ("customers", "orders")
"""The tables whose freshness the downstream tasks need."""

SUBMIT_OPTIONS = os.environ.get(
    "HUDI_CDC_SUBMIT_OPTIONS",
    "--master yarn --deploy-mode client "
    "--packages org.apache.hudi:hudi-spark3.5-bundle_2.12:1.2.0,org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.7",
)
"""spark-submit's options: the cluster, and the jars the job needs (docs/deployment.md)."""

DATA_INTERVAL_END = "{{ data_interval_end | ts }}"
"""Airflow's template of the run's data interval end, as ISO-8601 with its offset."""


def ingest_command(*, config: str = CONFIG, submit_options: str = SUBMIT_OPTIONS) -> str:
    """The shell command of one scheduled run: spark-submit runs the installed package's entry file."""
    return f'spark-submit {submit_options} "$(hudi-cdc submit-file)" run --config {shlex.quote(config)} --once'


def freshness_command(table: str, *, config: str = CONFIG, wait_until: str = DATA_INTERVAL_END) -> str:
    """The shell command a sensor pokes with: exit 0 once `table` is complete up to `wait_until`, 3 before."""
    return (
        f"hudi-cdc watermark --config {shlex.quote(config)} --table {shlex.quote(table)} "
        f"--wait-until {shlex.quote(wait_until)} --timeout '0 seconds'"
    )


NOT_YET = 3
"""`hudi-cdc watermark`'s exit code for a watermark short of the time asked (or none yet)."""


try:  # Airflow 3 (the standard provider), then Airflow 2
    from airflow.providers.standard.operators.bash import BashOperator
    from airflow.providers.standard.sensors.bash import BashSensor
    from airflow.sdk import DAG
except ImportError:
    try:
        from airflow import DAG
        from airflow.operators.bash import BashOperator
        from airflow.sensors.bash import BashSensor
    except ImportError:  # no Airflow here: the commands above are all this file offers
        DAG = None

if DAG is not None:
    with DAG(
        dag_id="hudi_cdc_shop",
        schedule=timedelta(hours=1),
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,  # one writer per checkpoint
        default_args={"retries": 3, "retry_delay": timedelta(minutes=5)},
    ) as dag:
        ingest = BashOperator(task_id="ingest", bash_command=ingest_command())
        for name in TABLES:
            fresh = BashSensor(
                task_id=f"fresh_{name}",
                bash_command=freshness_command(name),
                retry_exit_code=NOT_YET,
                poke_interval=60,
                timeout=2 * 60 * 60,
                mode="reschedule",  # no worker slot held while waiting
            )
            ingest >> fresh
