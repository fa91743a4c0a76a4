"""The three jobs the benchmark compares, as Spark code (run inside `devkit.bench.child`).

- hudi_cdc: the real job, `hudi_cdc.job.stream.run(..., once=True)` with a one-table config.
- plain: what a Hudi user writes by hand: parse the envelope once with `from_json`, take
  `after` (`before` for deletes), set `_hoodie_is_deleted` for deletes, upsert with Hudi's
  EVENT_TIME_ORDERING on the binlog position. Hudi pre-combines each key's events of a batch
  and merges with the stored row. Same table type, key, partitioning, index, parallelism,
  compression and compaction as hudi_cdc (`hudi_cdc.hudi.table_options.write_options`); only the
  merge settings differ.
- floor: parse the envelope the same way and append the row images to plain Parquet.

Each job reads the same topic with Structured Streaming (`availableNow`, the same
`maxOffsetsPerTrigger`) and returns the query, whose progress reports give the batches.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from devkit.bench.workloads import KEY, PARTITION_COLUMN, TableType
from hudi_cdc.commit.metrics import BatchMetrics
from hudi_cdc.config.durations import parse_duration, spark_interval
from hudi_cdc.config.models import Config, IndexKind, TableConfig, parse_config
from hudi_cdc.hoodie_keys import COMBINE_BEFORE_UPSERT, MERGE_MODE, ORDERING_FIELDS
from hudi_cdc.hudi.table_options import write_options
from hudi_cdc.job import stream
from hudi_cdc.kafka.source import kafka_source

TABLE_ORDERING_FIELDS = "hoodie.table.ordering.fields"
"""Hudi 1.x's name for the ordering field (the older precombine key is set too); the plain job only."""
ORDERING_COLUMN = "_pos"
_IMAGE = "struct<id:bigint,owner:string,email:string,balance:string,updated_at:bigint,region:string>"
_ENVELOPE = f"struct<payload:struct<before:{_IMAGE},after:{_IMAGE},op:string,source:struct<pos:bigint>>>"


@dataclass(frozen=True)
class JobSpec:
    """What one child runs: a job on one topic per table."""

    job: str
    """hudi_cdc, plain or floor."""
    bootstrap: str
    topics: list[str]
    batch: int
    table_path: str
    """The table's folder; with several topics, the folder of their tables `accounts_<i>`."""
    type: TableType
    partitioned: bool
    work_dir: str
    """Checkpoints and the dead-letter store live here."""
    table_concurrency: int = 1
    """hudi_cdc's `job.table_concurrency`."""
    trigger_interval: str | None = None
    """Run continuously at this interval (`5 seconds`; the freshness bench), None: until caught up."""
    index: IndexKind = "simple"
    """The table's `index`; the plain job writes with the same Hudi index options (`plain_options`)."""
    buckets: int = 8
    """The table's `buckets`, for `index: bucket`."""
    prepped_writes: bool = True
    """The table's `prepped_writes` (hudi_cdc's only; the plain job upserts the usual way)."""
    hoodie_options: dict[str, str] = field(default_factory=dict)
    """The table's `hoodie_options`; the plain job writes with them too (`plain_options`)."""
    min_partitions: int | None = None
    """`kafka.min_partitions`: every job reads through the same source (`kafka.source.kafka_source`)."""
    job_settings: dict[str, str] = field(default_factory=dict)
    """hudi_cdc only: more `job:` settings (`fold_together=false`)."""
    template: str | None = None
    """hudi_cdc only: one table template instead of a declared table per topic (the database bench),
    matching the topics `bench.<part>.accounts` whose part matches this regex (`db_[0-9]+`). Each
    table is named after the part, its key taken from the topic's Kafka key, as a user's template
    of a whole database does."""

    def tables(self) -> list[tuple[str, TableConfig]]:
        """Each topic and the table it lands in."""
        if len(self.topics) == 1:
            return [(self.topics[0], self._table("accounts", self.table_path))]
        return [
            (topic, self._table(f"accounts_{i}", str(Path(self.table_path) / f"accounts_{i}")))
            for i, topic in enumerate(self.topics)
        ]

    def _table(self, name: str, path: str) -> TableConfig:
        return TableConfig(
            name=name, key=[KEY], base_path=path, type=self.type,
            partition_by=[PARTITION_COLUMN] if self.partitioned else [], index=self.index,
            prepped_writes=self.prepped_writes,
            hoodie_options=self.hoodie_options, **({"buckets": self.buckets} if self.index == "bucket" else {}),
        )  # fmt: skip


