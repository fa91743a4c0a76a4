"""Avro dead-letter bodies made readable for `hudi-cdc dead-letters show` (Python side, fastavro).

Only the CLI uses it, on the few records it prints: the data path decodes Avro in Spark.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
from decimal import Decimal
from typing import Any

import fastavro

from hudi_cdc.avro.registry import SchemaFetcher, SchemaRef
from hudi_cdc.avro.wire import HEADER_ID_KINDS, id_header
from hudi_cdc.errors import RegistryUnavailableError


class AvroBodies:
    """Decodes Avro bytes with the writer schema from the registry: framed (0x00, schema id, body),
    or a bare body whose id Apicurio's serializer put in a header (`header_ref`)."""

    def __init__(self, fetcher: SchemaFetcher) -> None:
        self.fetcher = fetcher

    def decode(self, raw: bytes, header_ref: SchemaRef | None = None) -> dict[str, Any] | None:
        """{"avro_schema_id", "avro"} for a readable record; with an "error" when not; None if
        neither framed nor named by a header."""
        if header_ref is not None:
            ref, body = header_ref, raw
        elif len(raw) >= 5 and raw[0] == 0:
            ref, body = SchemaRef("ccompat", int.from_bytes(raw[1:5], "big")), raw[5:]
        else:
            return None
        shown: Any = ref.id if ref.kind == "ccompat" else str(ref)
        unread = {"avro_schema_id": shown, "base64": base64.b64encode(raw).decode("ascii")}
        try:
            text = self.fetcher.schema(ref)
        except RegistryUnavailableError as exc:
            return {**unread, "error": f"registry unavailable: {exc.reason}"}
        if text is None:
            return {**unread, "error": "unknown schema id"}
        try:
            datum = fastavro.schemaless_reader(io.BytesIO(body), fastavro.parse_schema(json.loads(text)))
        except Exception as exc:  # a body that does not match its schema: show why, keep the bytes
            return {**unread, "error": f"body does not decode: {type(exc).__name__}: {exc}"}
        return {"avro_schema_id": shown, "avro": _plain(datum)}


def header_ref(headers: list[Any] | None, side: str) -> SchemaRef | None:
    """The schema an Apicurio id header names for `side` (key or value), the last of its name;
    None without one. `headers`: (key, value bytes) pairs in record order."""
    found: SchemaRef | None = None
    for name, value in headers or []:
        for kind in HEADER_ID_KINDS:
            if name == id_header(side, kind) and value is not None and len(value) == 8:
                found = SchemaRef(kind, int.from_bytes(value, "big"))
    return found


def _plain(value: Any) -> Any:
    """JSON-ready: bytes as base64, decimals as exact text, dates and times as ISO-8601."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (dt.date, dt.time, dt.datetime)):
        return value.isoformat()
    return value
