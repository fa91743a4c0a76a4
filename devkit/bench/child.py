"""One measured process of the benchmark: `python -m devkit.bench.child SPEC.json RESULT.json`.

The spec's `kind` says what to do:
- `job`: start a local Spark, note the CPU the start-up took, run one job (see `jobs`) to the
  end of its topic, and report its batches (from the query's progress reports), its Spark jobs
  (the status tracker's jobs of the query's run id) and the CPU at each step;
- `continuous`: run hudi_cdc or the plain job continuously (the freshness bench,
  `devkit.bench.freshness`): after every batch append a line to the spec's `batches` file
  (`BatchLines`), and stop the query once the spec's `stop` file exists;
- `generate`: build one job's loaded table by a bulk insert of generated rows (`generated`,
  `--load-by generate`);
- `verify`: the honesty check: the hudi_cdc and the plain Hudi table of each topic hold the
  same source columns row for row, and the rows the source holds (exit 3 otherwise; see `verify`).

Spark's JVM is stopped and waited for before exit, so its CPU time reaches this process's
rusage and the parent's accounting (`measure.run_measured`) is exact.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.listener import StreamingQueryListener
from pyspark.sql.streaming.query import StreamingQuery

import devkit  # noqa: F401  (points hudi_cdc at the checkout's build/ folder)
from devkit.bench import generated
from devkit.bench.jobs import JobSpec, run_job
from devkit.bench.jobs import run_continuous as run_continuous_job
from devkit.bench.measure import tree_cpu_seconds, tree_rss_bytes
from devkit.bench.profile import StepTimer, label_actions
from devkit.bench.workloads import DATA_COLUMNS, PARTITION_COLUMN, row
from devkit.debezium import epoch_micros
from hudi_cdc.cli.logs import configure
from hudi_cdc.decode.envelope import KNOWN
from hudi_cdc.spark.session import get_or_create_session, jvm

EXIT_DIFFERENT = 3
"""Exit code of `verify` when the tables differ from each other or from the source."""

SESSION_CONF = {
    # keep every job's status for counting (the default keeps 1,000)
    "spark.ui.retainedJobs": "1000000",
    "spark.ui.retainedStages": "1000000",
    "spark.sql.streaming.numRecentProgressUpdates": "100000",
}


def start_spark(app: str, event_log: str | None, extra: dict[str, str] | None = None) -> SparkSession:
    conf = SESSION_CONF | (extra or {})
    if event_log:
        Path(event_log).mkdir(parents=True, exist_ok=True)
        conf |= {"spark.eventLog.enabled": "true", "spark.eventLog.dir": event_log}
    spark = get_or_create_session(app_name=app, extra_conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def stop_spark(spark: SparkSession) -> None:
    """Stop Spark and wait for its JVM, so the JVM's CPU time is reaped into this process's rusage."""
    context = spark.sparkContext
    gateway = context._gateway
    proc = getattr(gateway, "proc", None)
    spark.stop()
    if gateway is not None:
        gateway.shutdown()
    if proc is not None:
        if proc.stdin is not None:
            proc.stdin.close()  # the JVM exits when its stdin closes
        proc.wait(timeout=120)


def run_job_measured(spec: dict[str, Any]) -> dict[str, Any]:
    began = time.monotonic()
    me = psutil.Process()
    job = JobSpec(**spec["job"])
    spark = start_spark(f"bench-{job.job}", spec.get("event_log"), spec.get("spark_conf"))
    timer = StepTimer() if spec.get("event_log") and job.job == "hudi_cdc" else None
    if spec.get("event_log"):
        label_actions(spark)
    if timer is not None:
        timer.install()
    started_wall, started_cpu = time.monotonic() - began, tree_cpu_seconds(me)
    t0 = time.monotonic()
    ends: list[tuple[float, float]] = [(t0, started_cpu)]

    codegen = jvm(spark).org.apache.spark.metrics.source.CodegenMetrics if spec.get("event_log") else None
    compiles: list[int] = []
    compile_ms: list[float] = []

    def batch_end() -> None:
        ends.append((time.monotonic(), tree_cpu_seconds(me)))
        if codegen is not None:  # classes Spark generated and compiled so far (codegen cache misses)
            histogram = codegen.METRIC_COMPILATION_TIME()
            compiles.append(int(histogram.getCount()))
            # Janino's compile time so far: the count times the histogram's (sampled) mean
            compile_ms.append(float(histogram.getCount() * histogram.getSnapshot().getMean()))

    query = run_job(spark, job, batch_end)
    stream_wall = time.monotonic() - t0
    stream_cpu = tree_cpu_seconds(me) - started_cpu
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
    run_id = str(query.runId)
    jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup(run_id))
    other_jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))
    threads = jvm_thread_cpu(spark) if spec.get("event_log") else {}
    if threads:
        own = me.cpu_times()
        threads["(the Python driver, not the JVM)"] = own.user + own.system
    stop_spark(spark)
    steps = {"steps": timer.steps(), "profiled_batches": timer.batches} if timer is not None else {}
    return steps | {
        "job": job.job,
        "startup_wall_s": started_wall,
        "startup_cpu_s": started_cpu,
        "stream_wall_s": stream_wall,
        "stream_cpu_s": stream_cpu,
        # Spark counts the records hudi_cdc's first batch samples for its schemas twice (envelope.sampled_schemas)
        "events": sum(int(p["numInputRows"]) for p in progress) - KNOWN.sampled_records,
        "sampled_records": KNOWN.sampled_records,
        "batches": len(progress),
        "batch_s": [p["durationMs"].get("triggerExecution", 0) / 1000 for p in progress],
        # between the ends of successive batches (the first from the query's start)
        "batch_cpu_s": [b[1] - a[1] for a, b in itertools.pairwise(ends)],
        "batch_gap_s": [b[0] - a[0] for a, b in itertools.pairwise(ends)],
        "spark_jobs": jobs,
        "spark_jobs_outside_stream": other_jobs,
        "run_id": run_id,
    } | ({"jvm_thread_cpu_s": threads, "codegen_compilations": compiles, "codegen_compile_ms": compile_ms} if threads else {})


class BatchLines(StreamingQueryListener):
    """Appends a line to `path` for every batch that read records, once Spark reports it done.

    Spark reports a batch's progress after its foreachBatch returned, so after every Hudi
    commit of the batch: from then on a query engine reading the table sees it. The line holds
    the wall clock, the process tree's CPU and RSS, and per topic partition the newest offset
    the batch read (the source's end offset is the next one to read).
    """

    def __init__(self, path: Path) -> None:
        self.path, self.me = path, psutil.Process()

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress
        if progress.numInputRows == 0:
            return
        applied: dict[str, dict[str, int]] = {}
        for source in progress.sources:
            for topic, partitions in json.loads(source.endOffset).items():
                applied.setdefault(topic, {}).update({p: int(end) - 1 for p, end in partitions.items()})
        line = {"at": time.time(), "batch_id": progress.batchId, "rows": progress.numInputRows,
                "seconds": progress.durationMs.get("triggerExecution", 0) / 1000,
                "cpu_s": tree_cpu_seconds(self.me), "rss_mb": tree_rss_bytes(self.me) / 2**20,
                "tables": {progress.name: {"applied_through": applied}}}  # fmt: skip
        with self.path.open("a") as out:
            out.write(json.dumps(line) + "\n")

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass


def run_continuous(spec: dict[str, Any]) -> dict[str, Any]:
    """The job running continuously (`jobs.run_continuous`), one line per batch in `spec["batches"]`
    (see `BatchLines`) and one per table commit in `spec["commits"]`, until the file `spec["stop"]` exists."""
    job = JobSpec(**spec["job"])
    spark = start_spark(f"bench-freshness-{job.job}", None, spec.get("spark_conf"))
    spark.streams.addListener(BatchLines(Path(spec["batches"])))
    stop = Path(spec["stop"])

    queries: list[StreamingQuery] = []

    def stop_when_asked() -> None:
        while not stop.exists() or not queries:
            time.sleep(0.5)
        queries[0].stop()

    threading.Thread(target=stop_when_asked, name="bench-stop", daemon=True).start()
    commits = Path(spec["commits"])

    def committed(batch_id: int, topic: str, at: float) -> None:
        with commits.open("a") as out:
            out.write(json.dumps({"batch_id": batch_id, "topic": topic, "at": at}) + "\n")

    def started(query: StreamingQuery) -> None:
        queries.append(query)
        if spec.get("started"):  # written whole, then renamed: the parent never reads half a file
            note = Path(spec["started"])
            note.with_suffix(".tmp").write_text(json.dumps({"at": time.time(), "cpu_s": tree_cpu_seconds(psutil.Process())}))
            note.with_suffix(".tmp").rename(note)

    run_continuous_job(spark, job, committed, started)
    stop_spark(spark)
    return {"job": job.job}


def jvm_thread_cpu(spark: SparkSession) -> dict[str, float]:
    """CPU seconds of the Spark JVM's threads so far, by thread kind (JIT, GC, tasks, driver...).

    Linux only (/proc). Thread names lose their numbers so that e.g. every GC worker adds up.
    """
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    if proc is None:
        return {}
    ticks = os.sysconf("SC_CLK_TCK")
    kinds: dict[str, float] = {}
    for stat in Path(f"/proc/{proc.pid}/task").glob("*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # the thread ended
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        kind = re.sub(r"[#\s-]*\d+$", "", name).strip() or name
        kinds[kind] = kinds.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
    try:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        kinds["(threads that ended)"] = (int(fields[11]) + int(fields[12])) / ticks - sum(kinds.values())
    except OSError:
        pass
    return dict(sorted(kinds.items(), key=lambda kv: -kv[1]))


def thread_cpu_since(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """CPU seconds per thread kind between two `jvm_thread_cpu` readings, largest first."""
    spent = {kind: seconds - before.get(kind, 0.0) for kind, seconds in after.items()}
    return dict(sorted(spent.items(), key=lambda kv: -kv[1]))


def _canonical(table: DataFrame) -> DataFrame:
    """The source columns as plain values: balance in cents, updated_at in epoch µs (as Debezium sends it)."""
    return table.select(
        "id", "owner", "email", F.expr("CAST(balance * 100 AS BIGINT)").alias("balance_cents"),
        F.unix_micros("updated_at").alias("updated_at_us"), PARTITION_COLUMN,
    )  # fmt: skip


TRUTH_COLUMNS = ("id", "owner", "email", "balance_cents", "updated_at_us", PARTITION_COLUMN, "deleted")


def _truth(spark: SparkSession, touched: list[list[int | None]], directory: Path) -> DataFrame:
    """The rows the touched keys must hold (`workloads.row` of their final version; a deleted key
    has `deleted` set), in the `_canonical` shape. Written with pyarrow, so it scales past what
    `createDataFrame` of Python rows handles well."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns: dict[str, list[Any]] = {name: [] for name in TRUTH_COLUMNS}
    for key, version in touched:
        if key is None:
            raise ValueError(f"a touched key is null in {directory}")
        columns["id"].append(key)
        columns["deleted"].append(version is None)
        if version is None:
            for name in TRUTH_COLUMNS[1:-1]:
                columns[name].append(None)
            continue
        image: dict[str, Any] = row(key, version)
        columns["owner"].append(image["owner"])
        columns["email"].append(image["email"])
        columns["balance_cents"].append(int(image["balance"] * 100))
        columns["updated_at_us"].append(epoch_micros(image["updated_at"]))
        columns[PARTITION_COLUMN].append(image[PARTITION_COLUMN])
    types = [pa.int64(), pa.string(), pa.string(), pa.int64(), pa.int64(), pa.string(), pa.bool_()]
    path = directory / "truth.parquet"
    pq.write_table(pa.table(columns, schema=pa.schema(list(zip(TRUTH_COLUMNS, types, strict=True)))), path)
    return spark.read.parquet(str(path))


def verify(spec: dict[str, Any]) -> dict[str, Any]:
    """The honesty check of every table pair (hudi_cdc's and the plain job's table of one topic),
    summed; `equal` and `matches_source` must hold for every pair (see `verify_pair`)."""
    spark = start_spark("bench-verify", None)
    try:
        touched = json.loads(Path(spec["touched"]).read_text())
        truth = _truth(spark, touched, Path(spec["touched"]).parent).persist()
        checks = [verify_pair(spark, pair, truth, spec["expected_rows"]) for pair in spec["pairs"]]
    finally:
        stop_spark(spark)
    result: dict[str, Any] = {
        name: sum(check[name] for check in checks)
        for name in ("hudi_cdc_rows", "plain_rows", "only_in_hudi_cdc", "only_in_plain", "source_rows_missing",
                     "rows_not_in_source", "untouched_rows_changed")
    }  # fmt: skip
    result |= {
        "expected_rows": spec["expected_rows"] * len(checks),
        "tables": len(checks),
        "examples": [example for check in checks for example in check["examples"]][:6],
        "touched_keys": len(touched) * len(checks),
        "equal": all(check["equal"] for check in checks),
        "matches_source": all(check["matches_source"] for check in checks),
    }
    return result


def verify_pair(spark: SparkSession, pair: dict[str, str], truth: DataFrame, expected_rows: int) -> dict[str, Any]:
    """The honesty check of one table pair, three parts; `equal` and `matches_source` must both hold.

    1. The hudi_cdc and the plain table hold the same source columns row for row (`exceptAll`
       both ways, duplicates counted) and both hold `expected_rows` rows.
    2. In the hudi_cdc table, the keys the case touched hold exactly the source's rows (`truth`,
       from the reference fold `workloads.final_versions`): no deleted key, no stale or missing row.
    3. Every other key still holds its row as loaded (version 0 in its email).
    With 1, parts 2 and 3 hold for the plain table too.
    """
    columns = list(DATA_COLUMNS)
    cdc = spark.read.format("hudi").load(pair["hudi_cdc"]).select(*columns).persist()
    plain = spark.read.format("hudi").load(pair["plain"]).select(*columns).persist()
    try:
        cdc_rows, plain_rows = cdc.count(), plain.count()
        only_cdc = cdc.exceptAll(plain)
        only_plain = plain.exceptAll(cdc)
        n_only_cdc, n_only_plain = only_cdc.count(), only_plain.count()
        examples = [r.asDict() for r in only_cdc.limit(3).collect()] + [r.asDict() for r in only_plain.limit(3).collect()]
        keys = truth.select("id")
        stored = _canonical(cdc).join(keys, "id", "left_semi")
        wanted = truth.filter(~F.col("deleted")).drop("deleted")
        n_missing, n_unexpected = wanted.exceptAll(stored).count(), stored.exceptAll(wanted).count()
        untouched = cdc.join(keys, "id", "left_anti")
        n_changed = untouched.filter(F.col("email") != F.format_string("user%d.v0@example.com", "id")).count()
    finally:
        cdc.unpersist()
        plain.unpersist()
    return {
        "hudi_cdc_rows": cdc_rows,
        "plain_rows": plain_rows,
        "only_in_hudi_cdc": n_only_cdc,
        "only_in_plain": n_only_plain,
        "examples": [{k: str(v) for k, v in e.items()} for e in examples],
        "source_rows_missing": n_missing,
        "rows_not_in_source": n_unexpected,
        "untouched_rows_changed": n_changed,
        "equal": n_only_cdc == 0 and n_only_plain == 0 and cdc_rows == plain_rows == expected_rows,
        "matches_source": n_missing == 0 and n_unexpected == 0 and n_changed == 0,
    }


def generate(spec: dict[str, Any]) -> dict[str, Any]:
    """One job's loaded table, built by `generated.build`."""
    spark = start_spark("bench-generate", None, spec.get("spark_conf"))
    try:
        return generated.build(spark, JobSpec(**spec["job"]), spec["rows"])
    finally:
        stop_spark(spark)


def main() -> None:
    spec_path, result_path = Path(sys.argv[1]), Path(sys.argv[2])
    spec = json.loads(spec_path.read_text())
    configure("WARNING")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    if spec["kind"] == "job":
        result = run_job_measured(spec)
    elif spec["kind"] == "continuous":
        result = run_continuous(spec)
    elif spec["kind"] == "verify":
        result = verify(spec)
    elif spec["kind"] == "generate":
        result = generate(spec)
    else:
        raise SystemExit(f"unknown kind {spec['kind']!r}; valid: job, continuous, verify, generate")
    result_path.write_text(json.dumps(result, indent=2))
    if spec["kind"] == "verify" and not (result["equal"] and result["matches_source"]):
        sys.exit(EXIT_DIFFERENT)


if __name__ == "__main__":
    main()
