"""Producers that write Debezium's format without a binlog position (semantics §2).

Flink CDC's MySQL source fills `source.file` with "" and `source.pos` with 0 (its snapshot records
also `source.ts_ms` 0); Flink SQL's `debezium-json` format writes no `source` block at all. The
shapes below follow those producers' documented output; the values are our own.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hudi_cdc.config.models import TableConfig
from hudi_cdc.events import kafka_order, ts_order
from tests.support.decode_rows import by_offset, decode_cached, kafka_rows

TABLE = TableConfig(name="products", key=["id"], base_path="/unused", columns={"id": "int", "name": "string"})


def _flink_cdc(op: str, after: dict[str, Any], *, ts_ms: int, source_ts_ms: int) -> tuple[bytes, bytes]:
    """A change as Flink CDC's MySQL source writes it in Debezium JSON: no binlog position."""
    source = {
        "version": "1.9.7.Final", "connector": "mysql", "name": "mysql_binlog_source", "ts_ms": source_ts_ms,
        "snapshot": "false", "db": "inventory", "sequence": None, "table": "products", "server_id": 0,
        "gtid": None, "file": "", "pos": 0, "row": 0, "thread": None, "query": None,
    }  # fmt: skip
    value = {"before": None, "after": after, "source": source, "op": op, "ts_ms": ts_ms, "transaction": None}
    return json.dumps({"id": after["id"]}).encode(), json.dumps(value).encode()


def _flink_sql(op: str, after: dict[str, Any]) -> tuple[bytes, bytes]:
    """A change as Flink SQL's `debezium-json` format writes it: before, after and op only."""
    return json.dumps({"id": after["id"]}).encode(), json.dumps({"before": None, "after": after, "op": op}).encode()


def test_an_empty_binlog_file_with_position_0_is_no_position(spark: SparkSession) -> None:
    """Ordered by the event's time, then its Kafka position; before this, every one was BadOrder."""
    records = [
        _flink_cdc("r", {"id": 1, "name": "scooter"}, ts_ms=1589355606100, source_ts_ms=0),
        _flink_cdc("u", {"id": 1, "name": "car battery"}, ts_ms=1589362330904, source_ts_ms=1589362330000),
    ]
    result = decode_cached(kafka_rows(spark, records), TABLE)
    assert result.rejects.count() == 0
    events = by_offset(result.events)
    assert events[0]["_cdc_order"] == ts_order(ts_ms=0, partition=0, offset=0)
    assert events[1]["_cdc_order"] == ts_order(ts_ms=1589362330000, partition=0, offset=1)
    # the row's source text is its time, not an empty binlog position
    assert (events[0]["_cdc_source"], events[1]["_cdc_source"]) == ("0", "1589362330000")


@pytest.mark.parametrize(
    ("source", "error_class"),
    [
        ({"file": "", "pos": 7, "ts_ms": 1}, "BadOrder"),  # a position without its file: malformed
        ({"file": "mysql-bin.000003", "pos": 0, "ts_ms": 1}, None),  # the start of a real binlog file
    ],
)
def test_only_the_absent_pair_is_absent(spark: SparkSession, source: dict[str, Any], error_class: str | None) -> None:
    value = json.dumps({"op": "c", "after": {"id": 1, "name": "x"}, "source": source}).encode()
    result = decode_cached(kafka_rows(spark, [(b'{"id": 1}', value)]), TABLE)
    rejects = [r["error_class"] for r in result.rejects.collect()]
    assert rejects == ([error_class] if error_class else [])


def test_no_order_at_all_is_missing_unless_the_table_orders_by_kafka(spark: SparkSession) -> None:
    records = [_flink_sql("c", {"id": 1, "name": "a"}), _flink_sql("u", {"id": 1, "name": "b"})]
    strict = decode_cached(kafka_rows(spark, records), TABLE)
    rejects = strict.rejects.collect()
    assert [r["error_class"] for r in rejects] == ["MissingOrder", "MissingOrder"]
    assert "`ordering` to a column, or to `kafka`" in rejects[0]["error_message"]

    by_kafka = TABLE.model_copy(update={"ordering": "kafka"})
    result = decode_cached(kafka_rows(spark, records, partition=3), by_kafka)
    assert result.rejects.count() == 0
    events = by_offset(result.events)
    assert [events[o]["_cdc_order"] for o in (0, 1)] == [kafka_order(partition=3, offset=o) for o in (0, 1)]
    assert [events[o]["name"] for o in (0, 1)] == ["a", "b"]


def test_kafka_order_sorts_by_offset_within_a_partition() -> None:
    orders = [kafka_order(partition=0, offset=o) for o in (9, 10, 100, 2**40)]
    assert orders == sorted(orders)
