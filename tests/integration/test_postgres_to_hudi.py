"""The whole path from PostgreSQL: PostgreSQL -> Debezium (pgoutput) -> Kafka -> hudi_cdc -> Hudi, row for row.

What only a live PostgreSQL gives, in Debezium's real encodings: changes ordered by LSN, an
unchanged TOASTed column sent as `__debezium_unavailable_value` (the stored value must stay),
deletes with REPLICA IDENTITY DEFAULT (`before` holds the key alone), a primary-key update (a
delete of the old key, its tombstone, a create of the new one), a TRUNCATE (op `t`), schema
changes at the source, and the types NUMERIC with and without a scale, TIMESTAMPTZ, TIMESTAMP,
DATE, UUID, JSONB, BOOLEAN, SMALLINT and arrays (with NULL elements). A second table holds
PostgreSQL's `infinity` and `-infinity` and dates and timestamps before 1582 and 1900.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from devkit.services.connect import LocalConnect, flattening_config
from devkit.services.kafka import LocalKafka
from devkit.services.postgres import LocalPostgres
from hudi_cdc.decode.toast import toast_values
from hudi_cdc.events import DEFAULT_PLACEHOLDER as TOAST_PLACEHOLDER
from hudi_cdc.hudi.compactor import run_compaction
from tests.integration.conftest import ReadTopic
from tests.support.databases import captured_postgres
from tests.support.harness import Job, wait_for

pytestmark = pytest.mark.integration

DDL = """CREATE TABLE {t} (
  id integer PRIMARY KEY,
  customer text NOT NULL,
  amount numeric(12,2),
  ratio numeric,
  placed timestamptz,
  due date,
  seen timestamp(6),
  ref uuid,
  attrs jsonb,
  vip boolean,
  note text,
  qty smallint,
  sizes smallint[]
)"""
COLUMNS = [
    "id",
    "customer",
    "amount",
    "ratio",
    "placed",
    "due",
    "seen",
    "ref",
    "attrs",
    "vip",
    "note",
    "qty",
    "sizes",
]
# Stored out of line, uncompressed: an update that leaves it alone sends Debezium's placeholder.
TOASTED = "ALTER TABLE {t} ALTER COLUMN note SET STORAGE EXTERNAL"
LONG_NOTE = "toasted " * 1_000


def _note(row_id: int) -> str:
    return f"{row_id}:{LONG_NOTE}"


def _as_stored(column: str, value: Any) -> Any:
    """A PostgreSQL value as the Hudi table holds it (see hudi_cdc/decode/debezium_types.py)."""
    if value is None:
        return None
    if column == "ratio":  # VariableScaleDecimal: the exact decimal as a string
        return Decimal(value)
    if column == "placed":  # ZonedTimestamp: the instant, naive UTC
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    if column == "ref":
        return str(value)
    if column == "attrs":  # JSON text, compared parsed
        return value if isinstance(value, dict) else json.loads(value)
    return value


def _rows(rows: list[dict[str, Any]], columns: list[str] = COLUMNS) -> dict[int, dict[str, Any]]:
    return {r["id"]: {c: _as_stored(c, r[c]) for c in columns} for r in rows}


def test_postgres_changes_land_row_for_row(
    spark: SparkSession,
    kafka: LocalKafka,
    postgres: LocalPostgres,
    connect: LocalConnect,
    read_topic: ReadTopic,
    tmp_path: Path,
) -> None:
    rows = [
        (1, "sally", Decimal("120.50"), Decimal("0.333333333333333333333"), "2024-03-01 12:30:15.123456+02",
         dt.date(1990, 5, 17), dt.datetime(2024, 3, 1, 12, 30, 15, 123456), uuid.UUID(int=1), '{"vip": true}',
         True, _note(1), 3, [1, None, -32768]),
        (2, "george", Decimal("-15.00"), Decimal("12"), None, None, None, None, None, False, _note(2), None, []),
        (3, "edward", Decimal("0.99"), Decimal("-7.5"), "1969-12-31 23:59:59.5Z", dt.date(1960, 1, 1),
         dt.datetime(1960, 1, 1), uuid.uuid4(), "[1, 2]", None, _note(3), -1, None),
    ]  # fmt: skip
    job = Job(spark, kafka, tmp_path, [{"name": "orders", "key": ["id"], "type": "MERGE_ON_READ"}])
    with captured_postgres(postgres, connect, job, [DDL, TOASTED], rows) as source:
        qualified = source.qualified

        def assert_equal_to_postgres(columns: list[str] = COLUMNS, *, hudi_rs: bool = True) -> None:
            stored = postgres.execute(f"SELECT {', '.join(columns)} FROM {qualified}")
            expected = _rows([dict(zip(columns, r, strict=True)) for r in stored], columns)
            for reader in (job.rows_spark, job.rows_hudi_rs) if hudi_rs else (job.rows_spark,):
                assert _rows(reader("orders"), columns) == expected, reader.__name__

        # Changes made before the connector's snapshot began would be part of it: snapshot first.
        wait_for("Debezium to deliver the changes", source.holds({1, 2, 3}))
        for statement in (
            f"INSERT INTO {qualified} (id, customer, amount, note) VALUES (4, 'anne', 42.00, 'short')",
            f"UPDATE {qualified} SET amount = 10.00 WHERE id = 2",  # note: TOASTed and unchanged
            f"UPDATE {qualified} SET amount = 25.00, vip = true, ratio = 1e-30, qty = 32767, sizes = '{{7}}' WHERE id = 2",
            f'UPDATE {qualified} SET ratio = NULL, due = NULL, attrs = \'{{"tier": "gold"}}\' WHERE id = 1',
            f"DELETE FROM {qualified} WHERE id = 3",
            f"UPDATE {qualified} SET id = 10 WHERE id = 4",  # a key change: delete 4, create 10
        ):
            postgres.execute(statement)
        wait_for("Debezium to deliver the changes", source.holds({1, 2, 10}))
        assert_equal_to_postgres()
        stored = {r["id"]: r["note"] for r in job.rows_spark("orders")}
        assert stored[1] == _note(1) and stored[2] == _note(2), "an unchanged TOASTed column lost its value"
        outcomes = [t for b in job.batches for t in b.tables]
        assert sum(t.tombstone for t in outcomes) == 2  # id 3, and id 4 when its key changed
        assert sum(t.dead_letter for t in outcomes) == 0

        # Schema changes at the source (semantics §7): a new column, a decimal widened, smallint -> integer
        # (the same int in the table). Debezium sends the new schema with the next change.
        for statement in (
            f"ALTER TABLE {qualified} ADD COLUMN region text",
            f"ALTER TABLE {qualified} ALTER COLUMN amount TYPE numeric(14,2)",
            f"ALTER TABLE {qualified} ALTER COLUMN qty TYPE integer",
            f"UPDATE {qualified} SET region = 'eu', amount = 123456789012.34, qty = 100000 WHERE id = 1",
        ):
            postgres.execute(statement)

        def region_landed() -> bool:
            job.run()
            source.assert_no_dead_letters()
            return any(r.get("region") == "eu" for r in job.rows_spark("orders"))

        wait_for("Debezium to deliver the changes", region_landed)
        # hudi-rs 0.5.0 refuses a file slice whose older log block holds the narrower decimal
        # (numeric(12,2) beside (14,2): "partial-update column 'amount' has type Decimal128(12, 2)"),
        # which happens when an earlier update of another key went to id 1's file group (the snapshot
        # decides). Spark's reader merges such a slice: it is checked as it is, then both readers
        # after a compaction (test_schema_evolution.py builds that slice on purpose).
        assert_equal_to_postgres([*COLUMNS, "region"], hudi_rs=False)
        assert run_compaction(spark, job.config.table("orders"), force=True)["compacted"] != "-"
        assert_equal_to_postgres([*COLUMNS, "region"])

        # A TRUNCATE removes every row written before it; what follows in the stream stays.
        postgres.execute(f"TRUNCATE {qualified}")
        postgres.execute(f"INSERT INTO {qualified} (id, customer, placed) VALUES (20, 'zoe', now())")
        wait_for("Debezium to deliver the changes", source.holds({20}))
        assert_equal_to_postgres([*COLUMNS, "region"])
        outcomes = [t for b in job.batches for t in b.tables]
        assert sum(t.dead_letter for t in outcomes) == 0

        # The stream really held what this test is about (else it would pass on a simpler one):
        # 3 snapshot reads, 8 changes, 2 deletes with tombstones, the truncate and the last insert.
        records = read_topic(job.topic("orders"), count=15)
        values = [json.loads(value)["payload"] for m in records if (value := m.value()) is not None]
        assert [v["op"] for v in values] == ["r"] * 3 + ["c", "u", "u", "u", "d", "d", "c", "u", "t", "c"]
        assert [v["after"]["note"] for v in values[4:7]] == [TOAST_PLACEHOLDER] * 3
        assert all(v["source"]["lsn"] > 0 for v in values)


MOMENTS_DDL = """CREATE TABLE {t} (
  id integer PRIMARY KEY, d date, ts timestamp(6), ts0 timestamp(0), tz timestamptz, tz3 timestamptz(3),
  tags text[], tzs timestamptz[]
)"""
MOMENTS = ["id", "d", "ts", "ts0", "tz", "tz3", "tags", "tzs"]
LATEST, EARLIEST = dt.datetime(9999, 12, 31, 23, 59, 59, 999_999), dt.datetime(1, 1, 1)
EPOCH = dt.datetime(1970, 1, 1)
# What Debezium 3.5 sends for PostgreSQL's 'infinity' and '-infinity', read off its real events
_INFINITE_WIRE: dict[str, dict[Any, Any]] = {
    # the snapshot's (JDBC) and the stream's (pgoutput) differ for dates
    "d": {
        -622_191_234: LATEST.date(),
        -625_821_272: EARLIEST.date(),
        -2_147_472_692: LATEST.date(),
        -2_147_472_691: EARLIEST.date(),
    },
    "ts": {9_223_372_036_825_200_000: LATEST, -9_223_372_036_832_400_000: EARLIEST},
    "ts0": {9_223_372_036_825_200: LATEST, -9_223_372_036_832_400: EARLIEST},
    "tz": {"infinity": LATEST, "-infinity": EARLIEST},
    "tz3": {"infinity": LATEST, "-infinity": EARLIEST},
    # inside an array, snapshot and stream alike
    "tzs": {"infinity": LATEST, "+292269055-12-02T23:00:00.000000Z": EARLIEST},
}


def _from_wire(column: str, value: Any) -> Any:
    """Debezium's wire value -> what the table must hold: the instant it names, infinities clamped."""
    if value is None or column == "tags":
        return value
    if column == "tzs":
        return [None if v is None else _INFINITE_WIRE[column].get(v) or _from_wire("tz", v) for v in value]
    if value in _INFINITE_WIRE[column]:
        return _INFINITE_WIRE[column][value]
    if column == "d":
        return EPOCH.date() + dt.timedelta(days=value)
    if column == "ts":
        return EPOCH + dt.timedelta(microseconds=value)
    if column == "ts0":
        return EPOCH + dt.timedelta(milliseconds=value)
    return dt.datetime.fromisoformat(value).astimezone(dt.UTC).replace(tzinfo=None)


