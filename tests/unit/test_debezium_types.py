"""Every Debezium logical type decodes exactly (shapes as in the Debezium connector docs' JSON events)."""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hudi_cdc.config import TableConfig
from hudi_cdc.decode import decode


def _field(name: str, kind: str, logical: str | None = None, **params: str) -> dict[str, Any]:
    field: dict[str, Any] = {"type": kind, "optional": True, "field": name}
    if logical:
        field["name"] = logical
    if params:
        field["parameters"] = params
    return field


FIELDS = [
    _field("id", "int32"),
    _field("t_ms", "int32", "io.debezium.time.Time"),
    _field("t_us", "int64", "io.debezium.time.MicroTime"),
    _field("t_ns", "int64", "io.debezium.time.NanoTime"),
    _field("ts_ms", "int64", "io.debezium.time.Timestamp"),
    _field("ts_ns", "int64", "io.debezium.time.NanoTimestamp"),
    _field("ts_zoned", "string", "io.debezium.time.ZonedTimestamp"),
    _field("num", "struct", "io.debezium.data.VariableScaleDecimal"),
    _field("money", "bytes", "org.apache.kafka.connect.data.Decimal", scale="4", **{"connect.decimal.precision": "20"}),
    _field("year", "int32", "io.debezium.time.Year"),
    _field("blob", "bytes"),
    _field("flag", "boolean"),
    _field("ratio", "double"),
]


def _b64(value: int) -> str:
    return base64.b64encode(value.to_bytes(max(1, (value.bit_length() + 8) // 8), "big", signed=True)).decode()


AFTER = {
    "id": 7,
    "t_ms": 45_296_789,  # 12:34:56.789
    "t_us": 45_296_789_123,
    "t_ns": 45_296_789_123_456,
    "ts_ms": 1_700_000_000_123,
    "ts_ns": 1_700_000_000_123_456_789,
    "ts_zoned": "2024-03-01T12:30:15.5+02:00",
    "num": {"scale": 3, "value": _b64(-1234567)},
    "money": _b64(123_456_789_012_345),
    "year": 2024,
    "blob": base64.b64encode(b"\x00\xffhi").decode(),
    "flag": True,
    "ratio": 0.25,
}
EXPECTED = {
    "t_ms": "12:34:56.789000",
    "t_us": "12:34:56.789123",
    "t_ns": "12:34:56.789123",
    "ts_ms": dt.datetime(2023, 11, 14, 22, 13, 20, 123000),
    "ts_ns": dt.datetime(2023, 11, 14, 22, 13, 20, 123456),
    "ts_zoned": dt.datetime(2024, 3, 1, 10, 30, 15, 500000),
    "num": "-1234.567",
    "money": Decimal("12345678901.2345"),
    "year": 2024,
    "blob": bytearray(b"\x00\xffhi"),
    "flag": True,
    "ratio": 0.25,
}


@pytest.fixture(scope="module")
def event(spark: SparkSession) -> Any:
    """One Debezium create event carrying every type, decoded once."""
    row_schema = {"type": "struct", "fields": FIELDS, "optional": True, "name": "srv.db.t.Value"}
    envelope = {
        "schema": {"type": "struct", "fields": [{**row_schema, "field": "before"}, {**row_schema, "field": "after"}]},
        "payload": {"before": None, "after": AFTER, "op": "c", "ts_ms": 1, "source": {"ts_ms": 1, "file": "bin.000001", "pos": 4, "row": 0}},
    }
    raw = spark.createDataFrame([(None, json.dumps(envelope).encode(), "srv.db.t", 0, 0)], "key binary, value binary, topic string, partition int, offset long")
    (decoded,) = decode(raw, TableConfig(name="t", key=["id"], base_path="/unused")).events.collect()
    return decoded


@pytest.mark.parametrize("column", list(EXPECTED))
def test_logical_type_decodes_exactly(event: Any, column: str) -> None:
    assert event[column] == EXPECTED[column]
