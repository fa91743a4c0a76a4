"""The job on a real Spark standalone cluster, submitted as users submit it, and a worker killed mid-batch.

A master and two workers (one core each), each a JVM of its own (devkit/services/spark_standalone.py),
run the job that `spark-submit --master spark://... --deploy-mode client` starts from the entry
file the installed package names (`hudi-cdc submit-file`), with Hudi's and Kafka's jars passed
with `--jars`. The driver is the spark-submit process; the executors are JVMs the workers start,
so nothing may depend on the driver's local state. Tables, checkpoint and dead letters are local
paths, which the driver and the executors share because they run on this one machine (a real
cluster needs HDFS or S3).

What each test proves from outside the job: the tables equal a reference fold of what Kafka
holds, the counts committed with the data add up to exactly the records in Kafka, nothing is
dead-lettered, and Spark's own event log shows the tasks ran on executors of both workers, not in
the driver. The test of `make test` runs one batch into a copy-on-write table (about a minute and
a half with the cluster's start). The `deep` test runs four batches into a copy-on-write and a
merge-on-read table and kills one worker JVM with SIGKILL while it runs a task of a batch (the
driver's REST API shows the task running, then the lost executor's failed task); Spark runs the
task again on the other worker and the run ends with the same exact tables.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from http.client import HTTPException
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from devkit.services import free_port
from devkit.services.kafka import LocalKafka
from devkit.services.process import java17_home, log_tail
from devkit.services.spark_standalone import LocalSparkStandalone, Worker, executors_of, get_json
from tests.support.harness import Job
from tests.support.random_streams import check_landed_exactly, produce_streams
from tests.support.timelines import DATA_ACTIONS, read_timeline

pytestmark = pytest.mark.integration

TABLES: list[dict[str, Any]] = [
    {"name": "cow", "key": ["id"]},
    {"name": "mor", "key": ["id"], "type": "MERGE_ON_READ"},
]
PARTITIONS = 2
"""Partitions of each topic: the Kafka read of a batch has tasks for both executors."""
SUBMIT_SECONDS = 600
KILL_TRIES = 3
"""Kills of worker 1 until one lands on a running task (a task may end between seeing it and the kill)."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalSparkStandalone]:
    """One standalone cluster for this module's tests, stopped after the last of them.

    Module-scoped: only this module uses it, so it starts once per test session and its three
    JVMs are gone before the tests that follow on this worker.
    """
    with LocalSparkStandalone(workers=2, worker_cores=1, worker_memory="1g") as standalone:
        yield standalone


