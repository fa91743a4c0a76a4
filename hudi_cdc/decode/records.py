"""Kafka rows -> typed change events + rejects + tombstones, as Spark SQL (events.py contract).

Handles Debezium JSON with the schema envelope (`schemas.enable=true`) and without it, mixed
in one batch, patch messages (`mode: patch`) and rows flattened by Debezium's
ExtractNewRecordState (`mode: flattened`). With the envelope the column types come from
the batch's distinct schemas (found by `tally.survey` for the whole batch, else by one small
aggregation here; never the records themselves); without it from the table's declared
`columns` (see decode_schema).

A record that cannot be used becomes a reject with its position and the reason; the rest of
the batch goes on (semantics §6). Only a broken configuration raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DataType,
    DateType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from hudi_cdc.avro.wire import WIRE_ERROR
from hudi_cdc.config.models import TableConfig
from hudi_cdc.decode.checks import (
    IMAGE_OPS,
    Order,
    Record,
    any_true,
    checks,
    error_of,
    failed_check,
    non_data_reason,
    reject_columns,
)
from hudi_cdc.decode.debezium_types import floor_div
from hudi_cdc.decode.envelope import (
    HAS_SCHEMA,
    IS_ENVELOPE,
    JSON_TEXT,
    PAYLOAD_TEXT,
    SCHEMA_SLOT,
    SCHEMA_TEXT,
    envelope_levels,
    has_envelope,
)
from hudi_cdc.decode.flattened import flattened_envelope
from hudi_cdc.decode.order import (
    SOURCE_STRUCT,
    binlog_given,
    column_order,
    kafka_order,
    ordering_number,
    source_order,
    source_text,
    source_ts_ms,
)
from hudi_cdc.decode.schema import DECLARED, BatchTypes, batch_types, distinct_schemas, held_decimals
from hudi_cdc.decode.toast import toast_values
from hudi_cdc.decode.values import KeyReader, Values, typed_values
from hudi_cdc.events import (
    KAFKA_OFFSET,
    KAFKA_ORDERING,
    KAFKA_PARTITION,
    KAFKA_TOPIC,
    OP,
    ORDER,
    PRESENT,
    SOURCE,
    TS_MS,
    Op,
)
from hudi_cdc.kafka.headers import KAFKA_HEADERS
from hudi_cdc.spark.lineage import checkpointed
from hudi_cdc.spark.plan_cache import PlanCache, with_levels

# working columns
_JSON = JSON_TEXT
_SCHEMA = SCHEMA_TEXT
_ENV_PAYLOAD = PAYLOAD_TEXT
_IS_ENV = IS_ENVELOPE
_HAS_ENV = HAS_SCHEMA
_PAYLOAD = "__payload"
_PROFILE = "__profile"
_ENV = "__env"
_TOP = "__top"
_IMAGE = "__image"
_RAW = "__raw"
_HAS_IMAGE = "__has_image"
_UNPARSED = "__unparsed"
_VALUE = "__value"
_IMAGE_VALUE = "__image_value"
_PRESENT = "__present"
_ORDER = "__order"
_NUMBER = "__number"
_MALFORMED = "__malformed"
_FAILED = "__failed"
_OK = "__ok"
_EVENT = "__event"
_REJECT = "__reject"
_SKIP = "__skip"
_SKIPPED = "__skipped"

_ENVELOPE = StructType(
    [
        StructField("op", StringType()),
        StructField("ts_ms", LongType()),
        # each image's fields as texts (typed later by the record's own profile), PRESENT's
        # source: a text field would copy the image's text only for it to be parsed again
        StructField("before", MapType(StringType(), StringType())),
        StructField("after", MapType(StringType(), StringType())),
        StructField("source", SOURCE_STRUCT),
        # the payload as text where any part of it did not parse (Spark's corrupt-record field)
        StructField(_UNPARSED, StringType()),
    ]
)
_ENVELOPE_OPTIONS = {"columnNameOfCorruptRecord": _UNPARSED}


@dataclass(frozen=True)
class DecodeResult:
    """One table's decoded batch. Compute `parsed` once (see `cached`) when several outputs are used."""

    parsed: DataFrame
    """One row per non-tombstone record: its event or its reject."""
    tombstones: DataFrame
    """topic, partition, offset of records with a null value."""
    schema: StructType
    """The table's columns as decoded (key columns included)."""

    @property
    def events(self) -> DataFrame:
        """events.py contract: table columns, PRESENT, OP, ORDER, TS_MS, SOURCE, Kafka position."""
        return self.parsed.filter(F.col(_OK)).select(f"{_EVENT}.*")

    @property
    def rejects(self) -> DataFrame:
        """Dead-letter rows: table, topic, partition, offset, key, value, error_class, error_message."""
        return self.parsed.filter(F.col(_REJECT).isNotNull()).select(f"{_REJECT}.*")

    @property
    def skipped(self) -> DataFrame:
        """Records that carry no row change (see `decode_checks.non_data_reason`): topic, partition, offset, reason."""
        return self.parsed.filter(F.col(_SKIPPED).isNotNull()).select(f"{_SKIPPED}.*")

    @property
    def classified(self) -> DataFrame:
        """Every parsed record once: `kind` (event, reject or skip), `label` (a reject's error class, a
        skip's reason), then the events.py columns, NULL unless the record is an event."""
        kind = F.when(F.col(_OK), F.lit("event")).when(F.col(_REJECT).isNotNull(), F.lit("reject")).otherwise(F.lit("skip"))
        label = F.coalesce(F.col(f"{_REJECT}.error_class"), F.col(f"{_SKIPPED}.reason"))
        return self.parsed.select(
            kind.alias("kind"), label.alias("label"), F.when(F.col(_OK), F.col(_EVENT)).alias(_EVENT)
        ).select("kind", "label", f"{_EVENT}.*")

    def cached(self) -> DecodeResult:
        """The same result over a parse computed once (`lineage.checkpointed`; the caller releases `parsed`)."""
        return DecodeResult(parsed=checkpointed(self.parsed), tombstones=self.tombstones, schema=self.schema)


