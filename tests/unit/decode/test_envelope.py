"""Splitting a value by a known schema's bytes gives what parsing it gives, and only where it may."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from devkit.debezium import Column, DebeziumTable
from hudi_cdc.config.models import TableConfig
from hudi_cdc.decode.envelope import (
    HAS_SCHEMA,
    IS_ENVELOPE,
    PAYLOAD_TEXT,
    SCHEMA_SLOT,
    SCHEMA_TEXT,
    KnownEnvelopes,
    sampled_schemas,
    with_envelope,
    with_schema_text,
)
from hudi_cdc.decode.records import decode
from hudi_cdc.fold.tally import survey
from hudi_cdc.kafka.routing import TABLE_COLUMN
from hudi_cdc.spark.lineage import release
from tests.support.decode_rows import KAFKA_COLUMNS, T0

SOURCE = DebeziumTable(
    server="s", database="d", table="t", key=["id"],
    columns=[Column("id", "int32", optional=False), Column("name", "string")],
)  # fmt: skip
WIDER = DebeziumTable(
    server="s", database="d", table="t", key=["id"],
    columns=[Column("id", "int32", optional=False), Column("name", "string"), Column("age", "int32")],
)  # fmt: skip


def _compact(value: dict[str, Any], *, ascii_only: bool = True) -> bytes:
    """As Kafka Connect's JsonConverter writes it: no spaces."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=ascii_only).encode()


def _as_dict(record: tuple[bytes | None, bytes | None]) -> dict[str, Any]:
    assert record[1] is not None
    return dict(json.loads(record[1]))


def _values() -> list[tuple[str, bytes | None, bytes]]:
    """(what it is, key, value): records of the known schema in every form, and others."""
    known = _as_dict(SOURCE.change("c", after={"id": 1, "name": "é"}, pos=100))
    other = _as_dict(WIDER.change("c", after={"id": 2, "name": "b", "age": 3}, pos=200))
    compact = _compact(known)  # `é` written as \u00e9: a parse writes it back as é, a byte split keeps it
    return [
        ("compact, known", b'{"id":1}', compact),
        ("compact, known, non-ASCII as UTF-8", b'{"id":1}', _compact(known, ascii_only=False)),
        ("compact, unknown schema", b'{"id":2}', _compact(other)),
        ("spaced, known schema", b'{"id":1}', json.dumps(known).encode()),
        ("null payload", None, _compact({"schema": known["schema"], "payload": None})),
        ("a string payload", None, _compact({"schema": known["schema"], "payload": json.dumps(known["payload"])})),
        ("truncated, ends in a brace", None, compact[: compact.rindex(b"}")]),
        ("a newline after it", b'{"id":1}', compact + b"\n"),
        ("not UTF-8", None, compact.replace(b"\\u00e9", b"\xff")),
        ("not JSON", None, b"{not json"),
    ]


@pytest.fixture()
def batch(spark: SparkSession) -> Any:
    rows = [(k, v, "s.d.t", 0, offset, T0) for offset, (_, k, v) in enumerate(_values())]
    return spark.createDataFrame(rows, KAFKA_COLUMNS).withColumn(TABLE_COLUMN, F.lit("t"))


