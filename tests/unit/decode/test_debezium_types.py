"""Every Debezium logical type decodes exactly (field shapes as in the Debezium connector docs' JSON events)."""

from __future__ import annotations

import base64
import datetime as dt
import json
import random
from decimal import Context, Decimal
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from devkit.debezium import encode_decimal
from hudi_cdc.config.models import TableConfig
from hudi_cdc.decode.debezium_types import column_type, decimal_text
from tests.support.decode_rows import by_offset, decode_cached, kafka_rows

DECIMAL = "org.apache.kafka.connect.data.Decimal"


def _field(name: str, kind: str, logical: str | None = None, **extra: Any) -> dict[str, Any]:
    field: dict[str, Any] = {"type": kind, "optional": True, "field": name, **extra}
    if logical:
        field["name"] = logical
    return field


def _decimal(name: str, scale: int, precision: int | None = None) -> dict[str, Any]:
    params = {"scale": str(scale)} | ({"connect.decimal.precision": str(precision)} if precision else {})
    return _field(name, "bytes", DECIMAL, parameters=params)


FIELDS = [
    _field("id", "int32"),
    _field("tiny", "int8"),
    _field("small", "int16"),
    _field("big", "int64"),
    _field("f32", "float32"),
    _field("f64", "float64"),
    _field("flag", "boolean"),
    _field("blob", "bytes"),
    _decimal("money", 4, 20),
    _decimal("cents", 2, 5),
    _decimal("huge", 0, 38),
    _decimal("wide", 10, 38),
    _decimal("unbounded", 3),  # PostgreSQL numeric(…,3) without a precision parameter
    _decimal("wider", 30, 65),  # MySQL DECIMAL(65,30): no Spark decimal holds it
    _field("bits", "bytes", "io.debezium.data.Bits", parameters={"length": "20"}),  # MySQL BIT(20)
    _field(
        "num",
        "struct",
        "io.debezium.data.VariableScaleDecimal",
        fields=[_field("scale", "int32"), _field("value", "bytes")],
    ),
    _field("day", "int32", "io.debezium.time.Date"),
    _field("t_ms", "int32", "io.debezium.time.Time"),
    _field("t_us", "int64", "io.debezium.time.MicroTime"),
    _field("t_ns", "int64", "io.debezium.time.NanoTime"),
    _field("ts_ms", "int64", "io.debezium.time.Timestamp"),
    _field("ts_us", "int64", "io.debezium.time.MicroTimestamp"),
    _field("ts_ns", "int64", "io.debezium.time.NanoTimestamp"),
    _field("ts_zoned", "string", "io.debezium.time.ZonedTimestamp"),
    _field("year", "int32", "io.debezium.time.Year"),
    _field("doc", "string", "io.debezium.data.Json"),
    _field("size", "string", "io.debezium.data.Enum", parameters={"allowed": "S,M,L"}),
    _field("sizes", "string", "io.debezium.data.EnumSet", parameters={"allowed": "S,M,L"}),
    _field("uid", "string", "io.debezium.data.Uuid"),
    _field("xml", "string", "io.debezium.data.Xml"),
    _field("tags", "array", items={"type": "string", "optional": True}),
    _field("days", "array", items={"type": "int32", "optional": True, "name": "io.debezium.time.Date"}),
    _field("amounts", "array", items={**_decimal("x", 2, 9), "optional": True}),
    _field(
        "spot",
        "struct",
        fields=[_field("at", "int64", "io.debezium.time.MicroTimestamp"), _decimal("price", 2, 5)],
    ),
    _field("attrs", "map", keys={"type": "string"}, values={"type": "string", "optional": True}),
    _field(
        "point",
        "struct",
        "io.debezium.data.geometry.Point",
        fields=[
            _field("x", "float64"),
            _field("y", "float64"),
            _field("wkb", "bytes"),
            _field("srid", "int32"),
        ],
    ),
]