def _no_strings() -> Column:
    return F.array().cast("array<string>")


def _strings(values: list[str]) -> Column:
    return F.array(*[F.lit(v) for v in values]) if values else _no_strings()


def _profile(table: TableConfig, envelopes: list[str]) -> Column:
    """Index into BatchTypes.profiles of each record."""
    if table.mode == "patch" or not envelopes:
        return F.lit(DECLARED)
    if len(envelopes) == 1:
        return F.when(F.col(_HAS_ENV), F.lit(1)).otherwise(F.lit(DECLARED))
    # several schemas in one batch (a source schema change): compare the record's schema text
    profile = F.when(~F.col(_HAS_ENV), F.lit(DECLARED))
    for index, text in enumerate(envelopes, start=1):
        profile = profile.when(F.col(_SCHEMA) == F.lit(text), F.lit(index))
    return profile


def _top_level(table: TableConfig, types: BatchTypes) -> StructType:
    """Fields read from the top level of a patch message (or of a payload, for `ordering`)."""
    declared = types.profiles[DECLARED].columns if table.mode == "patch" else {}
    fields = {name: t.wire for name, t in declared.items()}
    if table.mode == "patch":
        fields[table.patch_field] = StringType()
        fields.setdefault("ts_ms", LongType())
    if table.ordering not in ("source", KAFKA_ORDERING) and table.ordering not in types.target:
        fields[table.ordering] = LongType()
    return StructType([StructField(name, dtype) for name, dtype in fields.items()])


