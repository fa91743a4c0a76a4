"""A warm batch's cost against the length of the table's active timeline: `make bench-timeline`.

    python -m devkit.bench.timeline                          # COW, 100, 500 and 2,000 commits; 100 h and none
    python -m devkit.bench.timeline --instants 100,500 --type mor
    python -m devkit.bench.timeline --archive-after-hours 100  # one policy only
    python -m devkit.bench.timeline --smoke                  # 10 and 60 commits, 2 batches each
    python -m devkit.bench.timeline --same-jvm               # measure in the process that grew the table
    python -m devkit.bench.timeline --instants 2000 --resume  # grow the last run's table further
    python -m devkit.bench.timeline --storage hdfs            # the table on a local HDFS (a minicluster)

Why: hudi_cdc keeps a table's `archive_after_hours` (100 h by default) of instants active so
that Trino can read version-9 tables (`hudi_cdc.hudi.retention`). At a 30 s trigger that is about
12,000 commits, listed and read by Hudi's writer and by hudi_cdc on every commit of the table.

How: each `--archive-after-hours` policy (default: 100 h, then none, i.e. Hudi's count of 40-50)
runs in a process of its own with one `local[2]` Spark. The bench's `accounts` table is loaded
through `pipeline.run_batch` and warmed by a few update batches. Then, for each `--instants`:
  1. the commits made to the table are grown to that number with empty commits through Hudi's
     write client (0.7 s each at 100 commits here, 1.5 s at 500: Hudi's own cost of a commit grows
     too). Each carries the extra metadata of hudi_cdc's newest commit, as every commit of a
     running job does; the table's cleaning settings apply, and its archival: none while the
     window holds every commit (all are recent), Hudi's count without a window;
  2. a fresh process with a Spark JVM of its own opens the table, applies `--warm-up` batches and
     then `--batches` measured batches of `--batch` uniform updates through `run_batch`, as a
     running job applies them, and takes their CPU seconds (the process and its Spark JVM) and
     its JVM's CPU by thread kind (the driver's threads, the JIT, executor tasks, GC).
With `--storage hdfs` the table lives on a local HDFS (`devkit.services.hdfs`, started by this
process, so its name node's CPU is not the measured process's, as on a cluster); the name node's
CPU per measured batch is reported beside the batch's.
The measured batches' commits are part of the next length's count. The result is printed and
written as JSON to build/bench/timeline-<time>.json (`--out` another folder).

Why a fresh JVM per length (round 43): in one process the JIT keeps warming for 10-15 batches,
so the first length was measured colder than the later ones (its batches still falling from 4.7
to 2.5 CPU s) and the ratio understated the timeline's cost. Each length now starts from the
same JVM state and warms the same way. `--same-jvm` measures as before (`--warm-up` then counts
the batches before the first length only).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import itertools
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil
from pyspark.sql import SparkSession

from devkit import build_dir  # importing devkit points hudi_cdc at the checkout's build/ folder
from devkit.bench.child import jvm_thread_cpu, thread_cpu_since
from devkit.bench.measure import tree_cpu_seconds
from devkit.bench.warm import (
    JFR_STACK_DEPTH,
    WARM_UP,
    KafkaRows,
    driver_samples_text,
    save_flight_recording,
    start_flight_recording,
)
from devkit.bench.workloads import SOURCE, records, snapshot_changes, update_changes
from devkit.services import run_dir
from devkit.services.hdfs import LocalHdfs
from hudi_cdc.config.models import Config, TableConfig, parse_config
from hudi_cdc.hoodie_keys import INLINE, KEEP_MAX_COMMITS, KEEP_MIN_COMMITS, SCHEDULE_INLINE
from hudi_cdc.hudi.retention import KEEP_MARGIN, KEEP_SPREAD
from hudi_cdc.hudi.table import meta_client
from hudi_cdc.hudi.table_options import write_options
from hudi_cdc.hudi.timeline import latest_job_metadata
from hudi_cdc.job.pipeline import BatchContext, run_batch
from hudi_cdc.spark import fs
from hudi_cdc.spark.session import DRIVER_JAVA_OPTIONS, apply_hadoop_conf, get_or_create_session, jvm

GROWING_OPTIONS = {
    # the write client would otherwise run the table's inline services on every empty commit;
    # the measured batches run them as the job does
    INLINE: "false",
    SCHEDULE_INLINE: "false",
    "hoodie.embed.timeline.server": "false",
}

FRESH_RESULT = "measured.json"
"""What a fresh JVM's measurement (`measure_fresh`) writes to its `--out` folder."""
RUN_NOTE = "made-by.json"
"""Beside the bench's table: the settings it was made with, which `--resume` must match."""


