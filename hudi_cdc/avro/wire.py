"""Avro Kafka records -> the JSON path's input, in Spark, per schema id.

Each record's value (and key) is either `0x00 | schema id (4 bytes, big-endian) | Avro body`
(the Confluent wire format), or the Avro body alone with the id in a Kafka header
`apicurio.value.globalId` (`.contentId`; `apicurio.key.*` for keys), 8 bytes big-endian, as
Apicurio's serializer writes by default (`apicurio.registry.headers.enabled`). A header wins
over the bytes. The distinct ids of a batch go to the driver (a tiny aggregation, never the records), their writer
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
from hudi_cdc.avro.registry import IdKind, SchemaFetcher, SchemaRef
from hudi_cdc.config.models import TableConfig, WireFormat
from hudi_cdc.kafka.headers import KAFKA_HEADERS, last_header

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
    return table.may_be_avro


def is_framed(data: Column) -> Column:
    """The bytes start with the wire format's magic byte 0 and hold a schema id."""
    return (F.length(data) >= _HEADER) & (F.hex(F.substring(data, 1, 1)) == "00")


def schema_id(data: Column) -> Column:
    """The 4-byte big-endian schema id after the magic byte (as a long: ids are unsigned)."""
    return F.conv(F.hex(F.substring(data, 2, 4)), 16, 10).cast("long")


def body(data: Column) -> Column:
    """The Avro body after the 5-byte header."""
    return data.substr(_HEADER + 1, 2**31 - 1)


HEADER_ID_KINDS: tuple[IdKind, ...] = ("globalId", "contentId")
"""The ids Apicurio's serializer may put in headers (its `apicurio.registry.use-id`)."""


def id_header(side: str, kind: IdKind) -> str:
    """The header Apicurio's serializer names `side`'s (key or value) schema id of `kind` in."""
    return f"apicurio.{side}.{kind}"


def _header_ref(side: str, headers: Column) -> Column:
    """`kind:id` of the record's Apicurio id header for `side`, NULL without one (or with a
    value that is not 8 bytes, which no Apicurio version writes)."""
    refs = []
    for kind in HEADER_ID_KINDS:
        value = last_header(headers, id_header(side, kind))
        number = F.conv(F.hex(value), 16, 10).cast("long")
        refs.append(F.when(F.length(value) == 8, F.concat(F.lit(f"{kind}:"), number.cast("string"))))
    return F.coalesce(*refs)


@dataclass(frozen=True)
class _Framing:
    """Where one side's schema id and Avro body are."""

    ref: Column
    """`str(SchemaRef)`, NULL when the bytes name no schema."""
    body: Column
    """The Avro body (the whole value when a header names the schema)."""


def _framing(side: str, data: Column, headers: Column | None) -> _Framing:
    payload_ref = F.when(is_framed(data), F.concat(F.lit("ccompat:"), schema_id(data).cast("string")))
    if headers is None:
        return _Framing(ref=payload_ref, body=body(data))
    header_ref = _header_ref(side, headers)
    return _Framing(ref=F.coalesce(header_ref, payload_ref), body=F.when(header_ref.isNotNull(), data).otherwise(body(data)))


@dataclass(frozen=True)
class _Readable:
    """What one schema id decodes with."""

    spark: str
    """Writer schema without logical types, for from_avro."""
    connect: str
    """The Connect schema JSON text the envelope carries."""
    required: tuple[str, ...]
    """Top-level fields that cannot be null (see `_decoded`)."""


def _readable(fetcher: SchemaFetcher, refs: list[SchemaRef]) -> tuple[dict[SchemaRef, _Readable], dict[SchemaRef, str]]:
    """Known ids -> how to read them; unusable ids -> why not."""
    readable: dict[SchemaRef, _Readable] = {}
    unusable: dict[SchemaRef, str] = {}
    for ref, text in fetcher.schemas(refs).items():
        if text is None:
            unusable[ref] = f"unknown schema id {_named(ref)} (the registry does not know it)"
            continue
        try:
            connect = json.dumps(connect_schema(text), separators=(",", ":"))
            readable[ref] = _Readable(spark=spark_schema(text), connect=connect, required=required_fields(text))
        except (AvroSchemaError, ValueError, KeyError, TypeError) as exc:
            unusable[ref] = f"schema id {_named(ref)} is not a Kafka Connect Avro record schema: {exc}"
    return readable, unusable


def _named(ref: SchemaRef) -> str:
    """How messages name a schema: the wire format's id as a number, a header's with its kind."""
    return str(ref.id) if ref.kind == "ccompat" else f"{ref.id} (Apicurio {ref.kind}, from a Kafka header)"


