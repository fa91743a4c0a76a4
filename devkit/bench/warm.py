"""Warm-batch cost of `pipeline.run_batch` alone: no Kafka, no stream, one process.

    python -m devkit.bench.warm                    # 2,000 loaded rows, 14 batches of 250 updates
    python -m devkit.bench.warm --batches 20 --profile
    python -m devkit.bench.warm --tables 5 --batches 6   # every batch updates 5 tables
    python -m devkit.bench.warm --tables 2 --idle-tables 60   # also 60 tables that get no record after the load
    python -m devkit.bench.warm --threads          # also the JVM's CPU by thread kind (JIT, GC, tasks...)
    python -m devkit.bench.warm --list-jobs        # also the Spark jobs of the last batch, from Spark's REST API
    python -m devkit.bench.warm --rules [--hudi-sql]   # also Catalyst's time per rule [with Hudi's SQL extension]
    python -m devkit.bench.warm --codegen          # also the classes code generation compiled in each batch
    python -m devkit.bench.warm --jfr build/warm.jfr   # also where the driver's table threads spend their samples
    python -m devkit.bench.warm --prepped off      # the tables upsert without prepped writes
    python -m devkit.bench.warm --tables 6 --job-setting fold_together=false   # a `job:` setting of the benched job
    python -m devkit.bench.warm --tables 8 --ab-option hoodie.metadata.enable=true
                                                   # in-process A/B: odd tables get the option; their commits' wall time compared

Loads the bench's `accounts` table (devkit.bench.workloads; `--tables N`: N of them, one topic
each) in one batch of snapshot reads, then applies batches of its uniform updates. Prints the CPU seconds (this process and the Spark
JVM it started) and the wall time of the batches after the first three, which pay the JVM's
warm-up. The records are built on the driver and handed to Spark whole: with the 2 GB driver,
`--rows` above about 100k runs the JVM out of heap (200k did, and the run then hangs). To compare two commits, run it
from a checkout of each, back to back, with nothing else running (docs/performance-journal.md, round 6).
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import itertools
import json
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
from pyspark.sql import DataFrame, SparkSession

import devkit  # noqa: F401  (points hudi_cdc at the checkout's build/ folder)
from devkit.bench.child import jvm_thread_cpu, thread_cpu_since
from devkit.bench.measure import tree_cpu_seconds
from devkit.bench.profile import threads_text
from devkit.bench.workloads import SOURCE, records, snapshot_changes, source, update_changes
from devkit.debezium import KafkaRecord
from devkit.services import run_dir
from hudi_cdc.config.models import parse_config
from hudi_cdc.job.pipeline import BatchContext, run_batch
from hudi_cdc.spark.session import DRIVER_JAVA_OPTIONS, get_or_create_session, jvm

LAST_BATCH = "bench-warm-last-batch"
"""The Spark job group of the last batch (`--list-jobs`)."""
WARM_UP = 3
"""Batches left out of the figures: they pay class loading, JIT and code generation."""
_KAFKA_COLUMNS = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp"
_T0 = dt.datetime(2026, 11, 1)
JFR_STACK_DEPTH = 256
"""Frames the Flight Recorder keeps of a stack (`--jfr`): its default of 64 cuts Spark's deep
planning stacks before the frames that say which step they belong to."""
DRIVER_THREAD = re.compile(r'sampledThread = "Thread-\d+"')
"""The driver's threads that run a table's batch: Py4J's, which serve the Python driver's calls."""
DRIVER_FRAMES = {
    "org.apache.hudi.": "Hudi (its writer, file index, timeline)",
    "HoodieSparkSqlWriter": "  of it, Hudi's DataFrame writer",
    "ActiveTimelineV2.<init>": "  of it, loading the active timeline (a listing of .hoodie/timeline/)",
    "DefaultSource.createRelation": "  of it, the stored-row read's relation and file index",
    "sql.catalyst.analysis.": "Catalyst's analysis",
    "sql.catalyst.optimizer.": "Catalyst's optimizer rules",
    "AdaptiveSparkPlanExec": "adaptive execution: its stages and re-planning",
    "WholeStageCodegenExec.doCodeGen": "whole-stage code generation (the source text; compiles are cached)",
    "ClosureCleaner": "closure cleaning",
    "ClosureCleaner$.ensureSerializable": "  of it, serializing each closure to check it",
    "ClassReader": "  of it, reading closures' class files again",
    "QueryExecution.explainString": "plan descriptions for the SQL listener's events (planning they trigger included)",
    "ExplainUtils": "  of it, the explain text itself",
    "SparkContext.runJob": "submitting jobs and waiting on them",
}
"""Markers (a substring of a frame) whose inclusive share of the driver threads' samples `--jfr` prints."""