@dataclass(frozen=True)
class Length:
    """One measured timeline length."""

    made: int
    """Commits made to the table (loads, batches and empty ones) before the measured batches (in a
    fresh JVM: before its `--warm-up` batches, which commit too)."""
    commits: int
    """Completed commits (and delta commits) in the active timeline before the measured batches."""
    instants: int
    """Every instant of the active timeline (commits, cleans, compactions), completed or not."""
    timeline_files: int
    """Files in `.hoodie/timeline/` (requested, inflight and completed files of every instant)."""
    grown: int
    """Empty commits added to reach this length."""
    growing_s_per_commit: float
    """Wall seconds per empty commit while growing (Hudi's own cost of a commit at this length)."""
    batch_cpu_s: list[float]
    """CPU seconds of each measured batch."""
    jvm_thread_cpu_s: dict[str, float]
    """The Spark JVM's CPU seconds per measured batch, by thread kind (`--same-jvm`: empty)."""
    storage_cpu_s: float | None = None
    """`--storage hdfs`: the HDFS process's CPU seconds per measured batch (name node and data node)."""

    @property
    def median_cpu_s(self) -> float:
        return statistics.median(self.batch_cpu_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devkit.bench.timeline", description=__doc__.splitlines()[0])
    parser.add_argument("--instants", default="100,500,2000", help="commits made to the table when measured, in turn")
    parser.add_argument("--type", choices=("cow", "mor"), default="cow", help="the table's type")
    parser.add_argument("--rows", type=int, default=2_000, help="rows loaded before the measured batches")
    parser.add_argument("--batch", type=int, default=250, help="updates per measured batch (uniform keys)")
    parser.add_argument("--batches", type=int, default=6, help="measured batches at each length")
    parser.add_argument("--archive-after-hours", default="100,none",
                        help="the table's archive_after_hours, one run (process) each, in turn; none: Hudi's count")  # fmt: skip
    parser.add_argument("--warm-up", type=int, default=10,
                        help="batches a fresh JVM applies before the measured ones at each length")
    parser.add_argument("--same-jvm", action="store_true",
                        help="measure in the process that grows the table (its JIT warms across the lengths)")
    parser.add_argument("--smoke", action="store_true", help="10 and 60 commits, 2 batches each: that it runs, not figures")
    parser.add_argument("--jfr", type=Path, default=None, metavar="DIR",
                        help="record each length's measured batches with the Flight Recorder to DIR/timeline-<commits>.jfr "
                             "and print where the driver's threads spend their samples (not with --same-jvm)")
    parser.add_argument("--storage", choices=("local", "hdfs"), default="local",
                        help="where the table lives: the local file system, or a local HDFS this bench starts")
    parser.add_argument("--resume", action="store_true",
                        help="grow the table the last run left (with a window) instead of loading a new one")
    parser.add_argument("--measure-table", help=argparse.SUPPRESS)  # a fresh JVM's measurement of a grown table
    parser.add_argument("--skip", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--storage-pid", type=int, default=0, help=argparse.SUPPRESS)  # the HDFS process, measured too
    parser.add_argument("--out", default=str(build_dir() / "bench"), help="folder of the JSON result")
    args = parser.parse_args(argv)
    if args.smoke:
        args.instants, args.batches, args.warm_up = "10,60", 2, 1  # past Hudi's keep.max of 50: its archival shows
    if args.measure_table:
        return measure_fresh(args)
    policies = args.archive_after_hours.split(",")
    if len(policies) == 1:
        runs = [measure(args, _hours(policies[0]))]
    else:
        runs = [_run_alone(argv or sys.argv[1:], policy) for policy in policies]
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(args.out) / f"timeline-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "runs": runs}, indent=2))
    print(f"{args.type.upper()}, {args.batches} batches of {args.batch} updates into {args.rows:,} rows at each length")
    for run in runs:
        first = run["lengths"][0]["median_cpu_s"]
        print(f"archive_after_hours {run['archive_after_hours']}:")
        for length in run["lengths"]:
            print(length_line(length, first))
    print(out)
    return 0


def _run_alone(argv: list[str], policy: str) -> dict[str, Any]:
    """One policy's run in a process of its own (a JVM of its own: no run inherits another's JIT)."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "devkit.bench.timeline", *_without(argv, "--archive-after-hours", "--out"),
                        "--archive-after-hours", policy, "--out", out], check=True)  # fmt: skip
        (result,) = Path(out).glob("timeline-*.json")
        (run,) = json.loads(result.read_text())["runs"]
        return dict(run)


def _without(argv: list[str], *options: str) -> list[str]:
    """`argv` without `options` and their values (`--x v` or `--x=v`)."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in options:
            skip = True
        elif not arg.startswith(tuple(f"{o}=" for o in options)):
            kept.append(arg)
    return kept


def measure(args: argparse.Namespace, hours: int | None) -> dict[str, Any]:
    """One run: the table with `archive_after_hours` = `hours`, measured at each of `args.instants` commits made."""
    root = run_dir("bench-timeline")
    made_by = {"type": args.type, "rows": args.rows, "batch": args.batch, "archive_after_hours": hours}
    resume = args.resume and (root / RUN_NOTE).is_file()
    if args.resume and hours is None:
        raise SystemExit("--resume needs a window: without one Hudi archives, and the commits made are not known")
    if args.resume and args.storage != "local":
        raise SystemExit("--resume: the bench's HDFS lives as long as its run; grow a new table")
    if resume and json.loads((root / RUN_NOTE).read_text()) != made_by:
        # e.g. the smoke test's run, which shares the folder: growing it would measure another table
        raise SystemExit(f"--resume: {root} holds a table made with {(root / RUN_NOTE).read_text()}, not {made_by}")
    if not resume:
        shutil.rmtree(root, ignore_errors=True)
    with contextlib.ExitStack() as services:
        hdfs = services.enter_context(LocalHdfs()) if args.storage == "hdfs" else None
        tables = f"{hdfs.uri}/bench-timeline" if hdfs is not None else str(root)
        return _measure_run(args, hours, root, tables, hdfs, made_by=None if resume else made_by)


def _measure_run(args: argparse.Namespace, hours: int | None, root: Path, tables: str, hdfs: LocalHdfs | None, *,
                 made_by: dict[str, Any] | None) -> dict[str, Any]:  # fmt: skip
    """`measure` with the table under `tables` (a folder or an HDFS URI); `made_by`: load a new table
    and note how (None: grow the one there)."""
    resume = made_by is None
    lengths = sorted(int(n) for n in args.instants.split(","))
    spark = get_or_create_session(app_name="bench-timeline", extra_conf={"spark.master": "local[2]"})
    spark.sparkContext.setLogLevel("ERROR")
    apply_hadoop_conf(spark, _storage_conf(args.storage))
    config = _config(tables, args.type, hours)
    table = config.tables[0]
    if not resume:
        run_batch(KafkaRows(spark).rows([(SOURCE.topic, r) for r in records(SOURCE, snapshot_changes(args.rows))]),
                  BatchContext(config=config, batch_id=0))  # fmt: skip
        if hdfs is None:  # a table on the bench's HDFS is gone with it: no later run may resume it
            (root / RUN_NOTE).write_text(json.dumps(made_by))
    # a resumed table holds updates up to (commits made) x batch at most: draw past them
    skip = completed_commits(spark, table.base_path) * args.batch if resume else 0
    warm_up = args.warm_up if args.same_jvm else WARM_UP
    batch = _update_batches(spark, config, args, skip=skip, batches=warm_up + args.batches * len(lengths))
    for _ in range(warm_up):
        batch()
    made = completed_commits(spark, table.base_path)  # nothing archived: fewer than Hudi's 40, or a window
    measured: list[dict[str, Any]] = []
    for target in lengths:
        wall0 = time.monotonic()
        grown = grow(spark, table, target - made)
        per_commit = (time.monotonic() - wall0) / grown if grown else 0.0
        made += grown
        commits, instants, files = timeline_size(spark, table.base_path)
        if args.same_jvm:
            length = Length(made, commits, instants, files, grown, per_commit, [batch() for _ in range(args.batches)], {})
        else:
            pid = hdfs.pid if hdfs is not None else None
            cpu, threads, storage = _measure_alone(args, tables, hours, skip=made * args.batch, storage_pid=pid)
            length = Length(made, commits, instants, files, grown, per_commit, cpu, threads, storage)
            made += args.warm_up
        measured.append(asdict(length) | {"median_cpu_s": length.median_cpu_s})
        made += args.batches
        print(f"archive_after_hours {hours}: " + length_line(measured[-1], measured[0]["median_cpu_s"]), flush=True)
    spark.stop()
    return {"archive_after_hours": hours, "tables": tables, "lengths": measured}


def _measure_alone(
    args: argparse.Namespace, tables: str, hours: int | None, *, skip: int, storage_pid: int | None
) -> tuple[list[float], dict[str, float], float | None]:
    """`measure_fresh` of the grown table in a process of its own: (CPU s of each measured batch, its
    JVM's CPU s per measured batch by thread kind, the storage process's CPU s per measured batch).
    `skip`: updates drawn before (their positions are at or below the table's)."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "devkit.bench.timeline", "--measure-table", tables,
                        "--type", args.type, "--archive-after-hours", str(hours), "--rows", str(args.rows),
                        "--batch", str(args.batch), "--batches", str(args.batches), "--warm-up", str(args.warm_up),
                        "--skip", str(skip), "--out", out, "--storage", args.storage,
                        *(["--storage-pid", str(storage_pid)] if storage_pid else []),
                        *(["--jfr", str(args.jfr / f"timeline-{skip // args.batch}.jfr")] if args.jfr else [])],
                       check=True)  # fmt: skip
        result = json.loads((Path(out) / FRESH_RESULT).read_text())
    return result["batch_cpu_s"], result["jvm_thread_cpu_s"], result.get("storage_cpu_s")


def measure_fresh(args: argparse.Namespace) -> int:
    """In a fresh process: `--warm-up` then `--batches` batches into the table under `--measure-table`,
    their CPU seconds and the JVM's per batch by thread kind written to `--out`/measured.json."""
    tables = args.measure_table
    conf = {"spark.master": "local[2]"}
    if args.jfr:
        conf[DRIVER_JAVA_OPTIONS] = f"-XX:FlightRecorderOptions:stackdepth={JFR_STACK_DEPTH}"
    spark = get_or_create_session(app_name="bench-timeline-measure", extra_conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    apply_hadoop_conf(spark, _storage_conf(args.storage))
    config = _config(tables, args.type, _hours(args.archive_after_hours))
    batch = _update_batches(spark, config, args, skip=args.skip, batches=args.warm_up + args.batches)
    for _ in range(args.warm_up):
        batch()
    recording = start_flight_recording(spark) if args.jfr else None
    storage = psutil.Process(args.storage_pid) if args.storage_pid else None
    before, storage_before = jvm_thread_cpu(spark), tree_cpu_seconds(storage) if storage else 0.0
    cpu = [batch() for _ in range(args.batches)]
    threads = {kind: s / args.batches for kind, s in thread_cpu_since(before, jvm_thread_cpu(spark)).items()}
    storage_cpu = (tree_cpu_seconds(storage) - storage_before) / args.batches if storage else None
    if recording is not None:
        tool = save_flight_recording(spark, recording, args.jfr)
        print(f"at {tables}:\n" + driver_samples_text(tool, args.jfr, batches=args.batches), flush=True)
    spark.stop()
    out = Path(args.out) / FRESH_RESULT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"batch_cpu_s": cpu, "jvm_thread_cpu_s": threads, "storage_cpu_s": storage_cpu}))
    return 0


