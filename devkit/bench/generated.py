"""A loaded table built by one bulk insert of generated rows, instead of a load through Kafka.

A case that starts from a 10M-row table cannot afford its load through the jobs: producing 10M
Debezium records and consuming them costs an hour of this machine before anything is measured.
`--load-by generate` builds each job's table the way a load through Kafka in one batch would
have left it, with Spark expressions over `spark.range`:

- the source columns of `workloads.row(key, 0)`, the row a snapshot read of the key carries;
- hudi_cdc's table: the `_cdc_*` columns its decode gives the snapshot read of key k at
  `mysql-bin.000001`, position k + 1, Kafka offset k of a one-partition topic (what
  `workloads.records` produces), written through hudi_cdc's own writer with its own options and
  the commit metadata its first commit records;
- the plain job's table: `_pos` = k + 1 and `_hoodie_is_deleted`, with its own options.

Both are bulk inserts (the plain job upserts its loads through Kafka; a bulk insert leaves the
same rows in fewer, fuller files). `tests/integration/test_bench_generated.py` checks, column
for column, that a generated table holds what a load through Kafka holds.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DecimalType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from devkit.bench.jobs import JobSpec, hudi_cdc_config, plain_options
from devkit.bench.workloads import PARTITION_COLUMN, REGIONS, T0, T0_MS, load_topic
from devkit.debezium import epoch_micros
from hudi_cdc import events
from hudi_cdc.commit.metrics import COUNTED
from hudi_cdc.commit.offsets import KafkaRange, commit_metadata
from hudi_cdc.commit.progress import Mark, Progress
from hudi_cdc.hoodie_keys import OPERATION, PARALLELISM_KEYS
from hudi_cdc.hudi import writer
from hudi_cdc.hudi.table_options import index_layout, trailing_columns, write_options

BULK_INSERT = "bulk_insert"
ROWS_PER_TASK = 500_000
"""Rows each task of a build writes: one file of about 29 MB, as the two files of a 1M-row load
through Kafka in one batch hold, so tables of every size have files of one size (a bucket table
has one file per bucket whatever the tasks). It also bounds the record-level index entries one
task makes: 5M in a task exhausted a 4 GB driver."""

_SOURCE_FIELDS = [
    StructField("id", LongType()),
    StructField("owner", StringType()),
    StructField("email", StringType()),
    StructField("balance", DecimalType(12, 2)),
    StructField("updated_at", TimestampType()),
    StructField(PARTITION_COLUMN, StringType()),
]
HUDI_CDC_SCHEMA = StructType(
    [
        *_SOURCE_FIELDS,
        StructField(events.OP, StringType()),
        StructField(events.ORDER, StringType(), nullable=False),
        StructField(events.TS_MS, LongType()),
        StructField(events.SOURCE, StringType()),
        StructField(events.INGESTED_AT, TimestampType(), nullable=False),
        StructField(events.COLUMN_ORDERS, MapType(StringType(), StringType(), valueContainsNull=True), nullable=False),
        StructField(events.HOODIE_IS_DELETED, BooleanType(), nullable=False),
    ]
)
"""The columns (and their nullability) hudi_cdc writes for the bench table: its own schema."""
PLAIN_SCHEMA = StructType(
    [*_SOURCE_FIELDS, StructField("_pos", LongType()), StructField(events.HOODIE_IS_DELETED, BooleanType())]
)


def source_rows(spark: SparkSession, rows: int, partitions: int) -> DataFrame:
    """`workloads.row(key, 0)` of keys 0..rows-1, with `pos`, the key's snapshot position (k + 1),
    in `partitions` ranges of consecutive keys."""
    key = F.col("id")
    t0_us = epoch_micros(T0)
    return spark.range(0, rows, 1, partitions).select(
        key.alias("id"),
        F.concat(F.lit("owner-"), key).alias("owner"),
        F.format_string("user%d.v0@example.com", key).alias("email"),
        ((key * 7919) % 10_000_000).cast(DecimalType(12, 0)).__truediv__(100).cast(DecimalType(12, 2)).alias("balance"),
        F.timestamp_micros(F.lit(t0_us) + key * 1_000_000).alias("updated_at"),
        F.concat(F.lit("r"), key % len(REGIONS)).alias(PARTITION_COLUMN),
        (key + 1).alias("pos"),
    )


_ORDER_FORMAT = "b%010d%020d0%010d%05d%020d"
"""hudi_cdc's `_cdc_order` of a snapshot read (`events.binlog_order`): file 1, pos key + 1, row 0,
partition 0, offset key."""


def _order(key: Column) -> Column:
    """The `_cdc_order` of key `key`'s snapshot read (`_ORDER_FORMAT`)."""
    return F.format_string(_ORDER_FORMAT, F.lit(1), key + 1, F.lit(0), F.lit(0), key)


