"""Which generated classes a warm job compiles again in every run (Spark's codegen cache misses).

`python -m devkit.bench.codegen_misses --runs 5`: starts a local Kafka, then runs a two-table job
(COW and MOR) `--runs` times, each a scheduled run of 3 changes per table, in one Spark session
with Spark's CodeGenerator logging at DEBUG. Prints per run the classes compiled and their
compile times, and the lines in which the last two runs' generated code differs: what makes a
warm batch compile anew (performance-journal.md, round 22).
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import devkit  # noqa: F401  (points hudi_cdc at the checkout's build/ folder)
from devkit.debezium import Column, DebeziumTable
from devkit.services.kafka import LocalKafka
from hudi_cdc.spark.session import get_or_create_session, jvm
from tests.support.harness import Job

CODEGEN_LOGGER = "org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator"
COLUMNS = [Column("id", "int64", optional=False), Column("name", "string"), Column("qty", "int64")]
_COMPILED = re.compile(r"Code generated in ([\d.]+) ms")
_MARK = "=== codegen-misses run "
_CODE = re.compile(r"DEBUG CodeGenerator: \n(.*?)(?=\n\d\d/\d\d/\d\d \d\d:\d\d:\d\d )", re.S)


def _runs(count: int) -> None:
    """The child: `count` scheduled runs, each announced on stderr, where the JVM logs too."""
    work = Path(tempfile.mkdtemp(prefix="codegen-misses-"))
    spark = get_or_create_session(app_name="codegen-misses")
    level = jvm(spark).org.apache.logging.log4j.Level.DEBUG
    jvm(spark).org.apache.logging.log4j.core.config.Configurator.setLevel(CODEGEN_LOGGER, level)
    with LocalKafka(directory=work / "kafka") as kafka:
        job = Job(spark, kafka, work, [{"name": "a", "key": ["id"]}, {"name": "b", "key": ["id"], "type": "MERGE_ON_READ"}])
        sources = {n: DebeziumTable(server=f"srv{job.suffix}", database="db", table=n, columns=COLUMNS, key=["id"]) for n in "ab"}
        for run in range(count):
            for name, source in sources.items():
                op = "c" if run == 0 else "u"
                job.produce(name, [source.change(op, after={"id": k, "name": f"n{run}", "qty": run}, pos=100 * run + k + 1) for k in range(3)])
            print(f"{_MARK}{run}", file=sys.stderr, flush=True)
            job.run()
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _runs(args.runs)
        return
    with tempfile.TemporaryFile("w+") as log:
        subprocess.run([sys.executable, "-m", __spec__.name, "--child", "--runs", str(args.runs)], stderr=log, check=True)
        log.seek(0)
        runs = re.split(rf"{_MARK}\d+\n", log.read())[1:]
    for n, text in enumerate(runs):
        times = [round(float(t)) for t in _COMPILED.findall(text)]
        print(f"run {n}: {len(times)} classes compiled, ms: {times}")
    if len(runs) >= 2:
        for old, new in zip(_CODE.findall(runs[-2]), _CODE.findall(runs[-1]), strict=False):
            diff = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
            print("\n".join(line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")))


if __name__ == "__main__":
    main()
