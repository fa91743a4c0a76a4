"""`make dist`: what a user uploads to run hudi_cdc on a cluster, built into build/dist/.

- `hudi_cdc-<version>-py3-none-any.whl`: the package (`pip install` it where jobs are submitted).
- `hudi-cdc-env.tar.gz`: a packed virtual environment holding the package and its runtime
  dependencies, for `spark-submit --archives build/dist/hudi-cdc-env.tar.gz#env` with
  `PYSPARK_PYTHON=./env/bin/python` (Spark's Python package management). Without pyspark: the
  cluster's Spark puts its own on the driver's and executors' `PYTHONPATH`.
- `jars/`: the Spark jars the job needs (the Hudi bundle, Spark's Kafka source and Avro, and what
  they pull in), for `--jars`; `jars.txt` lists them comma-separated, as `--jars` takes them.
- `packages.txt`: the same as Maven coordinates, for `--packages` on clusters that resolve them.

The environment is packed the way venv-pack does it, by hand: a venv's `bin/python` is a link to
the interpreter it was made from, and its `pyvenv.cfg` names that interpreter's folder, so the
archive, unpacked anywhere, runs on a node where the same Python (here: the interpreter of the
venv running this module, at the same path) is installed. What moves is the site-packages.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from devkit import CHECKOUT, build_dir

ENV_ARCHIVE = "hudi-cdc-env.tar.gz"
"""The packed environment's file name in build/dist/."""

_POM = CHECKOUT / "infra" / "spark" / "pom.xml"
_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def dist_dir() -> Path:
    """build/dist/, where `make dist` writes."""
    return build_dir() / "dist"


def coordinates(pom: Path = _POM) -> list[str]:
    """The `group:artifact:version` of each dependency infra/spark/pom.xml pins (what `--packages` takes)."""
    root = ET.parse(pom).getroot()
    properties = {child.tag.split("}")[-1]: child.text or "" for child in root.findall("m:properties/*", _NS)}

    def value(element: ET.Element, name: str) -> str:
        text = element.findtext(f"m:{name}", default="", namespaces=_NS).strip()
        if text.startswith("${") and text.endswith("}"):
            text = properties[text[2:-1]]
        return text

    return [
        f"{value(dep, 'groupId')}:{value(dep, 'artifactId')}:{value(dep, 'version')}"
        for dep in root.findall("m:dependencies/m:dependency", _NS)
    ]


def _run(*command: str | Path) -> None:
    subprocess.run([str(part) for part in command], check=True, cwd=CHECKOUT)


SOURCES = ("setup.cfg", "pyproject.toml", "README.md", "hudi_cdc")
"""What the wheel is built from (what an sdist holds)."""


def build_wheel(out: Path) -> Path:
    """The package's wheel, built into `out` from a copy of SOURCES (setuptools writes its build
    folder and egg-info beside the sources: not into the checkout)."""
    for old in out.glob("hudi_cdc-*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory(prefix="hudi-cdc-dist-") as tmp:
        source = Path(tmp) / "source"
        for name in SOURCES:
            src = CHECKOUT / name
            if src.is_dir():
                shutil.copytree(src, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                source.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, source / name)
        _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", out.resolve(), source)
    (wheel,) = out.glob("hudi_cdc-*.whl")
    return wheel


def build_env(wheel: Path, out: Path) -> Path:
    """A venv holding `wheel` and its runtime dependencies (constraints.txt's versions), packed into `out`."""
    env = out / "env"
    shutil.rmtree(env, ignore_errors=True)
    # the interpreter this venv was made from: the same path must exist on the cluster's nodes
    base = Path(sys._base_executable)  # type: ignore[attr-defined]  # CPython's, set in every venv
    _run(base, "-m", "venv", env)
    _run(env / "bin" / "python", "-m", "pip", "install", "-q", "-c", CHECKOUT / "constraints.txt", wheel)
    _run(env / "bin" / "python", "-m", "pip", "uninstall", "-q", "-y", "pip", "setuptools")
    archive = out / ENV_ARCHIVE
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        for path in sorted(env.iterdir()):
            tar.add(path, arcname=path.name)  # links (bin/python) stay links
    return archive


def copy_jars(out: Path) -> list[Path]:
    """The jars of `make jars` (build/jars) copied to `out/jars`, listed in `out/jars.txt`."""
    source = build_dir() / "jars"
    jars = sorted(source.glob("*.jar"))
    if not jars:
        raise SystemExit(f"no jars in {source}: run `make jars`")
    target = out / "jars"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    copied = [Path(shutil.copy2(jar, target / jar.name)) for jar in jars]
    (out / "jars.txt").write_text(",".join(str(p) for p in copied) + "\n")
    return copied


def build(out: Path) -> None:
    """Everything above, into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    wheel = build_wheel(out)
    archive = build_env(wheel, out)
    jars = copy_jars(out)
    (out / "packages.txt").write_text(",".join(coordinates()) + "\n")
    print(f"{wheel}\n{archive} ({archive.stat().st_size // 2**20} MiB)\n{out / 'jars'} ({len(jars)} jars)\n{out / 'packages.txt'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: build/dist)")
    args = parser.parse_args()
    build(args.out or dist_dir())


if __name__ == "__main__":
    main()
