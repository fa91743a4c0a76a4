"""A template table's key from one Kafka key: Debezium keys records by the primary key's columns."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest

from hudi_cdc.avro.registry import SchemaFetcher
from hudi_cdc.config.models import SchemaRegistry, TableConfig
from hudi_cdc.decode.key_fields import KeyUnknown, key_fields
from tests.support.registry_fakes import API, FakeRegistry, RegistryHandler

JSON_TABLE = TableConfig(name="t", key=["stand_in"], base_path="/t")
AVRO_TABLE = TableConfig(name="t", key=["stand_in"], base_path="/t", format="avro")


@pytest.mark.parametrize(
    ("key", "fields"),
    [
        pytest.param(  # JsonConverter with schemas: the schema's order
            {"schema": {"type": "struct", "fields": [{"field": "tenant", "type": "int32"}, {"field": "id", "type": "int64"}]},
             "payload": {"id": 7, "tenant": 1}},
            ["tenant", "id"], id="envelope",
        ),
        pytest.param({"schema": None, "payload": {"order_id": 3}}, ["order_id"], id="envelope-without-schema"),
        pytest.param({"id": 1, "region": "eu"}, ["id", "region"], id="schemaless"),
    ],
)
def test_json_keys_give_their_fields_in_order(key: object, fields: list[str]) -> None:
    assert key_fields(json.dumps(key).encode(), JSON_TABLE, None) == fields


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        (None, "no Kafka key"),
        (b"", "no Kafka key"),
        (b"not json", "not JSON"),
        (b"[1, 2]", "JSON list"),
        (b"{}", "not column names"),
    ],
)
def test_keys_without_fields_say_why(key: bytes | None, reason: str) -> None:
    with pytest.raises(KeyUnknown, match=reason):
        key_fields(key, JSON_TABLE, None)


@pytest.fixture
def registry() -> Iterator[SchemaFetcher]:
    server = FakeRegistry(("127.0.0.1", 0), RegistryHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield SchemaFetcher(SchemaRegistry(url=f"http://127.0.0.1:{server.server_port}{API}"))
    finally:
        server.shutdown()


def test_a_confluent_framed_avro_key_gives_its_writer_schemas_fields(registry: SchemaFetcher) -> None:
    framed = b"\x00" + (1).to_bytes(4, "big") + b"\x02"
    assert key_fields(framed, AVRO_TABLE, registry) == ["id", "amount"]
    with pytest.raises(KeyUnknown, match="does not know the key's schema id 9"):
        key_fields(b"\x00" + (9).to_bytes(4, "big") + b"\x02", AVRO_TABLE, registry)
    with pytest.raises(KeyUnknown, match="no `schema_registry`"):
        key_fields(framed, AVRO_TABLE, None)