def test_a_value_of_a_known_schema_is_split_by_bytes_and_reads_as_the_parsed_one(spark: SparkSession, batch: Any) -> None:
    read = F.col(TABLE_COLUMN) == "t"
    parsed = with_envelope(batch, read)
    learned = survey(parsed, schemas_of=["t"])["t"].envelopes
    known_text = json.dumps(_as_dict(SOURCE.change("c"))["schema"], separators=(",", ":"))
    assert learned is not None and known_text in learned

    columns = ["offset", SCHEMA_TEXT, PAYLOAD_TEXT, IS_ENVELOPE, HAS_SCHEMA]
    before = {r["offset"]: r for r in parsed.select(*columns).collect()}
    split = with_envelope(batch, read, known={"t": [known_text]}, table_column=TABLE_COLUMN)
    # what the batch persists: a split record's slot, not its schema's text
    stored = {r["offset"]: r for r in split.select("offset", SCHEMA_SLOT, SCHEMA_TEXT).collect()}
    after = {r["offset"]: r for r in with_schema_text(split, [known_text]).select(*columns).collect()}
    values = _values()
    for offset, (name, _, value) in enumerate(values):
        ours, theirs = after[offset], before[offset]
        slot, text = stored[offset][SCHEMA_SLOT], stored[offset][SCHEMA_TEXT]
        assert (slot, text) == ((0, None) if name in _SPLIT else (None, theirs[SCHEMA_TEXT])), name
        if name in _SPLIT:
            # the payload is the value's own bytes, from its opening brace to the last one but one
            start = value.index(b',"payload":{') + len(b',"payload":')
            assert ours[PAYLOAD_TEXT] == value[start:-1].decode(errors="replace"), name
            assert ours[SCHEMA_TEXT] == known_text and ours[HAS_SCHEMA] is True, name
        else:  # parsed as before
            assert ours == theirs, name
        if name == "truncated, ends in a brace":
            # a parse fails on the whole value (not an envelope); the split finds an envelope whose
            # payload is cut short: decode rejects both as MalformedJson (the next test)
            assert theirs[IS_ENVELOPE] is False
            with pytest.raises(json.JSONDecodeError):
                json.loads(ours[PAYLOAD_TEXT])
        elif name in _SPLIT:
            assert (ours[SCHEMA_TEXT], ours[IS_ENVELOPE]) == (theirs[SCHEMA_TEXT], theirs[IS_ENVELOPE]), name
            if name != "not UTF-8":
                assert json.loads(ours[PAYLOAD_TEXT]) == json.loads(theirs[PAYLOAD_TEXT]), name
                # a parse writes the payload anew (\u00e9 as é): the split did not parse
                assert ours[PAYLOAD_TEXT] != theirs[PAYLOAD_TEXT] or "\\u00e9" not in value.decode(), name


_SPLIT = ("compact, known", "compact, known, non-ASCII as UTF-8", "truncated, ends in a brace", "not UTF-8")
"""The values `_values` holds that start with the known schema as JsonConverter writes it and end in a brace."""


def test_decode_reads_the_same_events_and_rejects_from_split_values(spark: SparkSession, batch: Any) -> None:
    table = TableConfig(name="t", key=["id"], base_path="/unused")
    read = F.col(TABLE_COLUMN) == "t"
    known_text = json.dumps(_as_dict(SOURCE.change("c"))["schema"], separators=(",", ":"))
    results = []
    for known in (None, {"t": [known_text]}):
        enveloped = with_envelope(batch, read, known=known, table_column=TABLE_COLUMN)
        envelopes = survey(enveloped, schemas_of=["t"], split_by=known)["t"].envelopes
        records = with_schema_text(enveloped.drop(TABLE_COLUMN), (known or {}).get("t", ()))
        results.append(decode(records, table, envelopes=envelopes).cached())
    parsed, split = results
    try:
        for part in ("events", "rejects", "skipped"):
            ours, theirs = getattr(split, part), getattr(parsed, part)
            assert ours.count() == theirs.count() and ours.exceptAll(theirs).isEmpty(), part
        assert parsed.events.count() >= 4 and parsed.rejects.count() >= 3
    finally:
        for result in results:
            release(result.parsed)


def test_known_envelopes_keep_the_newest_texts_first_and_forget_the_oldest_table() -> None:
    known = KnownEnvelopes(per_table=2, tables=2)
    known.learn({"a": ["a1"], "b": ["b1"]})
    known.learn({"a": ["a2", "a3"]})
    assert known.by_table()["a"] == ("a2", "a3")
    known.learn({"a": ["a1"]})
    assert known.by_table()["a"] == ("a1", "a2")
    known.learn({"c": ["c1"]})  # b was taught longest ago
    assert set(known.by_table()) == {"a", "c"}


def test_a_sample_finds_each_tables_schema_as_its_values_hold_it(spark: SparkSession, batch: Any) -> None:
    other = DebeziumTable(server="s", database="d", table="u", key=["id"], columns=SOURCE.columns)
    extra = [(b'{"id":3}', _compact(_as_dict(other.change("c", after={"id": 3}))), "s.d.u", 0, 100, T0, "u")]
    records = batch.unionByName(spark.createDataFrame(extra, KAFKA_COLUMNS + f", {TABLE_COLUMN} string"))
    found = sampled_schemas(records, F.lit(True), TABLE_COLUMN)
    compact = json.dumps(_as_dict(SOURCE.change("c"))["schema"], separators=(",", ":"))
    # the spaced and the other forms of the batch are not JsonConverter's: only their compact schemas
    assert found == {
        "t": [compact, json.dumps(_as_dict(WIDER.change("c"))["schema"], separators=(",", ":"))],
        "u": [json.dumps(_as_dict(other.change("c"))["schema"], separators=(",", ":"))],
    }
    assert sampled_schemas(records, F.col(TABLE_COLUMN) == "u", TABLE_COLUMN).keys() == {"u"}