def hudi_cdc_config(spec: JobSpec) -> Config:
    """The job config a user would write for these topics."""
    work = Path(spec.work_dir)
    tables = spec.tables()
    if spec.template:
        settings = tables[0][1].model_dump(exclude_defaults=True, exclude={"name", "key", "base_path"})
        template = {"pattern": rf"bench\.(?<table>{spec.template})\.accounts", "name": "{table}",
                    "base_path": str(Path(spec.table_path) / "{name}"), "settings": settings}  # fmt: skip
        placement: dict[str, Any] = {"templates": [template]}
    else:
        placement = {
            "routes": [{"topic": topic, "table": table.name} for topic, table in tables],
            "tables": [table.model_dump(exclude_defaults=True) for _, table in tables],
        }
    return parse_config(
        {
            "kafka": {
                "bootstrap_servers": spec.bootstrap,
                "max_offsets_per_trigger": spec.batch,
                "min_partitions": spec.min_partitions,
            },
            "job": {
                "name": "bench",
                "checkpoint_dir": str(work / "cp-hudi_cdc"),
                "dead_letter_path": str(work / "dlq"),
                "table_concurrency": spec.table_concurrency,
                **spec.job_settings,
                **({"trigger_interval": spec.trigger_interval} if spec.trigger_interval else {}),
            },
            **placement,
        }
    )


BatchEnd = Callable[[], None]
"""Called at the end of every batch (the child notes the time and CPU)."""
Committed = Callable[[int, str, float], None]
"""Called with (batch id, topic, epoch s) when a batch's Hudi commit of the topic's table completed
(the freshness bench: from then on a reader of the table sees the topic's records)."""
Started = Callable[[StreamingQuery], None]
"""Called with a continuous run's query once it started (the freshness bench stops it with it)."""


def run_hudi_cdc(spark: SparkSession, spec: JobSpec, on_batch_end: BatchEnd) -> StreamingQuery:
    """hudi_cdc's own run (`stream.start`, as `hudi-cdc run --once` runs it) until caught up.

    The job's query runs in its own clone of the session (`spark.streams` does not list it), so
    the query `start` returns is the one to wait on and to read progress from.
    """
    query = stream.start(spark, hudi_cdc_config(spec), once=True, on_batch=lambda _: on_batch_end())
    query.awaitTermination()
    if not [p for p in query.recentProgress if p["numInputRows"] > 0]:
        raise RuntimeError(f"hudi_cdc ran no batch on {spec.topics}")
    return query


def _envelope(batch: DataFrame) -> DataFrame:
    """Payload fields of non-tombstone records: op, the images and the binlog position."""
    parsed = batch.filter(F.col("value").isNotNull()).select(
        F.from_json(F.col("value").cast("string"), _ENVELOPE).alias("e")
    )
    return parsed.select("e.payload.op", "e.payload.before", "e.payload.after", F.col("e.payload.source.pos").alias("pos"))


def _typed(image: Any) -> list[Any]:
    """The image's columns with Debezium's encodings undone (base64 decimal, epoch µs)."""
    balance = F.conv(F.hex(F.unbase64(image["balance"])), 16, 10).cast("decimal(20,0)") / 100
    return [
        image["id"].alias("id"),
        image["owner"].alias("owner"),
        image["email"].alias("email"),
        balance.cast("decimal(12,2)").alias("balance"),
        F.timestamp_micros(image["updated_at"]).alias("updated_at"),
        image[PARTITION_COLUMN].alias(PARTITION_COLUMN),
    ]


def plain_options(table: TableConfig) -> dict[str, str]:
    """hudi_cdc's write options, with the merge left to Hudi: event-time ordering on `_pos`, pre-combine on."""
    options = write_options(table)
    options.update(
        {
            MERGE_MODE: "EVENT_TIME_ORDERING",
            ORDERING_FIELDS: ORDERING_COLUMN,
            TABLE_ORDERING_FIELDS: ORDERING_COLUMN,
            COMBINE_BEFORE_UPSERT: "true",  # a batch holds several events of a key
        }
    )
    return options


def plain_rows(batch: DataFrame) -> DataFrame:
    """What the plain job upserts: the row image (`before` for a delete), its binlog position as
    the ordering value, and `_hoodie_is_deleted`."""
    events = _envelope(batch)
    deleted = F.col("op") == "d"
    image = F.when(deleted, F.col("before")).otherwise(F.col("after"))
    return events.select(*_typed(image), F.col("pos").alias(ORDERING_COLUMN), deleted.alias("_hoodie_is_deleted"))


