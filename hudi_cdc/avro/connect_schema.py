"""An Avro writer schema (as Kafka Connect's AvroData writes it) -> what Spark and the JSON path need.

Two things come out of one Avro schema:

- `spark_schema`: the same schema with every `logicalType` removed, for `from_avro`. Spark then
  reads a decimal as its bytes, a date as epoch days and a timestamp as epoch ms/µs, so
  `to_json` writes exactly what Kafka Connect's JsonConverter writes (base64 bytes, epoch
  numbers) and the JSON path's exact conversions apply unchanged (no double, no time zone).
- `connect_schema`: the Kafka Connect schema (`{"type": "struct", "fields": [...]}`) that the
  JsonConverter would have put in the envelope, rebuilt from the `connect.name`,
  `connect.parameters`, `connect.type` and `connect.version` properties AvroData writes.
"""

from __future__ import annotations

import json
from typing import Any

_PRIMITIVE = {
    "int": "int32",
    "long": "int64",
    "float": "float32",
    "double": "float64",
    "boolean": "boolean",
    "string": "string",
    "bytes": "bytes",
    # AvroData never writes these for Connect data; read them as their nearest Connect type
    "fixed": "bytes",
    "enum": "string",
    "null": "string",
}


class AvroSchemaError(ValueError):
    """The registry's schema is not an Avro record schema this decoder can read."""


def spark_schema(avro_json: str) -> str:
    """The writer schema without `logicalType` annotations (JSON text for `from_avro`)."""
    return json.dumps(_strip(json.loads(avro_json)), separators=(",", ":"))


def _strip(node: Any) -> Any:
    if isinstance(node, list):
        return [_strip(n) for n in node]
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k != "logicalType"}
    return node


def required_fields(avro_json: str) -> tuple[str, ...]:
    """Top-level fields of a record schema whose type admits no null (not a union with "null")."""
    root = json.loads(avro_json)
    fields = root.get("fields", []) if isinstance(root, dict) else []
    return tuple(
        f["name"]
        for f in fields
        if not (isinstance(f.get("type"), list) and "null" in f["type"]) and f.get("type") != "null"
    )


def connect_schema(avro_json: str) -> dict[str, Any]:
    """The Kafka Connect schema of a record schema, as the JsonConverter writes it in an envelope."""
    root = json.loads(avro_json)
    if not isinstance(root, dict) or root.get("type") != "record":
        raise AvroSchemaError("the top-level schema is not an Avro record")
    return _Converter().convert(root, namespace="")


class _Converter:
    """Walks one schema; remembers named types so a later reference by name resolves."""

    def __init__(self) -> None:
        self.named: dict[str, dict[str, Any]] = {}

    def convert(self, node: Any, *, namespace: str) -> dict[str, Any]:
        if isinstance(node, list):
            return self._union(node, namespace=namespace)
        if isinstance(node, str):
            if node in _PRIMITIVE:
                return {"type": _PRIMITIVE[node], "optional": False}
            named = self.named.get(node) or self.named.get(f"{namespace}.{node}")
            if named is None:
                raise AvroSchemaError(f"unknown named type {node!r}")
            return dict(named)
        if not isinstance(node, dict):
            raise AvroSchemaError(f"not an Avro schema: {node!r}")
        kind = node.get("type")
        if isinstance(kind, (list, dict)):
            return self.convert(kind, namespace=namespace)
        if kind == "record":
            return self._record(node, namespace=namespace)
        if kind == "array":
            result = {"type": "array", "items": self.convert(node.get("items"), namespace=namespace), "optional": False}
        elif kind == "map":
            values = self.convert(node.get("values"), namespace=namespace)
            result = {"type": "map", "keys": {"type": "string", "optional": False}, "values": values, "optional": False}
        elif isinstance(kind, str) and kind in _PRIMITIVE:
            result = {"type": node.get("connect.type", _PRIMITIVE[kind]), "optional": False}
        elif isinstance(kind, str):
            return self.convert(kind, namespace=namespace)
        else:
            raise AvroSchemaError(f"not an Avro schema: {node!r}")
        _connect_properties(node, result)
        if kind in ("fixed", "enum") and "name" in node:
            self.named[_fullname(node, namespace)] = result
        return result

    def _union(self, branches: list[Any], *, namespace: str) -> dict[str, Any]:
        # AvroData writes an optional Connect field as ["null", T]
        others = [b for b in branches if b != "null"]
        if len(others) != 1:
            raise AvroSchemaError(f"a union other than [null, T] has no Kafka Connect equivalent: {branches!r}")
        result = self.convert(others[0], namespace=namespace)
        result["optional"] = len(branches) > 1
        return result

    def _record(self, node: dict[str, Any], *, namespace: str) -> dict[str, Any]:
        fullname = _fullname(node, namespace)
        inner = fullname.rpartition(".")[0]
        fields = []
        for avro_field in node.get("fields", []):
            connect_field = self.convert(avro_field["type"], namespace=inner)
            connect_field["field"] = avro_field["name"]
            fields.append(connect_field)
        result: dict[str, Any] = {"type": "struct", "fields": fields, "optional": False, "name": fullname}
        _connect_properties(node, result)
        self.named[fullname] = result
        self.named.setdefault(str(node.get("name")), result)
        return result


def _fullname(node: dict[str, Any], namespace: str) -> str:
    name = str(node.get("name", ""))
    if "." in name:
        return name
    space = node.get("namespace", namespace)
    return f"{space}.{name}" if space else name


def _connect_properties(node: dict[str, Any], result: dict[str, Any]) -> None:
    """Copy AvroData's connect.* properties to their Connect JSON schema names."""
    if "connect.name" in node:
        result["name"] = node["connect.name"]
    if "connect.version" in node:
        result["version"] = node["connect.version"]
    if "connect.parameters" in node:
        result["parameters"] = {str(k): str(v) for k, v in node["connect.parameters"].items()}
