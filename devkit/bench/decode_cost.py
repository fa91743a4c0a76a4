"""Per-event CPU of hudi_cdc's decode against the plain job's one parse: no Hudi, no Kafka.

    python -m devkit.bench.decode_cost                 # 40,000 updates, 3 timed rounds each
    python -m devkit.bench.decode_cost --events 100000

Both read the same persisted Spark Kafka rows of the bench's `accounts` updates and write to
Spark's `noop` sink, so only the parsing and typing is measured. hudi_cdc: `decode(...).classified`
(envelope, schemas, typed values, PRESENT, order, every check). Plain: `from_json` of the
envelope and the row image's columns undone, exactly as the plain job does (`jobs.plain_rows`). The two
run alternately after two warm-up rounds each, which pay the JVM's JIT and code generation.
Prints the CPU seconds (this process and its JVM) per round and per event.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
from collections.abc import Callable

import psutil
from pyspark.sql import DataFrame, SparkSession

import devkit  # noqa: F401  (points hudi_cdc at the checkout's build/ folder)
from devkit.bench.jobs import plain_rows
from devkit.bench.measure import tree_cpu_seconds
from devkit.bench.workloads import SOURCE, records, update_changes
from hudi_cdc.config import parse_config
from hudi_cdc.decode import decode
from hudi_cdc.spark_session import get_or_create_session

_KAFKA_COLUMNS = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp"
WARM_UP = 2


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devkit.bench.decode_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=40_000, help="update events decoded per round")
    parser.add_argument("--rounds", type=int, default=3, help=f"timed rounds of each, after {WARM_UP} warm-up rounds")
    args = parser.parse_args(argv)
    spark = get_or_create_session(app_name="bench-decode-cost", extra_conf={"spark.master": "local[2]"})
    spark.sparkContext.setLogLevel("ERROR")
    table = parse_config({
        "kafka": {"bootstrap_servers": "localhost:9"},  # never contacted
        "job": {"name": "bench-decode-cost", "checkpoint_dir": "/unused/cp", "dead_letter_path": "/unused/dl"},
        "routes": [{"topic": SOURCE.topic, "table": "accounts"}],
        "tables": [{"name": "accounts", "key": ["id"], "base_path": "/unused/accounts"}],
    }).tables[0]  # fmt: skip
    raw = _kafka_rows(spark, args.events)
    jobs: dict[str, Callable[[], DataFrame]] = {
        "hudi_cdc decode": lambda: decode(raw, table).classified,
        "plain parse": lambda: plain_rows(raw),
    }
    spent: dict[str, list[float]] = {name: [] for name in jobs}
    for round_ in range(WARM_UP + args.rounds):
        for name, build in jobs.items():
            cpu = _timed(lambda build=build: build().write.format("noop").mode("overwrite").save())  # type: ignore[misc]
            if round_ >= WARM_UP:
                spent[name].append(cpu)
    spark.stop()
    print(f"{args.events:,} update events, {args.rounds} rounds after {WARM_UP} warm-up rounds (CPU s of the process tree)")
    for name, seconds in spent.items():
        median = statistics.median(seconds)
        rounds = ", ".join(f"{s:.2f}" for s in seconds)
        print(f"  {name:16s} {rounds} s; median {median:.2f} s = {median / args.events * 1e6:.0f} µs per event")
    return 0


if __name__ == "__main__":
    sys.exit(main())
