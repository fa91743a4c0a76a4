"""Count a table's batch in two small aggregations instead of one Spark job per number.

- `survey(routed)`: per table, over the routed Kafka rows: records read, tombstones, the
  Kafka range (first and last offset per partition), the oldest Kafka timestamp and the
  distinct envelope schemas that type the JSON tables' records. One job for every table of
  the batch.
- `tally(decoded)`: per table, over the persisted parse: skipped records and their reasons,
  rejects by error class, truncates (how many, the newest), and per topic partition the newest
  source time and the events behind the committed watermark. Given `labels` (the fold's
  outcomes and writes), it counts those in the same job.

The watermark never enters the aggregation's plan: Spark writes a long literal into the code it
generates, so a comparison with it made every table's tally a new class to compile in every batch
(about 50 ms of the driver's CPU each, docs/performance-journal.md, round 31). Each partition's
oldest and newest source time settle the count instead; only a partition whose events straddle
the watermark, which an ordered stream rarely has, costs a second job.

Each job costs a scheduling round trip and a scan of cached rows; a batch used to run one per
count (docs/performance-journal.md, the first `make bench` run).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from hudi_cdc.commit.offsets import KafkaRange
from hudi_cdc.decode.envelope import SCHEMA_SLOT, envelope_schema, has_envelope, split_schema, with_envelope
from hudi_cdc.decode.records import DecodeResult
from hudi_cdc.decode.schema import SchemaUse, most_used_first
from hudi_cdc.events import KAFKA_PARTITION, KAFKA_TOPIC, OP, ORDER, SOURCE, TS_MS, Op
from hudi_cdc.fold.collapse import Truncation
from hudi_cdc.kafka.routing import TABLE_COLUMN

_ENVELOPE_SCHEMA = "__envelope_schema"
"""The survey's column: a parsed record's envelope schema text."""
_ENVELOPE_SLOT = "__envelope_slot"
"""The survey's column: a split record's schema slot (SCHEMA_SLOT)."""


@dataclass(frozen=True)
class TableRecords:
    """What one table receives in a batch, before decoding."""

    read: int
    tombstones: int
    kafka: KafkaRange
    envelopes: tuple[str, ...] | None = None
    """The distinct envelope schema texts of its records, most used first, when surveyed (see
    `survey`); None: decode finds them itself."""
    oldest: dt.datetime | None = None
    """The oldest Kafka timestamp among its records (None: the rows carry no timestamp). The
    pipeline applies the tables of a batch oldest first (`job.pipeline.oldest_first`)."""


def survey(
    routed: DataFrame, *, schemas_of: Collection[str] = (), split_by: Mapping[str, Sequence[str]] | None = None
) -> dict[str | None, TableRecords]:
    """Per table (None: records no route takes): records read, tombstones, Kafka range.

    For the tables named in `schemas_of` (JSON tables typed by their envelopes) the same job also
    finds their distinct envelope schemas, which decode would otherwise find in a job per table:
    from `with_envelope`'s columns when `routed` has them (the pipeline finds them once for the
    survey and decode), else parsed here. `split_by`: the known texts `with_envelope` split
    `routed` by; a split record is grouped by its schema's slot, not its text (the text is most
    of the record), and named here.
    """
    if schemas_of and not has_envelope(routed):
        routed = with_envelope(routed, F.col(TABLE_COLUMN).isin(*schemas_of))
    enveloped = F.col(TABLE_COLUMN).isin(*schemas_of)
    schema = F.when(enveloped, envelope_schema()) if schemas_of else F.lit(None)
    slot = F.when(enveloped, F.col(SCHEMA_SLOT)) if schemas_of and SCHEMA_SLOT in routed.columns else F.lit(None)
    with_schema = routed.withColumn(_ENVELOPE_SCHEMA, schema.cast("string")).withColumn(_ENVELOPE_SLOT, slot.cast("int"))
    has_time = "timestamp" in routed.columns
    newest = F.max("timestamp") if has_time else F.lit(None)
    oldest = F.min("timestamp") if has_time else F.lit(None)
    rows = (
        with_schema.groupBy(TABLE_COLUMN, "topic", "partition", _ENVELOPE_SCHEMA, _ENVELOPE_SLOT)
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.sum(F.col("value").isNull().cast("int")).alias("tombstones"),
            F.min("offset").alias("lo"),
            F.max("offset").alias("hi"),
            newest.alias("ts"),
            oldest.alias("oldest"),
        )
        .collect()
    )
    tables: dict[str | None, tuple[int, int, KafkaRange]] = {}
    oldest_of: dict[str | None, dt.datetime] = {}
    uses: dict[str | None, dict[str, SchemaUse]] = {}
    for row in rows:
        name = row[TABLE_COLUMN]
        read, tombstones, kafka = tables.setdefault(name, (0, 0, KafkaRange(first={}, last={})))
        first, last = kafka.first.setdefault(row["topic"], {}), kafka.last.setdefault(row["topic"], {})
        partition = str(row["partition"])
        first[partition] = min(int(row["lo"]), first.get(partition, int(row["lo"])))
        last[partition] = max(int(row["hi"]), last.get(partition, int(row["hi"])))
        tables[name] = (read + int(row["n"]), tombstones + int(row["tombstones"] or 0), kafka)
        if row["oldest"] is not None and (name not in oldest_of or row["oldest"] < oldest_of[name]):
            oldest_of[name] = row["oldest"]
        text = row[_ENVELOPE_SCHEMA]
        if row[_ENVELOPE_SLOT] is not None:
            text = split_schema((split_by or {}).get(name, ()), int(row[_ENVELOPE_SLOT]), str(name))
        if text is not None:
            use = SchemaUse(text, int(row["n"]), row["ts"], int(row["hi"]))
            known = uses.setdefault(name, {})
            known[text] = known[text] + use if text in known else use
    return {
        name: TableRecords(
            read=r,
            tombstones=t,
            kafka=k,
            envelopes=tuple(most_used_first(uses.get(name, {}).values())) if name in schemas_of else None,
            oldest=oldest_of.get(name),
        )
        for name, (r, t, k) in tables.items()
    }


def survey_table(records: DataFrame, table: str) -> TableRecords:
    """`survey` of one table's records (a part of a batch split to isolate a failing record)."""
    return survey(records.withColumn(TABLE_COLUMN, F.lit(table)))[table]


