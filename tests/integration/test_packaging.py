"""The wheel, installed alone: no workbench or test library comes with it, and a job runs from it.

Builds the wheel from a copy of the package sources, installs it into a fresh virtual
environment outside the checkout, and runs it from a folder outside the checkout with no
checkout path on sys.path (jars come from $HUDI_CDC_BUILD, pointing at a folder that only
links the fetched jars). Needs the package registry or pip's cache for the dependencies.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from hudi import HudiTableBuilder

from devkit import CHECKOUT, build_dir
from devkit.debezium import Column, DebeziumTable
from devkit.services.kafka import LocalKafka

pytestmark = pytest.mark.integration

# Libraries of the workbench and the tests: the production import graph must need none of them.
# confluent_kafka is imported by the job itself (the run-start Kafka check)
NOT_IMPORTED = ("devkit", "tests", "pytest", "hypothesis", "trino", "hudi", "pymysql")
# The modules a job, the CLI and `resume-binlog` import.
PRODUCT_MODULES = (
    "hudi_cdc",
    "hudi_cdc.cli.console",
    "hudi_cdc.job.stream",
    "hudi_cdc.job.pipeline",
    "hudi_cdc.relay.connect",
    "hudi_cdc.hudi.status",
    "hudi_cdc.hudi.compactor",
    "hudi_cdc.spark.session",
)
SOURCES = ("setup.cfg", "pyproject.toml", "README.md", "hudi_cdc")


class Installed:
    """A fresh venv with only the wheel (and its dependencies), used from `cwd`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.venv = root / "venv"
        self.cwd = root / "elsewhere"
        self.wheel: Path | None = None

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment with no checkout path: PYTHONPATH gone, Spark's Python workers the venv's."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HUDI_CDC_BUILD", "VIRTUAL_ENV")}
        env["PATH"] = f"{self.venv / 'bin'}:{env.get('PATH', '')}"
        env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = str(self.python)
        return {**env, **extra}

    def run(self, *args: str | Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(a) for a in args], cwd=self.cwd, env=self.env(**env), capture_output=True, text=True, timeout=timeout
        )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("packaging")
    assert not root.resolve().is_relative_to(CHECKOUT), "the packaging test must run outside the checkout"
    inst = Installed(root)
    source = root / "source"
    # build from a copy of what the sdist holds: no build/ or egg-info written into the checkout
    for name in SOURCES:
        src = CHECKOUT / name
        if src.is_dir():
            shutil.copytree(src, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            source.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, source / name)
    dist = root / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)],
        capture_output=True, text=True, timeout=600, cwd=root,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (inst.wheel,) = dist.glob("hudi_cdc-*.whl")
    venv.create(inst.venv, with_pip=True)
    inst.cwd.mkdir()
    # --no-compile: byte-compiling pyspark's thousands of modules took a third of this fixture
    # the extra `spark` brings pyspark (a Spark platform brings its own); versions as the tests pin them
    pip = inst.run(
        inst.python, "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check",
        "-c", CHECKOUT / "constraints.txt", f"{inst.wheel}[spark]", timeout=1200,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stderr
    yield inst


def test_the_wheel_holds_only_the_package(installed: Installed) -> None:
    assert installed.wheel is not None
    names = zipfile.ZipFile(installed.wheel).namelist()
    top = {n.split("/", 1)[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"hudi_cdc"}
    assert "hudi_cdc/py.typed" in names


def test_importing_the_package_pulls_in_no_workbench_or_test_library(installed: Installed) -> None:
    probe = (
        "import importlib, json, sys\n"
        f"for m in {PRODUCT_MODULES!r}: importlib.import_module(m)\n"
        "import hudi_cdc\n"
        "print(json.dumps({'file': hudi_cdc.__file__, 'path': sys.path, 'modules': sorted(sys.modules)}))\n"
    )
    result = installed.run(installed.python, "-c", probe)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert Path(seen["file"]).is_relative_to(installed.venv)
    assert not [p for p in seen["path"] if p and Path(p).resolve().is_relative_to(CHECKOUT)]
    assert not [m for m in seen["modules"] if m.split(".")[0] in NOT_IMPORTED]
    # and the workbench is not even installed
    found = installed.run(installed.python, "-c", "import importlib.util as u; print(u.find_spec('devkit'))")
    assert found.stdout.strip() == "None", found.stderr


def test_the_cli_answers_from_the_installed_wheel(installed: Installed) -> None:
    config = installed.cwd / "job.yaml"
    config.write_text(_job_yaml(bootstrap="127.0.0.1:9", topic="srv.db.people", root=installed.root / "unused"))

    helped = installed.run(installed.venv / "bin" / "hudi-cdc", "--help")
    validated = installed.run(installed.venv / "bin" / "hudi-cdc", "validate", "--config", config)

    assert helped.returncode == 0 and "resume-binlog" in helped.stdout, helped.stderr
    assert validated.returncode == 0 and "people" in validated.stdout, validated.stderr

    version = installed.run(installed.venv / "bin" / "hudi-cdc", "--version")
    assert version.returncode == 0 and version.stdout.strip() == f"hudi-cdc {_wheel_version(installed)}", version
    as_module = installed.run(installed.python, "-m", "hudi_cdc", "validate", "--config", config)
    assert as_module.returncode == 0 and "people" in as_module.stdout, as_module.stderr
    # the file spark-submit runs, from the installed package, run as a file (as spark-submit runs it)
    entry = installed.run(installed.venv / "bin" / "hudi-cdc", "submit-file").stdout.strip()
    assert Path(entry).is_relative_to(installed.venv) and Path(entry).name == "__main__.py"
    as_file = installed.run(installed.python, entry, "validate", "--config", config)
    assert as_file.returncode == 0 and "people" in as_file.stdout, as_file.stderr


def test_without_hudis_jars_a_command_says_which_to_give_spark(installed: Installed) -> None:
    """Tried as a new user would: a command run with no jars named (no spark-submit, no HUDI_CDC_BUILD)."""
    config = installed.cwd / "nojars.yaml"
    config.write_text(_job_yaml(bootstrap="127.0.0.1:9", topic="srv.db.people", root=installed.root / "nojars"))

    status = installed.run(installed.venv / "bin" / "hudi-cdc", "status", "--config", config, timeout=300)

    assert status.returncode == 1, status.stderr[-2000:]
    assert "Traceback" not in status.stderr and "JavaPackage" not in status.stderr, status.stderr[-2000:]
    assert "error: Spark cannot load the classes of org.apache.hudi:hudi-spark3.5-bundle_2.12:1.2.0" in status.stderr
    assert "spark-submit --packages org.apache.hudi:hudi-spark3.5-bundle_2.12:1.2.0," in status.stderr


def test_a_job_runs_from_the_installed_wheel(installed: Installed, kafka: LocalKafka) -> None:
    source = DebeziumTable(
        server="pkg", database="db", table="people", key=["id"],
        columns=[Column("id", "int64", optional=False), Column("name", "string"), Column("balance", "decimal", scale=2)],
    )  # fmt: skip
    topic = f"{source.topic}_{installed.root.name}"
    kafka.create_topics([topic])
    kafka.produce(
        topic,
        [
            source.change("c", after={"id": 1, "name": "a", "balance": Decimal("1.00")}, pos=100),
            source.change("c", after={"id": 2, "name": "b", "balance": Decimal("2.50")}, pos=200),
            source.change("u", after={"id": 1, "name": "a2", "balance": Decimal("1.00")}, pos=300),
        ],
    )
    # $HUDI_CDC_BUILD names a folder outside the checkout that only links the fetched jars
    build = installed.root / "build"
    build.mkdir(exist_ok=True)
    if not (build / "jars").exists():
        (build / "jars").symlink_to((build_dir() / "jars").resolve(), target_is_directory=True)
    warehouse = installed.root / "warehouse"
    config = installed.cwd / "run.yaml"
    config.write_text(_job_yaml(bootstrap=kafka.bootstrap_servers, topic=topic, root=warehouse))

    ran = installed.run(
        installed.venv / "bin" / "hudi-cdc", "run", "--config", config, "--once", timeout=1200, HUDI_CDC_BUILD=str(build)
    )

    assert ran.returncode == 0, ran.stderr[-4000:]
    batches = HudiTableBuilder.from_base_uri(str(warehouse / "people")).build().read()
    rows = pa.Table.from_batches(batches).select(["id", "name", "balance"]).to_pylist()
    assert sorted(rows, key=lambda r: r["id"]) == [
        {"id": 1, "name": "a2", "balance": Decimal("1.00")},
        {"id": 2, "name": "b", "balance": Decimal("2.50")},
    ]


def _wheel_version(installed: Installed) -> str:
    assert installed.wheel is not None
    return installed.wheel.name.split("-")[1]


def _job_yaml(*, bootstrap: str, topic: str, root: Path) -> str:
    return json.dumps(
        {
            "kafka": {"bootstrap_servers": bootstrap},
            "job": {
                "name": "packaging",
                "checkpoint_dir": str(root / "checkpoint"),
                "dead_letter_path": str(root / "dead_letter"),
            },
            "routes": [{"topic": topic, "table": "people"}],
            "tables": [{"name": "people", "key": ["id"], "base_path": str(root / "people")}],
        }
    )  # JSON is YAML
