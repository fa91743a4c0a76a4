"""Avro change events (Confluent wire format, schemas in a real Apicurio Registry)
decode to exactly the events the same changes give as JSON; unreadable ones are dead-lettered.

The corpus is built once as JsonConverter records (devkit.debezium) and re-encoded as the
AvroConverter writes them (devkit.debezium_avro), so both encodings carry the same logical events.
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import SparkSession

from devkit.debezium import KafkaRecord
from devkit.debezium_avro import frame, to_avro
from devkit.services.registry import LocalRegistry
from hudi_cdc.avro.registry import SchemaFetcher
from hudi_cdc.avro.wire import avro_as_json
from hudi_cdc.config.models import SchemaRegistry, TableConfig
from hudi_cdc.decode.records import DecodeResult
from tests.support.avro_corpus import corpus, id_in_headers
from tests.support.decode_rows import KAFKA_COLUMNS, T0, decode_cached, kafka_rows

pytestmark = pytest.mark.integration

HEADERS_COLUMN = "headers array<struct<key:string,value:binary>>"


def _fetcher(registry: LocalRegistry, **kw: Any) -> SchemaFetcher:
    return SchemaFetcher(SchemaRegistry(url=registry.ccompat_url, **kw))


def _decode_avro(spark: SparkSession, registry: LocalRegistry, records: list[KafkaRecord], table: TableConfig, topic: str) -> DecodeResult:
    return decode_cached(avro_as_json(kafka_rows(spark, records, topic), table, _fetcher(registry)), table)


def _events(result: DecodeResult) -> list[dict[str, Any]]:
    return sorted((r.asDict(recursive=True) for r in result.events.collect()), key=lambda r: r["_kafka_offset"])


# deep: test_avro_pipeline feeds the same corpus through the whole job in `make test`
@pytest.mark.deep
def test_avro_and_json_decode_to_identical_events(spark: SparkSession, registry: LocalRegistry) -> None:
    server = f"srv{uuid.uuid4().hex[:8]}"
    topic = f"{server}.db.t"
    json_records = corpus(server)
    avro_records = [to_avro(r, topic=topic, register=registry.register) for r in json_records]
    json_table = TableConfig(name="t", key=["id"], base_path="/unused")
    avro_table = TableConfig(name="t", key=["id"], base_path="/unused", format="avro")

    from_json = decode_cached(kafka_rows(spark, json_records, topic), json_table)
    from_avro = _decode_avro(spark, registry, avro_records, avro_table, topic)

    assert from_json.rejects.count() == 0, from_json.rejects.collect()
    assert from_avro.rejects.count() == 0, from_avro.rejects.collect()
    assert from_avro.schema == from_json.schema
    assert "note" in from_avro.schema.fieldNames()
    expected = _events(from_json)
    assert len(expected) == 9
    assert _events(from_avro) == expected
    assert sorted(r["offset"] for r in from_avro.tombstones.collect()) == [5]
    # spot checks that the comparison compares something exact
    by_id = {e["id"]: e for e in expected if e["_cdc_op"] != "d"}
    assert by_id[4]["anything"] == "1000" and by_id[1]["note"] == "added"
    assert by_id[1]["balance"] == Decimal("-1234567890.12") and by_id[1]["wide"] == Decimal("12345678901234567890123456.7891")
    assert by_id[1]["seen_ns"] == dt.datetime(1969, 12, 31, 23, 59, 59, 999998)


@pytest.mark.deep
def test_json_key_with_avro_value(spark: SparkSession, registry: LocalRegistry) -> None:
    server = f"srv{uuid.uuid4().hex[:8]}"
    topic = f"{server}.db.t"
    json_records = corpus(server)[:3]
    mixed = [to_avro(r, topic=topic, register=registry.register, key=False) for r in json_records]
    table = TableConfig(name="t", key=["id"], base_path="/unused", format="avro", key_format="json")
    result = _decode_avro(spark, registry, mixed, table, topic)
    assert result.rejects.count() == 0
    assert _events(result) == _events(decode_cached(kafka_rows(spark, json_records, topic), TableConfig(name="t", key=["id"], base_path="/unused")))


def test_unreadable_avro_is_dead_lettered_with_its_reason(spark: SparkSession, registry: LocalRegistry) -> None:
    server = f"srv{uuid.uuid4().hex[:8]}"
    topic = f"{server}.db.t"
    good_key, good_value = to_avro(corpus(server)[1], topic=topic, register=registry.register)
    assert good_value is not None
    known_id = int.from_bytes(good_value[1:5], "big")
    records: list[KafkaRecord] = [
        (good_key, good_value),
        (good_key, frame(2_000_000_000, good_value[5:])),  # an id the registry never gave out
        (good_key, frame(known_id, b"\x02")),  # a body that ends too early
        (good_key, b'{"schema": null, "payload": {}}'),  # JSON where Avro is configured
        (good_key, b"\x00\x00"),  # too short to hold a schema id
    ]
    table = TableConfig(name="t", key=["id"], base_path="/unused", format="avro")
    result = _decode_avro(spark, registry, records, table, topic)
    assert [e["_kafka_offset"] for e in _events(result)] == [0]
    rejects = {r["offset"]: r for r in result.rejects.collect()}
    assert sorted(rejects) == [1, 2, 3, 4]
    assert {r["error_class"] for r in rejects.values()} == {"AvroDecodeError"}
    assert "unknown schema id 2000000000" in rejects[1]["error_message"]
    assert f"does not decode with its writer schema (id {known_id})" in rejects[2]["error_message"]
    assert "not in the Avro wire format (first byte 0x7B" in rejects[3]["error_message"]
    assert "not in the Avro wire format (first byte 0x00" in rejects[4]["error_message"]
    # the dead-letter store keeps the bytes as they were read from Kafka
    assert rejects[1]["value"] == frame(2_000_000_000, good_value[5:]) and rejects[1]["key"] == good_key


def test_auto_format_reads_json_and_avro_in_one_batch(spark: SparkSession, registry: LocalRegistry) -> None:
    server = f"srv{uuid.uuid4().hex[:8]}"
    topic = f"{server}.db.t"
    json_records = corpus(server)
    mixed = [to_avro(r, topic=topic, register=registry.register) if i % 2 else r for i, r in enumerate(json_records)]
    table = TableConfig(name="t", key=["id"], base_path="/unused", format="auto")
    result = _decode_avro(spark, registry, mixed, table, topic)
    assert result.rejects.count() == 0
    assert _events(result) == _events(decode_cached(kafka_rows(spark, json_records, topic), TableConfig(name="t", key=["id"], base_path="/unused")))


def test_ids_in_apicurio_headers_decode_like_the_wire_format(spark: SparkSession, registry: LocalRegistry) -> None:
    """Apicurio's default framing: bare Avro bodies, the ids in Kafka headers, resolved through its
    own API beside the ccompat URL; `format: auto` knows them by the header (a bare body may start
    with 0x00 or any byte). An id the registry does not know is dead-lettered with the headers kept."""
    server = f"srv{uuid.uuid4().hex[:8]}"
    topic = f"{server}.db.t"
    json_records = corpus(server)
    avro_records = [to_avro(r, topic=topic, register=registry.register) for r in json_records]
    in_headers = [id_in_headers(r) for r in avro_records]
    unknown = (in_headers[1][0], in_headers[1][1], [("apicurio.value.globalId", (2_000_000_000).to_bytes(8, "big"))])
    rows = [(k, v, topic, 0, o, T0 + dt.timedelta(seconds=o), h) for o, (k, v, h) in enumerate([*in_headers, unknown])]
    raw = spark.createDataFrame(rows, f"{KAFKA_COLUMNS}, {HEADERS_COLUMN}")
    expected = _events(decode_cached(kafka_rows(spark, json_records, topic), TableConfig(name="t", key=["id"], base_path="/unused")))
    # `auto`: the header alone makes a record Avro (`format: avro` reads them in the live tests)
    table = TableConfig(name="t", key=["id"], base_path="/unused", format="auto")
    result = decode_cached(avro_as_json(raw, table, _fetcher(registry)), table)
    assert _events(result) == expected
    (reject,) = result.rejects.collect()
    assert reject["offset"] == len(in_headers) and reject["error_class"] == "AvroDecodeError"
    assert "unknown schema id 2000000000 (Apicurio globalId" in reject["error_message"]
    assert reject["headers"] == unknown[2] and reject["value"] == unknown[1]
