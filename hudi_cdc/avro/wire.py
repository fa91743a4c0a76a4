"""Avro Kafka records (Confluent wire format) -> the JSON path's input, in Spark, per schema id.

Each record's value (and key) is `0x00 | schema id (4 bytes, big-endian) | Avro body`. The
distinct ids of a batch go to the driver (a tiny aggregation, never the records), their writer
schemas come from the registry, and each body is decoded with spark-avro's `from_avro` under
its own writer schema, so several schema ids in one batch (a column added mid-batch) each decode
exactly. The decoded struct is written back as the JsonConverter's envelope,
`{"schema": <Connect schema>, "payload": <to_json>}`, which `decode.decode` reads like any JSON
record: ordering, exact types, tombstones, truncates and dead letters are shared with JSON.

A record that cannot be read keeps its bytes and gets a reason in WIRE_ERROR (decode rejects
it as `AvroDecodeError`); the original key and value stay in WIRE_KEY / WIRE_VALUE for the
dead-letter store.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from hudi_cdc.avro.connect_schema import AvroSchemaError, connect_schema, required_fields, spark_schema
from hudi_cdc.avro.registry import SchemaFetcher
from hudi_cdc.config import TableConfig, WireFormat

WIRE_KEY = "__wire_key"
"""The record's key as read from Kafka (Avro bytes), for the dead-letter store."""
WIRE_VALUE = "__wire_value"
"""The record's value as read from Kafka (Avro bytes), for the dead-letter store."""
WIRE_ERROR = "__wire_error"
"""Why the record's Avro could not be read; NULL when it could (or it is JSON)."""

_HEADER = 5
"""Magic byte + 4-byte schema id."""

log = logging.getLogger(__name__)


def uses_avro(table: TableConfig) -> bool:
    """True when the table's values or keys may be Avro."""
    return table.format != "json" or (table.key_format or table.format) != "json"


def is_framed(data: Column) -> Column:
    """The bytes start with the wire format's magic byte 0 and hold a schema id."""
    return (F.length(data) >= _HEADER) & (F.hex(F.substring(data, 1, 1)) == "00")


def schema_id(data: Column) -> Column:
    """The 4-byte big-endian schema id after the magic byte (as a long: ids are unsigned)."""
    return F.conv(F.hex(F.substring(data, 2, 4)), 16, 10).cast("long")


def body(data: Column) -> Column:
    """The Avro body after the 5-byte header."""
    return data.substr(_HEADER + 1, 2**31 - 1)


@dataclass(frozen=True)
class _Readable:
    """What one schema id decodes with."""

    spark: str
    """Writer schema without logical types, for from_avro."""
    connect: str
    """The Connect schema JSON text the envelope carries."""
    required: tuple[str, ...]
    """Top-level fields that cannot be null (see `_decoded`)."""


def _readable(fetcher: SchemaFetcher, ids: list[int]) -> tuple[dict[int, _Readable], dict[int, str]]:
    """Known ids -> how to read them; unusable ids -> why not."""
    readable: dict[int, _Readable] = {}
    unusable: dict[int, str] = {}
    for schema_id_, text in fetcher.schemas(ids).items():
        if text is None:
            unusable[schema_id_] = f"unknown schema id {schema_id_} (the registry does not know it)"
            continue
        try:
            connect = json.dumps(connect_schema(text), separators=(",", ":"))
            readable[schema_id_] = _Readable(spark=spark_schema(text), connect=connect, required=required_fields(text))
        except (AvroSchemaError, ValueError, KeyError, TypeError) as exc:
            unusable[schema_id_] = f"schema id {schema_id_} is not a Kafka Connect Avro record schema: {exc}"
    return readable, unusable