def hudi_cdc_rows(source: DataFrame) -> DataFrame:
    """The rows hudi_cdc's fold writes for the snapshot reads of `source`."""
    key = F.col("id")
    rows = source.select(
        *[F.col(field.name) for field in _SOURCE_FIELDS],
        F.lit(events.Op.READ.value).alias(events.OP),
        _order(key).alias(events.ORDER),
        (F.lit(T0_MS) + key).alias(events.TS_MS),
        F.format_string("mysql-bin.000001:%d:0", F.col("pos")).alias(events.SOURCE),
        F.current_timestamp().alias(events.INGESTED_AT),
        F.create_map().cast("map<string,string>").alias(events.COLUMN_ORDERS),
        F.lit(False).alias(events.HOODIE_IS_DELETED),
    )
    return _shaped(rows, HUDI_CDC_SCHEMA)


def plain_rows(source: DataFrame) -> DataFrame:
    """The rows the plain job upserts for the snapshot reads of `source`."""
    rows = source.select(
        *[F.col(field.name) for field in _SOURCE_FIELDS],
        F.col("pos").alias("_pos"),
        F.lit(False).alias(events.HOODIE_IS_DELETED),
    )
    return _shaped(rows, PLAIN_SCHEMA)


def _shaped(rows: DataFrame, schema: StructType) -> DataFrame:
    """`rows` with the types and nullability of `schema`, which Hudi's writer turns into the table's
    Avro schema: a generated column is never null, but the job's own column may be."""
    columns = []
    for field in schema:
        column = F.col(field.name).cast(field.dataType)
        if field.nullable:
            column = F.when(column.isNotNull(), column)  # a CASE without ELSE is nullable
        columns.append(column.alias(field.name))
    shaped = rows.select(*columns)
    wrong = [f.name for f, want in zip(shaped.schema, schema, strict=True) if f.nullable != want.nullable]
    if wrong:
        raise ValueError(f"generated columns {wrong} cannot take the job's nullability")
    return shaped


def first_commit_metadata(spec: JobSpec, rows: int) -> dict[str, str]:
    """What hudi_cdc's first commit of a one-batch load of `rows` snapshot reads records."""
    topic = load_topic(rows)
    counts = {name: 0 for name in COUNTED} | {"read": rows, "applied": rows}
    marks = {topic: {"0": Mark(ts_ms=T0_MS + rows - 1, offset=rows - 1)}}
    ((_, table),) = spec.tables()
    return commit_metadata(
        job=hudi_cdc_config(spec).job.name,
        batch_id=0,
        kafka=KafkaRange(first={topic: {"0": 0}}, last={topic: {"0": rows - 1}}),
        progress=Progress().after(counts, marks),
        index=index_layout(table),
        source_types={},
        newest_order=_ORDER_FORMAT % (1, rows, 0, 0, rows - 1),  # the last key's, as `_order` writes it
    )


def build(spark: SparkSession, spec: JobSpec, rows: int) -> dict[str, Any]:
    """Write `spec.job`'s table of `rows` loaded rows at `spec.table_path` with one bulk insert."""
    ((_, table),) = spec.tables()
    parallelism = max(spark.sparkContext.defaultParallelism, -(-rows // ROWS_PER_TASK))
    source = source_rows(spark, rows, parallelism)
    began = dt.datetime.now(dt.UTC)
    if spec.job == "hudi_cdc":
        result = writer.write(
            hudi_cdc_rows(source),
            table=table.name,
            base_path=table.base_path,
            options=write_options(table, operation=BULK_INSERT, parallelism=parallelism),
            trailing_columns=trailing_columns(table),
            commit_metadata=first_commit_metadata(spec, rows),
            counts=writer.RowCounts(upserted=rows, deleted=0, new_keys=rows, unlocated=0),
            archive_after_hours=table.archive_after_hours,
        )
        commit = result.commit_time
    elif spec.job == "plain":
        options = plain_options(table) | {OPERATION: BULK_INSERT} | dict.fromkeys(PARALLELISM_KEYS, str(parallelism))
        plain_rows(source).write.format("hudi").options(**options).mode("append").save(table.base_path)
        commit = None
    else:
        raise ValueError(f"only hudi_cdc and plain tables are generated, not {spec.job!r}")
    return {"job": spec.job, "rows": rows, "commit": commit, "started": began.isoformat()}
