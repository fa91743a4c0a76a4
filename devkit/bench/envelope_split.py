"""CPU of splitting a Connect envelope into its `schema` and `payload` texts, by each means Spark
SQL offers: one JSON parse (`json_tuple`, what decode does) or a cut by position. No Hudi, no Kafka.

    python -m devkit.bench.envelope_split                  # 100,000 update events, 3 timed rounds
    python -m devkit.bench.envelope_split --events 200000 --rounds 5

The values are the bench's `accounts` updates written compact, as Kafka Connect's JsonConverter
writes them (`{"schema":...,"payload":...}`, no spaces), so a cut at the first `,"payload":` finds
both parts. Each way writes the rows with the two texts to Spark's `noop` sink; `text` only casts
the value, the floor every way pays. They run alternately after two warm-up rounds each, and the
CPU seconds (this process and its JVM) per round and per event above the floor are printed
(docs/performance-journal.md, round 19). Why it exists: the cut was built and measured, and did not
pay for itself; this is how to measure it again on another Spark.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import sys
from collections.abc import Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

import devkit  # noqa: F401  (points hudi_cdc at the checkout's build/ folder)
from devkit.bench.decode_cost import one_round
from devkit.bench.rounds import WARM_UP, alternately, arguments, local_spark
from devkit.bench.workloads import SOURCE, records, update_changes

_KAFKA_COLUMNS = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp"
_HEAD = '{"schema":'
_PAYLOAD_KEY = ',"payload":'


def _compact(value: bytes | None) -> bytes | None:
    return json.dumps(json.loads(value), separators=(",", ":")).encode() if value is not None else None


def _kafka_rows(spark: SparkSession, events: int) -> DataFrame:
    t0 = dt.datetime(2026, 11, 1)
    changes = records(SOURCE, update_changes(events, events))
    rows = [(k, _compact(v), SOURCE.topic, 0, o, t0) for o, (k, v) in enumerate(changes)]
    raw = spark.createDataFrame(rows, _KAFKA_COLUMNS).repartition(2).persist()
    raw.count()
    return raw


def _byte_cut(text: Column) -> tuple[Column, Column]:
    """Positions in bytes: `substring_index` and `octet_length` never walk the text by character."""
    at = F.octet_length(F.substring_index(text, _PAYLOAD_KEY, 1))
    octets = text.cast("binary")
    schema = octets.substr(F.lit(len(_HEAD) + 1), at - len(_HEAD)).cast("string")
    start = at + len(_PAYLOAD_KEY) + 1
    return schema, octets.substr(start, F.octet_length(text) - start).cast("string")


def _character_cut(text: Column) -> tuple[Column, Column]:
    """Positions in characters (`locate`, `substr` of a string): each use walks the UTF-8 text."""
    at = F.locate(_PAYLOAD_KEY, text)
    start = at + len(_PAYLOAD_KEY)
    return text.substr(F.lit(len(_HEAD) + 1), at - len(_HEAD) - 1), text.substr(start, F.length(text) - start)


def _ways(raw: DataFrame) -> dict[str, Callable[[], DataFrame]]:
    text = F.col("value").cast("string")
    with_text = raw.select("*", text.alias("text"))
    parts = {"byte cut": _byte_cut(F.col("text")), "character cut": _character_cut(F.col("text"))}
    ways: dict[str, Callable[[], DataFrame]] = {
        "text": lambda: with_text,
        "json_tuple": lambda: with_text.select("*", F.json_tuple("text", "schema", "payload")),
        "from_json": lambda: with_text.select("*", F.from_json("text", "schema string, payload string").alias("parts")),
    }
    for name, (schema, payload) in parts.items():
        ways[name] = _selecting(with_text, schema, payload)
    return ways


def _selecting(rows: DataFrame, schema: Column, payload: Column) -> Callable[[], DataFrame]:
    return lambda: rows.select("*", schema.alias("schema"), payload.alias("payload"))


def main(argv: list[str] | None = None) -> int:
    args = arguments("devkit.bench.envelope_split", __doc__ or "", events=100_000, what="update events").parse_args(argv)
    spark = local_spark("bench-envelope-split")
    ways = _ways(_kafka_rows(spark, args.events))
    seconds = alternately(ways, args.rounds, lambda name, _: one_round(spark, ways[name], None))
    print(f"{args.events:,} compact update events, {args.rounds} rounds after {WARM_UP} warm-up rounds (CPU s of the process tree)")
    floor = statistics.median(seconds["text"])
    for name, rounds in seconds.items():
        median = statistics.median(rounds)
        above = "" if name == "text" else f", {(median - floor) / args.events * 1e6:.0f} µs per event above `text`"
        print(f"  {name:14s} {', '.join(f'{s:.2f}' for s in rounds)} s; median {median:.2f} s{above}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
