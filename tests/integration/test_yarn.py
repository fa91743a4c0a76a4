"""The job on a real YARN cluster, submitted in cluster deploy mode from what `make dist` builds.

HDFS and YARN run in one JVM (Hadoop's MiniDFSCluster and MiniYARNCluster, devkit/services/yarn.py).
`spark-submit --master yarn --deploy-mode cluster` runs the entry file of the packed environment's
package (`hudi-cdc submit-file`), with that environment shipped by `--archives ...#env` and used
through `PYSPARK_PYTHON=./env/bin/python`, Hudi's and Kafka's jars from build/dist/jars, and the
job file on HDFS (`--config hdfs://...`). The driver runs in a YARN container, not in this
process, and no checkout is on its path. Tables, checkpoint and dead letters are on that HDFS;
the tables are synced to the tests' metastore and Trino reads their rows. A secret the job file
names as `${VAR}` reaches the driver through `spark.yarn.appMasterEnv.*` set in a properties
file: never on the command line, never in spark-submit's output or a container's log.

Deep: `status` and `compact` submitted the same way; and the driver's container killed with
SIGKILL mid-batch, after which YARN's second application attempt finishes the run exactly.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyspark
import pytest
import yaml
from click.testing import CliRunner
from pyspark.sql import SparkSession

from devkit import CHECKOUT
from devkit.debezium import Column, DebeziumTable
from devkit.dist import ENV_ARCHIVE, build, dist_dir
from devkit.services.hms import LocalMetastore
from devkit.services.kafka import LocalKafka
from devkit.services.process import log_tail
from devkit.services.trino import LocalTrino
from devkit.services.yarn import LocalYarn
from hudi_cdc.cli.console import cli
from hudi_cdc.cli.job_file import load_config
from hudi_cdc.errors import ConfigError
from hudi_cdc.spark import fs
from tests.support.harness import Job
from tests.support.random_streams import check_landed_exactly, produce_streams

pytestmark = pytest.mark.integration

SPARK_HOME = Path(pyspark.__file__).parent
SOURCE = Column("id", "int64", optional=False), Column("name", "string"), Column("balance", "decimal", scale=2)
TABLES = {"people": "COPY_ON_WRITE", "accounts": "MERGE_ON_READ"}
SECRET_VAR = "HUDI_CDC_TEST_S3_SECRET"
"""Named in the job file as `${...}`: the run fails with "is not set" unless it reaches the driver."""
SUBMIT_SECONDS = 600


@pytest.fixture(scope="module")
def yarn() -> Iterator[LocalYarn]:
    """HDFS and YARN for this module's tests: only this module uses them, so they start once per
    test session and stop after its last test."""
    with LocalYarn() as cluster:
        yield cluster


def _stale(folder: Path) -> list[str]:
    """The package's sources that differ from the packed environment's copy (all of them when there is none)."""
    packed = next(iter((folder / "env").glob("lib/python*/site-packages/hudi_cdc")), None)
    sources = (CHECKOUT / "hudi_cdc").rglob("*.py")
    if packed is None or not (folder / ENV_ARCHIVE).is_file() or not (folder / "jars.txt").is_file():
        return ["hudi_cdc"]
    return [
        str(source.relative_to(CHECKOUT))
        for source in sources
        if not (packed / source.relative_to(CHECKOUT / "hudi_cdc")).is_file()
        or (packed / source.relative_to(CHECKOUT / "hudi_cdc")).read_bytes() != source.read_bytes()
    ]


@pytest.fixture(scope="module")
def dist() -> Path:
    """What `make dist` built (`make test` builds it first); built again here when the package's
    sources changed since, so the cluster never runs older code than the checkout's."""
    folder = dist_dir()
    if _stale(folder):
        build(folder)
    assert _stale(folder) == [], "the sources changed while build/dist was being built"
    return folder


def _row(i: int, name: str, balance: str = "1.00") -> dict[str, object]:
    return {"id": i, "name": name, "balance": Decimal(balance)}