class KafkaRows:
    """Spark Kafka source rows of the bench's records, at growing offsets of one partition per topic."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self.next: dict[str, int] = {}

    def rows(self, batch: list[tuple[str, KafkaRecord]]) -> DataFrame:
        rows = []
        for topic, (k, v) in batch:
            offset = self.next.get(topic, 0)
            self.next[topic] = offset + 1
            rows.append((k, v, topic, 0, offset, _T0))
        return self.spark.createDataFrame(rows, _KAFKA_COLUMNS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devkit.bench.warm", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000, help="rows loaded before the measured batches")
    parser.add_argument("--batch", type=int, default=250, help="updates per batch (random keys)")
    parser.add_argument("--batches", type=int, default=14, help=f"update batches; the first {WARM_UP} are left out")
    parser.add_argument("--profile", action="store_true", help="print hudi_cdc's functions by cumulative time")
    parser.add_argument("--tables", type=int, default=1, help="tables (one topic each); every batch updates each")
    parser.add_argument("--idle-tables", type=int, default=0,
                        help="more tables, loaded with 10 rows each and then sent nothing (what an idle table costs a batch)")
    parser.add_argument("--threads", action="store_true", help="print the JVM's CPU by thread kind over the warm batches")
    parser.add_argument("--hoodie-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a Hudi write option for every table (repeatable)")  # fmt: skip
    parser.add_argument("--prepped", choices=("on", "off"), default="on", help="the tables' prepped_writes")
    parser.add_argument("--ab-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a Hudi option of the odd-numbered tables only; prints both halves' commit wall time")
    parser.add_argument("--job-setting", action="append", default=[], metavar="KEY=VALUE",
                        help="a `job:` setting of the benched job (e.g. fold_together=false)")
    parser.add_argument("--list-jobs", action="store_true", help="print the Spark jobs of the last batch (runs Spark's UI)")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting of the bench's session (repeatable)")
    parser.add_argument("--hudi-sql", action="store_true",
                        help="start the session with Hudi's SQL extension and catalog, as `hudi-cdc compact` does")
    parser.add_argument("--rules", action="store_true",
                        help="print Catalyst's time per analyzer and optimizer rule over the warm batches")
    parser.add_argument("--codegen", action="store_true",
                        help="print how many classes Spark's code generation compiled in each warm batch (its cache's misses)")
    parser.add_argument("--jfr", type=Path, default=None, metavar="PATH",
                        help="record the warm batches with the Flight Recorder to PATH; print where the driver's "
                             "table threads spend their samples")  # fmt: skip
    args = parser.parse_args(argv)
    root = run_dir("bench-warm")
    shutil.rmtree(root, ignore_errors=True)
    ui = {"spark.ui.enabled": "true", "spark.ui.port": "0"} if args.list_jobs else {}
    settings = dict(option.split("=", 1) for option in args.spark_conf)
    if args.jfr:
        depth = f"-XX:FlightRecorderOptions:stackdepth={JFR_STACK_DEPTH}"
        settings[DRIVER_JAVA_OPTIONS] = f"{settings.get(DRIVER_JAVA_OPTIONS, '')} {depth}".strip()
    spark = get_or_create_session(app_name="bench-warm", extra_conf={"spark.master": "local[2]", **ui, **settings},
                                  hudi_sql=args.hudi_sql)
    spark.sparkContext.setLogLevel("ERROR")
    sources = [SOURCE] if args.tables == 1 and not args.idle_tables else [source(f"t{i}") for i in range(args.tables)]
    idle = [source(f"idle{i}") for i in range(args.idle_tables)]
    config = parse_config({
        "kafka": {"bootstrap_servers": "localhost:9"},  # never contacted: batches are handed to run_batch
        "job": {"name": "bench-warm", "checkpoint_dir": str(root / "cp"), "dead_letter_path": str(root / "dl"),
                **dict(setting.split("=", 1) for setting in args.job_setting)},
        "routes": [{"topic": t.topic, "table": f"accounts_{i}"} for i, t in enumerate(sources)]
                  + [{"topic": t.topic, "table": f"idle_{i}"} for i, t in enumerate(idle)],
        "tables": [{"name": f"accounts_{i}", "key": ["id"], "base_path": str(root / f"accounts_{i}"),
                    "prepped_writes": args.prepped == "on",
                    "hoodie_options": dict(option.split("=", 1) for option in args.hoodie_option + (args.ab_option if i % 2 else []))}
                   for i in range(len(sources))]
                  + [{"name": f"idle_{i}", "key": ["id"], "base_path": str(root / f"idle_{i}")} for i in range(len(idle))],
    })  # fmt: skip
    offsets, me = KafkaRows(spark), psutil.Process()
    load = [(t.topic, r) for t in sources for r in records(t, snapshot_changes(args.rows))]
    load += [(t.topic, r) for t in idle for r in records(t, snapshot_changes(10))]
    run_batch(offsets.rows(load), BatchContext(config=config, batch_id=0))
    updates = [records(t, update_changes(args.batch * args.batches, args.rows)) for t in sources]
    profiler = cProfile.Profile()
    cpu: list[float] = []
    wall: list[float] = []
    commits: dict[bool, list[float]] = {False: [], True: []}
    """Of each warm batch's tables: the commit's wall seconds, by whether the table has `--ab-option`s."""
    threads_before: dict[str, float] = {}
    listed_from = 0.0
    compiled: list[int] = []
    """Of each warm batch: the classes code generation compiled (each a miss of its cache)."""
    recording: Any = None
    """The Flight Recorder's recording of the warm batches (`--jfr`)."""
    for batch_id in range(1, args.batches + 1):
        raw = offsets.rows([(t.topic, r) for t, each in zip(sources, updates, strict=True)
                            for r in itertools.islice(each, args.batch)])  # fmt: skip
        warm = batch_id > WARM_UP
        if batch_id == WARM_UP + 1 and args.threads:
            threads_before = jvm_thread_cpu(spark)
        if batch_id == WARM_UP + 1 and args.rules:
            _rule_executor(spark).resetMetrics()
        if batch_id == WARM_UP + 1 and args.jfr:
            recording = start_flight_recording(spark)
        codegen0 = codegen_compiles(spark) if args.codegen else 0
        cpu0, wall0 = tree_cpu_seconds(me), time.monotonic()
        if warm and args.profile:
            profiler.enable()
        if batch_id == args.batches and args.list_jobs:
            spark.sparkContext.setJobGroup(LAST_BATCH, "the last measured batch")
            listed_from = time.time()
        metrics = run_batch(raw, BatchContext(config=config, batch_id=batch_id))
        if warm:
            for table in (t for t in metrics.tables if t.table.startswith("accounts_")):
                commits[int(table.table.rsplit("_", 1)[1]) % 2 == 1].append(table.commit_seconds or 0.0)
        if warm and args.profile:
            profiler.disable()
        if warm:
            cpu.append(tree_cpu_seconds(me) - cpu0)
            wall.append(time.monotonic() - wall0)
            if args.codegen:
                compiled.append(codegen_compiles(spark) - codegen0)
    threads = thread_cpu_since(threads_before, jvm_thread_cpu(spark)) if args.threads else {}
    jobs = jobs_text(spark, LAST_BATCH, listed_from) if args.list_jobs else ""
    rules = rules_text(spark, batches=len(cpu)) if args.rules else ""
    jfr_tool = save_flight_recording(spark, recording, args.jfr) if recording is not None else None
    spark.stop()
    tables = f" in each of {args.tables} tables" if args.tables > 1 else ""
    tables += f", beside {args.idle_tables} idle tables" if args.idle_tables else ""
    print(f"{len(cpu)} warm batches of {args.batch} updates into {args.rows:,} rows{tables}: CPU {sum(cpu):.1f} s in all "
          f"(median {statistics.median(cpu):.2f} s a batch), wall median {statistics.median(wall):.2f} s")  # fmt: skip
    print("CPU s of each warm batch: " + ", ".join(f"{c:.1f}" for c in cpu))
    if args.ab_option and commits[True] and commits[False]:
        without, with_ = (statistics.mean(commits[k]) for k in (False, True))
        print(f"commit wall s per table and batch (mean, median): without {', '.join(args.ab_option)} {without:.3f}, "
              f"{statistics.median(commits[False]):.3f}; with {with_:.3f}, {statistics.median(commits[True]):.3f} "
              f"({with_ / without:.2f}x the mean)")  # fmt: skip
    if compiled:
        print("classes compiled by code generation in each warm batch: " + ", ".join(map(str, compiled)))
    if threads:
        print(threads_text(threads, span=f"over the {len(cpu)} warm batches"))
    if jobs:
        print(jobs)
    if rules:
        print(rules)
    if jfr_tool is not None:
        print(driver_samples_text(jfr_tool, args.jfr, batches=len(cpu)))
    if args.profile:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(r"hudi_cdc/.*py", 30)
    return 0


