"""CPU of a batch's read side: persist the routed rows, survey them, decode them; each record's
envelope parsed (a new schema) against split by the bytes of a schema seen before (every later
record of a Debezium topic). No Hudi, no Kafka.

    python -m devkit.bench.envelope_cost                  # 100,000 snapshot events, 3 timed rounds
    python -m devkit.bench.envelope_cost --events 200000 --rounds 5

The events are the bench's `accounts` snapshot reads, written once to Parquet under
build/bench/envelope-cost/ (a Python list that large would not fit in one Spark task) and read
back as persisted Kafka source rows. Each round runs both ways alternately after two warm-up
rounds each, and prints the CPU seconds (this process and its JVM) of the persist-and-survey job
and of the whole round (docs/performance-journal.md, rounds 18 and 25).
"""

from __future__ import annotations

import datetime as dt
import itertools
import statistics
import sys
from pathlib import Path

import psutil
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import devkit  # noqa: F401  (points hudi_cdc at the checkout's build/ folder)
from devkit.bench.decode_cost import offline_config
from devkit.bench.measure import tree_cpu_seconds
from devkit.bench.rounds import WARM_UP, alternately, arguments, local_spark
from devkit.bench.workloads import SOURCE, records, snapshot_changes
from hudi_cdc.config.models import Config
from hudi_cdc.decode.envelope import sampled_schemas, with_envelope, with_schema_text
from hudi_cdc.decode.records import decode
from hudi_cdc.fold.tally import survey
from hudi_cdc.kafka.routing import TABLE_COLUMN, route
from hudi_cdc.spark.lineage import release

_KAFKA_COLUMNS = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp"
_CHUNK = 20_000
WAYS = ("parsed", "split")


def _kafka_rows(spark: SparkSession, events: int) -> DataFrame:
    """The snapshot's Kafka rows, one partition like one topic partition's batch, persisted."""
    path = Path("build/bench/envelope-cost") / f"snapshot-{events}"
    if not (path / "_SUCCESS").exists():
        numbered = enumerate(records(SOURCE, snapshot_changes(events)))
        t0 = dt.datetime(2026, 11, 1)
        mode = "overwrite"
        while chunk := [(k, v, SOURCE.topic, 0, o, t0) for o, (k, v) in itertools.islice(numbered, _CHUNK)]:
            spark.createDataFrame(chunk, _KAFKA_COLUMNS).write.mode(mode).parquet(str(path))
            mode = "append"
    raw = spark.read.parquet(str(path)).repartition(1).persist()
    raw.count()
    return raw


def _one_round(raw: DataFrame, config: Config, way: str, known: dict[str, list[str]]) -> tuple[float, float]:
    """CPU seconds of (persist + survey, the whole round), finding the envelopes `way`."""
    me = psutil.Process()
    before = tree_cpu_seconds(me)
    read = F.col(TABLE_COLUMN).isin("accounts")
    split_by = known if way == "split" else {}
    routed = with_envelope(route(raw, config), read, known=split_by, table_column=TABLE_COLUMN)
    routed = routed.persist()
    received = survey(routed, schemas_of=["accounts"], split_by=split_by)["accounts"]
    surveyed = tree_cpu_seconds(me)
    records_ = with_schema_text(routed.filter(F.col(TABLE_COLUMN) == "accounts").drop(TABLE_COLUMN), split_by.get("accounts", ()))
    decoded = decode(records_, config.tables[0], envelopes=received.envelopes).cached()
    decoded.parsed.write.format("noop").mode("overwrite").save()
    release(decoded.parsed)
    routed.unpersist()
    return surveyed - before, tree_cpu_seconds(me) - before


def main(argv: list[str] | None = None) -> int:
    args = arguments("devkit.bench.envelope_cost", __doc__ or "", events=100_000, what="snapshot events").parse_args(argv)
    spark = local_spark("bench-envelope-cost")
    config = offline_config("bench-envelope-cost")
    raw = _kafka_rows(spark, args.events)
    known = sampled_schemas(route(raw, config), F.lit(True), TABLE_COLUMN)
    spent = alternately(WAYS, args.rounds, lambda way, _: _one_round(raw, config, way, known))
    spark.stop()
    print(f"{args.events:,} snapshot events, {args.rounds} rounds after {WARM_UP} warm-up rounds (CPU s of the process tree)")
    for way, rounds in spent.items():
        totals = [total for _, total in rounds]
        median = statistics.median(totals)
        print(f"  envelope {way:6s}: persist+survey {statistics.median(s for s, _ in rounds):.2f} s; "
              f"round {', '.join(f'{t:.2f}' for t in totals)} s; median {median:.2f} s = "
              f"{median / args.events * 1e6:.0f} µs per event")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
