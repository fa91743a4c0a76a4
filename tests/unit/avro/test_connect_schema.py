"""Avro writer schemas (as AvroData writes them) -> the Connect schema the JSON path reads, and the
schema from_avro decodes with (logical types stripped so values keep the JsonConverter's encoding)."""

from __future__ import annotations

import json

import pytest

from devkit.debezium import Column, DebeziumTable
from devkit.debezium_avro import avro_schema
from hudi_cdc.avro.connect_schema import AvroSchemaError, connect_schema, required_fields, spark_schema
from hudi_cdc.decode.debezium_types import column_type, row_fields

COLUMNS = [
    Column("id", "int32", optional=False),
    Column("small", "int16"),
    Column("balance", "decimal", scale=2, precision=12),
    Column("anything", "variable_decimal"),
    Column("born", "date"),
    Column("seen", "micro_timestamp"),
    Column("zoned", "zoned_timestamp"),
]


def _envelope_schema() -> dict[str, object]:
    table = DebeziumTable(server="s", database="db", table="t", columns=COLUMNS, key=["id"])
    _, value = table.change("c", after={"id": 1})
    assert value is not None
    return json.loads(value)["schema"]  # type: ignore[no-any-return]


def test_round_trip_gives_the_same_column_types() -> None:
    connect = _envelope_schema()
    avro = json.dumps(avro_schema({**connect, "optional": False}))
    rebuilt = connect_schema(avro)
    assert [f["field"] for f in rebuilt["fields"]] == ["before", "after", "source", "op", "ts_ms"]
    # `after` is a reference by name to the record `before` defined: it resolves to the same columns
    original = {f["field"]: column_type(f) for f in row_fields(connect)}
    assert {f["field"]: column_type(f) for f in row_fields(rebuilt)} == original
    by_name = {f["field"]: f for f in row_fields(rebuilt)}
    assert by_name["balance"]["parameters"] == {"scale": "2", "connect.decimal.precision": "12"}
    assert by_name["small"]["type"] == "int16" and by_name["id"]["optional"] is False
    assert by_name["born"]["optional"] is True


def test_spark_schema_has_no_logical_types() -> None:
    avro = json.dumps(avro_schema({**_envelope_schema(), "optional": False}))
    assert '"logicalType"' in avro
    stripped = spark_schema(avro)
    assert "logicalType" not in stripped and '"connect.name":"org.apache.kafka.connect.data.Decimal"' in stripped


@pytest.mark.parametrize(
    "schema",
    ['"string"', '{"type": "record", "name": "r", "fields": [{"name": "x", "type": ["int", "string"]}]}'],
    ids=["not-a-record", "real-union"],
)
def test_schemas_without_a_connect_equivalent_are_refused(schema: str) -> None:
    with pytest.raises(AvroSchemaError):
        connect_schema(schema)


def test_required_fields_are_the_non_nullable_top_level_ones() -> None:
    avro = json.dumps(avro_schema({**_envelope_schema(), "optional": False}))
    assert required_fields(avro) == ("source", "op")
