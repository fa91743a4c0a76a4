"""`make bench`: hudi_cdc against a plain Hudi upsert job, on the same Debezium stream, in one invocation.

Both read the same Kafka topic with Structured Streaming in batches of the same size and
write a copy-on-write table:
- baseline: what one writes by hand: parse `after`, upsert with Hudi's event-time ordering
  on the binlog position (Hudi pre-combines keys and merges with the stored row). No
  per-column merge, no read of stored rows, no dead letters, no counts.
- hudi_cdc: the real pipeline (decode, read-modify-write fold, counts, dead letters).

Prints records/s, batch latency (mean/max) and the Spark JVM's peak RSS during each run.

    python -m devkit.bench --events 20000 --keys 5000 --batch 5000
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from devkit import build_dir
from devkit.debezium import Column, DebeziumTable, KafkaRecord
from devkit.services.kafka import LocalKafka
from hudi_cdc import stream
from hudi_cdc.config import Config, parse_config
from hudi_cdc.logging_setup import configure
from hudi_cdc.spark_session import get_or_create_session, jvm

SOURCE = DebeziumTable(
    server="bench",
    database="shop",
    table="accounts",
    key=["id"],
    columns=[
        Column("id", "int64", optional=False),
        Column("owner", "string"),
        Column("email", "string"),
        Column("balance", "decimal", scale=2, precision=12),
        Column("updated_at", "micro_timestamp"),
    ],
)


def events(count: int, keys: int) -> list[KafkaRecord]:
    """Inserts of `keys` rows, then updates spread over them, with increasing binlog positions."""
    t0 = dt.datetime(2026, 11, 1)
    records = []
    for i in range(count):
        key = i % keys
        row = {
            "id": key,
            "owner": f"owner-{key}",
            "email": f"user{key}@example.com",
            "balance": Decimal(i % 100_000) / 100,
            "updated_at": t0 + dt.timedelta(seconds=i),
        }
        records.append(SOURCE.change("c" if i < keys else "u", after=row, pos=1000 + i))
    return records


@dataclass
class RunResult:
    name: str
    records: int
    seconds: float
    batch_seconds: list[float] = field(default_factory=list)
    peak_rss_mb: float = 0.0

    def line(self) -> str:
        rate = self.records / self.seconds if self.seconds else 0.0
        mean = statistics.mean(self.batch_seconds) if self.batch_seconds else 0.0
        worst = max(self.batch_seconds, default=0.0)
        return (
            f"{self.name:<10} {self.records:>8} records  {self.seconds:7.1f} s  {rate:8.0f} rec/s  "
            f"batches {len(self.batch_seconds):>3}  latency mean {mean:5.1f} s max {worst:5.1f} s  "
            f"JVM peak RSS {self.peak_rss_mb:6.0f} MB"
        )


class RssSampler:
    """Samples the Spark JVM's resident memory while a run is going."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_kb, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    self.peak_kb = max(self.peak_kb, int(line.split()[1]))
            time.sleep(0.2)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def _config(root: Path, bootstrap: str, batch: int) -> Config:
    return parse_config(
        {
            "kafka": {"bootstrap_servers": bootstrap, "max_offsets_per_trigger": batch},
            "job": {"name": "bench", "checkpoint_dir": str(root / "cp"), "dead_letter_path": str(root / "dlq")},
            "routes": [{"topic": SOURCE.topic, "table": "accounts"}],
            "tables": [{"name": "accounts", "key": ["id"], "base_path": str(root / "accounts")}],
        }
    )


def run_hudi_cdc(spark: SparkSession, config: Config, records: int) -> RunResult:
    result = RunResult("hudi_cdc", records, 0.0)
    began = time.monotonic()
    stream.run(spark, config, once=True, on_batch=lambda m: result.batch_seconds.append(m.seconds))
    result.seconds = time.monotonic() - began
    return result


def run_baseline(spark: SparkSession, config: Config, records: int, root: Path) -> RunResult:
    """Plain Structured Streaming + Hudi upsert, ordering by binlog position inside Hudi."""
    result = RunResult("baseline", records, 0.0)
    after = "struct<id:bigint,owner:string,email:string,balance:string,updated_at:bigint>"
    options = {
        "hoodie.table.name": "accounts_baseline",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.operation": "upsert",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        "hoodie.table.ordering.fields": "_pos",
        "hoodie.datasource.write.precombine.field": "_pos",
        "hoodie.write.record.merge.mode": "EVENT_TIME_ORDERING",
        "hoodie.parquet.compression.codec": "snappy",
    }

    def write(batch: DataFrame, _batch_id: int) -> None:
        started = time.monotonic()
        payload = F.get_json_object(F.col("value").cast("string"), "$.payload")
        rows = batch.filter(F.col("value").isNotNull()).select(
            F.from_json(F.get_json_object(payload, "$.after"), after).alias("a"),
            F.get_json_object(payload, "$.source.pos").cast("long").alias("_pos"),
        )
        rows = rows.select("a.*", "_pos").withColumn("updated_at", F.timestamp_micros("updated_at"))
        rows.write.format("hudi").options(**options).mode("append").save(str(root / "baseline"))
        result.batch_seconds.append(time.monotonic() - started)

    began = time.monotonic()
    query = (
        stream.kafka_source(spark, config)
        .writeStream.foreachBatch(write)
        .option("checkpointLocation", str(root / "cp-baseline"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    result.seconds = time.monotonic() - began
    return result


def _measured(spark: SparkSession, run: Callable[[], RunResult]) -> RunResult:
    pid = int(jvm(spark).ProcessHandle.current().pid())
    with RssSampler(pid) as sampler:
        result = run()
    result.peak_rss_mb = sampler.peak_kb / 1024
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--keys", type=int, default=5_000)
    parser.add_argument("--batch", type=int, default=5_000)
    args = parser.parse_args()
    configure("WARNING")
    root = build_dir() / "run" / "bench"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    with LocalKafka() as kafka:
        kafka.create_topics([SOURCE.topic])
        kafka.produce(SOURCE.topic, events(args.events, args.keys))
        spark = get_or_create_session(app_name="hudi-cdc-bench")
        spark.sparkContext.setLogLevel("ERROR")
        config = _config(root, kafka.bootstrap_servers, args.batch)
        results = [
            _measured(spark, lambda: run_baseline(spark, config, args.events, root)),
            _measured(spark, lambda: run_hudi_cdc(spark, config, args.events)),
        ]
        cdc_rows = spark.read.format("hudi").load(str(root / "accounts")).count()
        base_rows = spark.read.format("hudi").load(str(root / "baseline")).count()
        spark.stop()
    print(f"\n{args.events} Debezium events over {args.keys} keys, batches of {args.batch}, COW, local[2]")
    for result in results:
        print(result.line())
    ratio = results[1].seconds / results[0].seconds if results[0].seconds else 0.0
    print(f"hudi_cdc / baseline wall time: {ratio:.2f}x; rows: hudi_cdc {cdc_rows}, baseline {base_rows}")
    print(f"machine: {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
