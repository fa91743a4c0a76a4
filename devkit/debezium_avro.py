"""Re-encode Debezium JSON records (devkit.debezium) as the Avro converter writes them.

The Avro schema is derived from the record's Kafka Connect schema the way Kafka Connect's
AvroData does it (what Apicurio's and Confluent's AvroConverter use): a struct becomes a record
named by the Connect name with `connect.name`, an optional field a `["null", T]` union with
default null, int8/int16 an `int` with `connect.type`, a Decimal `bytes` with
`logicalType: decimal` and `connect.parameters`, and a named type used twice (the envelope's
`before` and `after`) is referenced by name the second time. The schema is registered in a real
registry and the record framed as `0x00 | id (4 bytes) | body` (the Confluent wire format).
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from decimal import Context, Decimal
from typing import Any

import fastavro

from devkit.debezium import KafkaRecord

Register = Callable[[str, dict[str, Any]], int]
"""(subject, Avro schema) -> schema id, e.g. LocalRegistry.register."""

_PRIMITIVE = {"int32": "int", "int64": "long", "float32": "float", "float64": "double",
              "boolean": "boolean", "string": "string", "bytes": "bytes"}  # fmt: skip
_DECIMAL = "org.apache.kafka.connect.data.Decimal"


def avro_schema(connect: dict[str, Any], *, defined: set[str] | None = None) -> Any:
    """The Avro schema AvroData writes for a Connect schema (nullable as a [null, T] union)."""
    defined = set() if defined is None else defined
    schema = _non_null(connect, defined)
    return ["null", schema] if connect.get("optional") else schema


def _non_null(connect: dict[str, Any], defined: set[str]) -> Any:
    kind = connect["type"]
    name = connect.get("name")
    schema: dict[str, Any]
    if kind == "struct":
        fullname = name or "ConnectDefault"
        if fullname in defined:
            return fullname  # already defined in this schema: a reference by name
        defined.add(fullname)
        fields = []
        for f in connect["fields"]:
            avro_field: dict[str, Any] = {"name": f["field"], "type": avro_schema(f, defined=defined)}
            if f.get("optional"):
                avro_field["default"] = None
            fields.append(avro_field)
        schema = {"type": "record", "name": fullname, "fields": fields}
    elif kind in ("int8", "int16"):
        schema = {"type": "int", "connect.type": kind}
    elif kind == "array":
        schema = {"type": "array", "items": avro_schema(connect["items"], defined=defined)}
    elif kind == "map":
        schema = {"type": "map", "values": avro_schema(connect["values"], defined=defined)}
    else:
        schema = {"type": _PRIMITIVE[kind]}
    if name:
        schema["connect.name"] = name
    if "version" in connect:
        schema["connect.version"] = connect["version"]
    if "parameters" in connect:
        schema["connect.parameters"] = connect["parameters"]
    if name == _DECIMAL:
        params = connect.get("parameters", {})
        schema.update(logicalType="decimal", scale=int(params.get("scale", 0)),
                      precision=int(params.get("connect.decimal.precision", 38)))  # fmt: skip
    return schema


def avro_datum(connect: dict[str, Any], value: Any) -> Any:
    """A JsonConverter payload value as the Python value fastavro writes for `avro_schema(connect)`."""
    if value is None:
        return None
    kind = connect["type"]
    if kind == "struct":
        return {f["field"]: avro_datum(f, value.get(f["field"])) for f in connect["fields"]}
    if kind == "array":
        return [avro_datum(connect["items"], v) for v in value]
    if kind == "map":
        return {k: avro_datum(connect["values"], v) for k, v in value.items()}
    if kind == "bytes":
        raw = base64.b64decode(value)
        if connect.get("name") == _DECIMAL:  # fastavro takes a Decimal for logicalType decimal
            scale = int(connect.get("parameters", {}).get("scale", 0))
            unscaled = int.from_bytes(raw, "big", signed=True)
            return Decimal(unscaled).scaleb(-scale, Context(prec=max(len(str(unscaled)), 1) + 2))
        return raw
    return value


def frame(schema_id: int, body: bytes) -> bytes:
    """The Confluent wire format: magic byte 0, the schema id (4 bytes, big-endian), the body."""
    return b"\x00" + schema_id.to_bytes(4, "big") + body


def encode(connect: dict[str, Any], payload: Any, *, subject: str, register: Register) -> bytes:
    """One Connect-typed payload as a framed Avro record, its schema registered under `subject`."""
    schema = avro_schema({**connect, "optional": False})
    schema_id = register(subject, schema)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), avro_datum(connect, payload))
    return frame(schema_id, out.getvalue())


def to_avro(record: KafkaRecord, *, topic: str, register: Register, key: bool = True) -> KafkaRecord:
    """A JsonConverter record (with its schema envelope) as the AvroConverter writes it.

    `key=False` leaves the key as JSON (a key in a different format from the value).
    """
    key_bytes, value_bytes = record

    def convert(data: bytes | None, side: str) -> bytes | None:
        if data is None:
            return None
        envelope = json.loads(data)
        return encode(envelope["schema"], envelope["payload"], subject=f"{topic}-{side}", register=register)

    return (convert(key_bytes, "key") if key else key_bytes), convert(value_bytes, "value")
