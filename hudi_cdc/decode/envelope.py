"""A record's Kafka Connect envelope, `{"schema": ..., "payload": ...}`: its two parts as columns.

Finding them is the costliest step of reading a JSON record: Jackson parses the whole value and
copies the schema's text token by token, though a Debezium topic sends the same schema, byte for
byte, in record after record (about three quarters of each value). So a record whose value
starts with a schema the job has already seen, exactly as JsonConverter writes it,
`{"schema":<S>,"payload":{`, is split by comparing bytes: its schema is S and its payload is the
rest of the value up to the final `}`. Every other record (the first of a new schema, a
pretty-printed value, a null or non-object payload) is parsed as before. `KnownEnvelopes` is
what the job has seen; the pipeline teaches it each batch's schemas after the survey.

A split record carries the place of its schema among its table's known texts (SCHEMA_SLOT), not
the text: the batch is persisted and grouped by it, so whoever reads split rows is given the
texts they were split by (`tally.survey`'s `split_by`, `with_schema_text` before `decode`).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from hudi_cdc.spark.plan_cache import PlanCache, with_levels

JSON_TEXT = "__json"
"""The value as text."""
SCHEMA_TEXT = "__schema"
"""The envelope's `schema` as JSON text (NULL when the value has none)."""
PAYLOAD_TEXT = "__env_payload"
"""The envelope's `payload` as JSON text (NULL when the value has none)."""
IS_ENVELOPE = "__is_env"
"""The value is an envelope, its schema possibly null."""
HAS_SCHEMA = "__has_env"
"""The value is an envelope with a schema."""
ENVELOPE_COLUMNS = (SCHEMA_TEXT, PAYLOAD_TEXT, IS_ENVELOPE, HAS_SCHEMA)
"""The columns `with_envelope` adds (and SCHEMA_SLOT, given known texts)."""
SCHEMA_SLOT = "__schema_slot"
"""Of a record split by a known schema's bytes: that schema's place among its table's known texts,
its SCHEMA_TEXT being NULL until `with_schema_text` fills it in; NULL for a parsed record."""

_POSITION = "__position"
_CUT_PAYLOAD = "__cut_payload"
_PARSED_PAYLOAD = "__parsed_payload"

SCHEMAS_PER_TABLE = 4
"""Schemas remembered per table: the current one and a few older ones whose records may still arrive."""
TABLES_REMEMBERED = 2_000
"""Tables remembered (least recently taught first out): each costs one comparison per record of its table."""


class KnownEnvelopes:
    """The envelope schema texts the job has seen, per table; thread-safe, bounded.

    A text is only ever a guess that makes a record cheap to read: a record that does not start
    with it byte for byte is parsed, so a forgotten or wrong text costs time, never correctness.
    """

    def __init__(self, per_table: int = SCHEMAS_PER_TABLE, tables: int = TABLES_REMEMBERED) -> None:
        self._per_table, self._tables = per_table, tables
        self._texts: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._sampled = False
        self.sampled_records = 0
        """Records `sampled_schemas` read for this process. Spark counts them in the first batch's
        `numInputRows` on top of the batch's own: the sample reads them a second time."""
        self._lock = threading.Lock()

    def sample_now(self) -> bool:
        """True the first time it is asked while nothing is known: a job's first batch samples
        its records (`sampled_schemas`), once, since a sample of a batch whose records are not
        JSON may read the whole batch twice."""
        with self._lock:
            first, self._sampled = not self._sampled and not self._texts, True
            return first

    def count_sampled(self, records: int) -> None:
        """Add to `sampled_records` (batches of several queries may sample at once)."""
        with self._lock:
            self.sampled_records += records

    def learn(self, schemas: Mapping[str, Sequence[str]]) -> None:
        """Remember each table's schema texts (most used first), ahead of the ones known before."""
        with self._lock:
            for table, texts in schemas.items():
                merged = list(dict.fromkeys([*texts, *self._texts.get(table, ())]))
                self._texts[table] = tuple(merged[: self._per_table])
                self._texts.move_to_end(table)
            while len(self._texts) > self._tables:
                self._texts.popitem(last=False)

    def by_table(self) -> dict[str, tuple[str, ...]]:
        """table -> its known schema texts."""
        with self._lock:
            return dict(self._texts)

    def clear(self) -> None:
        """Forget every text, and sample again."""
        with self._lock:
            self._texts.clear()
            self._sampled = False


KNOWN = KnownEnvelopes()
"""What this process has seen (the job's driver): the pipeline teaches it after each survey."""


SAMPLED_RECORDS = 64
"""Records a job's first batch reads ahead to learn its schemas (`sampled_schemas`)."""


