"""A table's key columns read from one of its Kafka keys, for tables a template makes.

Debezium keys every record by the source table's primary key: the Kafka key is a struct of the
key columns, in the table's key order. So the key's field names are the table's key. Read on the
driver from one record of a new table, once (never per record).
"""

from __future__ import annotations

import json
from typing import Any

from hudi_cdc.avro.registry import SchemaFetcher, SchemaRef
from hudi_cdc.config.models import TableConfig

_MAGIC = 0
_HEADER = 5


class KeyUnknown(ValueError):
    """The key's fields cannot be read from this Kafka key; the message says why."""


def key_fields(key: bytes | None, table: TableConfig, fetcher: SchemaFetcher | None) -> list[str]:
    """The field names of a Kafka `key`, in order: JSON (a Connect envelope's schema, else the
    object's fields) or Confluent-framed Avro (the writer schema's record fields)."""
    if not key:
        raise KeyUnknown("the topic's records have no Kafka key (a table without a primary key)")
    key_format = table.key_format or table.format
    if key_format != "json" and key[0] == _MAGIC and len(key) >= _HEADER:
        return _avro_fields(int.from_bytes(key[1:_HEADER], "big"), fetcher)
    if key_format == "avro":
        raise KeyUnknown("the Avro key is not in the Confluent wire format (byte 0 and a schema id)")
    try:
        document = json.loads(key)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise KeyUnknown(f"the key is not JSON ({exc})") from None
    return _json_fields(document)


def _json_fields(document: Any) -> list[str]:
    if isinstance(document, dict) and set(document) == {"schema", "payload"}:
        schema = document["schema"]
        if isinstance(schema, dict) and isinstance(schema.get("fields"), list):
            return _names([f.get("field") for f in schema["fields"] if isinstance(f, dict)])
        document = document["payload"]
    if not isinstance(document, dict):
        raise KeyUnknown(f"the key is a JSON {type(document).__name__}, not a struct of key columns")
    return _names(list(document))


def _avro_fields(schema_id: int, fetcher: SchemaFetcher | None) -> list[str]:
    if fetcher is None:
        raise KeyUnknown("the key is Avro and no `schema_registry` is configured")
    text = fetcher.schema(SchemaRef("ccompat", schema_id))
    if text is None:
        raise KeyUnknown(f"the registry does not know the key's schema id {schema_id}")
    schema = json.loads(text)
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise KeyUnknown(f"the key's schema {schema_id} is not a record")
    return _names([f.get("name") for f in schema.get("fields", [])])


def _names(names: list[Any]) -> list[str]:
    if not names or not all(isinstance(n, str) and n for n in names):
        raise KeyUnknown(f"the key's fields {names} are not column names")
    return list(names)