def start_flight_recording(spark: SparkSession) -> Any:
    """A Flight Recorder recording (its `profile` settings) of the Spark JVM, started."""
    recording = jvm(spark).jdk.jfr.Recording(jvm(spark).jdk.jfr.Configuration.getConfiguration("profile"))
    recording.start()
    return recording


def save_flight_recording(spark: SparkSession, recording: Any, path: Path) -> Path:
    """Stop `recording` and write it to `path`; the JVM's `jfr` tool, which reads it."""
    recording.stop()
    path.parent.mkdir(parents=True, exist_ok=True)
    recording.dump(jvm(spark).java.io.File(str(path.resolve())).toPath())
    recording.close()
    return Path(jvm(spark).java.lang.System.getProperty("java.home")) / "bin" / "jfr"


def driver_samples_text(tool: Path, recording: Path, batches: int) -> str:
    """Of the recording's execution samples, the driver's table threads' share, and the share of
    those with each of `DRIVER_FRAMES` on the stack (a sample counts once per marker, so the shares
    overlap: Hudi's writer runs Catalyst too)."""
    printed = subprocess.run([str(tool), "print", "--stack-depth", str(JFR_STACK_DEPTH), "--events", "jdk.ExecutionSample",
                              str(recording)], check=True, capture_output=True, text=True).stdout  # fmt: skip
    samples = printed.split("jdk.ExecutionSample")[1:]
    driver = [sample for sample in samples if DRIVER_THREAD.search(sample)]
    inside = Counter(marker for sample in driver for marker in DRIVER_FRAMES if marker in sample)
    lines = [f"-- Flight Recorder over the {batches} warm batches ({recording}): {len(samples)} execution samples, "
             f"{len(driver)} ({len(driver) / max(len(samples), 1):.0%}) in the driver's table threads; of those, "
             "with the frame on the stack:"]  # fmt: skip
    lines += [f"  {inside[marker] / max(len(driver), 1):6.1%}  {what}" for marker, what in DRIVER_FRAMES.items()]
    return "\n".join(lines)