def _update_batches(spark: SparkSession, config: Config, args: argparse.Namespace, *, skip: int,
                    batches: int) -> Callable[[], float]:  # fmt: skip
    """A function that applies the next `--batch` uniform updates to the table through `run_batch`,
    as a running job does, and returns the CPU seconds it took (this process and its Spark JVM);
    `batches` calls at most. `skip`: updates drawn before, by this run or the one that made the
    table (an update's position grows with its draw, so those after `skip` are newer than any the
    table holds, and the batch ids are above every one its commits carry)."""
    kafka, me = KafkaRows(spark), psutil.Process()
    updates = records(SOURCE, itertools.islice(update_changes(skip + args.batch * batches, args.rows), skip, None))
    batch_ids = itertools.count(skip + 1)

    def batch() -> float:
        rows = kafka.rows([(SOURCE.topic, r) for r in itertools.islice(updates, args.batch)])
        cpu0 = tree_cpu_seconds(me)
        run_batch(rows, BatchContext(config=config, batch_id=next(batch_ids)))
        return tree_cpu_seconds(me) - cpu0

    return batch


def _hours(policy: str) -> int | None:
    """An `--archive-after-hours` value: hours, or None for `none`/`null` (Hudi's count)."""
    return None if policy.lower() in ("none", "null") else int(policy)