def _ordering(
    table: TableConfig, types: BatchTypes, values: Values, op: Column
) -> tuple[Column, Column | None]:
    """(ORDER, the ordering value as a number) for a configured ordering column."""
    name = table.ordering
    top = F.col(_TOP)[name]
    declared = types.profiles[DECLARED].columns
    dtype: DataType = types.target.get(name, LongType())
    if name in types.target:
        top_value = declared[name].convert(top) if table.mode == "patch" and name in declared else None
        image_value = values.unmasked[name]
        # patch messages carry it next to the key (`{"id": 1, "ts": ..., "data": {...}}`)
        value = F.coalesce(top_value, image_value) if top_value is not None else image_value
    else:
        value = top
    number = ordering_number(value, dtype)
    if number is None:
        return F.lit(None).cast("string"), None
    # a truncate has no row: its source time orders it when the ordering column is a time
    ts_ms = source_ts_ms(F.col(f"{_ENV}.ts_ms"), F.col(f"{_ENV}.source"))
    truncate_number: Column | None = None
    if isinstance(dtype, TimestampType):
        truncate_number = ts_ms * 1000
    elif isinstance(dtype, DateType):
        truncate_number = floor_div(ts_ms, 86_400_000)
    truncate = truncate_number.cast("decimal(20,0)") if truncate_number is not None else F.lit(None)
    number = F.when(op == Op.TRUNCATE.value, truncate).otherwise(number)
    return column_order(number), number


def _patch_ts_ms(types: BatchTypes, table: TableConfig, number: Column | None) -> Column:
    """_cdc_ts_ms of a patch: its `ts_ms`, else the ordering value (epoch ms if integral, µs->ms if a timestamp)."""
    dtype = types.target.get(table.ordering, LongType())
    fallback: Column = F.lit(None).cast("long")
    if number is not None and isinstance(dtype, TimestampType):
        fallback = floor_div(number.cast("long"), 1000)
    elif number is not None and not isinstance(dtype, DateType):
        fallback = number.cast("long")
    return F.coalesce(F.col(f"{_TOP}.ts_ms"), fallback)


def _present(types: BatchTypes, table: TableConfig, op: Column, raw_map: Column) -> Column:
    """PRESENT: the image's keys its profile can type, minus TOAST placeholders, plus the key (c/r/u only)."""
    names_of = [list(p.columns) for p in types.profiles]
    known = _strings(names_of[DECLARED])
    if any(set(names) != set(names_of[DECLARED]) for names in names_of):
        # a plain record may carry columns only an envelope types: those are not present for it
        known = F.element_at(F.array(*[_strings(n) for n in names_of]), F.col(_PROFILE) + 1)
    placeholders = toast_values(table.unavailable_value_placeholder)
    toasted = F.map_keys(F.map_filter(raw_map, lambda _k, v: v.isin(*placeholders)))
    present_image = F.array_except(
        F.array_intersect(F.coalesce(F.map_keys(raw_map), _no_strings()), F.coalesce(known, _no_strings())),
        F.coalesce(toasted, _no_strings()),
    )
    with_key = F.array_union(present_image, _strings(table.key))
    return F.when(op.isin(*IMAGE_OPS), with_key).otherwise(_no_strings())


def _envelopes(raw: DataFrame) -> DataFrame:
    """Non-null values with their JSON text and, for Connect envelopes, its `schema` and `payload`
    parts: those of `with_envelope` when `raw` has them, else parsed here."""
    if SCHEMA_SLOT in raw.columns:
        raise ValueError("records split by known schemas need their texts first: pass them through with_schema_text")
    if has_envelope(raw):
        levels = _ENVELOPE_LEVELS.get("text", lambda: ((F.col("value").cast("string").alias(_JSON),),))
    else:
        levels = _ENVELOPE_LEVELS.get("envelopes", lambda: envelope_levels(F.col("value").cast("string")))
    return with_levels(raw.filter(F.col("value").isNotNull()), levels)


def _image_text(table: TableConfig) -> Column:
    """The row image's JSON text (`before` for a delete, else `after`).

    A full envelope's images are parsed as maps (`_ENVELOPE`), so their text is taken out
    of the payload only where something reads it, which a CASE or a COALESCE does for the rare
    record whose image did not parse."""
    if table.mode == "full":
        payload, op = F.col(_PAYLOAD), F.col(f"{_ENV}.op")
        return F.when(op == Op.DELETE.value, F.get_json_object(payload, "$.before")).otherwise(
            F.get_json_object(payload, "$.after")
        )
    return F.col(_IMAGE)


