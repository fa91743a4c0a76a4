"""Per-event CPU of hudi_cdc's decode against the plain job's one parse: no Hudi, no Kafka.

    python -m devkit.bench.decode_cost                 # 40,000 updates, 3 timed rounds each
    python -m devkit.bench.decode_cost --events 100000
    python -m devkit.bench.decode_cost --events 100000 --jfr build/decode.jfr   # also where decode's CPU goes

Both read the same persisted Spark Kafka rows of the bench's `accounts` updates and write to
Spark's `noop` sink, so only the parsing and typing is measured. hudi_cdc: `decode(...).classified`
(schemas, typed values, PRESENT, order, every check) of the rows as the pipeline persists them,
their envelopes split already (`decode.envelope`; before round 25 decode parsed them here too). Plain: `from_json` of the
envelope and the row image's columns undone, exactly as the plain job does (`jobs.plain_rows`). The two
run alternately after two warm-up rounds each, which pay the JVM's JIT and code generation.
Prints the CPU seconds (this process and its JVM) per round and per event. With `--jfr`, the
JVM's Flight Recorder samples the executor threads during hudi_cdc's timed rounds only, and the
shares of the samples spent inside each of `PROFILED_FRAMES` are printed (docs/performance-journal.md,
round 17).
"""

from __future__ import annotations

import datetime as dt
import re
import statistics
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import psutil
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import devkit  # noqa: F401  (points hudi_cdc at the checkout's build/ folder)
from devkit.bench.jobs import plain_rows
from devkit.bench.measure import tree_cpu_seconds
from devkit.bench.rounds import WARM_UP, alternately, arguments, local_spark
from devkit.bench.workloads import SOURCE, records, update_changes
from hudi_cdc.config.models import Config, parse_config
from hudi_cdc.decode.envelope import sampled_schemas, with_envelope, with_schema_text
from hudi_cdc.decode.records import decode
from hudi_cdc.kafka.routing import TABLE_COLUMN
from hudi_cdc.spark.session import jvm

_KAFKA_COLUMNS = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp"
PROFILED_FRAMES = {
    "JsonTuple.eval": "json_tuple: the envelope's schema and payload text",
    "JsonToStructs.nullSafeEval": "from_json: envelope, image, key",
    "GetJsonObject.eval": "get_json_object",
    "JsonObjectKeys.eval": "json_object_keys",
    "BufferRecyclers.getBufferRecycler": "Jackson's ThreadLocal lookup, at every JSON call",
    "SimpleHigherOrderFunction.eval": "higher-order functions (evaluated without code generation)",
    "CreateArray.eval": "arrays built without code generation",
}
"""Frames (class.method) whose inclusive share of the samples `--jfr` prints, and what they are."""
_FRAME = re.compile(r"^\s+([\w$.<>/]+)\(", re.MULTILINE)


def offline_config(job: str) -> Config:
    """A job config routing the bench's `accounts` topic to a table, for benches that hand Spark
    rows to the pipeline's steps: its Kafka, checkpoint and table paths are never used."""
    return parse_config({
        "kafka": {"bootstrap_servers": "localhost:9"},  # never contacted
        "job": {"name": job, "checkpoint_dir": "/unused/cp", "dead_letter_path": "/unused/dl"},
        "routes": [{"topic": SOURCE.topic, "table": "accounts"}],
        "tables": [{"name": "accounts", "key": ["id"], "base_path": "/unused/accounts"}],
    })  # fmt: skip


def _kafka_rows(spark: SparkSession, events: int) -> DataFrame:
    t0 = dt.datetime(2026, 11, 1)
    rows = [(k, v, SOURCE.topic, 0, o, t0) for o, (k, v) in enumerate(records(SOURCE, update_changes(events, events)))]
    raw = spark.createDataFrame(rows, _KAFKA_COLUMNS).repartition(2).persist()
    raw.count()
    return raw


def _timed(run: Callable[[], None]) -> float:
    me = psutil.Process()
    before = tree_cpu_seconds(me)
    run()
    return tree_cpu_seconds(me) - before


def frame_shares(printed: str) -> tuple[int, Counter[str]]:
    """From `jfr print --events jdk.ExecutionSample` text: the samples, and per `Class.method`
    the samples with that frame anywhere in their stack (counted once per sample)."""
    samples = printed.split("jdk.ExecutionSample")[1:]
    inside: Counter[str] = Counter()
    for sample in samples:
        inside.update({".".join(f.split(".")[-2:]) for f in _FRAME.findall(sample)})
    return len(samples), inside