def _decoded(records: DataFrame, data: Column, readable: dict[int, _Readable], render: str, name: str) -> DataFrame:
    """Add column `name`: per id, from_avro with its writer schema rendered as JSON text (NULL if the body does not decode).

    from_avro's PERMISSIVE mode turns a body that does not decode into a struct of NULLs, not a
    NULL, so a failed decode is told by a NULL in a field the writer schema makes non-nullable
    (a successful decode never yields one; Debezium's envelope has `op`, keys their columns).
    """
    ident = schema_id(data)
    texts: list[Column] = []
    structs: list[str] = []
    for i, how in readable.items():
        struct_name = f"{name}_{i}"
        # one column per id, so each body is decoded once (the struct is used several times below)
        records = records.withColumn(
            struct_name, F.when(ident == F.lit(i), from_avro(body(data), how.spark, {"mode": "PERMISSIVE"}))
        )
        structs.append(struct_name)
        struct = F.col(struct_name)
        ok = struct.isNotNull()
        for field in how.required:
            ok = ok & struct[field].isNotNull()
        # explicit nulls: the JsonConverter writes every field, and a present NULL differs from a missing column
        payload = F.to_json(struct, {"ignoreNullFields": "false"})
        text = (
            F.concat(F.lit('{"schema":' + how.connect + ',"payload":'), payload, F.lit("}"))
            if render == "envelope"
            else payload
        )
        texts.append(F.when(ok, text))
    decoded = F.coalesce(*texts) if len(texts) > 1 else texts[0] if texts else F.lit(None).cast("string")
    return records.withColumn(name, decoded).drop(*structs)


def _error(side: str, data: Column, fmt: WireFormat, decoded: Column, unusable: dict[int, str]) -> Column:
    ident = schema_id(data)
    framed = is_framed(data)
    reason: Column = F.when(
        data.isNotNull() & ~framed & F.lit(fmt == "avro"),
        F.concat(
            F.lit(f"the {side} is not in the Avro wire format (first byte 0x"),
            F.coalesce(F.hex(F.substring(data, 1, 1)), F.lit("")),
            F.lit(", expected 0x00 and a 4-byte schema id); check the connector's converter or the table's format"),
        ),
    )
    for i, why in unusable.items():
        reason = reason.when(framed & (ident == F.lit(i)), F.lit(f"{side}: {why}"))
    return reason.when(
        framed & decoded.isNull(),
        F.concat(F.lit(f"the {side}'s Avro body does not decode with its writer schema (id "), ident.cast("string"), F.lit(")")),
    )


def avro_as_json(records: DataFrame, table: TableConfig, fetcher: SchemaFetcher) -> DataFrame:
    """Kafka rows whose Avro values/keys are rewritten as JSON, plus WIRE_KEY, WIRE_VALUE, WIRE_ERROR."""
    key_format = table.key_format or table.format
    sides = [(side, fmt) for side, fmt in (("value", table.format), ("key", key_format)) if fmt != "json"]
    ids_of = [F.when(is_framed(F.col(side)), schema_id(F.col(side))) for side, _ in sides]
    ids = sorted(
        int(row["id"])
        for row in records.select(F.explode(F.array(*ids_of)).alias("id")).where("id IS NOT NULL").distinct().collect()
    )
    readable, unusable = _readable(fetcher, ids)
    log.info("table %s: Avro schema ids in batch %s (%d unusable)", table.name, ids, len(unusable))

    out = records.withColumn(WIRE_KEY, F.col("key")).withColumn(WIRE_VALUE, F.col("value"))
    errors: list[Column] = []
    for side, fmt in sides:
        data = F.col(WIRE_VALUE if side == "value" else WIRE_KEY)
        decoded_name = f"__decoded_{side}"
        # the value becomes the JsonConverter's envelope; a key only needs its payload
        out = _decoded(out, data, readable, "envelope" if side == "value" else "payload", decoded_name)
        decoded = F.col(decoded_name)
        errors.append(_error(side, data, fmt, decoded, unusable))
        # a record that cannot be read keeps its bytes (non-NULL, so never taken for a tombstone)
        out = out.withColumn(side, F.when(decoded.isNotNull(), F.encode(decoded, "UTF-8")).otherwise(data))
    out = out.withColumn(WIRE_ERROR, F.coalesce(*errors) if len(errors) > 1 else errors[0])
    return out.drop(*[f"__decoded_{side}" for side, _ in sides])