def _storage_conf(storage: str) -> dict[str, str]:
    """The Hadoop settings a client of `--storage` needs."""
    return LocalHdfs.client_conf() if storage == "hdfs" else {}


def _config(tables: str, kind: str, archive_after_hours: int | None) -> Config:
    """The bench's job: one table `accounts` under `tables` (a folder or a URI), `kind` cow or mor."""
    table_type = "MERGE_ON_READ" if kind == "mor" else "COPY_ON_WRITE"
    root = tables.rstrip("/")
    return parse_config({
        "kafka": {"bootstrap_servers": "localhost:9"},  # never contacted: batches are handed to run_batch
        "job": {"name": "bench-timeline", "checkpoint_dir": f"{root}/cp", "dead_letter_path": f"{root}/dl"},
        "routes": [{"topic": SOURCE.topic, "table": "accounts"}],
        "tables": [{"name": "accounts", "key": ["id"], "base_path": f"{root}/accounts", "type": table_type,
                    "archive_after_hours": archive_after_hours}],
    })  # fmt: skip


def length_line(length: dict[str, Any], first_median_cpu_s: float) -> str:
    """One printed line: the length, what growing to it cost, the batches' CPU and its ratio to the first length's."""
    ratio = length["median_cpu_s"] / first_median_cpu_s
    cpu = ", ".join(f"{c:.2f}" for c in length["batch_cpu_s"])
    return (f"{length['made']:6,} commits made, {length['commits']:,} active ({length['instants']:,} instants, "
            f"{length['timeline_files']:,} timeline files): median {length['median_cpu_s']:.2f} CPU s a batch "
            f"({ratio:.2f}x the first length) [{cpu}]; grown by {length['grown']:,} empty commits at "
            f"{length['growing_s_per_commit']:.2f} s each" + _threads_text(length.get("jvm_thread_cpu_s") or {})
            + _storage_text(length.get("storage_cpu_s")))  # fmt: skip