def sampled_schemas(records: DataFrame, read: Column, table_column: str, rows: int = SAMPLED_RECORDS) -> dict[str, list[str]]:
    """Per table, the schema texts of the first `rows` records where `read` is true, exactly as
    their values hold them: what a job that has seen no batch yet splits by (one small Spark job
    that reads the first records of a partition or two, where a first batch that loads a whole
    snapshot would otherwise parse every record)."""
    decoder = json.JSONDecoder()
    found: dict[str, list[str]] = {}
    sample = records.filter(read & F.col("value").isNotNull()).select(table_column, "value").limit(rows).collect()
    KNOWN.count_sampled(len(sample))
    for row in sample:
        text = bytes(row["value"]).decode("utf-8", errors="replace")
        if not text.startswith(_OPENING):
            continue
        try:
            _, end = decoder.raw_decode(text, len(_OPENING) - 1)
        except ValueError:
            continue
        schema = text[len(_OPENING) - 1 : end]
        if text.startswith(_head(schema)) and schema not in found.setdefault(row[table_column], []):
            found[row[table_column]].append(schema)
    return found


_OPENING = '{"schema":{'


def with_envelope(
    records: DataFrame, read: Column, *, known: Mapping[str, Sequence[str]] | None = None, table_column: str = ""
) -> DataFrame:
    """`records` (Kafka rows) plus ENVELOPE_COLUMNS: each value's Connect envelope parts, found
    wherever `read` is true (NULL elsewhere).

    Why: finding them is one parse of the whole value, which copies the schema's and the payload's
    text. A caller that persists these rows (the pipeline's routed batch) pays it once, for the
    survey's schemas (`envelope_schema`) and for `decode`, which reads them instead of parsing
    again. With `known` (table -> schema texts, the table named by `table_column`), a record that
    starts with one of its table's texts is split by bytes instead (the module's docstring). The
    columns describe `value`: whoever rewrites `value` (Avro as JSON) drops them first.
    """
    prefixes = tuple((t, tuple(texts)) for t, texts in sorted((known or {}).items()) if texts)
    # built once per set of known texts (a literal per text is a py4j call per batch otherwise)
    levels = _LEVELS.get(
        (prefixes, table_column, str(read)),
        lambda: envelope_levels(F.when(read, F.col("value").cast("string")), prefixes, table_column),
    )
    return with_levels(records, levels).drop(JSON_TEXT, _POSITION, _CUT_PAYLOAD, _PARSED_PAYLOAD)


_LEVELS: PlanCache[tuple[tuple[Column, ...], ...]] = PlanCache(entries=8)


def envelope_levels(
    text: Column, prefixes: tuple[tuple[str, tuple[str, ...]], ...] = (), table_column: str = ""
) -> tuple[tuple[Column, ...], ...]:
    """Levels adding JSON_TEXT (`text`) and ENVELOPE_COLUMNS, and working columns the caller drops.

    `prefixes`: per table, the schema texts whose records are split by bytes (`with_envelope`)."""
    is_envelope = _is_envelope()
    if not prefixes:
        return (
            (text.alias(JSON_TEXT),),
            # one parse finds both parts of an envelope
            (F.json_tuple(F.col(JSON_TEXT), "schema", "payload").alias(SCHEMA_TEXT, PAYLOAD_TEXT),),
            # `{"schema": null, "payload": {...}}` is an envelope whose records are typed like plain ones
            (is_envelope.alias(IS_ENVELOPE), (is_envelope & F.col(SCHEMA_TEXT).isNotNull()).alias(HAS_SCHEMA)),
        )
    json = F.col(JSON_TEXT)
    # Looked up, not tested one by one: the table's place in a list of names (one scan of short
    # names), then its texts by that place. A CASE with a branch per table and text grows the
    # generated code with the tables, and past a few hundred the JVM stops compiling it
    # (measured at 300 tables: 12 µs a record more, then 35 µs with a hash of the name first).
    position = F.col(_POSITION)
    slots = max(len(texts) for _, texts in prefixes)

    def by_table(slot: int, value: Callable[[str], str | int]) -> Column:
        """Each table's `value` of its `slot`-th text, at the record's table's place (NULL: none)."""
        items = [F.lit(value(texts[slot]) if slot < len(texts) else None) for _, texts in prefixes]
        return F.when(position > 0, F.element_at(F.array(*items), position))

    cut: Column | None = None
    for slot in range(slots):
        matches = json.startswith(by_table(slot, _head)) & json.endswith("}")
        cut = F.when(matches, F.lit(slot)) if cut is None else cut.when(matches, F.lit(slot))
    assert cut is not None

    def of_slot(value: Callable[[str], int]) -> Column:
        chosen: Column | None = None
        for slot in range(slots):
            at = F.col(SCHEMA_SLOT) == slot
            chosen = F.when(at, by_table(slot, value)) if chosen is None else chosen.when(at, by_table(slot, value))
        assert chosen is not None
        return chosen

    # the payload from its opening brace to the value's closing one: bytes, not characters (a
    # character position walks the UTF-8 text from its start)
    start = of_slot(lambda text: len(_head(text).encode()) - 1)
    payload = F.col("value").substr(start + 1, F.octet_length(F.col("value")) - start - 1).cast("string")
    split = F.col(SCHEMA_SLOT).isNotNull()
    names = F.array(*[F.lit(table) for table, _ in prefixes])
    # A split record keeps its slot, not its schema's text: the text is about three quarters of
    # the value, and the persisted batch and the survey's grouping copied and hashed it for every
    # record (docs/performance-journal.md, round 34). `with_schema_text` puts it back for decode.
    is_split_envelope = _is_envelope(has_schema=split | F.col(SCHEMA_TEXT).isNotNull())
    return (
        (text.alias(JSON_TEXT), F.call_function("array_position", names, F.col(table_column)).cast("int").alias(_POSITION)),
        (cut.alias(SCHEMA_SLOT),),
        (
            F.when(split, payload).alias(_CUT_PAYLOAD),
            # parsed only where no known schema matched: a generator cannot be conditional, NULL text is cheap
            F.json_tuple(F.when(~split, json), "schema", "payload").alias(SCHEMA_TEXT, _PARSED_PAYLOAD),
        ),
        (F.coalesce(F.col(_CUT_PAYLOAD), F.col(_PARSED_PAYLOAD)).alias(PAYLOAD_TEXT),),
        (
            is_split_envelope.alias(IS_ENVELOPE),
            (is_split_envelope & (split | F.col(SCHEMA_TEXT).isNotNull())).alias(HAS_SCHEMA),
        ),
    )