def plain_batch(spec: JobSpec, on_commit: Committed | None = None) -> Callable[[DataFrame, int], None]:
    """The plain job's foreachBatch: upsert images, deletes flagged by `_hoodie_is_deleted`."""
    tables = [(topic, table.base_path, plain_options(table)) for topic, table in spec.tables()]

    def write(batch: DataFrame, batch_id: int) -> None:
        with _per_topic(batch, [topic for topic, _, _ in tables]) as (of_topic, present):
            for topic, path, options in tables:
                if topic not in present:
                    continue
                rows = plain_rows(of_topic(topic))
                rows.write.format("hudi").options(**options).mode("append").save(path)
                if on_commit is not None:
                    on_commit(batch_id, topic, time.time())

    return write


def floor_batch(spec: JobSpec) -> Callable[[DataFrame, int], None]:
    """The floor's foreachBatch: row images (`before` of deletes) with op and position, appended to Parquet."""
    tables = [(topic, table.base_path) for topic, table in spec.tables()]

    def write(batch: DataFrame, _batch_id: int) -> None:
        with _per_topic(batch, [topic for topic, _ in tables]) as (of_topic, present):
            for topic, path in tables:
                if topic not in present:
                    continue
                events = _envelope(of_topic(topic))
                rows = events.select(*_typed(F.coalesce("after", "before")), "op", F.col("pos").alias(ORDERING_COLUMN))
                writer = rows.write.mode("append").option("compression", "snappy")
                if spec.partitioned:
                    writer = writer.partitionBy(PARTITION_COLUMN)
                writer.parquet(path)

    return write


@contextmanager
def _per_topic(batch: DataFrame, topics: list[str]) -> Iterator[tuple[Callable[[str], DataFrame], set[str]]]:
    """The batch's records of a topic, and the topics the batch holds. Over several topics the job
    writes their tables one by one from the batch, persisted (as hudi_cdc does) so Kafka is not
    read once per table, and only the tables of topics in the batch: a hand-written job for many
    tables would not commit nothing to every quiet one (the database bench)."""
    if len(topics) == 1:
        yield (lambda _topic: batch), set(topics)
        return
    persisted = batch.persist()
    try:
        present = {row["topic"] for row in persisted.select("topic").distinct().collect()}
        yield (lambda topic: persisted.filter(F.col("topic") == topic)), present
    finally:
        persisted.unpersist()


def run_foreach(
    spark: SparkSession,
    spec: JobSpec,
    write: Callable[[DataFrame, int], None],
    on_batch_end: BatchEnd,
    started: Started = lambda _: None,
) -> StreamingQuery:
    """The plain or floor job: the same Kafka source as hudi_cdc, this foreachBatch, until caught up
    (or, with `spec.trigger_interval`, every interval until stopped)."""

    def batch(rows: DataFrame, batch_id: int) -> None:
        write(rows, batch_id)
        on_batch_end()

    writer = (
        kafka_source(spark, hudi_cdc_config(spec))
        .writeStream.queryName(spec.job)
        .foreachBatch(batch)
        .option("checkpointLocation", str(Path(spec.work_dir) / f"cp-{spec.job}"))
    )
    if spec.trigger_interval:
        writer = writer.trigger(processingTime=spark_interval(parse_duration(spec.trigger_interval)))
    else:
        writer = writer.trigger(availableNow=True)
    query = writer.start()
    started(query)
    query.awaitTermination()
    return query


def run_continuous(spark: SparkSession, spec: JobSpec, on_commit: Committed, started: Started) -> None:
    """`spec.job` running every `spec.trigger_interval` until its query is stopped (the freshness
    bench); `started` is given the query, to stop it."""
    if not spec.trigger_interval:
        raise ValueError("a continuous run needs a trigger interval")
    if spec.job == "hudi_cdc":

        def committed(metrics: BatchMetrics) -> None:
            for table in metrics.tables:
                if table.committed_at is not None and not table.error:
                    for topic in table.applied_through:
                        on_commit(metrics.batch_id, topic, table.committed_at)

        query = stream.start(spark, hudi_cdc_config(spec), once=False, on_batch=committed)
        started(query)
        query.awaitTermination()
    elif spec.job == "plain":
        run_foreach(spark, spec, plain_batch(spec, on_commit), lambda: None, started)
    else:
        raise ValueError(f"{spec.job!r} does not run continuously; valid: hudi_cdc, plain")


def run_job(spark: SparkSession, spec: JobSpec, on_batch_end: BatchEnd) -> StreamingQuery:
    """Run `spec.job` to the end of its topic, calling `on_batch_end` after each batch."""
    if spec.job == "hudi_cdc":
        return run_hudi_cdc(spark, spec, on_batch_end)
    if spec.job == "plain":
        return run_foreach(spark, spec, plain_batch(spec), on_batch_end)
    if spec.job == "floor":
        return run_foreach(spark, spec, floor_batch(spec), on_batch_end)
    raise ValueError(f"unknown job {spec.job!r}; valid: hudi_cdc, plain, floor")