def one_round(spark: SparkSession, build: Callable[[], DataFrame], recording: Path | None) -> float:
    """CPU seconds of writing `build()` to the `noop` sink, recorded with the Flight Recorder to `recording` if given."""

    def write() -> None:
        build().write.format("noop").mode("overwrite").save()

    return _timed(write if recording is None else lambda: _recorded(spark, recording, write))


def _recorded(spark: SparkSession, path: Path, run: Callable[[], None]) -> None:
    """`run()` under a Flight Recorder recording (the JDK's `profile` settings), dumped to `path`."""
    jfr = jvm(spark).jdk.jfr
    recording = jfr.Recording(jfr.Configuration.getConfiguration("profile"))
    recording.start()
    try:
        run()
    finally:
        recording.stop()
        path.parent.mkdir(parents=True, exist_ok=True)
        recording.dump(jvm(spark).java.io.File(str(path.resolve())).toPath())
        recording.close()


def _print_profile(spark: SparkSession, paths: list[Path]) -> None:
    """Print the shares of `PROFILED_FRAMES` over every recording in `paths`, with the JDK's `jfr` tool."""
    tool = Path(jvm(spark).java.lang.System.getProperty("java.home")) / "bin" / "jfr"
    samples, inside = 0, Counter[str]()
    for path in paths:
        printed = subprocess.run([str(tool), "print", "--stack-depth", "64", "--events", "jdk.ExecutionSample", str(path)],
                                 check=True, capture_output=True, text=True).stdout  # fmt: skip
        found, frames = frame_shares(printed)
        samples, inside = samples + found, inside + frames
    print(f"hudi_cdc decode: {samples} execution samples in {len(paths)} recordings ({paths[0].parent}); "
          "share of them with the frame on the stack:")  # fmt: skip
    for frame, what in PROFILED_FRAMES.items():
        print(f"  {inside[frame] / max(samples, 1):5.1%}  {frame:38s} {what}")


def main(argv: list[str] | None = None) -> int:
    parser = arguments("devkit.bench.decode_cost", __doc__ or "", events=40_000, what="update events decoded")
    parser.add_argument("--jfr", type=Path, default=None,
                        help="record each of hudi_cdc's timed rounds with the Flight Recorder (<stem>-<round>.jfr); "
                             "the recorder's own CPU is then in those rounds")  # fmt: skip
    args = parser.parse_args(argv)
    spark = local_spark("bench-decode-cost")
    table = offline_config("bench-decode-cost").tables[0]
    raw = _kafka_rows(spark, args.events)
    # decode reads the records as the pipeline persists them: the envelope found already, split by
    # the schema's bytes (`decode.envelope`), the batch's schemas known from the survey
    routed = raw.withColumn(TABLE_COLUMN, F.lit(table.name))
    known = sampled_schemas(routed, F.lit(True), TABLE_COLUMN)
    enveloped = with_envelope(routed, F.lit(True), known=known, table_column=TABLE_COLUMN).drop(TABLE_COLUMN).persist()
    enveloped.count()
    records = with_schema_text(enveloped, known[table.name])
    jobs: dict[str, Callable[[], DataFrame]] = {
        "hudi_cdc decode": lambda: decode(records, table, envelopes=known[table.name]).classified,
        "plain parse": lambda: plain_rows(raw),
    }
    recordings: list[Path] = []

    def run(name: str, timed: int | None) -> float:
        recording = None
        if args.jfr and timed is not None and name == "hudi_cdc decode":
            recording = args.jfr.with_name(f"{args.jfr.stem}-{timed}{args.jfr.suffix}")
            recordings.append(recording)
        return one_round(spark, jobs[name], recording)

    spent = alternately(jobs, args.rounds, run)
    if recordings:
        _print_profile(spark, recordings)
    spark.stop()
    print(f"{args.events:,} update events, {args.rounds} rounds after {WARM_UP} warm-up rounds (CPU s of the process tree)")
    for name, seconds in spent.items():
        median = statistics.median(seconds)
        rounds = ", ".join(f"{s:.2f}" for s in seconds)
        print(f"  {name:16s} {rounds} s; median {median:.2f} s = {median / args.events * 1e6:.0f} µs per event")
    return 0


if __name__ == "__main__":
    sys.exit(main())