def _may_be_malformed(table: TableConfig) -> Column:
    """False for a record whose payload the full envelope's parse read to its end without a fault.

    Spark fills its corrupt-record field wherever a value did not parse or a field did not convert
    (the other modes parse the payload in other ways and are always tested)."""
    return F.col(f"{_ENV}.{_UNPARSED}").isNotNull() if table.mode == "full" else F.lit(True)


def _change_envelope(table: TableConfig, envelopes: list[str], types: BatchTypes, *, headers: bool) -> list[list[Column]]:
    """Levels adding the Debezium envelope (op, ts_ms, before/after, source), the image as its raw
    map (`_RAW`) and whether the record has one (`_HAS_IMAGE`).
    `headers`: the records have KAFKA_HEADERS (a flattened row's metadata may be there)."""
    payload = F.when(F.col(_IS_ENV), F.col(_ENV_PAYLOAD)).otherwise(F.col(_JSON))
    top = _parsed_or_null(F.col(_PAYLOAD), _top_level(table, types))
    if table.mode == "patch":
        env = F.struct(
            F.lit(Op.UPDATE.value).alias("op"),
            F.col(f"{_TOP}.ts_ms").alias("ts_ms"),
            F.lit(None).cast("string").alias("before"),
            F.col(_TOP)[table.patch_field].alias("after"),
            F.lit(None).cast(SOURCE_STRUCT).alias("source"),
        )
        change_levels = [[top.alias(_TOP)], [env.alias(_ENV)]]
    elif table.mode == "flattened":
        env = flattened_envelope(
            F.col(_PAYLOAD),
            table.flattened_prefix,
            F.col(KAFKA_HEADERS) if headers else None,
            table.flattened_header_prefix,
        )
        change_levels = [[top.alias(_TOP), env.alias(_ENV)]]
    else:
        change_levels = [[top.alias(_TOP), F.from_json(F.col(_PAYLOAD), _ENVELOPE, _ENVELOPE_OPTIONS).alias(_ENV)]]
    op = F.col(f"{_ENV}.op")
    image = F.when(op == Op.DELETE.value, F.col(f"{_ENV}.before")).otherwise(F.col(f"{_ENV}.after"))
    if table.mode == "full":
        # the map is the image; an image that is no JSON object parsed as NULL, so its text decides
        image_levels = [[image.alias(_RAW), (image.isNotNull() | _image_text(table).isNotNull()).alias(_HAS_IMAGE)]]
    else:
        image_levels = [
            [image.alias(_IMAGE)],
            [F.from_json(F.col(_IMAGE), "map<string,string>").alias(_RAW), F.col(_IMAGE).isNotNull().alias(_HAS_IMAGE)],
        ]
    return [
        [payload.alias(_PAYLOAD), _profile(table, envelopes).alias(_PROFILE)],
        *change_levels,
        *image_levels,
    ]


def _typed_image(table: TableConfig, wire: StructType) -> Column:
    """Each record's image (`_change_envelope`'s) parsed as the struct `wire`, from the text the
    record came in.

    Why not from the image's own text: Spark copies a JSON object out of its parent (a string
    field of `from_json`, `json_tuple`) by re-writing it, and writes a JSON number with a fraction
    through a double, so `12345678901234567890.123` would arrive as `1.2345678901234567E19` in a
    decimal column. Parsed in place, every digit reaches the decimal. Where one value does not
    convert and spark.sql.json.enablePartialResults is off (it is on by default in Spark 3.5),
    Spark drops the whole nested image; the image's text is then parsed alone, for the
    per-column NULLs the bad-value check names (such a record is rejected, so the copy's
    rounding never lands).
    """
    alone = F.from_json(_image_text(table), wire)
    if table.mode == "flattened":
        return alone  # the image is the row's whole text already
    payload = F.col(_PAYLOAD)

    def field_of(name: str) -> Column:
        return F.from_json(payload, StructType([StructField(name, wire)]))[name]

    if table.mode == "patch":
        in_place = field_of(table.patch_field)
    else:
        in_place = F.when(F.col(f"{_ENV}.op") == Op.DELETE.value, field_of("before")).otherwise(field_of("after"))
    return F.coalesce(in_place, alone)


