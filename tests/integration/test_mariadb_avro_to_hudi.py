"""Issue 13 on real components: MariaDB -> Debezium with Apicurio's Avro converter -> registry +
Kafka -> hudi_cdc -> Hudi, row for row, including a column added by DDL mid-stream."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from devkit.services.connect import LocalConnect, avro_converter_config, mariadb_connector_config
from devkit.services.kafka import LocalKafka
from devkit.services.mariadb import LocalMariaDB
from devkit.services.registry import LocalRegistry
from hudi_cdc.hudi.table import table_exists
from tests.integration.harness import Job, wait_for

pytestmark = pytest.mark.integration

DDL = """CREATE TABLE {t} (
  id INT PRIMARY KEY,
  name VARCHAR(50) NOT NULL,
  balance DECIMAL(12,2),
  born DATE,
  seen DATETIME(6),
  stamped TIMESTAMP(3) NULL,
  tier ENUM('free','pro'),
  prefs JSON
)"""
COLUMNS = ["id", "name", "balance", "born", "seen", "tier"]


def test_mariadb_avro_changes_land_row_for_row(
    spark: SparkSession,
    kafka: LocalKafka,
    mariadb: LocalMariaDB,
    connect: LocalConnect,
    registry: LocalRegistry,
    tmp_path: Path,
) -> None:
    suffix = uuid.uuid4().hex[:8]
    database, table, prefix = f"shop_{suffix}", "customers", f"cdc_{suffix}"
    qualified = f"{database}.{table}"
    mariadb.execute(f"CREATE DATABASE {database}")
    mariadb.execute(DDL.format(t=qualified))
    mariadb.execute(
        f"INSERT INTO {qualified} VALUES (1, 'sally', 120.50, '1990-05-17', '2024-03-01 12:30:15.123456', '2024-03-01 12:30:15.5', 'pro', '{{\"vip\": true}}'),"
        " (2, 'george', -15.00, NULL, NULL, NULL, 'free', NULL), (3, 'edward', 0.99, '2001-01-01', '2024-01-01 00:00:00', NULL, NULL, NULL)"
    )
    config = mariadb_connector_config(
        hostname=mariadb.host, port=mariadb.port, user=mariadb.debezium_user, password=mariadb.debezium_password,
        server_id=random.randint(10_000, 2**31 - 1), topic_prefix=prefix, database=database, tables=[table],
        bootstrap_servers=kafka.bootstrap_servers, extra=avro_converter_config(registry.v2_url),
    )  # fmt: skip
    connector = f"mariadb-avro-{suffix}"
    connect.create_connector(connector, config, initial_state="RUNNING")
    try:
        connect.wait_running(connector)
        job = Job(
            spark, kafka, tmp_path, [{"name": "customers", "key": ["id"], "format": "avro"}],
            schema_registry={"url": registry.ccompat_url},
        )  # fmt: skip
        job.topic = lambda _name: f"{prefix}.{qualified}"  # type: ignore[method-assign,assignment]

        def snapshot_landed() -> bool:
            job.run()
            return table_exists(spark, job.path("customers")) and len(job.rows_spark("customers")) == 3

        wait_for("Debezium to deliver the changes", snapshot_landed)
        for statement in (
            f"INSERT INTO {qualified} (id, name, balance, born, seen, tier, prefs) VALUES (4, 'anne', 42.00, '1985-12-31', '2024-05-05 05:05:05.5', 'free', '[1, 2]')",
            f"UPDATE {qualified} SET balance = 10.00 WHERE id = 2",
            f"UPDATE {qualified} SET balance = NULL, born = NULL WHERE id = 1",
            f"DELETE FROM {qualified} WHERE id = 3",
            # a column added mid-stream: a new writer schema (a second schema id)
            f"ALTER TABLE {qualified} ADD COLUMN note VARCHAR(20)",
            f"UPDATE {qualified} SET note = 'added', balance = 25.00 WHERE id = 2",
            f"INSERT INTO {qualified} (id, name, note) VALUES (5, 'nina', 'new')",
        ):
            mariadb.execute(statement)

        columns = [*COLUMNS, "note"]
        expected = {
            row[0]: tuple(row) for row in mariadb.execute(f"SELECT {', '.join(columns)} FROM {qualified}")
        }

        def landed() -> bool:
            job.run()
            rows = {r["id"]: r for r in job.rows_spark("customers")}
            return set(rows) == set(expected) and "note" in rows[5] and rows[5]["note"] == "new"

        wait_for("Debezium to deliver the changes", landed)
        for reader in (job.rows_spark, job.rows_hudi_rs):
            rows = {r["id"]: tuple(r[c] for c in columns) for r in reader("customers")}
            assert rows == expected, reader.__name__
        assert sum(t.dead_letter for b in job.batches for t in b.tables) == 0
        assert sum(t.tombstone for b in job.batches for t in b.tables) == 1
        by_id = {r["id"]: r for r in job.rows_spark("customers")}
        assert by_id[1]["prefs"] is not None and '"vip"' in by_id[1]["prefs"]
        assert by_id[1]["stamped"] is not None
    finally:
        connect.delete_connector(connector)
        mariadb.execute(f"DROP DATABASE {database}")


def test_mariadb_avro_rows_flattened_by_extract_new_record_state_land_row_for_row(
    spark: SparkSession,
    kafka: LocalKafka,
    mariadb: LocalMariaDB,
    connect: LocalConnect,
    registry: LocalRegistry,
    tmp_path: Path,
) -> None:
    """`mode: flattened` with `format: avro`: the SMT's rows through the Avro converter."""
    suffix = uuid.uuid4().hex[:8]
    database, table, prefix = f"flat_{suffix}", "customers", f"cdc_{suffix}"
    qualified = f"{database}.{table}"
    mariadb.execute(f"CREATE DATABASE {database}")
    mariadb.execute(DDL.format(t=qualified))
    mariadb.execute(
        f"INSERT INTO {qualified} VALUES (1, 'sally', 120.50, '1990-05-17', '2024-03-01 12:30:15.123456', NULL, 'pro', NULL),"
        " (2, 'george', -15.00, NULL, NULL, NULL, 'free', NULL)"
    )
    unwrap = {
        "transforms": "unwrap",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        "transforms.unwrap.delete.tombstone.handling.mode": "rewrite",
        "transforms.unwrap.add.fields": "op,source.ts_ms,source.file,source.pos,source.row,source.snapshot",
    }
    config = mariadb_connector_config(
        hostname=mariadb.host, port=mariadb.port, user=mariadb.debezium_user, password=mariadb.debezium_password,
        server_id=random.randint(10_000, 2**31 - 1), topic_prefix=prefix, database=database, tables=[table],
        bootstrap_servers=kafka.bootstrap_servers, extra=avro_converter_config(registry.v2_url) | unwrap,
    )  # fmt: skip
    connector = f"mariadb-avro-flat-{suffix}"
    connect.create_connector(connector, config, initial_state="RUNNING")
    try:
        connect.wait_running(connector)
        job = Job(
            spark, kafka, tmp_path, [{"name": "customers", "key": ["id"], "format": "avro", "mode": "flattened"}],
            schema_registry={"url": registry.ccompat_url},
        )  # fmt: skip
        job.topic = lambda _name: f"{prefix}.{qualified}"  # type: ignore[method-assign,assignment]

        def equal_to_mariadb() -> bool:
            job.run()
            assert sum(t.dead_letter for b in job.batches for t in b.tables) == 0, job.dead_letters()
            stored = job.rows_spark("customers") if table_exists(spark, job.path("customers")) else []
            expected = mariadb.execute(f"SELECT {', '.join(COLUMNS)} FROM {qualified}")
            return {r["id"]: tuple(r[c] for c in COLUMNS) for r in stored} == {r[0]: tuple(r) for r in expected}

        wait_for("the snapshot", equal_to_mariadb)
        for statement in (
            f"UPDATE {qualified} SET balance = NULL, tier = 'free' WHERE id = 1",
            f"DELETE FROM {qualified} WHERE id = 2",
            f"INSERT INTO {qualified} (id, name, balance) VALUES (3, 'anne', 42.00)",
        ):
            mariadb.execute(statement)
        wait_for("the changes", lambda: equal_to_mariadb() and {r["id"] for r in job.rows_spark("customers")} == {1, 3})
    finally:
        connect.delete_connector(connector)
        mariadb.execute(f"DROP DATABASE {database}")
