"""Build Debezium JSON change records (key bytes, value bytes) for the demo, tests and benchmarks.

The shapes follow what the Debezium MySQL/MariaDB and PostgreSQL connectors write through Kafka
Connect's JsonConverter: an envelope `{"schema": ..., "payload": {"before", "after", "source",
"op", "ts_ms", "transaction"}}` when `schemas.enable=true`, the bare payload otherwise. Logical
types are encoded as Debezium encodes them (Decimal as base64 two's-complement bytes,
MicroTimestamp as epoch µs, Date as epoch days, ...).

Values are given as Python values (Decimal, date, datetime, time, bytes); an `int` given for a
time or timestamp kind is taken as the wire value itself (e.g. nanoseconds a datetime cannot hold).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from hudi_cdc.events import DEFAULT_PLACEHOLDER

KafkaRecord = tuple[bytes | None, bytes | None]
Connector = Literal["mysql", "postgresql"]

# Column kinds this builder can encode: kind -> (Connect type, logical name or None)
_KINDS: dict[str, tuple[str, str | None]] = {
    "int8": ("int8", None),
    "int16": ("int16", None),
    "int32": ("int32", None),
    "int64": ("int64", None),
    "float32": ("float32", None),
    "float64": ("float64", None),
    "boolean": ("boolean", None),
    "string": ("string", None),
    "bytes": ("bytes", None),
    "decimal": ("bytes", "org.apache.kafka.connect.data.Decimal"),
    "variable_decimal": ("struct", "io.debezium.data.VariableScaleDecimal"),
    "date": ("int32", "io.debezium.time.Date"),
    "time": ("int32", "io.debezium.time.Time"),
    "micro_time": ("int64", "io.debezium.time.MicroTime"),
    "nano_time": ("int64", "io.debezium.time.NanoTime"),
    "timestamp": ("int64", "io.debezium.time.Timestamp"),
    "micro_timestamp": ("int64", "io.debezium.time.MicroTimestamp"),
    "nano_timestamp": ("int64", "io.debezium.time.NanoTimestamp"),
    "zoned_timestamp": ("string", "io.debezium.time.ZonedTimestamp"),
    "year": ("int32", "io.debezium.time.Year"),
    "json": ("string", "io.debezium.data.Json"),
    "enum": ("string", "io.debezium.data.Enum"),
    "uuid": ("string", "io.debezium.data.Uuid"),
}
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_WIRE_INT_KINDS = {"time", "micro_time", "nano_time", "timestamp", "micro_timestamp", "nano_timestamp"}
TOAST_PLACEHOLDER = DEFAULT_PLACEHOLDER
"""What the PostgreSQL connector sends for an unchanged TOASTed column."""


@dataclass(frozen=True)
class Column:
    """One source column: its kind (see _KINDS) and, for decimals, scale and precision."""

    name: str
    kind: str
    scale: int = 0
    precision: int = 10
    optional: bool = True

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown column kind {self.kind!r}; valid kinds are {', '.join(_KINDS)}")


def connect_json(value: Any) -> bytes:
    """`value` as Kafka Connect's JsonConverter writes a record's key or value: compact (no spaces
    after separators), UTF-8 (no `\\u` escapes for non-ASCII characters)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _unscaled(value: Decimal, scale: int) -> int:
    """`value` * 10**scale as an exact int (Decimal.scaleb would round beyond 28 digits)."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"{value} is not a finite number")
    number = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift >= 0:
        number *= int(10**shift)
    else:
        number, rest = divmod(number, int(10**-shift))
        if rest:
            raise ValueError(f"{value} has more than {scale} decimal places")
    return -number if sign else number


def encode_decimal(value: Decimal, scale: int) -> str:
    """Connect Decimal: the unscaled integer as big-endian two's-complement bytes, base64."""
    return base64.b64encode(_twos_complement(_unscaled(value, scale))).decode()


