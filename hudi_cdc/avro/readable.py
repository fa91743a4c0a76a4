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

from hudi_cdc.avro.registry import SchemaFetcher
from hudi_cdc.errors import RegistryUnavailableError


class AvroBodies:
    """Decodes framed Avro bytes (0x00, schema id, body) with the writer schema from the registry."""

    def __init__(self, fetcher: SchemaFetcher) -> None:
        self.fetcher = fetcher

    def decode(self, raw: bytes) -> dict[str, Any] | None:
        """{"avro_schema_id", "avro"} for a readable record; with an "error" when not; None if not framed."""
        if len(raw) < 5 or raw[0] != 0:
            return None
        schema_id = int.from_bytes(raw[1:5], "big")
        unread = {"avro_schema_id": schema_id, "base64": base64.b64encode(raw).decode("ascii")}
        try:
            text = self.fetcher.schema(schema_id)
        except RegistryUnavailableError as exc:
            return {**unread, "error": f"registry unavailable: {exc.reason}"}
        if text is None:
            return {**unread, "error": "unknown schema id"}
        try:
            datum = fastavro.schemaless_reader(io.BytesIO(raw[5:]), fastavro.parse_schema(json.loads(text)))
        except Exception as exc:  # a body that does not match its schema: show why, keep the bytes
            return {**unread, "error": f"body does not decode: {type(exc).__name__}: {exc}"}
        return {"avro_schema_id": schema_id, "avro": _plain(datum)}


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
