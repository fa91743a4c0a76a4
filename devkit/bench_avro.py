"""Decode throughput of the same Debezium events as JSON and as Avro, decode step only.

The `make bench` workload (devkit.bench.events), encoded both ways; each run decodes the
whole set in one DataFrame (for Avro: schema ids -> registry -> from_avro -> JSON envelope ->
the JSON decoder) and counts the events, so the difference is the Avro step's cost. Also
prints the bytes on the wire per event.

    python -m devkit.bench_avro --events 20000
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import time
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession

from devkit.bench import SOURCE, events
from devkit.debezium import KafkaRecord
from devkit.debezium_avro import to_avro
from devkit.services.registry import LocalRegistry
from hudi_cdc.avro.registry import SchemaFetcher
from hudi_cdc.avro.wire import avro_as_json
from hudi_cdc.cli.logs import configure
from hudi_cdc.config.models import SchemaRegistry, TableConfig
from hudi_cdc.decode.records import decode
from hudi_cdc.spark.session import get_or_create_session

KAFKA_COLUMNS = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp"


def _rows(spark: SparkSession, records: list[KafkaRecord]) -> DataFrame:
    t0 = dt.datetime(2026, 11, 1)
    rows = [(k, v, SOURCE.topic, 0, o, t0) for o, (k, v) in enumerate(records)]
    return spark.createDataFrame(rows, KAFKA_COLUMNS).persist()


def _timed(run: Callable[[], int], repeat: int) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(repeat):
        began = time.monotonic()
        count = run()
        best = min(best, time.monotonic() - began)
    return best, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--keys", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    configure("WARNING")
    json_records = events(args.events, args.keys)
    with LocalRegistry() as registry:
        cache: dict[str, int] = {}

        def register(subject: str, schema: dict[str, object]) -> int:
            text = repr((subject, schema))
            if text not in cache:  # one schema per subject here: register once
                cache[text] = registry.register(subject, schema)
            return cache[text]

        avro_records = [to_avro(r, topic=SOURCE.topic, register=register) for r in json_records]
        spark = get_or_create_session(app_name="hudi-cdc-bench-avro")
        spark.sparkContext.setLogLevel("ERROR")
        fetcher = SchemaFetcher(SchemaRegistry(url=registry.ccompat_url))
        as_json, as_avro = _rows(spark, json_records), _rows(spark, avro_records)
        as_json.count(), as_avro.count()
        json_table = TableConfig(name="accounts", key=["id"], base_path="/unused")
        avro_table = json_table.model_copy(update={"format": "avro"})
        results = {
            "json": _timed(lambda: decode(as_json, json_table).events.count(), args.repeat),
            "avro": _timed(lambda: decode(avro_as_json(as_avro, avro_table, fetcher), avro_table).events.count(), args.repeat),
        }
        spark.stop()
    size = {
        "json": sum(len(v or b"") for _, v in json_records) / len(json_records),
        "avro": sum(len(v or b"") for _, v in avro_records) / len(avro_records),
    }
    print(f"\n{args.events} Debezium events, decode step only, best of {args.repeat}, local[2], {os.cpu_count()} cores")
    for name, (seconds, count) in results.items():
        print(f"{name:5s} {seconds:7.1f} s  {args.events / seconds:8.0f} events/s  {size[name]:6.0f} value bytes/event  ({count} events)")


if __name__ == "__main__":
    main()