def _storage_text(storage_cpu_s: float | None) -> str:
    """The storage process's CPU s per measured batch ('' on the local file system)."""
    return "" if storage_cpu_s is None else f"; HDFS per batch: {storage_cpu_s:.2f}"


def _threads_text(threads: dict[str, float]) -> str:
    """The JVM's largest thread kinds, CPU s per measured batch ('' without them)."""
    top = ", ".join(f"{kind} {seconds:.2f}" for kind, seconds in list(threads.items())[:4])
    return f"; JVM per batch: {top}" if top else ""


def completed_commits(spark: SparkSession, base_path: str) -> int:
    """Completed commits and delta commits of the active timeline."""
    return int(meta_client(spark, base_path).getActiveTimeline().getCommitsTimeline().filterCompletedInstants().countInstants())


def timeline_size(spark: SparkSession, base_path: str) -> tuple[int, int, int]:
    """(completed commits, every active instant, files in `.hoodie/timeline/` outside its history)."""
    active = meta_client(spark, base_path).getActiveTimeline()
    commits = int(active.getCommitsTimeline().filterCompletedInstants().countInstants())
    folder = base_path.rstrip("/") + "/.hoodie/timeline"
    files = sum(1 for path, _ in fs.list_files(spark, folder) if "/history/" not in path)
    return commits, int(active.countInstants()), files


def grow(spark: SparkSession, table: TableConfig, commits: int) -> int:
    """Add `commits` empty commits to `table`, each with the extra metadata of hudi_cdc's newest commit.

    Through Hudi's write client, with the table's own write options, so cleaning runs on its
    schedule. Archival: with an `archive_after_hours` window every commit made here is inside it,
    so the bound hudi_cdc would set keeps them all; without one, Hudi's count applies as it does
    to the job's commits.
    """
    if commits <= 0:
        return 0
    gateway = jvm(spark)
    context = spark.sparkContext._jsc  # type: ignore[attr-defined]
    options = write_options(table) | GROWING_OPTIONS
    if table.archive_after_hours is not None:
        total = completed_commits(spark, table.base_path) + commits
        options |= {KEEP_MIN_COMMITS: str(total + KEEP_MARGIN), KEEP_MAX_COMMITS: str(total + KEEP_MARGIN + KEEP_SPREAD)}
    props = gateway.java.util.Properties()
    for key, value in options.items():
        props.setProperty(key, value)
    config = gateway.org.apache.hudi.config.HoodieWriteConfig.newBuilder().withPath(table.base_path).withProps(props).build()
    client = gateway.org.apache.hudi.client.SparkRDDWriteClient(
        gateway.org.apache.hudi.client.common.HoodieSparkEngineContext(context), config)  # fmt: skip
    extra = gateway.java.util.HashMap()
    for key, value in latest_job_metadata(spark, table.base_path).items():
        extra.put(key, value)
    some = gateway.org.apache.hudi.common.util.Option.of(extra)
    try:
        for _ in range(commits):
            instant = client.startCommit()
            client.commit(instant, client.insert(context.emptyRDD(), instant), some)
    finally:
        client.close()
    return commits


if __name__ == "__main__":
    sys.exit(main())
