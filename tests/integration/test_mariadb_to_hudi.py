"""The whole path on real components: MariaDB -> Debezium -> Kafka -> hudi_cdc -> Hudi, row for row.

The Hudi table must equal what MariaDB holds after a snapshot plus inserts, updates (several of
one row), a delete and an update of NULLs, with Debezium's real encodings of DECIMAL, DATE,
DATETIME(6), TIMESTAMP, ENUM, JSON, TINYINT and SMALLINT columns.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from devkit.services.connect import LocalConnect, flattening_config
from devkit.services.kafka import LocalKafka
from devkit.services.mariadb import LocalMariaDB
from hudi_cdc.hudi.table import table_exists
from tests.support.databases import captured_mariadb, equal_to_mariadb
from tests.support.harness import Job, wait_for

pytestmark = pytest.mark.integration

DDL = """CREATE TABLE {t} (
  id INT PRIMARY KEY,
  name VARCHAR(50) NOT NULL,
  balance DECIMAL(12,2),
  born DATE,
  seen DATETIME(6),
  tier ENUM('free','pro'),
  prefs JSON,
  flag TINYINT,
  qty SMALLINT
)"""
COLUMNS = ["id", "name", "balance", "born", "seen", "tier", "flag", "qty"]


def test_mariadb_changes_land_row_for_row(
    spark: SparkSession, kafka: LocalKafka, mariadb: LocalMariaDB, connect: LocalConnect, tmp_path: Path
) -> None:
    insert = (
        "INSERT INTO {t} VALUES (1, 'sally', 120.50, '1990-05-17', '2024-03-01 12:30:15.123456', 'pro', '{{\"vip\": true}}', 1, -32768),"
        " (2, 'george', -15.00, NULL, NULL, 'free', NULL, 0, 7), (3, 'edward', 0.99, '2001-01-01', '2024-01-01 00:00:00', NULL, NULL, NULL, NULL)"
    )
    job = Job(spark, kafka, tmp_path, [{"name": "customers", "key": ["id"], "type": "MERGE_ON_READ"}])
    with captured_mariadb(mariadb, connect, kafka, job, DDL, insert) as qualified:

        def snapshot_landed() -> bool:
            job.run()
            return table_exists(spark, job.path("customers")) and len(job.rows_spark("customers")) == 3

        # A running connector may not have read its snapshot position yet (slow machine): changes
        # made before that are part of the snapshot, not streamed, so wait for the snapshot first.
        wait_for("Debezium to deliver the changes", snapshot_landed)
        for statement in (
            f"INSERT INTO {qualified} VALUES (4, 'anne', 42.00, '1985-12-31', '2024-05-05 05:05:05.5', 'free', '[1, 2]', NULL, 3)",
            f"UPDATE {qualified} SET balance = 10.00 WHERE id = 2",
            # TINYINT and SMALLINT in a later batch than the snapshot: Hudi stores them as int
            f"UPDATE {qualified} SET balance = 25.00, tier = 'pro', flag = -128, qty = 32767 WHERE id = 2",
            f"UPDATE {qualified} SET balance = NULL, born = NULL WHERE id = 1",
            f"DELETE FROM {qualified} WHERE id = 3",
        ):
            mariadb.execute(statement)

        expected = {
            row[0]: row[: len(COLUMNS)]
            for row in mariadb.execute(f"SELECT {', '.join(COLUMNS)} FROM {qualified}")
        }

        def landed() -> bool:
            job.run()
            if not table_exists(spark, job.path("customers")):
                return False
            return {r["id"] for r in job.rows_spark("customers")} == set(expected) and any(
                t.deleted for b in job.batches for t in b.tables
            )

        wait_for("Debezium to deliver the changes", landed)
        for reader in (job.rows_spark, job.rows_hudi_rs):
            rows = {r["id"]: tuple(r[c] for c in COLUMNS) for r in reader("customers")}
            assert rows == {k: tuple(v) for k, v in expected.items()}, reader.__name__
        assert sum(t.tombstone for b in job.batches for t in b.tables) == 1
        assert sum(t.dead_letter for b in job.batches for t in b.tables) == 0
        (prefs,) = [r["prefs"] for r in job.rows_spark("customers") if r["id"] == 1]
        assert prefs is not None and '"vip"' in prefs
        assert {r["id"]: r["balance"] for r in job.rows_spark("customers")}[2] == Decimal("25.00")


KINDS_DDL = """CREATE TABLE {t} (
  id INT PRIMARY KEY,
  dur TIME(6), short_dur TIME, b1 BIT(1), b10 BIT(10), tags SET('a','b','c'), yr YEAR,
  u INT UNSIGNED, ub BIGINT UNSIGNED, us SMALLINT UNSIGNED, ut TINYINT UNSIGNED, m MEDIUMINT, mu MEDIUMINT UNSIGNED,
  ts3 TIMESTAMP(3) NULL, blob_col BLOB, f FLOAT, d DOUBLE, pt POINT, g GEOMETRY, old DATETIME, wide DECIMAL(65,30)
)"""
KINDS = ["id", "dur", "short_dur", "b1", "b10", "tags", "yr", "u", "ub", "us", "ut", "m", "mu", "ts3", "blob_col",
         "f", "d", "pt", "g", "old", "wide"]  # fmt: skip


def _as_stored(column: str, value: Any) -> Any:
    """MariaDB's value of a KINDS column as the table must hold it (docs/semantics.md: types)."""
    if value is None:
        return None
    if column in ("dur", "short_dur"):  # a duration: '[-]HH:MM:SS.ffffff', hours beyond 23
        micros = abs(value // dt.timedelta(microseconds=1))
        sign = "-" if value < dt.timedelta(0) else ""
        return f"{sign}{micros // 3_600_000_000:02d}:{micros // 60_000_000 % 60:02d}:{micros // 1_000_000 % 60:02d}.{micros % 1_000_000:06d}"
    if column == "b1":
        return value == b"\x01"
    if column in ("pt", "g"):  # MariaDB's value is a 4-byte SRID, then the WKB
        return bytes(value[4:])
    if column == "wide":  # beyond 38 digits: the exact text
        return format(value, "f")
    if column == "ub":  # bigint.unsigned.handling.mode=precise: decimal(20,0)
        return Decimal(value)
    if isinstance(value, bytes):
        return bytes(value)
    return value


def _plain(value: Any) -> Any:
    return bytes(value) if isinstance(value, bytearray) else value


def test_mariadb_column_types_land_as_the_database_holds_them(
    spark: SparkSession, kafka: LocalKafka, mariadb: LocalMariaDB, connect: LocalConnect, tmp_path: Path
) -> None:
    """TIME beyond 24 hours and negative, BIT, SET, YEAR, unsigned and 24-bit integers, TIMESTAMP(3),
    BLOB, FLOAT, POINT, GEOMETRY, DATETIME in the year 1000 and DECIMAL(65,30) beyond 38 digits,
    in a snapshot and in streamed changes; every value equal to MariaDB's."""
    insert = (
        "INSERT INTO {t} VALUES (1, '838:59:59.999999', '-12:00:01', b'1', b'1000000001', 'a,c', 2024,"
        " 4294967295, 18446744073709551615, 65535, 255, -8388608, 16777215, '2024-03-01 12:30:15.123', x'00ff10',"
        " 1.5, 2.25, ST_GeomFromText('POINT(1 2)'), ST_GeomFromText('LINESTRING(0 0,1 1)'), '1000-01-01 00:00:00',"
        " 12345678901234567890.123456789),"
        " (2, NULL, NULL, b'0', NULL, '', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
        " NULL, -99999999999999999999999999999999999.999999999999999999999999999999)"
    )
    job = Job(spark, kafka, tmp_path, [{"name": "kinds", "key": ["id"]}])
    precise = {"bigint.unsigned.handling.mode": "precise"}
    with captured_mariadb(mariadb, connect, kafka, job, KINDS_DDL, insert, precise) as qualified:

        def rows() -> dict[int, tuple[Any, ...]]:
            stored = job.rows_spark("kinds") if table_exists(spark, job.path("kinds")) else []
            return {r["id"]: tuple(_plain(r[c].wkb if c in ("pt", "g") and r[c] else r[c]) for c in KINDS) for r in stored}

        def as_mariadb_holds() -> bool:
            job.run()
            assert sum(t.dead_letter for b in job.batches for t in b.tables) == 0, job.dead_letters()
            expected = mariadb.execute(f"SELECT {', '.join(KINDS)} FROM {qualified}")
            return rows() == {r[0]: tuple(_as_stored(c, v) for c, v in zip(KINDS, r, strict=True)) for r in expected}

        wait_for("the snapshot", as_mariadb_holds)
        for statement in (
            f"UPDATE {qualified} SET dur = '-838:59:59', b10 = b'0000000011', tags = 'b', yr = 1901, ut = 0,"
            " pt = ST_GeomFromText('POINT(-1.5 3)'), old = '1000-01-01 00:00:01', wide = 0.000000000000000000000000000001"
            " WHERE id = 1",
            f"INSERT INTO {qualified} (id, dur, yr, old, ub, wide) VALUES (3, '00:00:00.5', 2155, '9999-12-31 23:59:59',"
            " 9223372036854775808, 1e34)",
        ):
            mariadb.execute(statement)
        wait_for("the changes", lambda: as_mariadb_holds() and 3 in rows() and rows()[1][6] == 1901)
        stored = rows()
        # what this test is about really arrived (else it would pass on simpler values)
        assert stored[1][1:5] == ("-838:59:59.000000", "-12:00:01.000000", True, b"\x00\x03")
        assert stored[3][8] == Decimal(2**63) and stored[2][20] == f"-{'9' * 35}.{'9' * 30}"


def test_mariadb_rows_flattened_by_extract_new_record_state_land_row_for_row(
    spark: SparkSession, kafka: LocalKafka, mariadb: LocalMariaDB, connect: LocalConnect, tmp_path: Path
) -> None:
    """`mode: flattened`: the connector runs Debezium's ExtractNewRecordState, deletes rewritten
    (`__deleted`) and followed by tombstones, the binlog position added as Kafka headers
    (`add.headers`, behind another prefix), the op not: the rows hold only their columns."""
    insert = (
        "INSERT INTO {t} VALUES (1, 'sally', 120.50, '1990-05-17', '2024-03-01 12:30:15.123456', 'pro', NULL, 1, 2),"
        " (2, 'george', -15.00, NULL, NULL, 'free', NULL, 0, 7)"
    )
    table = {"name": "customers", "key": ["id"], "mode": "flattened", "flattened_header_prefix": "hdr_"}
    job = Job(spark, kafka, tmp_path, [table])
    position = "source.ts_ms,source.file,source.pos,source.row,source.snapshot"
    unwrap = flattening_config("", add_headers=position, header_prefix="hdr_")
    with captured_mariadb(mariadb, connect, kafka, job, DDL, insert, unwrap) as qualified:
        wait_for("the snapshot", lambda: equal_to_mariadb(job, mariadb, qualified, COLUMNS))
        for statement in (
            f"INSERT INTO {qualified} (id, name, balance) VALUES (3, 'anne', 42.00)",
            f"UPDATE {qualified} SET balance = NULL, born = NULL, qty = -32768 WHERE id = 1",
            f"DELETE FROM {qualified} WHERE id = 2",
            f"UPDATE {qualified} SET id = 4 WHERE id = 3",  # a key change: a delete and a create
        ):
            mariadb.execute(statement)
        wait_for(
            "the changes",
            lambda: equal_to_mariadb(job, mariadb, qualified, COLUMNS)
            and {r["id"] for r in job.rows_spark("customers")} == {1, 4},
        )
        outcomes = [t for b in job.batches for t in b.tables]
        assert sum(t.deleted for t in outcomes) == 2 and sum(t.tombstone for t in outcomes) == 2
        assert sum(t.dead_letter for t in outcomes) == 0