_LABELLED = "labelled"
"""The `kind` of the rows `tally` counts for its `labels` (decode's kinds: event, reject, skip)."""


@dataclass(frozen=True)
class DecodedTally:
    """Counts of one table's decoded batch."""

    skipped: int = 0
    skip_reasons: list[str] = field(default_factory=list)
    rejects_by_class: dict[str, int] = field(default_factory=dict)
    truncates: int = 0
    newest_truncate: Truncation | None = None
    """The batch's newest truncate event (applied or ignored per the table's `truncate`)."""
    newest_ts_ms: dict[tuple[str, str], int | None] = field(default_factory=dict)
    """(topic, partition) -> the newest source time among the batch's events there."""
    behind_watermark: int = 0
    """Events older than the watermark the table had committed before the batch."""
    events: int = 0
    """Records that decoded to a change event (truncates included)."""
    labelled: dict[str, int] = field(default_factory=dict)
    """Rows of the `labels` passed to `tally`, per label."""
    newest_order: str | None = None
    """The newest order among the batch's events, truncates included (None: no event has one)."""


def tally(
    decoded: DecodeResult, *, watermark: int | None, labels: DataFrame | None = None, one_task: bool = False
) -> DecodedTally:
    """Count a decoded batch in one aggregation over its parse (pass a `cached()` result).

    `labels` (one string column, `label`): rows counted per label in the same Spark job, which
    saves the pipeline a job (planning, scheduling, code generation) per table and batch.
    `one_task`: count in one task, with no shuffle (`job.sizing.in_one_task`).
    """
    rows = _counts(decoded.classified, labels=labels, one_task=one_task).collect()
    return _summed(rows, watermark, decoded)


def tally_tables(
    decoded: Mapping[str, DecodeResult], *, watermarks: Mapping[str, int | None], labels: DataFrame, one_task: bool
) -> dict[str, DecodedTally]:
    """`tally` of several tables' batches in one Spark job: what `tally` counts of each table.

    `labels`: rows of TABLE_COLUMN (the table's name) and `label`, each counted for its table.
    Why: the counting job is a fixed cost of every table in a batch (planning, scheduling, code
    generation); tables folded as one (`job.table_group`) are counted as one too.
    """
    counted = [_labelled_rows(result.classified).withColumn(TABLE_COLUMN, F.lit(name)) for name, result in decoded.items()]
    union = reduce(DataFrame.unionByName, counted).unionByName(
        labels.select(F.col(TABLE_COLUMN), F.lit(_LABELLED).alias("kind"), F.col("label")), allowMissingColumns=True
    )
    rows = _aggregated(union, [TABLE_COLUMN], one_task=one_task).collect()
    by_table: dict[str, list[Any]] = {name: [] for name in decoded}
    for row in rows:
        by_table[row[TABLE_COLUMN]].append(row)
    return {name: _summed(by_table[name], watermarks.get(name), decoded[name]) for name in decoded}


