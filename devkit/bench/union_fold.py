"""What folding a batch's small tables in one plan would save: N tables folded and counted one by
one, as `job.table_batch` does today, against one fold of their union with the table as a key column.

    python -m devkit.bench.union_fold                       # 11 tables, 12 rounds, 200 stored rows each
    python -m devkit.bench.union_fold --tables 20 --rounds 8

The design it weighed, built into the job in round 40 as `job.table_group` (docs/performance-journal.md,
rounds 23, 37, 39 and 40): a table's fixed work in
a batch is mostly the driver planning its queries, the fold's checkpoint, the counting job and the
write's read of the fold, each of which pays Catalyst's analysis and optimization, adaptive
execution, closure cleaning and a Spark job of its own. Tables made from one template share their
columns, so their events and stored rows can be folded as one table whose key leads with the
table's name: one plan, one checkpoint and one counting job for all of them, and one read of the
fold per table for its commit.

Both variants run the package's own fold (`fold.collapse.fold`, `fold.stored_state`,
`fold.merge`) in one task each, as a small table's batch does (`job.sizing.in_one_task`), over
stored rows held in Spark's cache (no Hudi: its commit is per table either way) and events that
mix full and partial updates, a delete, a late event, a duplicate and a new key. Every round checks
that both give each table the same rows and the same outcome counts; a difference stops the run.
CPU is the whole process tree's (Python driver, JVM), each round's variants in alternating order.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import psutil
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, LongType, StringType, StructField, StructType

from devkit.bench.measure import tree_cpu_seconds
from hudi_cdc.config.models import TableConfig
from hudi_cdc.events import (
    HOODIE_IS_DELETED,
    KAFKA_OFFSET,
    KAFKA_PARTITION,
    KAFKA_TOPIC,
    OP,
    ORDER,
    PRESENT,
    SOURCE,
    TS_MS,
    ts_order,
)
from hudi_cdc.fold.collapse import FoldResult, fold
from hudi_cdc.fold.merge import key_state, rows_to_write, write_kind
from hudi_cdc.fold.stored_state import conform_events, stored_columns, touched_rows

TABLE = "__table"
"""The union's column naming each row's table (its events' topic)."""
SCHEMA = StructType([StructField("id", LongType()), StructField("name", StringType()), StructField("age", LongType())])
UNION_SCHEMA = StructType([StructField(TABLE, StringType()), *SCHEMA.fields])
_EVENT_SCHEMA = StructType(
    [
        *SCHEMA.fields,
        StructField(PRESENT, ArrayType(StringType())),
        StructField(OP, StringType()),
        StructField(ORDER, StringType()),
        StructField(TS_MS, LongType()),
        StructField(SOURCE, StringType()),
        StructField(KAFKA_TOPIC, StringType()),
        StructField(KAFKA_PARTITION, IntegerType()),
        StructField(KAFKA_OFFSET, LongType()),
    ]
)
_ONE = TableConfig(name="t", key=["id"], base_path="/unused", prepped_writes=False)
_UNION = TableConfig(name="union", key=[TABLE, "id"], base_path="/unused", prepped_writes=False)

Folded = dict[str, tuple[list[tuple[object, ...]], dict[str, int]]]
"""Per table: its written rows (sorted) and its label counts (outcomes and write kinds)."""


def _events(spark: SparkSession, topic: str, rows: Sequence[tuple[int, str, int, int, dict[str, object]]]) -> DataFrame:
    """Events of `topic` from (key, op, ts_ms, offset, image); the image names the columns present."""
    out = []
    for key, op, ts, offset, image in rows:
        present = sorted({*image, "id"}) if op in "cru" else []
        order = ts_order(ts_ms=ts, partition=0, offset=offset)
        out.append((key, image.get("name"), image.get("age"), present, op, order, ts, f"src{offset}", topic, 0, offset))
    return spark.createDataFrame(out, _EVENT_SCHEMA)


def stored_table(spark: SparkSession, topic: str, rows: int) -> DataFrame:
    """`rows` keys as the fold writes them after their creates, cached (a table's stored rows)."""
    created = _events(spark, topic, [(k, "c", 1, k, {"name": f"n{k}", "age": k}) for k in range(1, rows + 1)])
    none = touched_rows(None, created, SCHEMA, _ONE, every_row=False)
    folded = fold(events=created, stored=none, schema=SCHEMA, key=["id"], soft_deletes=False, truncation=None)
    written = rows_to_write(folded.rows, SCHEMA, _ONE)
    stored = written.filter(~F.col(HOODIE_IS_DELETED)).select(*stored_columns(SCHEMA, _ONE)).persist()
    stored.count()
    return stored


def batch(spark: SparkSession, topic: str, round_: int) -> DataFrame:
    """One table's batch of a round: full and partial updates, a delete, a late event, a
    duplicate and a new key (8 events), held in Spark's cache as a decoded batch is."""
    base = 100 + 10 * round_
    offset = 1000 * round_
    rows = [
        (3, "u", base, offset + 1, {"name": f"partial{round_}"}),
        (3, "u", base + 1, offset + 2, {"name": f"full{round_}", "age": round_}),
        (7, "u", base, offset + 3, {"age": 70 + round_}),
        (11, "d", base, offset + 4, {}),
        (13, "u", 0, offset + 5, {"name": "late"}),
        (17, "u", base, offset + 6, {"name": "twice"}),
        (17, "u", base, offset + 6, {"name": "twice"}),
        (100_000 + round_, "c", base, offset + 7, {"name": "new", "age": 1}),
    ]
    events = _events(spark, topic, rows).localCheckpoint()
    events.count()
    return events


def _labels(result: FoldResult, rows: DataFrame, table: TableConfig) -> DataFrame:
    """Every event's outcome and every folded row's write kind and key state, as the job's counting
    job labels a table's (`job.table_batch._outcome_labels`); for the union's fold, each with its
    table (the events' topic, the rows' table column)."""
    by_table = TABLE in rows.columns
    outcome_table = [F.col(KAFKA_TOPIC).alias(TABLE)] if by_table else []
    outcomes = result.outcomes_for(rows).select(*outcome_table, F.col("outcome").alias("label"))
    writes = rows.select(*([TABLE] if by_table else []), F.explode(F.array(write_kind(table), key_state(table))).alias("label"))
    return outcomes.unionByName(writes.filter(F.col("label").isNotNull()))


def _written(rows: DataFrame, schema: StructType, table: TableConfig) -> list[tuple[object, ...]]:
    """The rows a commit would write (what Hudi's write reads of the fold), collected."""
    columns = ["id", "name", "age", OP, ORDER, HOODIE_IS_DELETED]
    return sorted(tuple(r) for r in rows_to_write(rows, schema, table).select(*columns).collect())


def one_by_one(stores: dict[str, DataFrame], events: dict[str, DataFrame]) -> Folded:
    """Today's plan: each table folded, checkpointed, counted and read for its write on its own."""
    out: Folded = {}
    for name, batch_ in events.items():
        conformed = conform_events(batch_, SCHEMA)
        stored = touched_rows(stores[name], conformed, SCHEMA, _ONE, every_row=False, one_task=True)
        result = fold(events=conformed, stored=stored, schema=SCHEMA, key=["id"], soft_deletes=False,
                      truncation=None, one_task=True)  # fmt: skip
        rows = result.rows.localCheckpoint(eager=False)
        labels = _labels(result, rows, _ONE).coalesce(1).groupBy("label").count().collect()
        out[name] = (_written(rows, SCHEMA, _ONE), {r["label"]: int(r["count"]) for r in labels})
    return out


def as_one(stores: dict[str, DataFrame], events: dict[str, DataFrame]) -> Folded:
    """The design weighed: one fold of every table's events onto every table's stored rows, the
    table leading the key; one checkpoint, one counting job, then one read of the fold per table."""
    tagged = [batch_.withColumn(TABLE, F.lit(name)) for name, batch_ in events.items()]
    stored = [stores[name].withColumn(TABLE, F.lit(name)) for name in events]
    conformed = conform_events(_union(tagged), UNION_SCHEMA)
    touched = touched_rows(_union(stored), conformed, UNION_SCHEMA, _UNION, every_row=False, one_task=True)
    result = fold(events=conformed, stored=touched, schema=UNION_SCHEMA, key=[TABLE, "id"], soft_deletes=False,
                  truncation=None, one_task=True)  # fmt: skip
    rows = result.rows.localCheckpoint(eager=False)
    counted = _labels(result, rows, _UNION).coalesce(1).groupBy(TABLE, "label").count().collect()
    labels: dict[str, dict[str, int]] = {name: {} for name in events}
    for row in counted:
        labels[row[TABLE]][row["label"]] = int(row["count"])
    return {name: (_written(rows.filter(F.col(TABLE) == name), UNION_SCHEMA, _UNION), labels[name]) for name in events}


def _union(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


@dataclass
class Compared:
    """CPU seconds of each variant in each round, and the outcome counts of the last round."""

    cpu: dict[str, list[float]]
    outcomes: Counter[str]


VARIANTS: dict[str, Callable[[dict[str, DataFrame], dict[str, DataFrame]], Folded]] = {
    "one by one": one_by_one,
    "as one": as_one,
}


def compare(spark: SparkSession, *, tables: int, rounds: int, stored_rows: int) -> Compared:
    """Run both variants `rounds` times over `tables` tables; raise if any round's results differ."""
    names = [f"db.t{i}" for i in range(tables)]
    stores = {name: stored_table(spark, name, stored_rows) for name in names}
    me = psutil.Process()
    cpu: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    results: dict[str, Folded] = {}
    for round_ in range(rounds):
        order = list(VARIANTS) if round_ % 2 == 0 else list(reversed(VARIANTS))
        for variant in order:
            events = {name: batch(spark, name, round_) for name in names}
            began = tree_cpu_seconds(me)
            results[variant] = VARIANTS[variant](stores, events)
            cpu[variant].append(tree_cpu_seconds(me) - began)
        if results["one by one"] != results["as one"]:
            raise AssertionError(f"round {round_}: the union's fold differs from the tables' own:\n"
                                 f"{results['one by one']}\n{results['as one']}")  # fmt: skip
    outcomes = sum((Counter(labels) for _, labels in results["as one"].values()), Counter())
    return Compared(cpu=cpu, outcomes=outcomes)


def report(compared: Compared, *, tables: int, warm_from: int) -> str:
    lines = []
    means = {}
    for variant, values in compared.cpu.items():
        warm = values[warm_from:] or values
        means[variant] = sum(warm) / len(warm)
        lines.append(f"{variant}: CPU s a round {', '.join(f'{v:.2f}' for v in values)}; over rounds "
                     f"{warm_from + 1}-{len(values)} {means[variant]:.2f} a round, {means[variant] / tables:.3f} a table")  # fmt: skip
    lines.append(f"as one / one by one: {means['as one'] / means['one by one']:.2f}x; "
                 f"saved {(means['one by one'] - means['as one']) / tables:.3f} CPU s a table")  # fmt: skip
    lines.append("outcomes of a round (every table): " + ", ".join(f"{k} {v}" for k, v in sorted(compared.outcomes.items())))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=11, help="tables in a batch (the database bench touches about 11)")
    parser.add_argument("--rounds", type=int, default=12, help="rounds of both variants; the first 4 warm the JVM")
    parser.add_argument("--stored-rows", type=int, default=200, help="stored rows of each table")
    args = parser.parse_args(argv)
    spark = (
        SparkSession.builder.master("local[2]").appName("union-fold")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )  # fmt: skip
    spark.sparkContext.setLogLevel("ERROR")
    began = time.monotonic()
    compared = compare(spark, tables=args.tables, rounds=args.rounds, stored_rows=args.stored_rows)
    print(f"{args.tables} tables of 8 events onto {args.stored_rows} stored rows each, {args.rounds} rounds "
          f"({time.monotonic() - began:.0f} s); every round's rows and counts equal in both")  # fmt: skip
    print(report(compared, tables=args.tables, warm_from=min(4, args.rounds - 1)))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