def codegen_compiles(spark: SparkSession) -> int:
    """Classes Spark's code generation compiled so far in this JVM: the misses of its cache."""
    metrics = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics  # type: ignore[union-attr]
    return int(metrics.METRIC_COMPILATION_TIME().getCount())


def _rule_executor(spark: SparkSession) -> Any:
    """Catalyst's RuleExecutor object, which sums every rule's run time over the JVM's queries."""
    return spark._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor  # type: ignore[union-attr]


def rules_text(spark: SparkSession, batches: int, top: int = 15) -> str:
    """Catalyst's time since `resetMetrics`: in all, and the `top` rules by time, per batch."""
    dump = str(_rule_executor(spark).dumpTimeSpent())
    total = re.search(r"Total time: ([0-9.]+) seconds", dump)
    lines = [f"-- Catalyst rules over {batches} warm batches: {total.group(1) if total else '?'} s in all"]
    # a rule's line: name, effective ns / total ns, effective runs / total runs
    rows = [line.split() for line in dump.splitlines() if line.startswith("org.apache.spark")]
    rows.sort(key=lambda row: -float(row[3]))
    for name, effective, _, spent, runs_effective, _, runs in rows[:top]:
        lines.append(f"  {float(spent) / 1e9 / batches:7.3f} s a batch  {name.rsplit('.', 1)[-1]}  "
                     f"(effective {float(effective) / 1e9 / batches:.3f} s; runs {runs_effective} of {runs})")
    return "\n".join(lines)


def jobs_text(spark: SparkSession, group: str, began: float) -> str:
    """The Spark jobs of `group`, one line each: start after `began`, duration, stages, tasks, and
    the job's description (Hudi's: "Committing stats: accounts") or else its call site.

    From the UI's REST API, which has the descriptions;
    the listener bus feeds it asynchronously, so it is read until the count stops changing.
    """
    context = spark.sparkContext
    url = f"{context.uiWebUrl}/api/v1/applications/{context.applicationId}/jobs"
    jobs: list[dict[str, Any]] = []
    for _ in range(20):
        found = [j for j in json.load(urllib.request.urlopen(url, timeout=30)) if j.get("jobGroup") == group]
        if jobs and len(found) == len(jobs):
            break
        jobs = found
        time.sleep(0.5)
    lines = [f"-- Spark jobs of the last batch: {len(jobs)}"]
    for job in sorted(jobs, key=lambda j: j["jobId"]):
        start, end = _epoch(job["submissionTime"]), _epoch(job.get("completionTime", job["submissionTime"]))
        lines.append(f"  {job['jobId']:5d}  +{start - began:6.2f} s  {end - start:5.2f} s  "
                     f"stages {len(job['stageIds'])}  tasks {job['numTasks']:3d}  {(job.get('description') or job['name'])[:90]}")  # fmt: skip
    return "\n".join(lines)


def _epoch(stamp: str) -> float:
    """Epoch seconds of the REST API's `2026-11-26T09:08:07.123GMT`."""
    return dt.datetime.strptime(stamp.removesuffix("GMT"), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=dt.UTC).timestamp()


if __name__ == "__main__":
    sys.exit(main())
