"""A decimal that does not convert is rejected with the reason that applies to the value sent."""

from __future__ import annotations

import base64
import json
from typing import Any

from pyspark.sql import SparkSession

from hudi_cdc.config.models import TableConfig
from tests.support.decode_rows import by_offset, decode_cached, kafka_rows

DECIMAL = "org.apache.kafka.connect.data.Decimal"
# no `connect.decimal.precision`: as Debezium writes a DECIMAL column without a declared precision
SCHEMA = {
    "type": "struct",
    "fields": [
        {"field": "after", "type": "struct", "optional": True, "fields": [
            {"field": "id", "type": "int64"},
            {"field": "price", "type": "bytes", "name": DECIMAL, "parameters": {"scale": "2"}, "optional": True},
        ]},
        {"field": "op", "type": "string"},
        {"field": "ts_ms", "type": "int64", "optional": True},
    ],
}  # fmt: skip
TABLE = TableConfig(name="items", key=["id"], base_path="/unused")


def _record(offset: int, price: Any) -> tuple[bytes, bytes]:
    payload = {"after": {"id": offset, "price": price}, "op": "c", "ts_ms": 1000 + offset}
    return json.dumps({"id": offset}).encode(), json.dumps({"schema": SCHEMA, "payload": payload}).encode()


def test_a_json_number_where_the_schema_says_bytes_is_named_as_such(spark: SparkSession) -> None:
    unscaled = (1234567890123).to_bytes(6, "big", signed=True)
    records = [
        _record(0, base64.b64encode(unscaled).decode()),  # as JsonConverter writes it: converts
        _record(1, 12345678901),  # a number (decimal.format=NUMERIC): 11 digits, not "more than 38"
        _record(2, "not base64!"),  # text that is no base64: the type's own reason
    ]
    result = decode_cached(kafka_rows(spark, records), TABLE)
    assert str(by_offset(result.events)[0]["price"]) == "12345678901.23"
    rejects = by_offset(result.rejects)
    assert sorted(rejects) == [1, 2] and {r["error_class"] for r in rejects.values()} == {"BadValue"}
    number = rejects[1]["error_message"]
    assert "a JSON number where the record's schema says bytes" in number and "decimal.format" in number
    assert "38 digits" not in number
    assert "a JSON number" not in rejects[2]["error_message"]
