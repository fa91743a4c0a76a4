"""One aggregation per batch counts what the pipeline used to count job by job."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from devkit.debezium import Column, DebeziumTable, KafkaRecord
from hudi_cdc.config.models import TableConfig
from hudi_cdc.decode.envelope import with_envelope
from hudi_cdc.decode.records import decode
from hudi_cdc.events import OP, ORDER, Op
from hudi_cdc.fold.tally import survey, tally
from hudi_cdc.kafka.routing import TABLE_COLUMN
from hudi_cdc.spark.lineage import release
from tests.support.decode_rows import KAFKA_COLUMNS, T0

SOURCE = DebeziumTable(
    server="s", database="d", table="t", key=["id"],
    columns=[Column("id", "int32", optional=False), Column("name", "string")],
)  # fmt: skip
TABLE = TableConfig(name="t", key=["id"], base_path="/unused")


def test_tally_and_survey_count_what_the_batch_holds(spark: SparkSession) -> None:
    message = {"op": "m", "ts_ms": 1, "source": {"lsn": 10, "ts_ms": 1}, "message": {"prefix": "a", "content": "AQ=="}}
    records = [
        (0, SOURCE.change("c", after={"id": 1, "name": "a"}, pos=100, ts_ms=5_000)),
        (0, SOURCE.change("u", after={"id": 1, "name": "b"}, pos=200, ts_ms=1_000)),
        (0, SOURCE.change("t", pos=300, ts_ms=6_000, with_key=False)),
        (0, SOURCE.tombstone({"id": 1})),
        (1, SOURCE.change("t", pos=400, ts_ms=7_000, with_key=False)),
        (1, (b'{"id": 2}', b"{not json")),
        (1, (None, json.dumps(message).encode())),
        (1, SOURCE.change("c", after={"id": 2, "name": "c"}, pos=500, ts_ms=3_000)),
    ]
    rows = [(key, value, "s.d.t", p, offset, T0) for offset, (p, (key, value)) in enumerate(records)]
    raw = spark.createDataFrame(rows, KAFKA_COLUMNS)

    received = survey(raw.withColumn(TABLE_COLUMN, F.lit("t")))["t"]
    assert (received.read, received.tombstones) == (8, 1)
    assert received.oldest == T0
    assert received.kafka.first == {"s.d.t": {"0": 0, "1": 4}}
    assert received.kafka.last == {"s.d.t": {"0": 3, "1": 7}}

    decoded = decode(raw, TABLE).cached()
    labels = spark.createDataFrame([("upsert",), ("applied",), ("upsert",)], "label string")
    try:
        counted = tally(decoded, watermark=2_000, labels=labels)
        alone = tally(decoded, watermark=2_000)
        events = decoded.events
        newest = events.filter(F.col(OP) == Op.TRUNCATE.value).agg(F.max(ORDER)).first()
    finally:
        release(decoded.parsed)
    assert counted.skipped == 1 and len(counted.skip_reasons) == 1
    assert counted.rejects_by_class == {"MalformedJson": 1}
    assert counted.truncates == 2
    assert counted.newest_truncate is not None and newest is not None
    assert counted.newest_truncate.order == newest[0]
    assert counted.newest_truncate.ts_ms == 7_000
    assert counted.newest_ts_ms == {("s.d.t", "0"): 6_000, ("s.d.t", "1"): 7_000}
    assert counted.behind_watermark == 1  # only the update at 1,000 is older than 2,000
    assert counted.events == 5  # 3 row changes and 2 truncates
    # labels are counted in the same job, apart from the decoded records
    assert counted.labelled == {"upsert": 2, "applied": 1}
    assert alone.labelled == {} and alone == replace(counted, labelled={})


WIDER = DebeziumTable(
    server="s", database="d", table="t", key=["id"],
    columns=[Column("id", "int32", optional=False), Column("name", "string"), Column("age", "int32")],
)  # fmt: skip
BARE = DebeziumTable(server="s", database="d", table="t", key=["id"], columns=SOURCE.columns, with_schema=False)


def _value(record: KafkaRecord) -> Any:
    assert record[1] is not None, "a change, not a tombstone"
    return json.loads(record[1])


def test_the_survey_finds_the_schemas_decode_would_find_and_decode_reads_the_same_events(spark: SparkSession) -> None:
    null_schema = json.dumps({"schema": None, "payload": _value(BARE.change("c", after={"id": 9}))})
    records = [  # (partition, record): the wider schema is used most, but in no single partition
        (0, SOURCE.change("c", after={"id": 1, "name": "a"}, pos=100)),
        (0, SOURCE.change("u", after={"id": 1, "name": "b"}, pos=200)),
        (0, SOURCE.change("c", after={"id": 6, "name": "g"}, pos=250)),
        (0, WIDER.change("c", after={"id": 2, "name": "c", "age": 3}, pos=300)),
        (0, WIDER.change("c", after={"id": 7, "name": "h", "age": 3}, pos=350)),
        (1, WIDER.change("u", after={"id": 2, "name": "d", "age": 4}, pos=400)),
        (1, WIDER.change("c", after={"id": 3, "name": "e", "age": 5}, pos=500)),
        (1, BARE.change("c", after={"id": 4, "name": "f"}, pos=600)),
        (1, (None, null_schema.encode())),
        (1, SOURCE.tombstone({"id": 1})),
        (1, (b'{"id": 5}', b"{not json")),
        (1, (None, json.dumps({"status": "END", "id": "571:53195832", "event_count": 2}).encode())),
    ]
    rows = [(key, value, "s.d.t", p, offset, T0) for offset, (p, (key, value)) in enumerate(records)]
    raw = spark.createDataFrame(rows, KAFKA_COLUMNS)
    routed = raw.withColumn(TABLE_COLUMN, F.lit("t")).unionByName(raw.withColumn(TABLE_COLUMN, F.lit("u")))
    table = TableConfig(name="t", key=["id"], base_path="/unused", columns={"id": "int", "name": "string"})

    received = survey(routed, schemas_of=["t"])
    wider, narrower = _value(WIDER.change("c", after={"id": 0}))["schema"], _value(SOURCE.change("c"))["schema"]
    assert [json.loads(text) for text in received["t"].envelopes or ()] == [wider, narrower]
    assert received["u"].envelopes is None  # not asked for: decode finds them
    assert (received["t"].read, received["t"].tombstones) == (12, 1)
    assert received["t"].kafka.first == {"s.d.t": {"0": 0, "1": 5}} and received["t"].kafka.last == {"s.d.t": {"0": 4, "1": 11}}

    # as the pipeline runs it: the envelope parts found once, with the batch, for the survey and decode
    enveloped = with_envelope(routed, F.col(TABLE_COLUMN) == "t")
    assert survey(enveloped, schemas_of=["t"]) == received
    once = enveloped.filter(F.col(TABLE_COLUMN) == "t").drop(TABLE_COLUMN)
    plan = decode(once, table, envelopes=received["t"].envelopes).parsed._jdf.queryExecution().analyzed()
    assert plan.toString().count("json_tuple(") == 1  # with_envelope's: decode reads its columns

    surveyed = decode(raw, table, envelopes=received["t"].envelopes).cached()
    found = decode(raw, table).cached()
    parsed_once = decode(once, table, envelopes=received["t"].envelopes).cached()
    try:
        assert surveyed.schema == found.schema == parsed_once.schema and "age" in surveyed.schema.fieldNames()
        for part in ("events", "rejects", "skipped"):
            theirs = getattr(found, part)
            for ours in (getattr(surveyed, part), getattr(parsed_once, part)):
                assert ours.count() == theirs.count() and ours.exceptAll(theirs).isEmpty(), part
        assert (surveyed.events.count(), surveyed.rejects.count(), surveyed.skipped.count()) == (9, 1, 1)
    finally:
        for result in (surveyed, found, parsed_once):
            release(result.parsed)


def test_the_survey_finds_each_tables_oldest_kafka_timestamp(spark: SparkSession) -> None:
    change = SOURCE.change("c", after={"id": 1, "name": "a"}, pos=100, ts_ms=5_000)
    at = {("a", 0): 40, ("a", 1): 10, ("b", 0): 25, ("b", 1): 20}  # seconds after T0, per table and offset
    rows = [
        (*change, f"s.d.{table}", offset, offset, T0 + dt.timedelta(seconds=seconds), table)
        for (table, offset), seconds in at.items()
    ]
    routed = spark.createDataFrame(rows, f"{KAFKA_COLUMNS}, {TABLE_COLUMN} string")
    received = survey(routed)
    assert received["a"].oldest == T0 + dt.timedelta(seconds=10)  # the partition read second holds it
    assert received["b"].oldest == T0 + dt.timedelta(seconds=20)
    # rows without a timestamp column give none
    assert survey(routed.drop("timestamp"))["a"].oldest is None


def test_events_behind_the_watermark_are_counted_exactly_wherever_it_falls(spark: SparkSession) -> None:
    # partition 0 in source-time order, partition 1 out of order; one truncate without a key
    times = [(0, 1_000), (0, 2_000), (0, 3_000), (1, 4_000), (1, 1_500), (1, 2_500)]
    records = [(p, SOURCE.change("u", after={"id": i, "name": "x"}, pos=100 + i, ts_ms=ts)) for i, (p, ts) in enumerate(times)]
    records.append((1, SOURCE.change("t", pos=900, ts_ms=500, with_key=False)))
    rows = [(key, value, "s.d.t", p, offset, T0) for offset, (p, (key, value)) in enumerate(records)]
    decoded = decode(spark.createDataFrame(rows, KAFKA_COLUMNS), TABLE).cached()
    every = [500, *(ts for _, ts in times)]
    try:
        # below every time, above every time, and straddling one or both partitions
        for watermark in (None, 400, 500, 1_200, 2_200, 3_500, 5_000):
            expected = 0 if watermark is None else sum(ts < watermark for ts in every)
            assert tally(decoded, watermark=watermark).behind_watermark == expected, watermark
    finally:
        release(decoded.parsed)


def test_a_new_watermark_compiles_no_new_code(spark: SparkSession) -> None:
    """The watermark stays out of the tally's generated code, or each batch compiled its own class."""
    records = [(0, SOURCE.change("u", after={"id": i, "name": "x"}, pos=100 + i, ts_ms=10_000 + i)) for i in range(3)]
    rows = [(key, value, "s.d.t", p, offset, T0) for offset, (p, (key, value)) in enumerate(records)]
    decoded = decode(spark.createDataFrame(rows, KAFKA_COLUMNS), TABLE).cached()
    compiled = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()  # type: ignore[union-attr]
    try:
        tally(decoded, watermark=1_000)  # compiles what the tally's plan needs
        before = compiled.getCount()
        assert tally(decoded, watermark=2_000).behind_watermark == 0
        assert tally(decoded, watermark=20_000).behind_watermark == 3
        assert compiled.getCount() == before
    finally:
        release(decoded.parsed)
