"""One logical-event corpus with every kind devkit.debezium encodes, for the Avro tests: built as
JsonConverter records, re-encoded by the tests as the AvroConverter writes them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from devkit.debezium import Column, DebeziumTable, KafkaRecord

# every kind devkit.debezium encodes: the JSON end-to-end tests' logical types and more
COLUMNS = [
    Column("id", "int32", optional=False),
    Column("tiny", "int8"),
    Column("small", "int16"),
    Column("big", "int64"),
    Column("ratio", "float32"),
    Column("score", "float64"),
    Column("active", "boolean"),
    Column("name", "string"),
    Column("blob", "bytes"),
    Column("balance", "decimal", scale=2, precision=12),
    Column("wide", "decimal", scale=4, precision=30),
    Column("anything", "variable_decimal"),
    Column("born", "date"),
    Column("alarm", "time"),
    Column("lap", "micro_time"),
    Column("tick", "nano_time"),
    Column("seen_ms", "timestamp"),
    Column("seen_us", "micro_timestamp"),
    Column("seen_ns", "nano_timestamp"),
    Column("zoned", "zoned_timestamp"),
    Column("year", "year"),
    Column("doc", "json"),
    Column("color", "enum"),
    Column("ident", "uuid"),
]
ADDED = Column("note", "string")


def _row(i: int, **changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": i,
        "tiny": -7,
        "small": 30_000,
        "big": 9_007_199_254_740_993,
        "ratio": 0.5,
        "score": -1234.5678,
        "active": True,
        "name": f"row {i} ünïcödé",
        "blob": b"\x00\xffbytes",
        "balance": Decimal("-1234567890.12"),
        "wide": Decimal("12345678901234567890123456.7891"),
        "anything": Decimal("-0.000123456789"),
        "born": dt.date(1961, 2, 3),
        "alarm": dt.time(7, 30, 15, 123000),
        "lap": dt.timedelta(hours=838, minutes=59, seconds=59, microseconds=999999),
        "tick": 1_234_567_891,
        "seen_ms": dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
        "seen_us": dt.datetime(2024, 3, 1, 12, 30, 15, 123456),
        "seen_ns": -1_500,
        "zoned": dt.datetime(2024, 3, 1, 12, 30, 15, 500000, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        "year": 2024,
        "doc": '{"vip": true}',
        "color": "red",
        "ident": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "name_null": None,
    }
    row.pop("name_null")
    row.update(changes)
    return row


def corpus(server: str) -> list[KafkaRecord]:
    """Snapshot, create, update (with NULLs), delete + tombstone, then a column added by DDL (no truncate yet)."""
    before = DebeziumTable(server=server, database="db", table="t", columns=COLUMNS, key=["id"])
    after = DebeziumTable(server=server, database="db", table="t", columns=[*COLUMNS, ADDED], key=["id"])
    return [
        before.change("r", after=_row(1), pos=100),
        before.change("c", after=_row(2), pos=200),
        before.change("c", after=_row(3, balance=Decimal("0.05")), pos=300),
        before.change("u", before=_row(2), after=_row(2, name=None, balance=None, born=None, zoned=None), pos=400),
        before.change("d", before=_row(3), pos=500),
        before.tombstone(_row(3)),
        before.change("c", after=_row(4, anything=Decimal("1E+3")), pos=600),
        # ALTER TABLE t ADD COLUMN note: a second schema id in the same batch
        after.change("u", before={**_row(1), "note": None}, after={**_row(1), "note": "added"}, pos=700),
        after.change("c", after={**_row(5), "note": None}, pos=800),
        before.change("c", after=_row(6), pos=900),
    ]


def id_in_headers(record: KafkaRecord, kind: str = "contentId") -> tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]:
    """A framed record as Apicurio's serializer writes it by default (`headers.enabled`): each
    side's bare body, its id in an 8-byte `apicurio.<side>.<kind>` header."""
    headers = []
    sides = []
    for side, data in zip(("key", "value"), record, strict=True):
        if data is not None and data[:1] == b"\x00":
            headers.append((f"apicurio.{side}.{kind}", int.from_bytes(data[1:5], "big").to_bytes(8, "big")))
            data = data[5:]
        sides.append(data)
    return sides[0], sides[1], headers