def _b64(number: int) -> str:
    return base64.b64encode(
        number.to_bytes(max(1, (number.bit_length() + 8) // 8), "big", signed=True)
    ).decode()


NINES_38 = 10**38 - 1
# (wire value, decoded value) per column, for two rows: typical values and edge values
CASES: dict[str, list[tuple[Any, Any]]] = {
    "tiny": [(-128, -128), (127, 127)],
    "small": [(-32768, -32768), (32767, 32767)],
    "big": [(2**63 - 1, 2**63 - 1), (-(2**63), -(2**63))],
    "f32": [(0.5, 0.5), (-1.25, -1.25)],
    "f64": [(0.1, 0.1), (-1e300, -1e300)],
    "flag": [(True, True), (False, False)],
    "blob": [(base64.b64encode(b"\x00\xffhi").decode(), bytearray(b"\x00\xffhi")), ("", bytearray(b""))],
    "money": [(_b64(123_456_789_012_345), Decimal("12345678901.2345")), (_b64(-1), Decimal("-0.0001"))],
    "cents": [(encode_decimal(Decimal("-123.45"), 2), Decimal("-123.45")), (encode_decimal(Decimal("0.05"), 2), Decimal("0.05"))],
    "huge": [(_b64(NINES_38), Decimal(NINES_38)), (_b64(-NINES_38), Decimal(-NINES_38))],
    "wide": [(_b64(12345678901234567890123456789012345678), Decimal("1234567890123456789012345678.9012345678")),
             (_b64(-(2**120)), Decimal(f"{-(2**120)}E-10"))],
    "unbounded": [(_b64(0), Decimal("0.000")), (_b64(-128), Decimal("-0.128"))],
    # every one of 65 digits; a negative with limbs of zeros inside (more in test_wide_decimal_text_is_exact)
    "wider": [(_b64(10**65 - 1), f"{'9' * 35}.{'9' * 30}"), (_b64(-(12 * 10**48 + 5)), f"-12{'0' * 18}.{'0' * 29}5")],
    # little-endian on the wire (b'1000 00000000 00000011' as 03 00 08), stored as the database holds it
    "bits": [(base64.b64encode(b"\x03\x00\x08").decode(), bytearray(b"\x08\x00\x03")),
             (base64.b64encode(b"\x01").decode(), bytearray(b"\x01"))],
    "num": [({"scale": 3, "value": _b64(-1234567)}, "-1234.567"), ({"scale": 2, "value": _b64(-(10**60) - 7)}, f"-1{'0' * 58}.07")],
    "day": [(19_000, dt.date(2022, 1, 8)), (-1, dt.date(1969, 12, 31))],
    "t_ms": [(45_296_789, "12:34:56.789000"), (0, "00:00:00.000000")],
    # MySQL TIME is a duration: beyond 24 hours and negative
    "t_us": [(3_023_999_000_001, "839:59:59.000001"), (-1_000_001, "-00:00:01.000001")],
    "t_ns": [(45_296_789_123_456, "12:34:56.789123"), (86_399_999_999_999, "23:59:59.999999")],
    "ts_ms": [(1_700_000_000_123, dt.datetime(2023, 11, 14, 22, 13, 20, 123000)), (-1, dt.datetime(1969, 12, 31, 23, 59, 59, 999000))],
    "ts_us": [(1_700_000_000_123_456, dt.datetime(2023, 11, 14, 22, 13, 20, 123456)), (-1, dt.datetime(1969, 12, 31, 23, 59, 59, 999999))],
    # nanoseconds floor to microseconds (a double would lose the last digits of this one)
    "ts_ns": [(1_700_000_000_123_456_789, dt.datetime(2023, 11, 14, 22, 13, 20, 123456)), (-1, dt.datetime(1969, 12, 31, 23, 59, 59, 999999))],
    "ts_zoned": [("2024-03-01T12:30:15.5+02:00", dt.datetime(2024, 3, 1, 10, 30, 15, 500000)),
                 ("2024-03-01T23:59:59.123456789Z", dt.datetime(2024, 3, 1, 23, 59, 59, 123456))],
    "year": [(2024, 2024), (1901, 1901)],
    "doc": [('{"a": [1, 2]}', '{"a": [1, 2]}'), ("null", "null")],
    "size": [("M", "M"), ("L", "L")],
    "sizes": [("S,L", "S,L"), ("", "")],
    "uid": [("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",) * 2, ("00000000-0000-0000-0000-000000000000",) * 2],
    "xml": [("<a>1</a>",) * 2, ("<b/>",) * 2],
    "tags": [(["x", None, "z"], ["x", None, "z"]), ([], [])],
    "days": [([19_000, None, -1], [dt.date(2022, 1, 8), None, dt.date(1969, 12, 31)]), ([], [])],
    "amounts": [([encode_decimal(Decimal("1.50"), 2), None], [Decimal("1.50"), None]), (None, None)],
    "spot": [({"at": 1_700_000_000_123_456, "price": encode_decimal(Decimal("-9.99"), 2)},
              {"at": dt.datetime(2023, 11, 14, 22, 13, 20, 123456), "price": Decimal("-9.99")}),
             ({"at": None, "price": None}, {"at": None, "price": None})],
    # maps travel as JSON text (Spark cannot order maps, the fold needs to)
    "attrs": [({"k": "v", "n": None}, '{"k":"v","n":null}'), ({}, "{}")],
    "point": [({"x": 1.5, "y": -2.0, "wkb": base64.b64encode(b"\x01\x01").decode(), "srid": 4326},
               {"x": 1.5, "y": -2.0, "wkb": bytearray(b"\x01\x01"), "srid": 4326}),
              ({"x": 0.0, "y": 0.0, "wkb": None, "srid": None}, {"x": 0.0, "y": 0.0, "wkb": None, "srid": None})],
}  # fmt: skip


def _envelope(after: dict[str, Any], pos: int) -> bytes:
    row_schema = {"type": "struct", "fields": FIELDS, "optional": True, "name": "srv.db.t.Value"}
    envelope = {
        "schema": {"type": "struct", "fields": [{**row_schema, "field": "before"}, {**row_schema, "field": "after"}]},
        "payload": {"before": None, "after": after, "op": "c", "ts_ms": 1,
                    "source": {"ts_ms": 1, "file": "bin.000001", "pos": pos, "row": 0}},
    }  # fmt: skip
    return json.dumps(envelope).encode()


@pytest.fixture(scope="module")
def decoded(
    spark: SparkSession,
) -> tuple[dict[int, dict[str, Any]], dict[int, dict[str, Any]], dict[str, str]]:
    """Two create events carrying every type, plus one whose decimal overflows 38 digits."""
    rows = [{"id": i, **{name: values[i][0] for name, values in CASES.items()}} for i in (0, 1)]
    overflow = {"id": 2, "huge": _b64(10**38)}
    # the same overflow inside an array and inside a struct: the value is rejected, not kept with a NULL in it
    nested = [
        {"id": 3, "amounts": [encode_decimal(Decimal("1.00"), 2), _b64(10**10)]},
        {"id": 4, "spot": {"price": _b64(10**6)}},
    ]
    records = [(None, _envelope(after, pos)) for pos, after in enumerate([*rows, overflow, *nested])]
    result = decode_cached(
        kafka_rows(spark, records, topic="srv.db.t"), TableConfig(name="t", key=["id"], base_path="/unused")
    )
    types = {f.name: f.dataType.simpleString() for f in result.schema.fields}
    return by_offset(result.events), by_offset(result.rejects), types


@pytest.mark.parametrize("row", [0, 1], ids=["typical", "edge"])
@pytest.mark.parametrize("column", list(CASES))
def test_logical_type_decodes_exactly(decoded: Any, column: str, row: int) -> None:
    value = decoded[0][row][column]
    if column in ("point", "spot") and value is not None:
        value = value.asDict()
    assert value == CASES[column][row][1]


def test_spark_types_of_the_decoded_columns(decoded: Any) -> None:
    types = decoded[2]
    assert (types["tiny"], types["small"], types["big"], types["f32"], types["f64"]) == (
        "int",  # 8- and 16-bit integers are stored as int (debezium_types.storable)
        "int",
        "bigint",
        "float",
        "double",
    )
    assert (types["money"], types["cents"], types["huge"], types["wide"], types["unbounded"]) == (
        "decimal(20,4)", "decimal(5,2)", "decimal(38,0)", "decimal(38,10)", "decimal(38,3)")  # fmt: skip
    assert types["wider"] == "string"
    assert (types["num"], types["t_us"], types["ts_ns"], types["ts_zoned"], types["day"], types["year"]) == (
        "string", "string", "timestamp", "timestamp", "date", "int")  # fmt: skip
    assert (types["tags"], types["attrs"], types["blob"]) == ("array<string>", "string", "binary")
    assert types["point"] == "struct<x:double,y:double,wkb:binary,srid:int>"


def test_wide_decimal_text_is_exact(spark: SparkSession) -> None:
    """Any length of bytes and any scale: the text Python's exact Decimal gives."""
    rng = random.Random(7)
    numbers = [0, -1, 1, 255, -256, 2**64, -(2**64), 10**9, -(10**18), 10**65 - 1, -(10**65 - 1)]
    numbers += [rng.randrange(-(10**digits), 10**digits) for digits in range(1, 80) for _ in range(3)]
    rows = [(n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big", signed=True), scale)
            for n in numbers for scale in (0, 2, 30, 40)]  # fmt: skip
    frame = spark.createDataFrame(rows, "value binary, scale int")
    texts = frame.select(decimal_text(F.col("value"), F.col("scale"), wide=True).alias("t")).collect()
    exact = Context(prec=100)
    expected = [format(Decimal(int.from_bytes(b, "big", signed=True)).scaleb(-scale, exact), "f") for b, scale in rows]
    assert [r["t"] for r in texts] == expected


def test_decimal_beyond_38_digits_is_rejected_not_rounded(decoded: Any) -> None:
    reject = decoded[1][2]
    assert reject["error_class"] == "BadValue" and "huge (decimal(38,0))" in reject["error_message"]
    assert 2 not in decoded[0]


@pytest.mark.parametrize(("offset", "column"), [(3, "amounts (array<decimal(9,2)>"), (4, "spot (struct<")])
def test_an_element_that_does_not_convert_rejects_the_whole_value(
    decoded: Any, offset: int, column: str
) -> None:
    reject = decoded[1][offset]
    assert reject["error_class"] == "BadValue" and column in reject["error_message"]
    assert offset not in decoded[0]


@pytest.mark.parametrize(
    ("field", "spark_type"),
    [
        pytest.param(_decimal("d", 2, 50), "string", id="precision-above-38"),  # exact text: wide_decimal
        pytest.param(
            _field("m", "map", keys={"type": "int32"}, values={"type": "string"}),
            "string",
            id="map-int-keys-as-json",
        ),
        pytest.param(
            _field("a", "array", items=_decimal("x", 2, 9)), "array<decimal(9,2)>", id="array-of-decimals"
        ),
        pytest.param(_field("t", "int32", "org.apache.kafka.connect.data.Time"), "string", id="connect-time"),
        pytest.param(_field("u", "unknown-kind"), "string", id="unknown-kept-as-json"),
    ],
)
def test_column_type_mapping(field: dict[str, Any], spark_type: str) -> None:
    assert column_type(field).spark.simpleString() == spark_type


# PostgreSQL's infinities as Debezium 3.5 sends them (read off the live connector's events in
# tests/integration/test_postgres_to_hudi.py): [+infinity values], [-infinity values]
INFINITIES: dict[str, tuple[list[Any], list[Any]]] = {
    "day": ([-622_191_234, -2_147_472_692], [-625_821_272, -2_147_472_691]),  # snapshot, stream
    "ts_ms": ([9_223_372_036_825_200], [-9_223_372_036_832_400]),
    "ts_us": ([9_223_372_036_825_200_000], [-9_223_372_036_832_400_000]),
    "ts_ns": ([9_223_372_036_825_200_000], [-9_223_372_036_832_400_000]),
    # inside a timestamptz[] -infinity arrives as the earliest Java date printed without its era
    "ts_zoned": (
        ["infinity", "+infinity", "Infinity"],
        [
            "-infinity",
            "+292269055-12-02T23:00:00.000000Z",
            "+292269055-12-02T23:00:00.000Z",
            "+292269055-12-02T23:00:00Z",
        ],
    ),
}
LATEST_MICROS, EARLIEST_MICROS = (
    253_402_300_799_999_999,
    -62_135_596_800_000_000,
)  # 9999-12-31T23:59:59.999999
LATEST_DAY, EARLIEST_DAY = 2_932_896, -719_162  # 9999-12-31, 0001-01-01


def test_postgres_infinities_become_the_latest_and_earliest_values(spark: SparkSession) -> None:
    """Not NULL, not a dead letter, not a year beyond 9999 that no reader can hold."""
    afters: list[dict[str, Any]] = []
    expected: list[dict[str, int]] = []
    for column, (positive, negative) in INFINITIES.items():
        for wire, latest in [*((v, True) for v in positive), *((v, False) for v in negative)]:
            afters.append({"id": len(afters), column: wire})
            bound = (LATEST_DAY if latest else EARLIEST_DAY) if column == "day" else (
                LATEST_MICROS if latest else EARLIEST_MICROS)  # fmt: skip
            expected.append({"id": len(expected), column: bound})
    records = [(None, _envelope(after, pos)) for pos, after in enumerate(afters)]
    result = decode_cached(
        kafka_rows(spark, records, topic="srv.db.t"), TableConfig(name="t", key=["id"], base_path="/unused")
    )
    assert result.rejects.count() == 0
    # as epoch days and microseconds: PySpark cannot collect a timestamp on 0001-01-01
    stored = result.events.select(
        "id",
        F.unix_date("day").alias("day"),
        *(F.unix_micros(c).alias(c) for c in INFINITIES if c != "day"),
    ).collect()
    rows = {r["id"]: r.asDict() for r in stored}
    assert [{c: rows[e["id"]][c] for c in e} for e in expected] == expected


def test_decimals_of_up_to_8_bytes_take_the_compiled_path_and_match_the_fold(spark: SparkSession) -> None:
    """The long-sized fast path (`_small_decimal`) against Python's exact Decimal and the byte-wise fold,
    at every length from 1 to 9 bytes, both signs and the extremes of each length."""
    numbers = [0, 1, -1, 127, -128, 128, -129, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1]
    numbers += [sign * (2 ** (8 * n - 1) - k) for n in range(1, 10) for sign in (1, -1) for k in (0, 1)]
    rows = [(n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big", signed=True),) for n in numbers]
    frame = spark.createDataFrame(rows, "value binary")
    for precision, scale in ((38, 0), (38, 2), (38, 18), (5, 2)):
        converted = column_type({"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
                                 "parameters": {"scale": str(scale), "connect.decimal.precision": str(precision)}})  # fmt: skip
        got = frame.select(
            converted.convert(F.col("value")).alias("fast"),
            decimal_text(F.col("value"), scale).cast(f"decimal({precision},{scale})").alias("fold"),
        ).collect()
        for (value,), row in zip(rows, got, strict=True):
            exact = Decimal(int.from_bytes(value, "big", signed=True)).scaleb(-scale, Context(prec=100))
            fits = len(exact.as_tuple().digits) <= precision if exact else True
            assert row["fast"] == row["fold"] == (exact if fits else None), (value.hex(), precision, scale)