def _submit_file(dist: Path, cwd: Path) -> str:
    """The entry file of the packed environment's package, as `hudi-cdc submit-file` names it."""
    named = subprocess.run(
        [str(dist / "env" / "bin" / "python"), "-m", "hudi_cdc", "submit-file"],
        capture_output=True, text=True, check=True, cwd=cwd, timeout=60,
    )  # fmt: skip
    path = named.stdout.strip()
    assert path.startswith(str(dist / "env")), path  # the built environment's, not the checkout's
    return path


def _submit_command(
    yarn: LocalYarn, dist: Path, tmp_path: Path, *command: str, secrets: dict[str, str], attempts: int = 1
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of `spark-submit --master yarn --deploy-mode cluster <entry
    file> <command>`, with `attempts` application attempts (YARN starts the driver again after its
    container is lost when more than one)."""
    # secrets go in a properties file only its owner reads, never on the command line
    properties = tmp_path / f"secrets-{uuid.uuid4().hex[:6]}.conf"
    properties.touch(mode=0o600)
    properties.write_text("".join(f"spark.yarn.appMasterEnv.{name}={value}\n" for name, value in secrets.items()))
    argv = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--master", "yarn",
        "--deploy-mode", "cluster",
        "--name", f"hudi-cdc-{command[0]}",
        "--properties-file", str(properties),
        # the packed environment, unpacked as ./env in every container
        "--archives", f"{dist / ENV_ARCHIVE}#env",
        "--conf", "spark.yarn.appMasterEnv.PYSPARK_PYTHON=./env/bin/python",
        "--conf", "spark.executorEnv.PYSPARK_PYTHON=./env/bin/python",
        "--jars", (dist / "jars.txt").read_text().strip(),
        # the cluster's Spark: installed on every node (here: this machine's pyspark), not uploaded
        "--conf", f"spark.yarn.jars=local:{SPARK_HOME / 'jars'}/*",
        "--driver-memory", "1g",
        "--executor-memory", "1g",
        "--executor-cores", "1",
        "--num-executors", "1",
        "--conf", "spark.sql.shuffle.partitions=2",
        "--conf", f"spark.yarn.maxAppAttempts={attempts}",
        "--conf", "spark.ui.enabled=false",
        _submit_file(dist, tmp_path),
        *command,
    ]  # fmt: skip
    # the submitting shell's Python settings and checkout stay here: the driver gets only the above
    env = {k: v for k, v in os.environ.items() if k not in {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "HUDI_CDC_BUILD"}}
    env.update(yarn.client_env())
    env["SPARK_HOME"] = str(SPARK_HOME)
    return argv, env


def _application(output: str) -> str | None:
    """The application id spark-submit reported, if it did yet."""
    found = re.search(r"Submitted application (application_\d+_\d+)", output)
    return found[1] if found else None


def _succeeded(yarn: LocalYarn, code: int, output: str) -> str:
    """The application's id; fails the test, with its containers' logs, unless it succeeded."""
    app = _application(output)
    assert app, f"spark-submit did not submit (exit {code}):\n{output[-5000:]}"
    if code != 0 or "final status: SUCCEEDED" not in output:
        logs = "\n".join(f"--- {p}\n{log_tail(p, 80)}" for p in yarn.container_logs(app))
        pytest.fail(f"{app} did not succeed (exit {code}):\n{output[-3000:]}\n{logs}")
    return app


def _submit(
    yarn: LocalYarn, dist: Path, tmp_path: Path, *command: str, secrets: dict[str, str]
) -> tuple[str, str, list[str]]:
    """Submit `command` in cluster mode and wait for it: the application's id, spark-submit's
    output, and the command line that ran. Fails the test unless the application succeeded."""
    argv, env = _submit_command(yarn, dist, tmp_path, *command, secrets=secrets)
    result = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=SUBMIT_SECONDS)
    output = result.stdout + result.stderr
    return _succeeded(yarn, result.returncode, output), output, argv


def _driver_stdout(yarn: LocalYarn, app: str) -> str:
    """The standard output of the application's driver: its first container's (the application master's)."""
    (stdout,) = [p for p in yarn.container_logs(app) if p.parent.name.endswith("_01_000001") and p.name == "stdout"]
    return stdout.read_text()


def _lake_job(spark: SparkSession, kafka: LocalKafka, yarn: LocalYarn, tmp_path: Path, tables: list[dict[str, Any]], **settings: Any) -> Job:
    """A job whose tables, checkpoint and dead letters are on the cluster's HDFS."""
    return Job(spark, kafka, tmp_path, tables, lake=f"{yarn.uri}/lake/{tmp_path.name}", **settings)


def _put_job_file(yarn: LocalYarn, job: Job, tmp_path: Path, **sections: Any) -> str:
    """The job's file (with `job=`/`kafka=` settings) on HDFS only: its URI."""
    local = tmp_path / "job.yaml"
    local.write_text(yaml.safe_dump(job.config_dict(**sections)))
    config = f"{yarn.uri}/jobs/{tmp_path.name}/job.yaml"
    yarn.hdfs("-mkdir", "-p", config.rsplit("/", 1)[0])
    yarn.hdfs("-put", "-f", str(local), config)
    local.unlink()  # the job file is on HDFS only
    return config


def _source(job: Job, name: str) -> DebeziumTable:
    return DebeziumTable(server=f"srv{job.suffix}", database="db", table=name, columns=list(SOURCE), key=["id"])


def _ingest(
    spark: SparkSession,
    kafka: LocalKafka,
    yarn: LocalYarn,
    dist: Path,
    tmp_path: Path,
    *,
    metastore_uris: str | None,
    tables: list[dict[str, Any]] | None = None,
) -> tuple[Job, str, str, str, list[str]]:
    """Changes of two tables in Kafka, the job file on HDFS only, and `run --once` submitted in
    cluster mode with the secret the file names: the job, the file's URI, the secret, and
    spark-submit's output and command line."""
    job = _lake_job(
        spark, kafka, yarn, tmp_path, tables or [{"name": name, "key": ["id"], "type": kind} for name, kind in TABLES.items()],
        metastore_uris=metastore_uris,
        # a real secret's slot (an S3 secret key; unused on HDFS): a `${VAR}` only the driver's environment holds
        job_settings={"hadoop_conf": {"dfs.replication": "1", "fs.s3a.secret.key": f"${{{SECRET_VAR}}}"}},
    )  # fmt: skip
    for name in TABLES:
        src = _source(job, name)
        job.produce(
            name,
            [
                src.change("c", after=_row(1, "a"), pos=100),
                src.change("c", after=_row(2, "x"), pos=200),
                src.change("u", after=_row(1, "b", "3.50"), pos=300),
                src.change("d", before=_row(2, "x"), pos=400),
                src.tombstone(_row(2, "x")),
                src.change("c", after=_row(3, "z", "-7.25"), pos=500),
            ],
        )
    config = _put_job_file(yarn, job, tmp_path)
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    app, output, argv = _submit(yarn, dist, tmp_path, "run", "--once", "--config", config, secrets={SECRET_VAR: secret})
    # the driver ran in a container, not here; and the secret is nowhere on the way
    logs = yarn.container_logs(app)
    assert any(p.parent.name.endswith("_01_000001") for p in logs), logs
    assert all(secret not in arg for arg in argv)
    assert secret not in output
    leaked = [str(p) for p in logs if secret in p.read_text(errors="replace")]
    assert leaked == [], leaked
    return job, config, secret, output, argv


EXPECTED = [(1, "b", Decimal("3.50")), (3, "z", Decimal("-7.25"))]


def test_a_cluster_mode_job_from_the_built_artefacts_ingests_into_hdfs_and_trino_reads_it(
    spark: SparkSession,
    kafka: LocalKafka,
    yarn: LocalYarn,
    dist: Path,
    metastore: LocalMetastore,
    trino: LocalTrino,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    job, config, secret, _, _ = _ingest(spark, kafka, yarn, dist, tmp_path, metastore_uris=metastore.uri)

    db = job.database
    assert sorted(trino.query(f"select id, name, balance from {db}.people")) == EXPECTED
    # merge-on-read: a first commit writes base files only, so the read-optimized view is the table
    assert sorted(trino.query(f"select id, name, balance from {db}.accounts_ro")) == EXPECTED
    (location,) = trino.query(f'select "$path" from {db}.people')[0]
    assert location.startswith(f"{job.path('people')}/"), location  # the rows Trino read are on HDFS
    # the checkpoint and the tables are on HDFS (no dead letter: the folder is made by the first)
    listing = yarn.hdfs("-ls", "-C", job.lake or "")
    assert {"cp", "warehouse"} <= {line.rsplit("/", 1)[-1] for line in listing.split()}, listing

    # `check` reads the same job file from HDFS and reaches every service and folder it names
    monkeypatch.setenv(SECRET_VAR, secret)
    checked = CliRunner().invoke(cli, ["check", "--config", config, "--json"])
    envelope = json.loads(checked.stdout.strip().splitlines()[-1])
    assert (envelope["command"], checked.exit_code) == ("check", 0), checked.output
    components = {row["component"]: row["status"] for row in envelope["rows"]}
    assert {"kafka", "metastore", "storage (checkpoint)"} <= set(components), components
    assert set(components.values()) == {"ok"}, components


def _driver_envelope(yarn: LocalYarn, app: str) -> dict[str, Any]:
    """The last `--json` envelope the application's driver printed."""
    envelope: dict[str, Any] = json.loads([line for line in _driver_stdout(yarn, app).splitlines() if line.startswith("{")][-1])
    return envelope


def _read_optimized(spark: SparkSession, base_path: str) -> list[tuple[Any, ...]]:
    """A merge-on-read table's base files only: what a compaction has merged so far."""
    frame = spark.read.format("hudi").option("hoodie.datasource.query.type", "read_optimized").load(base_path)
    return sorted(tuple(r) for r in frame.select("id", "name", "balance").collect())


# deep: three more applications of about 40 s each; make test keeps the cluster-mode ingest above
@pytest.mark.deep
def test_status_and_compact_submitted_in_cluster_mode_work_on_the_tables_of_the_job_file_on_hdfs(
    spark: SparkSession, kafka: LocalKafka, yarn: LocalYarn, dist: Path, tmp_path: Path
) -> None:
    tables = [
        {"name": "people", "key": ["id"]},
        {"name": "accounts", "key": ["id"], "type": "MERGE_ON_READ",
         # the job schedules compactions, `hudi-cdc compact` runs them
         "compaction": {"mode": "schedule_only", "strategy": "NUM_COMMITS", "max_delta_commits": 1},
         # updates of a small file group go to a log file, not a new base file: something to compact
         "hoodie_options": {"hoodie.parquet.small.file.limit": 0}},
    ]  # fmt: skip
    job, config, secret, _, _ = _ingest(spark, kafka, yarn, dist, tmp_path, metastore_uris=None, tables=tables)
    for name in TABLES:  # a second run: an update only, which the MOR table writes to a log file
        job.produce(name, [_source(job, name).change("u", after=_row(3, "y", "8.00"), pos=600)])
    _submit(yarn, dist, tmp_path, "run", "--once", "--config", config, secrets={SECRET_VAR: secret})
    latest = [(1, "b", Decimal("3.50")), (3, "y", Decimal("8.00"))]
    accounts = job.path("accounts")
    assert _read_optimized(spark, accounts) == EXPECTED, "the update reached a base file before any compaction"

    app, _, _ = _submit(yarn, dist, tmp_path, "status", "--config", config, "--json", secrets={SECRET_VAR: secret})
    rows: dict[str, dict[str, Any]] = {row["table"]: row for row in _driver_envelope(yarn, app)["rows"]}
    assert set(rows) == set(TABLES), rows
    assert all(row["last_commit"] and row["files"] > 0 for row in rows.values()), rows

    app, _, _ = _submit(yarn, dist, tmp_path, "compact", "--config", config, "--json", secrets={SECRET_VAR: secret})
    (compacted,) = _driver_envelope(yarn, app)["rows"]
    assert compacted["table"] == "accounts" and compacted["compacted"] != "-", compacted
    assert _read_optimized(spark, accounts) == latest  # the log file is merged into the base files
    for name in TABLES:
        assert [(r["id"], r["name"], r["balance"]) for r in job.rows_spark(name)] == latest


KILL_CHANGES = 800
"""Changes per table of the driver-kill test: about six batches of MAX_OFFSETS records."""
MAX_OFFSETS = 300


def _running_batch(spark: SparkSession, checkpoint: str) -> int | None:
    """The micro-batch the job's checkpoint shows started (its offsets written) and not committed."""
    started = {int(n) for n in fs.names(spark, f"{checkpoint}/offsets") if n.isdigit()}
    committed = {int(n) for n in fs.names(spark, f"{checkpoint}/commits") if n.isdigit()}
    return max(started - committed, default=None)


def _container_processes(container: str) -> list[int]:
    """The processes of one YARN container: the JVM whose command line names the container (its
    log folder), and every process under it (the driver's Python)."""
    parents: dict[int, int] = {}
    roots = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile
        if container in command and "java" in command.split(" ", 1)[0]:
            roots.append(int(entry.name))
    tree = list(roots)
    for pid in tree:  # grows while it is walked: children of children
        tree += [child for child, parent in parents.items() if parent == pid and child not in tree]
    return tree


def _kill_driver_mid_batch(spark: SparkSession, job: Job, process: subprocess.Popen[bytes], log: Path) -> tuple[str, int, list[int]]:
    """SIGKILL the first attempt's driver container while a batch after the first runs: the
    application's id, the batch cut, and the processes killed."""
    deadline = time.monotonic() + SUBMIT_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, f"spark-submit ended before the kill:\n{log_tail(log, 80)}"
        app = _application(log.read_text(errors="replace"))
        batch = _running_batch(spark, job.config.job.checkpoint_dir) if app else None
        if app and batch is not None and batch >= 1:
            container = "container_" + app.removeprefix("application_") + "_01_000001"
            if pids := _container_processes(container):
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                return app, batch, pids
        time.sleep(0.5)
    pytest.fail(f"no batch after the first ran within {SUBMIT_SECONDS} s:\n{log_tail(log, 80)}")


# deep: one application with a second attempt, about 3 minutes
@pytest.mark.deep
def test_a_driver_container_killed_mid_batch_is_started_again_by_yarn_and_the_tables_end_exact(
    spark: SparkSession, kafka: LocalKafka, yarn: LocalYarn, dist: Path, tmp_path: Path
) -> None:
    seed = random.randrange(10**6)
    tables = [{"name": "cow", "key": ["id"]}, {"name": "mor", "key": ["id"], "type": "MERGE_ON_READ"}]
    job = _lake_job(spark, kafka, yarn, tmp_path, tables, job_settings={"hadoop_conf": {"dfs.replication": "1"}})
    produced, expected = produce_streams(job, random.Random(seed), KILL_CHANGES, partitions=2)
    config = _put_job_file(yarn, job, tmp_path, kafka={"max_offsets_per_trigger": MAX_OFFSETS})
    # two attempts: YARN starts the driver again when its container is lost
    argv, env = _submit_command(yarn, dist, tmp_path, "run", "--once", "--config", config, secrets={}, attempts=2)
    log = tmp_path / "spark-submit.log"
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    try:
        app, batch, killed = _kill_driver_mid_batch(spark, job, process, log)
        code = process.wait(timeout=SUBMIT_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
    context = f"seed {seed}, {app}: driver container's processes {killed} killed in batch {batch}"
    assert _succeeded(yarn, code, log.read_text(errors="replace")) == app, context
    masters = sorted({p.parent.name for p in yarn.container_logs(app) if p.parent.name.endswith("_000001")})
    # the first attempt's driver container, and the second's that YARN started after the kill
    assert [m.rsplit("_", 2)[-2] for m in masters] == ["01", "02"], f"{masters} ({context})"
    check_landed_exactly(spark, job, produced, expected, context, readers=(job.rows_spark,))


def test_a_job_file_missing_on_hdfs_or_a_folder_is_a_configuration_error(spark: SparkSession, yarn: LocalYarn) -> None:
    missing = f"{yarn.uri}/jobs/{uuid.uuid4().hex}/job.yaml"
    with pytest.raises(ConfigError) as error:
        load_config(missing)
    assert error.value.path == missing and error.value.problems == ["file not found"]
    folder = f"{yarn.uri}/jobs/{uuid.uuid4().hex}"
    yarn.hdfs("-mkdir", "-p", folder)
    with pytest.raises(ConfigError) as error:
        load_config(folder)
    assert error.value.path == folder and error.value.problems == ["a folder, not a file"]