def _head(schema: str) -> str:
    """What a compact JsonConverter value with this schema and an object payload starts with."""
    return '{"schema":' + schema + ',"payload":{'


def _is_envelope(has_schema: Column | None = None) -> Column:
    """The value is Kafka Connect's `{"schema": ..., "payload": ...}`, its schema possibly null.

    `has_schema`: the envelope's schema was found (default: SCHEMA_TEXT is not NULL)."""
    found = F.col(SCHEMA_TEXT).isNotNull() if has_schema is None else has_schema
    with_schema = found & F.col(PAYLOAD_TEXT).isNotNull()
    # only a record with a payload but no schema pays for listing its keys
    keys = F.sort_array(F.json_object_keys(F.col(JSON_TEXT)))
    null_schema = F.col(PAYLOAD_TEXT).isNotNull() & (keys == F.array(F.lit("payload"), F.lit("schema")))
    return F.when(with_schema, F.lit(True)).otherwise(F.coalesce(null_schema, F.lit(False)))


def has_envelope(records: DataFrame) -> bool:
    """Do `records` carry `with_envelope`'s columns?"""
    return all(name in records.columns for name in ENVELOPE_COLUMNS)


def envelope_schema() -> Column:
    """Over `with_envelope` rows: the envelope schema text that `decode` types a record by, NULL
    for a record without one. The same columns as decode's own, so the texts found match decode's
    comparison of each record's schema with the batch's (`_profile`) exactly."""
    return F.when(F.col(HAS_SCHEMA), F.col(SCHEMA_TEXT))


def with_schema_text(records: DataFrame, texts: Sequence[str]) -> DataFrame:
    """One table's `with_envelope` rows with SCHEMA_TEXT filled in where a record was split by a
    known schema, SCHEMA_SLOT dropped: what `decode` reads. `texts`: the known texts of that table
    that `with_envelope` was given. Rows without SCHEMA_SLOT come back as they are.

    Each filled-in text is the literal itself, not a copy: Spark copies it only where a row is
    stored, and decode compares it (`_profile`) without storing it.
    """
    if SCHEMA_SLOT not in records.columns:
        return records
    slot = F.col(SCHEMA_SLOT)
    text = F.when(slot.isNull(), F.col(SCHEMA_TEXT))
    for index, known in enumerate(texts):
        text = text.when(slot == index, F.lit(known))
    # only a caller that passes other texts than the split's reaches this: a wrong schema would type the record wrongly
    wrong = F.raise_error(F.format_string(f"schema slot %d of {len(texts)} known texts: pass the texts with_envelope split by", slot))
    return records.withColumn(SCHEMA_TEXT, text.otherwise(wrong.cast("string"))).drop(SCHEMA_SLOT)


def split_schema(texts: Sequence[str], slot: int, table: str) -> str:
    """The schema text of `table`'s records split at `slot` (SCHEMA_SLOT), from `texts`: the known
    texts of that table that `with_envelope` was given."""
    if not 0 <= slot < len(texts):
        raise ValueError(
            f"table {table}: records were split by the schema in slot {slot}, but {len(texts)} known "
            "texts were given: pass the texts with_envelope split by"
        )
    return texts[slot]
