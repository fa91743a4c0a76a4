"""Driver and JVM CPU of each table's read of a batch's persisted records, against how many
topics the batch holds: does a touched table cost more in a batch of more tables?

    python -m devkit.bench.table_reads                       # 4, 16 and 48 topics, 3 timed rounds
    python -m devkit.bench.table_reads --topics 8,64 --rounds 5

A batch of N topics is persisted with one partition per topic, as the Kafka source reads it.
Every topic's records are then filtered from it and aggregated in a Spark job of their own, as
`job.pipeline` reads a table's records: coalesced to `sizing.tasks_for` tasks, against every
partition of the batch (before round 23). Prints the CPU seconds and wall seconds per table of
each way, after warm-up rounds (docs/performance-journal.md, round 36). No Kafka, no Hudi.
"""

from __future__ import annotations

import functools
import statistics
import sys
import time

import psutil
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import devkit  # noqa: F401  (points hudi_cdc at the checkout's build/ folder)
from devkit.bench.measure import tree_cpu_seconds
from devkit.bench.rounds import alternately, arguments, local_spark
from hudi_cdc.job.sizing import tasks_for

WAYS = ("coalesced", "every-partition")


def _batch(spark: SparkSession, topics: int, per_topic: int) -> DataFrame:
    """`topics` topics' records, persisted with one partition per topic."""
    parts = [
        spark.sparkContext.parallelize([(f"t{t}", i, "x" * 200) for i in range(per_topic)], 1) for t in range(topics)
    ]
    batch = spark.createDataFrame(spark.sparkContext.union(parts), "topic string, i int, v string").persist()
    batch.count()
    return batch


def _per_table(batch: DataFrame, topics: int, per_topic: int, way: str, _round: int | None) -> tuple[float, float]:
    """(CPU s, wall s) per table of reading every topic's records from `batch` `way`."""
    me = psutil.Process()
    cpu, wall = tree_cpu_seconds(me), time.monotonic()
    for t in range(topics):
        records = batch.filter(F.col("topic") == f"t{t}")
        if way == "coalesced":
            records = records.coalesce(tasks_for(per_topic))
        records.groupBy("i").agg(F.max("v")).collect()
    return (tree_cpu_seconds(me) - cpu) / topics, (time.monotonic() - wall) / topics


def main(argv: list[str] | None = None) -> int:
    parser = arguments("devkit.bench.table_reads", __doc__ or "", events=3, what="records of each topic")
    parser.add_argument("--topics", default="4,16,48", help="comma-separated topic counts of a batch")
    args = parser.parse_args(argv)
    spark = local_spark("hudi-cdc-bench-table-reads")
    print(f"{args.events} records a topic; CPU s and wall s per table, median of {args.rounds} timed rounds")
    for topics in (int(n) for n in args.topics.split(",")):
        batch = _batch(spark, topics, args.events)
        try:
            timed = alternately(WAYS, args.rounds, functools.partial(_per_table, batch, topics, args.events))
        finally:
            batch.unpersist()
        for way, runs in timed.items():
            cpu, wall = statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs)
            print(f"  {topics:4d} topics, {way:16s}: {cpu:.3f} CPU s, {wall:.3f} s a table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