def test_postgres_infinite_and_ancient_moments(
    spark: SparkSession,
    kafka: LocalKafka,
    postgres: LocalPostgres,
    connect: LocalConnect,
    read_topic: ReadTopic,
    tmp_path: Path,
) -> None:
    """'infinity' lands as the latest value, '-infinity' as the earliest; dates before 1582 and
    timestamps before 1900 are written (Spark refuses both by default): a first snapshot goes through
    Hudi's row writer (bulk insert), which failed on them before."""
    rows = [
        (1, "infinity", "infinity", "infinity", "infinity", "infinity", ["a", None],
         "{infinity,-infinity,NULL,'2024-01-01 00:00:00.5+00'}"),
        (2, "-infinity", "-infinity", "-infinity", "-infinity", "-infinity", [None], "{-infinity}"),
        (3, "0001-01-01", "1500-06-01 12:00:00.5", "1000-01-01 00:00:00", "1500-06-01 12:00:00.5+00",
         "1200-01-01 00:00:00+00", [], "{}"),
        (4, "9999-12-31", "9999-12-31 23:59:59.999999", "9999-12-31 23:59:59", "9999-12-31 23:59:59.999999+00",
         "9999-12-31 23:59:59.999+00", None, None),
        (5, "2024-02-29", "2024-02-29 10:11:12.131415", "2024-02-29 10:11:12", "2024-02-29 10:11:12.131415+05:30",
         "2024-02-29 10:11:12.131+00", ["x"], "{'1500-06-01 12:00:00+00'}"),
        (6, None, None, None, None, None, None, None),
    ]  # fmt: skip
    job = Job(spark, kafka, tmp_path, [{"name": "moments", "key": ["id"], "type": "COPY_ON_WRITE"}])
    with captured_postgres(postgres, connect, job, [MOMENTS_DDL], rows) as source:
        wait_for("Debezium to deliver the changes", source.holds({1, 2, 3, 4, 5, 6}))
        for statement in (  # updates of stored rows, and rows streamed after the snapshot
            f"UPDATE {source.qualified} SET d = '-infinity', ts = '1800-01-01 00:00:00', tzs = '{{-infinity,infinity}}' WHERE id = 5",
            f"UPDATE {source.qualified} SET tz = 'infinity', d = '1000-01-01', ts0 = '-infinity' WHERE id = 6",
            f"UPDATE {source.qualified} SET ts = '2024-01-01 00:00:00', tz3 = '1899-12-31 23:59:59+00' WHERE id = 1",
            # streamed, not read by the snapshot: pgoutput's text, not the JDBC driver's values
            f"INSERT INTO {source.qualified} VALUES (7, 'infinity', 'infinity', 'infinity', 'infinity', 'infinity', NULL, '{{infinity}}')",
            f"INSERT INTO {source.qualified} VALUES (8, '-infinity', '-infinity', '-infinity', '-infinity', '-infinity', NULL, '{{-infinity}}')",
        ):
            postgres.execute(statement)
        records = read_topic(job.topic("moments"), count=len(rows) + 5)
        latest = {}
        for m in records:  # the last image of each key, as Debezium sent it
            after = json.loads(m.value() or b"null")["payload"]["after"]
            latest[after["id"]] = {c: after[c] if c == "id" else _from_wire(c, after[c]) for c in MOMENTS}

        def stored(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
            return {r["id"]: {c: r[c] for c in MOMENTS} for r in rows}

        def read_by_spark() -> list[dict[str, Any]]:
            # PySpark cannot collect a timestamp on 0001-01-01 (CPython's fromtimestamp probes the
            # day before): read the microseconds and convert here
            df = spark.read.format("hudi").load(job.path("moments"))
            instants = ("ts", "ts0", "tz", "tz3")
            micros = df.select(
                "id", "d", "tags", *(F.unix_micros(c).alias(c) for c in instants),
                F.transform("tzs", F.unix_micros).alias("tzs"),
            )  # fmt: skip

            def moment(v: int | None) -> dt.datetime | None:
                return None if v is None else EPOCH + dt.timedelta(microseconds=v)

            return [
                {c: moment(v) if c in instants else [moment(x) for x in v] if c == "tzs" and v is not None else v
                 for c, v in r.asDict().items()}
                for r in micros.collect()
            ]  # fmt: skip

        def landed() -> bool:
            job.run()
            source.assert_no_dead_letters()
            return stored(read_by_spark()) == latest

        wait_for("Debezium to deliver the changes", landed)
        assert stored(job.rows_hudi_rs("moments")) == latest
        table = stored(read_by_spark())
        assert {v for c, v in table[2].items() if c not in ("tags", "tzs")} == {2, EARLIEST, EARLIEST.date()}
        assert {v for c, v in table[7].items() if c != "tzs"} == {7, LATEST, LATEST.date(), None}
        assert {v for c, v in table[8].items() if c != "tzs"} == {8, EARLIEST, EARLIEST.date(), None}
        # inside an array, -infinity arrives as a year no reader holds (PG_NEGATIVE_INFINITY_IN_ARRAY)
        assert table[1]["tzs"] == [LATEST, EARLIEST, None, dt.datetime(2024, 1, 1, 0, 0, 0, 500_000)]
        assert table[5]["tzs"] == [EARLIEST, LATEST] and table[8]["tzs"] == [EARLIEST]
        # an array holding NULL, in a row updated by a later batch (a merge through parquet-avro)
        assert table[1]["tags"] == ["a", None] and table[2]["tags"] == [None]
        assert table[1]["d"] == LATEST.date() and table[1]["tz"] == LATEST and table[1]["ts0"] == LATEST
        assert table[5]["d"] == EARLIEST.date() and table[6]["tz"] == LATEST and table[6]["ts0"] == EARLIEST
        # dates are proleptic Gregorian on the wire, equal to PostgreSQL's (Debezium's snapshot
        # shifts timestamps before 1582 by the Julian calendar's days, its stream does not:
        # stored as sent, see docs/semantics.md)
        assert table[3]["d"] == dt.date(1, 1, 1) and table[6]["d"] == dt.date(1000, 1, 1)
        assert sum(t.dead_letter for b in job.batches for t in b.tables) == 0


TOAST_KINDS_DDL = """CREATE TABLE {t} (
  id integer PRIMARY KEY, flag integer, ints int[], longs bigint[], days date[], blobs bytea[], ids uuid[],
  props hstore, doc jsonb, body text
)"""
TOAST_KINDS = ["ints", "longs", "days", "blobs", "ids", "props", "doc", "body"]
_ELEMENTS = 3_000  # enough to be stored out of line


# the default, and one set by the connector: non-ASCII ("¤~"), so its int[] shape holds negative bytes
@pytest.mark.parametrize("placeholder", [TOAST_PLACEHOLDER, "hex:c2a47e"], ids=["default", "configured"])
def test_postgres_unchanged_toasted_values_of_every_kind_keep_their_stored_value(
    placeholder: str,
    spark: SparkSession,
    kafka: LocalKafka,
    postgres: LocalPostgres,
    connect: LocalConnect,
    read_topic: ReadTopic,
    tmp_path: Path,
) -> None:
    """An update that leaves TOASTed columns alone: Debezium sends a placeholder shaped like each
    column's type (text, an array of its bytes as numbers, a name-based UUID, a one-entry hstore,
    see toast.toast_values). Each must leave the stored value as it was, not overwrite it."""
    postgres.execute("CREATE EXTENSION IF NOT EXISTS hstore")
    n = _ELEMENTS
    insert = f"""INSERT INTO {{t}} VALUES (1, 0, array_fill(7, ARRAY[{n}]), array_fill(7::bigint, ARRAY[{n}]),
      array_fill('2024-01-01'::date, ARRAY[{n}]), array_fill('\\x0102'::bytea, ARRAY[{n}]),
      array_fill('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, ARRAY[{n}]),
      (SELECT hstore(array_agg('k' || g), array_agg('v'::text)) FROM generate_series(1, {n}) g),
      (SELECT jsonb_agg(g) FROM generate_series(1, {n}) g), repeat('x', {n * 10}))"""
    external = [f"ALTER TABLE {{t}} ALTER COLUMN {c} SET STORAGE EXTERNAL" for c in TOAST_KINDS]
    table = {"name": "toasted", "key": ["id"], "type": "MERGE_ON_READ", "unavailable_value_placeholder": placeholder}
    job = Job(spark, kafka, tmp_path, [table])
    options = {"unavailable.value.placeholder": placeholder}
    with captured_postgres(postgres, connect, job, [TOAST_KINDS_DDL, *external, insert], [], options) as source:
        wait_for("the snapshot", source.holds({1}))
        postgres.execute(f"UPDATE {source.qualified} SET flag = 1 WHERE id = 1")
        update = json.loads(read_topic(job.topic("toasted"), count=2)[1].value() or b"null")["payload"]
        assert update["op"] == "u" and update["after"]["flag"] == 1
        # every column arrived as a placeholder (none as its value), else this test tests nothing
        sent = {c: update["after"][c] for c in TOAST_KINDS}
        assert all(v is not None and len(json.dumps(v)) < 200 for v in sent.values()), sent
        assert sent["body"] == toast_values(placeholder)[0], "the connector did not take the placeholder"

        def read() -> dict[str, Any]:
            (row,) = spark.read.format("hudi").load(job.path("toasted")).collect()
            return row.asDict()

        def flagged() -> bool:
            job.run()
            source.assert_no_dead_letters()
            return bool(read()["flag"] == 1)

        wait_for("the update", flagged)
        row = read()
        assert row["ints"] == [7] * n and row["longs"] == [7] * n
        assert row["days"] == [dt.date(2024, 1, 1)] * n and row["blobs"] == [bytearray(b"\x01\x02")] * n
        assert row["ids"] == ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"] * n
        assert json.loads(row["props"]) == {f"k{g}": "v" for g in range(1, n + 1)}
        assert json.loads(row["doc"]) == list(range(1, n + 1)) and row["body"] == "x" * n * 10


def test_postgres_rows_flattened_by_extract_new_record_state_land_row_for_row(
    spark: SparkSession, kafka: LocalKafka, postgres: LocalPostgres, connect: LocalConnect, tmp_path: Path
) -> None:
    """`mode: flattened` on PostgreSQL: lsn-ordered rows, a rewritten delete, and an unchanged
    TOASTed column (its placeholder) that keeps its stored value. The source fields are named
    without their struct (`lsn`, the SMT's `__lsn`), as Debezium's docs configure them."""
    unwrap = flattening_config("op,lsn,sequence,txId,snapshot", "rewrite")
    ddl = ["CREATE TABLE {t} (id integer PRIMARY KEY, a integer, note text)", TOASTED]
    job = Job(spark, kafka, tmp_path, [{"name": "flat", "key": ["id"], "mode": "flattened"}])
    with captured_postgres(postgres, connect, job, ddl, [(1, 1, _note(1)), (2, 2, "short")], unwrap) as source:
        wait_for("the snapshot", source.holds({1, 2}))
        for statement in (
            "UPDATE {t} SET a = 10 WHERE id = 1",  # note unchanged: the placeholder
            "DELETE FROM {t} WHERE id = 2",
            "INSERT INTO {t} VALUES (3, 3, 'three')",
            "UPDATE {t} SET a = NULL WHERE id = 3",
        ):
            postgres.execute(statement.format(t=source.qualified))
        wait_for("the changes", source.holds({1, 3}))

        def stored() -> dict[int, tuple[Any, ...]]:
            return {r["id"]: (r["a"], r["note"]) for r in job.rows_spark("flat")}

        wait_for("the last update", lambda: job.run() is not None and stored()[3] == (None, "three"))
        expected = {r[0]: (r[1], r[2]) for r in postgres.execute(f"SELECT id, a, note FROM {source.qualified}")}
        assert stored() == expected and expected[1] == (10, _note(1))


def test_postgres_keyless_table_with_replica_identity_full_lands_row_for_row(
    spark: SparkSession,
    kafka: LocalKafka,
    postgres: LocalPostgres,
    connect: LocalConnect,
    read_topic: ReadTopic,
    tmp_path: Path,
) -> None:
    """A table without a primary key, `REPLICA IDENTITY FULL` (how PostgreSQL logs such tables):
    Debezium sends no Kafka key and every update and delete carries the whole old row. The
    table's `key` comes from the row; an update that leaves a TOASTed column alone keeps it.
    The connector also runs `decimal.handling.mode=string` (the default `precise` is tested
    above): its schema types the numeric as a string, so the table holds exactly its text."""
    ddl = [
        "CREATE TABLE {t} (id integer NOT NULL, a integer, note text, amount numeric(12,2))",
        "ALTER TABLE {t} REPLICA IDENTITY FULL",
        TOASTED,
    ]
    job = Job(spark, kafka, tmp_path, [{"name": "full", "key": ["id"]}])
    rows = [(1, 1, _note(1), Decimal("120.50")), (2, 2, "short", None)]
    with captured_postgres(postgres, connect, job, ddl, rows, {"decimal.handling.mode": "string"}) as source:
        wait_for("the snapshot", source.holds({1, 2}))
        for statement in (
            "UPDATE {t} SET a = 10 WHERE id = 1",  # note unchanged
            "DELETE FROM {t} WHERE id = 2",
            "INSERT INTO {t} VALUES (3, 3, 'three', -15)",
            "UPDATE {t} SET a = NULL, note = 'changed' WHERE id = 3",
        ):
            postgres.execute(statement.format(t=source.qualified))
        wait_for("the changes", source.holds({1, 3}))
        records = read_topic(job.topic("full"), count=6)
        # what this test is about really arrived: no key, whole old rows
        assert all(r.key() is None for r in records)
        payloads = [json.loads(value)["payload"] for r in records if (value := r.value()) is not None]
        (delete,) = [p for p in payloads if p["op"] == "d"]
        assert delete["before"] == {"id": 2, "a": 2, "note": "short", "amount": None}

        def stored() -> dict[int, tuple[Any, ...]]:
            return {r["id"]: (r["a"], r["note"], r["amount"]) for r in job.rows_spark("full")}

        wait_for("the last update", lambda: job.run() is not None and stored()[3][:2] == (None, "changed"))
        expected = {r[0]: (r[1], r[2]) for r in postgres.execute(f"SELECT id, a, note FROM {source.qualified}")}
        assert {k: v[:2] for k, v in stored().items()} == expected and expected[1] == (10, _note(1))
        assert {k: v[2] for k, v in stored().items()} == {1: "120.50", 3: "-15.00"}
