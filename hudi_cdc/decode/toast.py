"""PostgreSQL's unchanged-TOAST placeholder in every shape Debezium sends it.

An update that leaves a TOASTed (stored out of line) column alone does not carry its value.
Debezium's PostgreSQL connector then sends its `unavailable.value.placeholder` (default
`__debezium_unavailable_value`) converted to the column's type. Each of these values means
"absent" (decode leaves the column out of PRESENT), never a value to store.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid

from hudi_cdc.events import DEFAULT_PLACEHOLDER, placeholder_bytes


def _compact(value: object) -> str:
    """JSON as Spark's reader hands a nested value to a map<string,string> (no spaces, text unescaped)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def toast_values(setting: str = DEFAULT_PLACEHOLDER) -> tuple[str, ...]:
    """Each shape of the placeholder as decode reads a column's raw JSON value.

    Read off the live Debezium 3.5 connector (tests/integration/test_postgres_to_hudi.py).
    Debezium sends NULL instead for smallint[], numeric[] and timestamptz[] columns: such a
    NULL cannot be told from a real one.
    """
    raw = placeholder_bytes(setting)
    # Debezium turns the bytes into text with Java's `new String(bytes)` (UTF-8)
    text = raw.decode("utf-8", errors="replace")
    as_base64 = base64.b64encode(raw).decode()
    # Java's UUID.nameUUIDFromBytes: an MD5 name-based (version 3) UUID
    as_uuid = str(uuid.UUID(bytes=hashlib.md5(raw, usedforsecurity=False).digest(), version=3))
    # Java bytes are signed: int[]/bigint[] placeholders hold each byte as -128..127
    as_numbers = [b - 256 if b > 127 else b for b in raw]
    return (
        text,  # text, varchar, json, jsonb, xml
        as_base64,  # bytea
        _compact([text]),  # text[]
        _compact([as_base64]),  # bytea[]
        _compact(as_numbers),  # int[], bigint[], date[]
        _compact([as_uuid]),  # uuid[]
        _compact({text: text}),  # hstore, as JSON text or as a map
    )