def _twos_complement(number: int) -> bytes:
    size = max(1, (number.bit_length() + 8) // 8)
    return number.to_bytes(size, "big", signed=True)


def epoch_micros(value: dt.datetime) -> int:
    """Microseconds since the epoch, exactly (a naive datetime is taken as UTC)."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    delta = aware - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _micros_of_day(value: dt.time | dt.timedelta) -> int:
    if isinstance(value, dt.timedelta):  # MySQL TIME is a duration: may be negative or above 24h
        return (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


def encode_value(kind: str, value: Any, *, scale: int = 0) -> Any:
    """A Python value as the JsonConverter writes a column of `kind`."""
    if value is None:
        return None
    if isinstance(value, str) and value == TOAST_PLACEHOLDER:
        # bytea columns carry the placeholder's bytes
        return base64.b64encode(value.encode()).decode() if kind == "bytes" else value
    if isinstance(value, int) and not isinstance(value, bool) and kind in _WIRE_INT_KINDS:
        return value  # already the wire value
    if kind == "decimal":
        return encode_decimal(Decimal(value), scale)
    if kind == "variable_decimal":
        number = Decimal(value)
        scale = -int(number.as_tuple().exponent)
        return {
            "scale": scale,
            "value": base64.b64encode(_twos_complement(_unscaled(number, scale))).decode(),
        }
    if kind == "bytes":
        return base64.b64encode(value).decode()
    if kind == "date":
        return (value - dt.date(1970, 1, 1)).days
    if kind in ("time", "micro_time", "nano_time"):
        micros = _micros_of_day(value)
        return {"time": micros // 1000, "micro_time": micros, "nano_time": micros * 1000}[kind]
    if kind in ("timestamp", "micro_timestamp", "nano_timestamp"):
        micros = epoch_micros(value)
        return {"timestamp": micros // 1000, "micro_timestamp": micros, "nano_timestamp": micros * 1000}[kind]
    if kind == "zoned_timestamp":
        aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
        return aware.isoformat().replace("+00:00", "Z")
    if kind == "year":
        return int(value)
    if kind in ("json", "enum", "uuid") or (kind == "string" and isinstance(value, Decimal)):
        # a Decimal in a string column: the connector's decimal.handling.mode=string
        return str(value)
    return value


def field_schema(column: Column) -> dict[str, Any]:
    """The Connect schema of one column, as in the envelope's `before`/`after` struct."""
    connect_type, logical = _KINDS[column.kind]
    schema: dict[str, Any] = {"type": connect_type, "optional": column.optional}
    if logical:
        schema["name"] = logical
        schema["version"] = 1
    if column.kind == "decimal":
        schema["parameters"] = {
            "scale": str(column.scale),
            "connect.decimal.precision": str(column.precision),
        }
    if column.kind == "variable_decimal":
        schema["fields"] = [
            {"type": "int32", "optional": False, "field": "scale"},
            {"type": "bytes", "optional": False, "field": "value"},
        ]
    schema["field"] = column.name
    return schema


def _source_schema(connector: Connector) -> dict[str, Any]:
    names = {
        "mysql": [("version", "string"), ("connector", "string"), ("name", "string"), ("ts_ms", "int64"),
                  ("snapshot", "string"), ("db", "string"), ("table", "string"), ("server_id", "int64"),
                  ("gtid", "string"), ("file", "string"), ("pos", "int64"), ("row", "int32"), ("thread", "int64")],
        "postgresql": [("version", "string"), ("connector", "string"), ("name", "string"), ("ts_ms", "int64"),
                       ("snapshot", "string"), ("db", "string"), ("sequence", "string"), ("schema", "string"),
                       ("table", "string"), ("txId", "int64"), ("lsn", "int64"), ("xmin", "int64")],
    }[connector]  # fmt: skip
    fields = [
        {"type": kind, "optional": name not in ("version", "connector", "name", "ts_ms", "db"), "field": name}
        for name, kind in names
    ]
    return {
        "type": "struct",
        "fields": fields,
        "optional": False,
        "name": f"io.debezium.connector.{connector}.Source",
        "field": "source",
    }


@dataclass
class DebeziumTable:
    """A source table whose changes are encoded as one Debezium connector would."""

    server: str
    """The connector's topic.prefix (database.server.name before Debezium 2)."""
    database: str
    table: str
    columns: list[Column]
    key: list[str]
    with_schema: bool = True
    """True: the JsonConverter's schemas.enable=true envelope; False: the bare payload."""
    connector: Connector = "mysql"
    pg_schema: str = "public"
    """PostgreSQL only: the schema holding the table (part of the topic name)."""
    _row_schema: dict[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._row_schema = {
            "type": "struct",
            "fields": [field_schema(c) for c in self.columns],
            "optional": True,
            "name": f"{self.topic}.Value",
        }

    @property
    def topic(self) -> str:
        """The connector's topic for this table."""
        middle = self.pg_schema if self.connector == "postgresql" else self.database
        return f"{self.server}.{middle}.{self.table}"

    def _image(self, row: dict[str, Any] | None, *, partial: bool = False) -> dict[str, Any] | None:
        if row is None:
            return None
        columns = [c for c in self.columns if not partial or c.name in row]
        return {c.name: encode_value(c.kind, row.get(c.name), scale=c.scale) for c in columns}

    def key_record(self, row: dict[str, Any]) -> bytes:
        """The Kafka key of a row: its key columns, in an envelope when `with_schema`."""
        key_columns = [c for c in self.columns if c.name in self.key]
        payload = {c.name: encode_value(c.kind, row[c.name], scale=c.scale) for c in key_columns}
        if not self.with_schema:
            return connect_json(payload)
        schema = {
            "type": "struct",
            "fields": [field_schema(c) for c in key_columns],
            "optional": False,
            "name": f"{self.topic}.Key",
        }
        return connect_json({"schema": schema, "payload": payload})

    def _source(
        self, *, ts_ms: int, snapshot: str, file: str, pos: int, row: int, lsn: int
    ) -> dict[str, Any]:
        common = {
            "version": "2.7.3.Final",
            "connector": self.connector,
            "name": self.server,
            "ts_ms": ts_ms,
            "snapshot": snapshot,
            "db": self.database,
        }
        if self.connector == "postgresql":
            return {**common, "sequence": json.dumps([str(lsn - 8), str(lsn)]), "schema": self.pg_schema,
                    "table": self.table, "txId": 780, "lsn": lsn, "xmin": None}  # fmt: skip
        return {
            **common,
            "table": self.table,
            "server_id": 223344,
            "gtid": None,
            "file": file,
            "pos": pos,
            "row": row,
            "thread": 7,
        }

    def change(
        self,
        op: str,
        *,
        before: dict[str, Any] | None = None,
        after: dict[str, Any] | None = None,
        file: str = "mysql-bin.000003",
        pos: int = 154,
        row: int = 0,
        lsn: int = 24_023_128,
        ts_ms: int = 1_700_000_000_000,
        snapshot: str | None = None,
        partial: bool = False,
        with_key: bool = True,
    ) -> KafkaRecord:
        """One change record (op c/r/u/d/t).

        MySQL sources carry file/pos/row, PostgreSQL ones lsn. `snapshot` defaults to "true" for
        op `r`, else "false". `partial=True` writes only the columns given in `after` (a
        minimal row image); a value equal to TOAST_PLACEHOLDER is sent as the placeholder.
        """
        payload = {
            "before": self._image(before),
            "after": self._image(after, partial=partial),
            "source": self._source(
                ts_ms=ts_ms,
                snapshot=snapshot or ("true" if op == "r" else "false"),
                file=file,
                pos=pos,
                row=row,
                lsn=lsn,
            ),
            "op": op,
            "ts_ms": ts_ms + 7,  # the connector's processing time, a little after the source's
            "transaction": None,
        }
        keyed = after if after is not None else before
        key = self.key_record(keyed) if with_key and keyed is not None else None
        if not self.with_schema:
            return key, connect_json(payload)
        schema = {
            "type": "struct",
            "fields": [
                {**self._row_schema, "field": "before"},
                {**self._row_schema, "field": "after"},
                _source_schema(self.connector),
                {"type": "string", "optional": False, "field": "op"},
                {"type": "int64", "optional": True, "field": "ts_ms"},
            ],
            "optional": False,
            "name": f"{self.topic}.Envelope",
        }
        return key, connect_json({"schema": schema, "payload": payload})

    def tombstone(self, row: dict[str, Any]) -> KafkaRecord:
        """The null-value record Debezium sends after a delete (for log compaction)."""
        return self.key_record(row), None


def patch_message(
    key: dict[str, Any], ts: int, data: dict[str, Any], *, patch_field: str = "data"
) -> KafkaRecord:
    """A patch-style message, e.g. {"id": 123, "ts": 1435290195610, "data": {"age": 25}}."""
    return json.dumps(key).encode(), json.dumps({**key, "ts": ts, patch_field: data}).encode()


def flattened(record: KafkaRecord, add_fields: list[str], prefix: str = "__") -> KafkaRecord:
    """`record` as Debezium's ExtractNewRecordState SMT rewrites it, with
    `delete.tombstone.handling.mode=rewrite` and `add.fields` (e.g. `["op", "source.pos"]`).

    A delete becomes its `before` row marked `<prefix>deleted` = "true"; any other change its
    `after` row, `<prefix>deleted` = "false". Each added field is named `prefix` + its path with
    `_` for `.`, typed as in the envelope's schema. Only enveloped (`schemas.enable`) records.
    """
    key, value = record
    if value is None:
        return record
    envelope = json.loads(value)
    payload, schema = envelope["payload"], envelope["schema"]
    deleted = payload["op"] == "d"
    row = payload["before"] if deleted else payload["after"]
    row_schema = next(f for f in schema["fields"] if f["field"] == ("before" if deleted else "after"))
    fields = [*row_schema["fields"], {"type": "string", "optional": True, "field": f"{prefix}deleted"}]
    values = {**row, f"{prefix}deleted": str(deleted).lower()}
    for path in add_fields:
        name = f"{prefix}{path.replace('.', '_')}"
        value_of, schema_of = payload, schema
        for part in path.split("."):
            value_of = value_of.get(part) if isinstance(value_of, dict) else None
            schema_of = next(f for f in schema_of["fields"] if f["field"] == part)
        fields.append({"type": schema_of["type"], "optional": True, "field": name})
        values[name] = value_of
    flat_schema = {"type": "struct", "fields": fields, "optional": False, "name": row_schema["name"]}
    return key, connect_json({"schema": flat_schema, "payload": values})
