"""A Spark standalone cluster on this machine: one master and its workers, each a JVM of its own.

Started from the pyspark distribution the venv holds (`pyspark/bin/spark-class`; pip's pyspark
has no `sbin/` start scripts): `org.apache.spark.deploy.master.Master` and, per worker,
`org.apache.spark.deploy.worker.Worker` with one core and a little memory, on free 127.0.0.1
ports. Jobs reach it with `spark-submit --master <master_url>` (`submit_command`). Files live in
build/run/spark-standalone-<id>/: `master.log`, `worker-<n>.log` and each worker's work folder
(the executors' stdout and stderr, the jars the apps shipped).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
import urllib.request
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspark

from devkit import build_dir
from devkit.services.process import (
    LocalService,
    ServiceError,
    ServiceProcess,
    ensure_directory_free,
    free_port,
    java17_home,
    run_dir,
)

log = logging.getLogger(__name__)

SERVICE = "spark-standalone"
SPARK_HOME = Path(pyspark.__file__).resolve().parent
"""The pyspark distribution: its `bin/spark-class` and `bin/spark-submit`, its `jars/`."""
DAEMON_MEMORY = "256m"
"""Heap of the master and worker JVMs themselves (Spark's default is 1g): they only schedule."""


def spark_bin(name: str) -> Path:
    """`spark-class`, `spark-submit`... of the venv's pyspark."""
    return SPARK_HOME / "bin" / name


def job_jars() -> list[Path]:
    """The jars a job needs beside Spark's own (Hudi's bundle, the Kafka source): `make jars`'s build/jars."""
    return sorted((build_dir() / "jars").glob("*.jar"))


def get_json(url: str, timeout: float = 5.0) -> Any:
    """The JSON a web UI or REST endpoint answers at `url`."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.load(response)


@dataclass
class Worker:
    """One worker JVM: its process, its ports, its work folder."""

    number: int
    port: int
    web_port: int
    work_dir: Path
    process: ServiceProcess | None = None

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None and self.process.running else None

    def state(self) -> dict[str, Any]:
        """The worker's own view (`/json/`): its running and finished executors, with their app ids."""
        data: dict[str, Any] = get_json(f"{self.web_url}/json/")
        return data


class LocalSparkStandalone(LocalService):
    """A master and `workers` workers of `worker_cores` cores and `worker_memory` each."""

    def __init__(
        self,
        *,
        workers: int = 2,
        worker_cores: int = 1,
        worker_memory: str = "1g",
        directory: Path | None = None,
        startup_timeout: float = 90.0,
    ) -> None:
        self.directory = directory or run_dir(f"{SERVICE}-{uuid.uuid4().hex[:8]}")
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self.startup_timeout = startup_timeout
        self.port = 0
        self.web_port = 0
        self.workers = [Worker(n, 0, 0, self.directory / f"worker-{n}" / "work") for n in range(1, workers + 1)]

    @property
    def master_url(self) -> str:
        """What `spark-submit --master` takes."""
        return f"spark://127.0.0.1:{self.port}"

    @property
    def web_url(self) -> str:
        """The master's web UI; `/json/` is its state as JSON."""
        return f"http://127.0.0.1:{self.web_port}"

    def state(self) -> dict[str, Any]:
        """The master's view (`/json/`): workers, active and completed applications."""
        data: dict[str, Any] = get_json(f"{self.web_url}/json/")
        return data

    def _env(self) -> dict[str, str]:
        java = java17_home()
        return {
            "JAVA_HOME": str(java),
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
            # the daemons log to their own files; no spark-env.sh or conf/ of the user's is read
            "SPARK_CONF_DIR": str(self.directory / "conf"),
            "PATH": f"{java / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    def start(self) -> LocalSparkStandalone:
        began = time.monotonic()
        ensure_directory_free("master", self.directory)
        (self.directory / "conf").mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        self.web_port = self.web_port or free_port()
        master = ServiceProcess(
            "master",
            [
                str(spark_bin("spark-class")), "org.apache.spark.deploy.master.Master",
                "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.web_port),
            ],
            env=self._env(),
            directory=self.directory,
        )  # fmt: skip
        self._launch(master, self._master_ready, timeout=self.startup_timeout, began=began)
        try:
            for worker in self.workers:
                self.start_worker(worker, wait=False)
            for worker in self.workers:  # fails at once, with its log, if a worker exits
                self._process_of(worker).wait_ready(self._workers_alive, timeout=self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        log.info(
            "spark standalone up at %s (web UI %s), %d workers, in %.1fs",
            self.master_url, self.web_url, len(self.workers), self.startup_seconds,
        )  # fmt: skip
        return self

    def start_worker(self, worker: Worker, *, wait: bool = True) -> None:
        """Start `worker` (again, after `kill_worker`: on new ports); `wait` until the master counts it alive."""
        if worker.pid is not None:
            raise ServiceError(SERVICE, f"worker {worker.number} is running (pid {worker.pid})")
        worker.port = free_port()
        worker.web_port = free_port()
        worker.work_dir.mkdir(parents=True, exist_ok=True)
        process = ServiceProcess(
            f"worker-{worker.number}",
            [
                str(spark_bin("spark-class")), "org.apache.spark.deploy.worker.Worker",
                "--host", "127.0.0.1", "--port", str(worker.port), "--webui-port", str(worker.web_port),
                "--cores", str(self.worker_cores), "--memory", self.worker_memory,
                "--work-dir", str(worker.work_dir),
                self.master_url,
            ],
            env=self._env(),
            directory=self.directory,
        )  # fmt: skip
        process.start()
        worker.process = process
        if wait:
            process.wait_ready(self._workers_alive, timeout=self.startup_timeout)

    def _process_of(self, worker: Worker) -> ServiceProcess:
        if worker.process is None:
            raise ServiceError(SERVICE, f"worker {worker.number} is not running")
        return worker.process

    def kill_worker(self, worker: Worker) -> int:
        """SIGKILL the worker's JVM (no shutdown hook runs); return the PID killed.

        Its executors notice the lost worker and exit; the master and the drivers see them lost.
        """
        pid = worker.pid
        if pid is None or worker.process is None:
            raise ServiceError(SERVICE, f"worker {worker.number} is not running")
        os.kill(pid, signal.SIGKILL)
        worker.process.stop(timeout=10)  # reaps the killed process and forgets its pid file
        return pid

    def _master_ready(self) -> bool:
        return bool(self.state().get("status") == "ALIVE")

    def _workers_alive(self) -> bool:
        """Every running worker is registered with the master and ALIVE."""
        alive = {w["webuiaddress"] for w in self.state().get("workers", []) if w.get("state") == "ALIVE"}
        return all(w.web_url in alive for w in self.workers if w.pid is not None)

    def stop(self) -> None:
        """Stop the workers (they end their executors), then the master. Idempotent."""
        for worker in self.workers:
            if worker.process is not None:
                worker.process.stop(timeout=self.stop_timeout)
                worker.process = None
        super().stop()

    def submit_command(self, entry: str, *args: str, conf: dict[str, str] | None = None) -> list[str]:
        """`spark-submit` in client mode on this cluster of `entry` (what `hudi-cdc submit-file`
        prints) with the `hudi-cdc` command line `args`; the jars are `make jars`'s, `conf` adds
        `--conf` settings."""
        command: list[str] = [
            str(spark_bin("spark-submit")),
            "--master", self.master_url,
            "--deploy-mode", "client",
            "--jars", ",".join(str(j) for j in job_jars()),
        ]  # fmt: skip
        for key, value in (conf or {}).items():
            command += ["--conf", f"{key}={value}"]
        return [*command, entry, *args]


def executors_of(app_id: str, workers: Sequence[Worker]) -> dict[int, list[dict[str, Any]]]:
    """Worker number -> the executors (running or finished) that worker ran for application `app_id`."""
    found: dict[int, list[dict[str, Any]]] = {}
    for worker in workers:
        state = worker.state()
        found[worker.number] = [
            e for e in state.get("executors", []) + state.get("finishedexecutors", []) if e.get("appid") == app_id
        ]
    return found