def _summed(rows: Sequence[Any], watermark: int | None, decoded: DecodeResult) -> DecodedTally:
    """A table's DecodedTally from its rows of the counting aggregation (`_aggregated`)."""
    skipped, truncates, events = 0, 0, 0
    behind = _Behind(watermark)
    reasons: set[str] = set()
    rejects: dict[str, int] = {}
    labelled: dict[str, int] = {}
    newest_ts: dict[tuple[str, str], int | None] = {}
    newest: tuple[Any, ...] | None = None
    newest_order: str | None = None
    for row in rows:
        if row["kind"] == "skip":
            skipped += int(row["n"])
            reasons.add(str(row["label"]))
        elif row["kind"] == "reject":
            rejects[str(row["label"])] = rejects.get(str(row["label"]), 0) + int(row["n"])
        elif row["kind"] == _LABELLED:
            labelled[str(row["label"])] = int(row["n"])
        else:
            events += int(row["n"])
            newest_ts[(row["topic"], row["partition"])] = row["ts_ms"]
            behind.add(row["oldest_ts_ms"], row["ts_ms"], int(row["timed"]))
            truncates += int(row["truncates"] or 0)
            if row["order"] is not None and (newest_order is None or row["order"] > newest_order):
                newest_order = str(row["order"])
            if row["t"] is not None and (newest is None or _truncate_key(tuple(row["t"])) > _truncate_key(newest)):
                newest = tuple(row["t"])
    return DecodedTally(
        skipped=skipped,
        skip_reasons=sorted(reasons),
        rejects_by_class=rejects,
        truncates=truncates,
        newest_truncate=Truncation(*newest) if newest is not None else None,
        newest_ts_ms=newest_ts,
        behind_watermark=behind.count(decoded),
        events=events,
        labelled=labelled,
        newest_order=newest_order,
    )


def _counts(classified: DataFrame, *, labels: DataFrame | None, one_task: bool) -> DataFrame:
    """`tally`'s one aggregation: a row per kind, label, topic and partition of a decoded batch's
    `DecodeResult.classified` rows, and of `labels`."""
    counted = _labelled_rows(classified)
    if labels is not None:
        counted = counted.unionByName(
            labels.select(F.lit(_LABELLED).alias("kind"), F.col("label")), allowMissingColumns=True
        )
    return _aggregated(counted, [], one_task=one_task)


def _labelled_rows(classified: DataFrame) -> DataFrame:
    """A decoded batch's `classified` rows as the counting aggregation reads them."""
    is_truncate = F.col(OP) == Op.TRUNCATE.value
    # rejects and skipped records have no event columns: only their kind and label count
    return classified.select(
        "kind",
        "label",
        F.col(KAFKA_TOPIC).alias("topic"),
        F.col(KAFKA_PARTITION).cast("string").alias("partition"),
        F.col(TS_MS).alias("ts_ms"),
        F.col(ORDER).alias("order"),
        is_truncate.cast("int").alias("truncate"),
        F.when(is_truncate, F.struct(F.col(ORDER), F.col(TS_MS), F.col(SOURCE))).alias("t"),
    )


def _aggregated(counted: DataFrame, by: list[str], *, one_task: bool) -> DataFrame:
    """The counts per `by`, kind, label, topic and partition."""
    if one_task:
        counted = counted.coalesce(1)  # one partition satisfies the grouping: Spark plans no shuffle
    return (
        counted.groupBy(*by, "kind", "label", "topic", "partition")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.max("ts_ms").alias("ts_ms"),
            F.min("ts_ms").alias("oldest_ts_ms"),
            F.count("ts_ms").alias("timed"),
            F.sum("truncate").alias("truncates"),
            F.max("t").alias("t"),
            F.max("order").alias("order"),
        )
    )


class _Behind:
    """Events with a source time older than `watermark`, from each topic partition's oldest and
    newest source time; exact, with one more Spark job when a partition straddles the watermark."""

    def __init__(self, watermark: int | None) -> None:
        self.watermark = watermark
        self.settled = 0
        self.straddled = False

    def add(self, oldest: int | None, newest: int | None, timed: int) -> None:
        """One group of events: its oldest and newest source time, and how many carry one."""
        if self.watermark is None or oldest is None or newest is None or oldest >= self.watermark:
            return  # no source time, or none older than the watermark
        if newest < self.watermark:
            self.settled += timed  # every timed event of the group is older
        else:
            self.straddled = True

    def count(self, decoded: DecodeResult) -> int:
        """The exact count; a job over the parse only when some group straddles the watermark."""
        if not self.straddled or self.watermark is None:
            return self.settled
        events = decoded.classified.filter(F.col("kind") == "event")
        return events.filter(F.col(TS_MS) < F.lit(self.watermark)).count()


def _truncate_key(t: tuple[Any, ...]) -> tuple[Any, ...]:
    """Spark's struct order (NULL first) as a Python key: order, then source time, then position."""
    order, ts_ms, source = t
    return (order, ts_ms is not None, ts_ms or 0, source is not None, source or "")
