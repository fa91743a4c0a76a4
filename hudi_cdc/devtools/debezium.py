"""Build Debezium JSON change records (key bytes, value bytes) for the demo, tests and benchmarks.

The shapes follow the Debezium MySQL/MariaDB connector's JSON converter output: an envelope
`{"schema": ..., "payload": {"before", "after", "source", "op", "ts_ms"}}` when
`schemas.enable=true`, and the bare payload otherwise. Logical types are encoded as Debezium
encodes them (Decimal as base64 two's-complement bytes, MicroTimestamp as epoch µs, ...).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

KafkaRecord = tuple[bytes | None, bytes | None]

# Column kinds this builder can encode: name -> (connect type, logical name or None)
_KINDS: dict[str, tuple[str, str | None]] = {
    "int32": ("int32", None),
    "int64": ("int64", None),
    "float64": ("float64", None),
    "boolean": ("boolean", None),
    "string": ("string", None),
    "decimal": ("bytes", "org.apache.kafka.connect.data.Decimal"),
    "date": ("int32", "io.debezium.time.Date"),
    "micro_timestamp": ("int64", "io.debezium.time.MicroTimestamp"),
    "timestamp": ("int64", "io.debezium.time.Timestamp"),
    "zoned_timestamp": ("string", "io.debezium.time.ZonedTimestamp"),
    "json": ("string", "io.debezium.data.Json"),
    "enum": ("string", "io.debezium.data.Enum"),
}
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Column:
    """One source column: its kind (see _KINDS) and, for decimals, the scale."""

    name: str
    kind: str
    scale: int = 0
    precision: int = 10
    optional: bool = True


def encode_decimal(value: Decimal, scale: int) -> str:
    """Connect Decimal: the unscaled integer as big-endian two's-complement bytes, base64."""
    unscaled = int(value.scaleb(scale))
    size = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


def _encode(column: Column, value: Any) -> Any:
    if value is None:
        return None
    if column.kind == "decimal":
        return encode_decimal(Decimal(value), column.scale)
    if column.kind == "date":
        return (value - dt.date(1970, 1, 1)).days
    if column.kind == "micro_timestamp":
        delta = value.replace(tzinfo=dt.UTC) - EPOCH
        return delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds
    if column.kind == "timestamp":
        return int((value.replace(tzinfo=dt.UTC) - EPOCH).total_seconds() * 1000)
    if column.kind == "zoned_timestamp":
        return value.isoformat().replace("+00:00", "Z")
    return value


def _field_schema(column: Column) -> dict[str, Any]:
    connect_type, logical = _KINDS[column.kind]
    schema: dict[str, Any] = {"type": connect_type, "optional": column.optional, "field": column.name}
    if logical:
        schema["name"] = logical
        schema["version"] = 1
    if column.kind == "decimal":
        schema["parameters"] = {"scale": str(column.scale), "connect.decimal.precision": str(column.precision)}
    return schema


@dataclass
class DebeziumTable:
    """A source table whose changes are encoded as one Debezium connector would."""

    server: str
    database: str
    table: str
    columns: list[Column]
    key: list[str]
    with_schema: bool = True
    connector: str = "mysql"
    _row_schema: dict[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._row_schema = {
            "type": "struct",
            "fields": [_field_schema(c) for c in self.columns],
            "optional": True,
            "name": f"{self.topic}.Value",
        }

    @property
    def topic(self) -> str:
        return f"{self.server}.{self.database}.{self.table}"

    def _image(self, row: dict[str, Any] | None, *, partial: bool = False) -> dict[str, Any] | None:
        if row is None:
            return None
        columns = [c for c in self.columns if not partial or c.name in row]
        return {c.name: _encode(c, row.get(c.name)) for c in columns}

    def _key(self, row: dict[str, Any]) -> bytes:
        key_columns = [c for c in self.columns if c.name in self.key]
        payload = {c.name: _encode(c, row[c.name]) for c in key_columns}
        if not self.with_schema:
            return json.dumps(payload).encode()
        schema = {"type": "struct", "fields": [_field_schema(c) for c in key_columns], "name": f"{self.topic}.Key"}
        return json.dumps({"schema": schema, "payload": payload}).encode()

    def change(
        self,
        op: str,
        *,
        before: dict[str, Any] | None = None,
        after: dict[str, Any] | None = None,
        file: str = "mysql-bin.000003",
        pos: int = 154,
        row: int = 0,
        ts_ms: int = 1_700_000_000_000,
        snapshot: str | None = None,
        partial: bool = False,
        with_key: bool = True,
    ) -> KafkaRecord:
        """One change record. `partial=True` writes only the columns given in `after` (a minimal image)."""
        source: dict[str, Any] = {
            "version": "3.5.0.Final",
            "connector": self.connector,
            "name": self.server,
            "ts_ms": ts_ms,
            "snapshot": snapshot or ("true" if op == "r" else "false"),
            "db": self.database,
            "table": self.table,
            "server_id": 223344,
            "file": file,
            "pos": pos,
            "row": row,
        }
        payload = {
            "before": self._image(before),
            "after": self._image(after, partial=partial),
            "source": source,
            "op": op,
            "ts_ms": ts_ms + 7,
            "transaction": None,
        }
        keyed = after if after is not None else before
        key = self._key(keyed) if with_key and keyed is not None else None
        if not self.with_schema:
            return key, json.dumps(payload).encode()
        schema = {
            "type": "struct",
            "fields": [
                {**self._row_schema, "field": "before"},
                {**self._row_schema, "field": "after"},
                {"type": "struct", "fields": [], "optional": False, "name": "io.debezium.connector.mysql.Source", "field": "source"},
                {"type": "string", "optional": False, "field": "op"},
                {"type": "int64", "optional": True, "field": "ts_ms"},
            ],
            "optional": False,
            "name": f"{self.topic}.Envelope",
        }
        return key, json.dumps({"schema": schema, "payload": payload}).encode()

    def tombstone(self, row: dict[str, Any]) -> KafkaRecord:
        """The null-value record Debezium sends after a delete (for log compaction)."""
        return self._key(row), None


def patch_message(key: dict[str, Any], ts: int, data: dict[str, Any], *, patch_field: str = "data") -> KafkaRecord:
    """A patch-style message, e.g. {"id": 123, "ts": 1435290195610, "data": {"age": 25}}."""
    return json.dumps(key).encode(), json.dumps({**key, "ts": ts, patch_field: data}).encode()