def test_only_a_first_batch_with_nothing_known_samples() -> None:
    known = KnownEnvelopes()
    assert known.sample_now() and not known.sample_now()
    known.clear()
    known.learn({"a": ["a1"]})
    assert not known.sample_now()


def test_a_record_is_split_only_by_its_own_tables_schemas(spark: SparkSession) -> None:
    value = _compact(_as_dict(SOURCE.change("c", after={"id": 1, "name": "é"}, pos=100)))
    text = json.dumps(_as_dict(SOURCE.change("c"))["schema"], separators=(",", ":"))
    wider = json.dumps(_as_dict(WIDER.change("c"))["schema"], separators=(",", ":"))
    rows = [(None, value, "s.d.t", 0, offset, T0, table) for offset, table in enumerate(["t", "u", "v", "w"])]
    batch = spark.createDataFrame(rows, KAFKA_COLUMNS + f", {TABLE_COLUMN} string")
    # u knows only another schema; v is known with two texts, the record's second; w is unknown
    known = {"t": [text], "u": [wider], "v": [wider, text], **{f"x{i}": [wider] for i in range(50)}}
    enveloped = with_envelope(batch, F.lit(True), known=known, table_column=TABLE_COLUMN)
    found = {r[TABLE_COLUMN]: r for r in enveloped.select(TABLE_COLUMN, PAYLOAD_TEXT, SCHEMA_SLOT).collect()}
    payloads = {t: r[PAYLOAD_TEXT] for t, r in found.items()}
    assert [found[t][SCHEMA_SLOT] for t in "tuvw"] == [0, None, 1, None]
    # split: the value's own bytes (\\u00e9); parsed: written anew (é)
    assert ["\\u00e9" in payloads[t] for t in "tuvw"] == [True, False, True, False], payloads
    assert all(json.loads(p)["after"]["name"] == "é" for p in payloads.values())


def test_split_records_are_read_only_with_the_texts_they_were_split_by(spark: SparkSession) -> None:
    """A slot means nothing without its texts: every reader of split rows is given them, or fails."""
    narrow = _compact(_as_dict(SOURCE.change("c", after={"id": 1, "name": "a"}, pos=100)))
    wide = _compact(_as_dict(WIDER.change("c", after={"id": 2, "name": "b", "age": 3}, pos=200)))
    text = json.dumps(_as_dict(SOURCE.change("c"))["schema"], separators=(",", ":"))
    wider = json.dumps(_as_dict(WIDER.change("c"))["schema"], separators=(",", ":"))
    rows = [(b'{"id":1}', narrow, "s.d.t", 0, 0, T0, "t"), (b'{"id":2}', wide, "s.d.t", 0, 1, T0, "t")]
    batch = spark.createDataFrame(rows, KAFKA_COLUMNS + f", {TABLE_COLUMN} string")
    known = {"t": [wider, text]}
    enveloped = with_envelope(batch, F.lit(True), known=known, table_column=TABLE_COLUMN)

    # the survey names both schemas from their slots, most used first then newest
    assert survey(enveloped, schemas_of=["t"], split_by=known)["t"].envelopes == (wider, text)
    with pytest.raises(ValueError, match="table t: records were split by the schema in slot"):
        survey(enveloped, schemas_of=["t"])
    records = enveloped.drop(TABLE_COLUMN)
    with pytest.raises(ValueError, match="with_schema_text"):
        decode(records, TableConfig(name="t", key=["id"], base_path="/unused"), envelopes=[wider, text])
    with pytest.raises(Exception, match="pass the texts with_envelope split by"):
        with_schema_text(records, [wider]).select(SCHEMA_TEXT).collect()

    # two schemas in one batch: each record typed by its own (decode compares the filled-in texts)
    table = TableConfig(name="t", key=["id"], base_path="/unused")
    decoded = decode(with_schema_text(records, known["t"]), table, envelopes=[wider, text]).cached()
    try:
        events = {r["id"]: r for r in decoded.events.collect()}
        assert decoded.rejects.count() == 0 and set(events) == {1, 2}
        assert (events[1]["name"], events[1]["age"]) == ("a", None) and (events[2]["name"], events[2]["age"]) == ("b", 3)
    finally:
        release(decoded.parsed)
