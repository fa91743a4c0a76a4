"""Decoding Debezium JSON (with and without the schema envelope) and patch messages."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from hudi_cdc.config import TableConfig
from hudi_cdc.decode import decode
from hudi_cdc.devtools.debezium import Column, DebeziumTable, KafkaRecord, patch_message
from hudi_cdc.events import PRESENT, binlog_order, column_order

COLUMNS = [
    Column("id", "int64", optional=False),
    Column("name", "string"),
    Column("balance", "decimal", scale=2, precision=12),
    Column("born", "date"),
    Column("updated_at", "micro_timestamp"),
    Column("profile", "json"),
]
CUSTOMERS = DebeziumTable(server="shop", database="inventory", table="customers", columns=COLUMNS, key=["id"])
TABLE = TableConfig(name="customers", key=["id"], base_path="/unused")
ROW = {
    "id": 1001,
    "name": "Sally",
    "balance": Decimal("-1234567890.12"),
    "born": dt.date(1990, 5, 17),
    "updated_at": dt.datetime(2024, 3, 1, 12, 30, 15, 123456),
    "profile": '{"vip": true}',
}


def _raw(spark: SparkSession, records: list[KafkaRecord], topic: str = "shop.inventory.customers") -> DataFrame:
    rows = [(key, value, topic, 0, offset) for offset, (key, value) in enumerate(records)]
    return spark.createDataFrame(rows, "key binary, value binary, topic string, partition int, offset long")


def _events(spark: SparkSession, records: list[KafkaRecord], table: TableConfig = TABLE) -> list[dict[str, Any]]:
    return [r.asDict() for r in decode(_raw(spark, records), table).events.orderBy("_kafka_offset").collect()]


def test_create_with_schema_envelope_maps_logical_types_exactly(spark: SparkSession) -> None:
    (event,) = _events(spark, [CUSTOMERS.change("c", after=ROW, pos=4567, row=1)])
    assert {k: event[k] for k in ROW} == ROW
    assert event["_cdc_op"] == "c"
    assert sorted(event[PRESENT]) == sorted(ROW)
    assert event["_cdc_source"] == "mysql-bin.000003:4567:1"
    assert event["_cdc_order"] == binlog_order(file_seq=3, pos=4567, row=1, snapshot=False, partition=0, offset=0)


def test_without_schema_envelope_uses_declared_columns(spark: SparkSession) -> None:
    plain = DebeziumTable(server="shop", database="inventory", table="customers", columns=COLUMNS[:2], key=["id"], with_schema=False)
    table = TableConfig(name="customers", key=["id"], base_path="/unused", columns={"id": "bigint", "name": "string"})
    (event,) = _events(spark, [plain.change("u", before=ROW, after={"id": 1001, "name": "Sal"})], table)
    assert (event["id"], event["name"], event["_cdc_op"]) == (1001, "Sal", "u")


def test_snapshot_read_sorts_before_change_at_the_same_position(spark: SparkSession) -> None:
    read, change = _events(spark, [CUSTOMERS.change("r", after=ROW, pos=900), CUSTOMERS.change("u", after=ROW, pos=900)])
    assert read["_cdc_order"] < change["_cdc_order"]


def test_delete_takes_key_from_before_and_carries_no_columns(spark: SparkSession) -> None:
    (event,) = _events(spark, [CUSTOMERS.change("d", before=ROW)])
    assert (event["id"], event["_cdc_op"], event[PRESENT]) == (1001, "d", [])


def test_delete_with_null_before_takes_key_from_kafka_key(spark: SparkSession) -> None:
    key, value = CUSTOMERS.change("d", before=ROW)
    envelope = json.loads(value or b"")
    envelope["payload"]["before"] = None
    (event,) = _events(spark, [(key, json.dumps(envelope).encode())])
    assert event["id"] == 1001


def test_minimal_image_is_a_patch_and_explicit_null_is_present(spark: SparkSession) -> None:
    (event,) = _events(spark, [CUSTOMERS.change("u", after={"id": 1001, "name": None}, partial=True)])
    assert sorted(event[PRESENT]) == ["id", "name"]
    assert event["name"] is None


def test_toast_placeholder_means_absent(spark: SparkSession) -> None:
    (event,) = _events(spark, [CUSTOMERS.change("u", after={**ROW, "profile": "__debezium_unavailable_value"})])
    assert "profile" not in event[PRESENT] and "name" in event[PRESENT]


def test_patch_message_orders_by_configured_column(spark: SparkSession) -> None:
    table = TableConfig(
        name="people", key=["id"], base_path="/unused", mode="patch", ordering="ts",
        columns={"id": "bigint", "age": "int", "name": "string"},
    )  # fmt: skip
    (event,) = _events(spark, [patch_message({"id": 123}, 1435290195610, {"age": 25})], table)
    assert (event["id"], event["age"], sorted(event[PRESENT])) == (123, 25, ["age", "id"])
    assert event["_cdc_order"] == column_order(value=1435290195610, partition=0, offset=0)


def test_tombstones_are_separated(spark: SparkSession) -> None:
    result = decode(_raw(spark, [CUSTOMERS.change("c", after=ROW), CUSTOMERS.tombstone(ROW)]), TABLE)
    assert (result.events.count(), result.tombstones.count(), result.rejects.count()) == (1, 1, 0)


@pytest.mark.parametrize(
    ("value", "error_class"),
    [
        pytest.param(b"{not json", "MalformedJson", id="malformed"),
        pytest.param(json.dumps({"after": {"id": 1}, "source": {"ts_ms": 1}}).encode(), "MissingOp", id="no-op"),
        pytest.param(json.dumps({"op": "x", "after": {"id": 1}, "ts_ms": 1}).encode(), "UnknownOp", id="unknown-op"),
        pytest.param(json.dumps({"op": "c", "after": {"name": "x"}, "ts_ms": 1}).encode(), "MissingKey", id="no-key"),
        pytest.param(json.dumps({"op": "c", "after": {"id": "abc"}, "ts_ms": 1}).encode(), "BadValue", id="bad-type"),
    ],
)
def test_bad_records_are_rejected_with_position_and_the_batch_goes_on(spark: SparkSession, value: bytes, error_class: str) -> None:
    table = TableConfig(name="customers", key=["id"], base_path="/unused", columns={"id": "bigint", "name": "string"})
    good = CUSTOMERS.change("c", after=ROW)
    result = decode(_raw(spark, [good, (None, value)]), table)
    (reject,) = result.rejects.collect()
    assert reject["error_class"] == error_class
    assert reject["offset"] == 1 and "shop.inventory.customers[0]@1" in reject["error_message"]
    assert "customers" in reject["error_message"] and reject["value"] == value
    assert result.events.count() == 1