def _decoded(records: DataFrame, framing: _Framing, readable: dict[SchemaRef, _Readable], render: str, name: str) -> DataFrame:
    """Add column `name`: per id, from_avro with its writer schema rendered as JSON text (NULL if the body does not decode).

    from_avro's PERMISSIVE mode turns a body that does not decode into a struct of NULLs, not a
    NULL, so a failed decode is told by a NULL in a field the writer schema makes non-nullable
    (a successful decode never yields one; Debezium's envelope has `op`, keys their columns).
    """
    texts: list[Column] = []
    structs: list[str] = []
    for n, (ref, how) in enumerate(readable.items()):
        struct_name = f"{name}_{n}"
        # one column per id, so each body is decoded once (the struct is used several times below)
        records = records.withColumn(
            struct_name, F.when(framing.ref == F.lit(str(ref)), from_avro(framing.body, how.spark, {"mode": "PERMISSIVE"}))
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


def _error(side: str, data: Column, framing: _Framing, fmt: WireFormat, decoded: Column, unusable: dict[SchemaRef, str]) -> Column:
    framed = framing.ref.isNotNull()
    reason: Column = F.when(
        data.isNotNull() & ~framed & F.lit(fmt == "avro"),
        F.concat(
            F.lit(f"the {side} is not in the Avro wire format (first byte 0x"),
            F.coalesce(F.hex(F.substring(data, 1, 1)), F.lit("")),
            F.lit(
                ", expected 0x00 and a 4-byte schema id) and has no Apicurio id header "
                f"(apicurio.{side}.globalId or .contentId); check the connector's converter or the table's format"
            ),
        ),
    )
    for ref, why in unusable.items():
        reason = reason.when(framing.ref == F.lit(str(ref)), F.lit(f"{side}: {why}"))
    return reason.when(
        framed & decoded.isNull(),
        F.concat(
            F.lit(f"the {side}'s Avro body does not decode with its writer schema (id "),
            F.regexp_replace(framing.ref, "^ccompat:", ""),
            F.lit(")"),
        ),
    )


def avro_as_json(records: DataFrame, table: TableConfig, fetcher: SchemaFetcher) -> DataFrame:
    """Kafka rows whose Avro values/keys are rewritten as JSON, plus WIRE_KEY, WIRE_VALUE, WIRE_ERROR.

    With KAFKA_HEADERS among `records`' columns, Apicurio's id headers are read too."""
    key_format = table.key_format or table.format
    sides = [(side, fmt) for side, fmt in (("value", table.format), ("key", key_format)) if fmt != "json"]
    headers = F.col(KAFKA_HEADERS) if KAFKA_HEADERS in records.columns else None
    framings = {side: _framing(side, F.col(WIRE_VALUE if side == "value" else WIRE_KEY), headers) for side, _ in sides}
    out = records.withColumn(WIRE_KEY, F.col("key")).withColumn(WIRE_VALUE, F.col("value"))
    texts = out.select(F.explode(F.array(*[f.ref for f in framings.values()])).alias("ref")).where("ref IS NOT NULL")
    refs = sorted(_ref(row["ref"]) for row in texts.distinct().collect())
    readable, unusable = _readable(fetcher, refs)
    log.info("table %s: Avro schema ids in batch %s (%d unusable)", table.name, [str(r) for r in refs], len(unusable))

    errors: list[Column] = []
    for side, fmt in sides:
        data = F.col(WIRE_VALUE if side == "value" else WIRE_KEY)
        decoded_name = f"__decoded_{side}"
        # the value becomes the JsonConverter's envelope; a key only needs its payload
        out = _decoded(out, framings[side], readable, "envelope" if side == "value" else "payload", decoded_name)
        decoded = F.col(decoded_name)
        errors.append(_error(side, data, framings[side], fmt, decoded, unusable))
        # a record that cannot be read keeps its bytes (non-NULL, so never taken for a tombstone)
        out = out.withColumn(side, F.when(decoded.isNotNull(), F.encode(decoded, "UTF-8")).otherwise(data))
    out = out.withColumn(WIRE_ERROR, F.coalesce(*errors) if len(errors) > 1 else errors[0])
    return out.drop(*[f"__decoded_{side}" for side, _ in sides])


def _ref(text: str) -> SchemaRef:
    kind, _, number = text.partition(":")
    return SchemaRef(kind, int(number))  # type: ignore[arg-type]  # the kinds `_framing` writes
