"""CPU of the fold's stored-row read of a batch's keys from a large merge-on-read table, by which
columns it reads. No Kafka: the table is built by a bulk insert (`generated.build`).

    python -m devkit.bench.stored_read                          # 1M rows, 20k keys, 3 timed rounds
    python -m devkit.bench.stored_read --rows 200000 --rounds 5

The table is hudi_cdc's `accounts` table of the `scale` workload, then three upserts of 2% of its
rows each, so that its file slices carry log blocks as steady updates leave them. Each round
draws 2% of the keys anew (about 20k of 1M) and writes the stored rows of those keys to Spark's
`noop` sink, one way after another, after two warm-up rounds each:

- `every-column`: the read the fold makes of a table that reads its values
  (`stored_state.touched_rows` of a table that writes prepped: every column, and the location
  columns `prepped.LOCATION_COLUMNS`);
- `values-and-last-event-apart`: the read of a fold whose events are full images newer than the
  stored rows as round 44 made it: the key, every `_cdc_*` column and the location;
- `without-values`: the same read since round 45 (`touched_rows(..., values=False)`): the key,
  the orders (`_cdc_order`, `_cdc_column_orders`) and the location, without the stored row's last
  event (`stored_state.LAST_EVENT_COLUMNS`);
- `keys`: the key alone, what Hudi's simple index reads to tag a batch.

`_cdc_ingested_at` is left out of every way: no fold reads it (Spark prunes it from the scan).

Prints the CPU seconds (this process and its JVM) of each way per round, and their medians. The
table is kept (`--table`) and reused by the next run with the same `--rows`.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import psutil
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import devkit  # noqa: F401  (points hudi_cdc at the checkout's build/ folder)
from devkit import build_dir
from devkit.bench import generated
from devkit.bench.jobs import JobSpec
from devkit.bench.measure import tree_cpu_seconds
from devkit.bench.rounds import WARM_UP, alternately, arguments
from devkit.bench.workloads import KEY
from hudi_cdc.config.models import TableConfig
from hudi_cdc.events import INGESTED_AT
from hudi_cdc.fold.stored_state import data_schema, touched_rows, value_columns
from hudi_cdc.hoodie_keys import DATA_SKIPPING
from hudi_cdc.hudi import prepped
from hudi_cdc.hudi.table import read_table
from hudi_cdc.hudi.table_options import write_options
from hudi_cdc.spark.session import get_or_create_session

WAYS = ("every-column", "values-and-last-event-apart", "without-values", "keys")
UPDATES = 3
"""Upserts of 2% of the rows each after the build: log blocks in every file slice."""
SHARE = 50
"""One key in SHARE is touched: by an update, and by a round's read."""


def _spec(path: Path) -> JobSpec:
    return JobSpec(job="hudi_cdc", bootstrap="", topics=["bench.accounts"], batch=1, table_path=str(path),
                   type="MERGE_ON_READ", partitioned=False, work_dir=str(path.parent))  # fmt: skip


def _build(spark: SparkSession, spec: JobSpec, table: TableConfig, rows: int) -> None:
    """The built table, then `UPDATES` upserts of a share of its rows (the email changed)."""
    generated.build(spark, spec, rows)
    for update in range(UPDATES):
        stored = read_table(spark, table.base_path)
        assert stored is not None
        changed = stored.where(F.hash(KEY, F.lit(update)) % SHARE == 0).withColumn(
            "email", F.concat(F.col("email"), F.lit(f".u{update}"))
        )
        changed.write.format("hudi").options(**write_options(table, parallelism=2)).mode("append").save(table.base_path)


def _keys(spark: SparkSession, rows: int, round_: int) -> DataFrame:
    return spark.range(rows).where(F.hash("id", F.lit(100 + round_)) % SHARE == 0).select(F.col("id").alias(KEY))


def _read(spark: SparkSession, table: TableConfig, way: str, keys: DataFrame) -> DataFrame:
    if way == "keys":
        stored = spark.read.format("hudi").option(DATA_SKIPPING, "false").load(table.base_path)
        return stored.select(KEY).join(keys, KEY, "left_semi")
    stored = read_table(spark, table.base_path, locations=True)
    assert stored is not None
    schema = data_schema(stored)
    assert schema is not None
    if way == "values-and-last-event-apart":
        values = set(value_columns(schema, table))
        kept = [c for c in stored.columns if c not in values and c != INGESTED_AT]
        located = stored.select(*kept, prepped.location(stored).alias(prepped.LOCATION))
        return located.drop(*prepped.LOCATION_COLUMNS).join(keys, KEY, "left_semi")
    rows = touched_rows(stored, keys, schema, table, every_row=False, values=way == "every-column")
    return rows.drop(INGESTED_AT)


def main(argv: list[str] | None = None) -> int:
    parser = arguments("devkit.bench.stored_read", __doc__ or "", events=1_000_000, what="rows of the table")
    parser.add_argument("--table", type=Path, default=None, help="where the table is built (default build/run/bench-stored-read)")
    args = parser.parse_args(argv)
    path = (args.table or build_dir() / "run" / "bench-stored-read") / f"accounts-{args.events}"
    spec = _spec(path)
    ((_, table),) = spec.tables()
    spark = get_or_create_session(app_name="hudi-cdc-bench-stored-read", extra_conf={"spark.master": "local[2]"})
    spark.sparkContext.setLogLevel("ERROR")
    if not (path / ".hoodie").exists():
        _build(spark, spec, table, args.events)
    me = psutil.Process()

    def one(way: str, timed: int | None) -> tuple[float, float]:
        began, wall = tree_cpu_seconds(me), time.monotonic()
        _read(spark, table, way, _keys(spark, args.events, timed if timed is not None else -1)).write.format(
            "noop"
        ).mode("overwrite").save()
        return tree_cpu_seconds(me) - began, time.monotonic() - wall

    print(f"{args.events} rows, 1 key in {SHARE} read; CPU s of each way, {args.rounds} rounds after {WARM_UP} warm-up")
    for way, runs in alternately(WAYS, args.rounds, one).items():
        cpus = [c for c, _ in runs]
        print(f"  {way:18s}: {', '.join(f'{c:.2f}' for c in cpus)}  median {statistics.median(cpus):.2f} CPU s, "
              f"{statistics.median(w for _, w in runs):.2f} s wall")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