def _submit(
    cluster: LocalSparkStandalone, config: Path, events: Path, ui_port: int, log: Path
) -> subprocess.Popen[bytes]:
    """`spark-submit ... "$(hudi-cdc submit-file)" run --once --config <config>` in a process of its own."""
    bin_dir = Path(sys.executable).parent
    entry = subprocess.run(
        [str(bin_dir / "hudi-cdc"), "submit-file"], check=True, capture_output=True, text=True
    ).stdout.strip()
    command = cluster.submit_command(
        entry, "--log-level", "WARNING", "run", "--once", "--config", str(config),
        conf={
            "spark.driver.host": "127.0.0.1",
            "spark.ui.port": str(ui_port),
            # both executors registered before the first batch is planned
            "spark.cores.max": "2",
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.sql.shuffle.partitions": "4",
            "spark.default.parallelism": "4",
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": events.as_uri(),
            "spark.eventLog.compress": "false",
        },
    )  # fmt: skip
    events.mkdir(exist_ok=True)
    java = java17_home()
    env = {
        **os.environ,
        "JAVA_HOME": str(java),
        "PATH": f"{java / 'bin'}{os.pathsep}{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYSPARK_PYTHON": sys.executable,  # the executors' Python workers: the venv's, as the driver's
    }
    with log.open("wb") as out:
        out.write(f"$ {' '.join(command)}\n".encode())
        out.flush()
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _finish(process: subprocess.Popen[bytes], log: Path) -> None:
    try:
        code = process.wait(timeout=SUBMIT_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        pytest.fail(f"spark-submit did not finish in {SUBMIT_SECONDS} s:\n{log_tail(log, 80)}")
    assert code == 0, f"spark-submit exited {code}:\n{log_tail(log, 80)}"


def _event_log(events: Path) -> list[dict[str, Any]]:
    """The one application's Spark event log, an event per line."""
    (path,) = [p for p in events.iterdir() if not p.name.endswith(".inprogress")]
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def _app_id(log: list[dict[str, Any]]) -> str:
    return str(next(e["App ID"] for e in log if e["Event"] == "SparkListenerApplicationStart"))


def _executor_worker(log: list[dict[str, Any]], workers: list[Worker]) -> dict[str, int]:
    """Executor id -> the number of the worker that ran it (its log URLs are the worker's web UI)."""
    found: dict[str, int] = {}
    for event in log:
        if event["Event"] == "SparkListenerExecutorAdded":
            urls = event["Executor Info"]["Log Urls"].values()
            # 0: a worker since started again on other ports
            numbers = {w.number for w in workers for url in urls if url.startswith(w.web_url + "/")}
            found[event["Executor ID"]] = numbers.pop() if numbers else 0
    return found


def _task_ends(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in log if e["Event"] == "SparkListenerTaskEnd"]


def test_the_job_submitted_to_a_standalone_cluster_runs_on_its_workers(
    cluster: LocalSparkStandalone, kafka: LocalKafka, spark: SparkSession, tmp_path: Path
) -> None:
    seed = random.randrange(10**6)
    # one table: each table's first write (its metadata table too) is a good part of the minute
    job = Job(spark, kafka, tmp_path, TABLES[:1])
    produced, expected = produce_streams(job, random.Random(seed), 300, partitions=PARTITIONS)
    config = job.config_file()  # one batch
    log, events = tmp_path / "submit.log", tmp_path / "events"

    _finish(_submit(cluster, config, events, free_port(), log), log)

    context = f"seed {seed}, spark-submit log {log}"
    check_landed_exactly(spark, job, produced, expected, context)
    spark_events = _event_log(events)
    app = _app_id(spark_events)
    assert app in {a["id"] for a in cluster.state()["completedapps"]}, f"the master ran no {app} ({context})"
    # the workers launched the app's executors (JVMs of their own) and Spark ran its tasks there
    launched = executors_of(app, cluster.workers)
    assert all(launched[w.number] for w in cluster.workers), f"executors per worker: {launched} ({context})"
    on_worker = _executor_worker(spark_events, cluster.workers)
    succeeded = [e for e in _task_ends(spark_events) if e["Task End Reason"]["Reason"] == "Success"]
    assert succeeded, context
    ran_on = {e["Task Info"]["Executor ID"] for e in succeeded}
    assert "driver" not in ran_on, context
    assert {on_worker[x] for x in ran_on} == {w.number for w in cluster.workers}, f"tasks by executor {ran_on} ({context})"


def _driver_api(ui_port: int, path: str) -> Any:
    return get_json(f"http://127.0.0.1:{ui_port}/api/v1/applications{path}")


def _executor_on(ui_port: int, app: str, worker: Worker) -> dict[str, Any] | None:
    """The app's live executor on `worker` (the driver's REST API), or None."""
    for executor in _driver_api(ui_port, f"/{app}/executors"):
        if any(url.startswith(worker.web_url + "/") for url in executor.get("executorLogs", {}).values()):
            return dict(executor)
    return None


def _kill_while_a_task_runs(
    cluster: LocalSparkStandalone, job: Job, process: subprocess.Popen[bytes], ui_port: int, log: Path
) -> tuple[str, int]:
    """SIGKILL worker 1 while its executor runs a task of a batch after the first commit; (executor id,
    its failed tasks) as the driver counts them once it has seen the executor lost."""
    target = cluster.workers[0]
    deadline = time.monotonic() + SUBMIT_SECONDS
    for _ in range(KILL_TRIES):
        executor: dict[str, Any] | None = None
        while process.poll() is None and time.monotonic() < deadline:
            try:
                (app,) = [a["id"] for a in _driver_api(ui_port, "")]
                committed = any(_timeline_has_commit(Path(job.path(t["name"]))) for t in job.tables)
                executor = _executor_on(ui_port, app, target) if committed else None
            except (OSError, HTTPException, ValueError):  # refused, timed out, cut short: not up yet, or busy
                executor = None
            if executor is not None and executor["activeTasks"] > 0:
                break
            time.sleep(0.02)
        assert process.poll() is None, f"the run ended before a kill landed:\n{log_tail(log, 80)}"
        assert executor is not None and time.monotonic() < deadline, f"no task ran on worker 1:\n{log_tail(log, 80)}"
        cluster.kill_worker(target)
        lost = _wait_lost(ui_port, app, executor["id"])
        if lost["failedTasks"] > 0:
            return str(executor["id"]), int(lost["failedTasks"])
        cluster.start_worker(target)  # the task ended just before the kill: give the app a new executor there
    pytest.fail(f"{KILL_TRIES} kills of worker 1 all landed between its tasks; see {log}")


def _wait_lost(ui_port: int, app: str, executor_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            executors = _driver_api(ui_port, f"/{app}/allexecutors")
        except (OSError, HTTPException, ValueError):  # a busy driver's UI: ask again
            executors = []
        for executor in executors:
            if executor["id"] == executor_id and not executor["isActive"]:
                return dict(executor)
        time.sleep(0.2)
    pytest.fail(f"the driver did not see executor {executor_id} lost within 120 s")


def _timeline_has_commit(base_path: Path) -> bool:
    return bool(read_timeline(base_path).completed_of(DATA_ACTIONS))


@pytest.mark.deep
def test_a_worker_killed_while_a_batch_runs_leaves_exact_tables(
    cluster: LocalSparkStandalone, kafka: LocalKafka, spark: SparkSession, tmp_path: Path
) -> None:
    seed = random.randrange(10**6)
    job = Job(spark, kafka, tmp_path, TABLES)
    produced, expected = produce_streams(job, random.Random(seed), 1500, partitions=PARTITIONS)
    # several batches: the first commits before the kill, the kill lands in a later one
    config = job.config_file(kafka={"max_offsets_per_trigger": 1000})
    log, events, ui_port = tmp_path / "submit.log", tmp_path / "events", free_port()

    process = _submit(cluster, config, events, ui_port, log)
    try:
        killed, failed_tasks = _kill_while_a_task_runs(cluster, job, process, ui_port, log)
        _finish(process, log)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for worker in cluster.workers:
            if worker.pid is None:
                cluster.start_worker(worker)  # later tests get the whole cluster

    context = f"seed {seed}, killed executor {killed}, spark-submit log {log}"
    check_landed_exactly(spark, job, produced, expected, context)
    spark_events = _event_log(events)
    lost = [
        e for e in _task_ends(spark_events)
        if e["Task End Reason"]["Reason"] == "ExecutorLostFailure" and e["Task Info"]["Executor ID"] == killed
    ]  # fmt: skip
    assert len(lost) == failed_tasks, context
    # each task the kill cut short ran again, to success, on the other worker's executor
    on_worker = _executor_worker(spark_events, cluster.workers)
    succeeded = {
        (e["Stage ID"], e["Task Info"]["Index"]): on_worker[e["Task Info"]["Executor ID"]]
        for e in _task_ends(spark_events)
        if e["Task End Reason"]["Reason"] == "Success" and e["Task Info"]["Launch Time"] > lost[0]["Task Info"]["Launch Time"]
    }
    for task in lost:
        key = (task["Stage ID"], task["Task Info"]["Index"])
        assert succeeded.get(key) == 2, f"task {key} cut by the kill did not run again on worker 2 ({context})"
