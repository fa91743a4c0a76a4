"""`dead-letters show` decodes Avro bodies with their writer schema (fastavro), and says why not."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from decimal import Decimal

import fastavro

from devkit.debezium_avro import frame
from hudi_cdc.avro.readable import AvroBodies, header_ref
from hudi_cdc.avro.registry import SchemaFetcher, SchemaRef
from hudi_cdc.config.models import SchemaRegistry
from hudi_cdc.dead_letters.ops import decode_bytes
from tests.support.registry_fakes import API, SCHEMA, FakeRegistry


def _bodies(server: FakeRegistry) -> AvroBodies:
    url = f"http://127.0.0.1:{server.server_address[1]}{API}"
    return AvroBodies(SchemaFetcher(SchemaRegistry(url=url, retry_budget=timedelta(seconds=0.2))))


def test_avro_values_are_shown_decoded(fake: FakeRegistry) -> None:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(SCHEMA)), {"id": 7, "amount": Decimal("-1.25")})
    shown = decode_bytes(frame(1, out.getvalue()), avro=_bodies(fake))
    assert shown == {"avro_schema_id": 1, "avro": {"id": 7, "amount": "-1.25"}}


def test_unreadable_avro_says_why_and_keeps_the_bytes(fake: FakeRegistry) -> None:
    bodies = _bodies(fake)
    assert decode_bytes(frame(9, b"\x02"), avro=bodies)["error"] == "unknown schema id"
    assert decode_bytes(frame(1, b"\x02"), avro=bodies)["error"].startswith("body does not decode")
    # JSON is not framed: shown as before
    assert decode_bytes(b'{"a": 1}', avro=bodies) == {"a": 1}


def test_a_bare_body_named_by_an_apicurio_header_is_shown_decoded(fake: FakeRegistry) -> None:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(SCHEMA)), {"id": 8, "amount": Decimal("0.50")})
    headers = [("apicurio.key.globalId", (99).to_bytes(8, "big")), ("apicurio.value.globalId", (11).to_bytes(8, "big"))]
    ref = header_ref(headers, "value")
    assert ref == SchemaRef("globalId", 11) and header_ref(headers[:1], "value") is None
    shown = decode_bytes(out.getvalue(), avro=_bodies(fake), header_ref=ref)
    assert shown == {"avro_schema_id": "globalId:11", "avro": {"id": 8, "amount": "0.50"}}