def _parsed_or_null(text: Column, schema: StructType) -> Column:
    """`from_json(text, schema)`, or a NULL of that type when it has no fields (parsing would find nothing)."""
    return F.from_json(text, schema) if schema.fields else F.lit(None).cast(schema)


_KEY_SCHEMA = StructType([StructField("type", StringType())])
"""A Connect key schema, read only far enough to tell it is there (its other fields are skipped)."""
_KEY_ENVELOPE = ("schema", "payload")


def _key_parse(key_wire: StructType) -> Column:
    """The Kafka key parsed once, for both of its forms: as a Connect envelope (`schema`,
    `payload` typed as `key_wire`) and, unless a key column is named like an envelope's part, as
    the key columns themselves (a key written without a schema). `_key_field` picks one.

    Why not the envelope's parts as text first: a string field of `from_json` that meets a JSON
    object writes the object anew through a JSON generator, and the key's schema and payload
    made two such copies per record, a fifth of decode's executor samples, then a second parse of the payload
    (docs/performance-journal.md, round 35).
    """
    fields = [StructField("schema", _KEY_SCHEMA), StructField("payload", key_wire)]
    if not _named_like_envelope(key_wire):
        fields += key_wire.fields
    return F.from_json(F.col("key").cast("string"), StructType(fields))


def _key_field(parsed: Column, key_wire: StructType, name: str) -> Column:
    """Key column `name` from `_key_parse`'s column: the envelope's payload's when the key is a
    Connect envelope, else the key's own field."""
    enveloped = parsed["schema"].isNotNull() & parsed["payload"].isNotNull()
    if _named_like_envelope(key_wire):  # rare: the key is parsed again, only where it is no envelope
        plain = F.from_json(F.col("key").cast("string"), key_wire)[name]
    else:
        plain = parsed[name]
    return F.when(enveloped, parsed["payload"][name]).otherwise(plain)


def _named_like_envelope(key_wire: StructType) -> bool:
    """A key column is named `schema` or `payload` (in any case, as Spark resolves names)."""
    return any(name.lower() in _KEY_ENVELOPE for name in key_wire.fieldNames())


def _order(table: TableConfig, types: BatchTypes, values: Values, op: Column) -> Order:
    if table.ordering == KAFKA_ORDERING:
        # by Kafka position alone: right when each key lives in one partition (Debezium keys its records)
        return Order(order=kafka_order(), number=None, malformed=F.lit(False), missing_reason="")
    if table.ordering == "source":
        p, source = table.flattened_prefix, F.col(f"{_ENV}.source")
        order = source_order(op, F.col(f"{_ENV}.ts_ms"), source)
        # an empty file name with position 0 is no position at all (`binlog_given`), not a malformed one
        binlog = F.when(binlog_given(source), F.lit(True))
        given = [binlog, source["lsn"], source["ts_ms"], F.col(f"{_ENV}.ts_ms")]
        return Order(
            order=order,
            number=None,
            malformed=order.isNull() & any_true([g.isNotNull() for g in given]),
            missing_reason=(
                f"no source position (`{p}source_file`/`{p}source_pos`/`{p}source_row`, `{p}source_lsn` or "
                f"`{p}source_ts_ms`); add them with the SMT's `add.fields` (source.file,source.pos,source.row "
                "or source.lsn, and source.ts_ms) or its `add.headers` (behind the table's "
                f"`flattened_header_prefix`, `{table.flattened_header_prefix}`), or set the table's `ordering` to a column"
                if table.mode == "flattened"
                else "no source position (source.file/pos, source.lsn, source.ts_ms or ts_ms); "
                "set the table's `ordering` to a column, or to `kafka` when each key's changes live in one "
                "partition in event order (as a keyed Debezium topic has them)"
            ),
        )
    order, number = _ordering(table, types, values, op)
    dtype = types.target.get(table.ordering, LongType()).simpleString()
    return Order(
        order=order,
        number=number,
        malformed=F.lit(False),
        missing_reason=f"ordering column `{table.ordering}` ({dtype}) has no usable value (missing or NULL, not an "
        "integer, timestamp or date, or a delete/truncate without it); send it, or choose another `ordering`",
    )


def _event_columns(
    table: TableConfig, types: BatchTypes, values: Values, op: Column, present: Column, order: Order
) -> list[Column | str]:
    """The events.py contract: typed columns (masked by PRESENT), PRESENT, op, order, ts_ms, source, position."""
    masked = {
        n: F.when(op != Op.TRUNCATE.value, v) if n in table.key else F.when(F.array_contains(present, n), v)
        for n, v in values.unmasked.items()
    }
    ts_ms = (
        _patch_ts_ms(types, table, order.number)
        if table.mode == "patch"
        else source_ts_ms(F.col(f"{_ENV}.ts_ms"), F.col(f"{_ENV}.source"))
    )
    return [
        *[masked[n].alias(n) for n in types.target],
        present.alias(PRESENT),
        op.alias(OP),
        order.order.alias(ORDER),
        ts_ms.alias(TS_MS),
        source_text(F.col(f"{_ENV}.ts_ms"), F.col(f"{_ENV}.source")).alias(SOURCE),
        F.col("topic").alias(KAFKA_TOPIC),
        F.col("partition").alias(KAFKA_PARTITION),
        F.col("offset").alias(KAFKA_OFFSET),
    ]


@dataclass(frozen=True)
class _Plan:
    """Everything decode adds to a table's enveloped records, for one set of batch schemas."""

    levels: tuple[tuple[Column, ...], ...]
    """Columns added a level at a time (see `plan_cache.with_levels`)."""
    output: tuple[Column, ...]
    """The final projection: DecodeResult.parsed's columns."""
    schema: StructType


_ENVELOPE_LEVELS: PlanCache[tuple[tuple[Column, ...], ...]] = PlanCache(entries=2)
_PLANS: PlanCache[_Plan] = PlanCache()


def decode(
    raw: DataFrame, table: TableConfig, envelopes: Sequence[str] | None = None, stored: StructType | None = None
) -> DecodeResult:
    """Decode one table's Kafka records (Spark Kafka source rows: key, value, topic, partition, offset,
    and headers when the job reads them; with `with_envelope`'s columns when the caller found them
    already).

    Steps: find envelopes -> type the batch (its schemas) -> parse the change envelope -> typed
    values -> order -> judge each record (skipped / rejected / event), all in one projection.
    `envelopes` are the batch's distinct envelope schema texts, most used first, when the caller
    has them already (`tally.survey`, from `envelope_schema`); without them decode finds them
    in a Spark job of its own. The projection's expressions are built once per table config and
    set of batch schemas, and reused by later batches (`plan_cache`). `stored`: the table's data
    columns (None for a new table), which decide how a decimal wider than 38 digits is converted.
    """
    tombstones = raw.filter(F.col("value").isNull()).select("topic", "partition", "offset")
    records = _envelopes(raw)
    if table.mode == "patch":
        envelopes = ()
    elif envelopes is None:
        envelopes = distinct_schemas(records, F.col(_SCHEMA), F.col(_HAS_ENV))
    wire = WIRE_ERROR in records.columns
    headers = KAFKA_HEADERS in records.columns
    shape = (table.model_dump_json(), tuple(envelopes), wire, headers, held_decimals(stored))
    plan = _PLANS.get(shape, lambda: _plan(table, list(envelopes), stored, wire=wire, headers=headers))
    return DecodeResult(
        parsed=with_levels(records, plan.levels).select(*plan.output), tombstones=tombstones, schema=plan.schema
    )


def _plan(table: TableConfig, envelopes: list[str], stored: StructType | None, *, wire: bool, headers: bool) -> _Plan:
    """Build decode's expressions for a batch with these envelope schemas (`wire`: records came as
    Avro; `headers`: they carry their Kafka headers, where a flattened row's metadata may be, and
    which a reject keeps).

    Typed values, PRESENT, ORDER and the failing check are columns of their own (a level each),
    not expressions repeated inside every later one: the checks, the event and the reject all
    read them, and a repeated expression is analysed on the driver and may be evaluated on the
    executors once per use.
    """
    types = batch_types(table, envelopes, stored)
    levels = _change_envelope(table, envelopes, types, headers=headers)
    parses, values = typed_values(
        types,
        table,
        typed_image=lambda wire: _typed_image(table, wire),
        key=KeyReader(parse=_key_parse, field=_key_field),
        top=F.col(_TOP) if table.mode == "patch" else None,
        profile=F.col(_PROFILE),
    )
    levels[-1].extend(c.alias(n) for n, c in parses.items())  # beside the raw map: one level fewer
    op = F.col(f"{_ENV}.op")
    wire_error = F.col(WIRE_ERROR) if wire else None
    skip_reason = non_data_reason(op, F.col(_PAYLOAD)) if table.mode != "patch" else F.lit(None).cast("string")
    if wire_error is not None:
        skip_reason = F.when(wire_error.isNull(), skip_reason)
    value_columns, values = _materialized(values, table)
    levels.append([*value_columns, _present(types, table, op, F.col(_RAW)).alias(_PRESENT), skip_reason.alias(_SKIP)])
    present = F.col(_PRESENT)
    built = _order(table, types, values, op)
    number = [built.number.alias(_NUMBER)] if built.number is not None else []
    levels.append([built.order.alias(_ORDER), built.malformed.alias(_MALFORMED), *number])
    order = Order(
        order=F.col(_ORDER),
        number=F.col(_NUMBER) if number else None,
        malformed=F.col(_MALFORMED),
        missing_reason=built.missing_reason,
    )
    record = Record(
        json=F.col(_JSON), payload=F.col(_PAYLOAD), has_envelope=F.col(_HAS_ENV), may_be_malformed=_may_be_malformed(table),
        has_image=F.col(_HAS_IMAGE),
        raw_map=F.col(_RAW), profile=F.col(_PROFILE), op=op, present=present,
    )  # fmt: skip
    judged = checks(table, types, values, record, order, wire_error)
    # a non-data record is skipped, not judged as a change event
    levels.append([F.when(F.col(_SKIP).isNull(), failed_check(judged)).alias(_FAILED)])
    failed = F.col(_FAILED)
    error_class, error = error_of(judged, failed)
    # one parse for both outputs: compute every output column once, split by the outcome
    output = (
        (failed.isNull() & F.col(_SKIP).isNull()).alias(_OK),
        F.when(
            failed.isNull() & F.col(_SKIP).isNotNull(),
            F.struct(F.col("topic"), F.col("partition"), F.col("offset"), F.col(_SKIP).alias("reason")),
        ).alias(_SKIPPED),
        F.struct(*_event_columns(table, types, values, op, present, order)).alias(_EVENT),
        F.when(failed.isNotNull(), F.struct(*reject_columns(table, error_class, error, wire=wire, headers=headers))).alias(_REJECT),
    )
    return _Plan(levels=tuple(tuple(level) for level in levels), output=output, schema=types.schema)


def _materialized(values: Values, table: TableConfig) -> tuple[list[Column], Values]:
    """Columns holding each typed value, and the same Values reading them.

    Key columns keep two: the value (Kafka key first) and the image's own, which a bad-value
    check needs; every other column's two are the same expression.
    """
    columns: list[Column] = []
    unmasked: dict[str, Column] = {}
    image_only: dict[str, Column] = {}
    for i, (name, value) in enumerate(values.unmasked.items()):
        columns.append(value.alias(f"{_VALUE}{i}"))
        unmasked[name] = F.col(f"{_VALUE}{i}")
        if name in table.key:
            columns.append(values.image_only[name].alias(f"{_IMAGE_VALUE}{i}"))
            image_only[name] = F.col(f"{_IMAGE_VALUE}{i}")
        else:
            image_only[name] = unmasked[name]
    return columns, Values(unmasked=unmasked, image_only=image_only, conflicts=values.conflicts)
