"""Avro on real components: MariaDB -> Debezium with Apicurio's Avro converter -> registry +
Kafka -> hudi_cdc -> Hudi, row for row, including a column added by DDL mid-stream."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from devkit.services.connect import (
    LocalConnect,
    avro_converter_config,
    flattening_config,
)
from devkit.services.kafka import LocalKafka
from devkit.services.mariadb import LocalMariaDB
from devkit.services.registry import LocalRegistry
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
    """The converter configured as Debezium's documentation does, so its defaults hold: bare
    Avro bodies, their global ids in Kafka headers (a second id after the DDL). The flattened
    test below runs the converter in the Confluent wire format."""
    insert = (
        "INSERT INTO {t} VALUES (1, 'sally', 120.50, '1990-05-17', '2024-03-01 12:30:15.123456', '2024-03-01 12:30:15.5', 'pro', '{{\"vip\": true}}'),"
        " (2, 'george', -15.00, NULL, NULL, NULL, 'free', NULL), (3, 'edward', 0.99, '2001-01-01', '2024-01-01 00:00:00', NULL, NULL, NULL)"
    )
    job = Job(
        spark, kafka, tmp_path, [{"name": "customers", "key": ["id"], "format": "avro"}],
        schema_registry={"url": registry.ccompat_url},
    )  # fmt: skip
    converter = avro_converter_config(registry.v2_url, framing="headers")
    with captured_mariadb(mariadb, connect, kafka, job, DDL, insert, converter) as qualified:

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
        # (the converter also writes `apicurio.value.encoding`: BINARY)
        assert "apicurio.value.globalId" in _apicurio_headers(spark, kafka, job.topic("customers"))


def _apicurio_headers(spark: SparkSession, kafka: LocalKafka, topic: str) -> set[str]:
    """The Apicurio headers the converter wrote on `topic`'s values, the same on every value (the
    framing a test is about is what Kafka really holds)."""
    written = (
        spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("subscribe", topic).option("includeHeaders", "true").load()
        .filter("value IS NOT NULL").select("headers").collect()
    )  # fmt: skip
    named = [{h["key"] for h in r["headers"] or [] if h["key"].startswith("apicurio.value.")} for r in written]
    assert named and all(n == named[0] for n in named), named
    return named[0]


# deep: flattened rows from MariaDB run in `make test` as JSON (test_mariadb_to_hudi), and
# Avro from MariaDB with the envelope just above
@pytest.mark.deep
def test_mariadb_avro_rows_flattened_by_extract_new_record_state_land_row_for_row(
    spark: SparkSession,
    kafka: LocalKafka,
    mariadb: LocalMariaDB,
    connect: LocalConnect,
    registry: LocalRegistry,
    tmp_path: Path,
) -> None:
    """`mode: flattened` with `format: avro`: the SMT's rows through the Avro converter, its
    metadata behind a prefix of the user's choice (`add.fields.prefix`, the table's `flattened_prefix`)."""
    insert = (
        "INSERT INTO {t} VALUES (1, 'sally', 120.50, '1990-05-17', '2024-03-01 12:30:15.123456', NULL, 'pro', NULL),"
        " (2, 'george', -15.00, NULL, NULL, NULL, 'free', NULL)"
    )
    job = Job(
        spark, kafka, tmp_path, [{"name": "customers", "key": ["id"], "format": "avro", "mode": "flattened", "flattened_prefix": "cdc_"}],
        schema_registry={"url": registry.ccompat_url},
    )  # fmt: skip
    # no `op` among the fields: the SMT's `__deleted` (so named whatever the prefix) alone marks the delete
    unwrap = flattening_config("source.ts_ms,source.file,source.pos,source.row,source.snapshot", "rewrite", "cdc_")
    options = avro_converter_config(registry.v2_url) | unwrap
    with captured_mariadb(mariadb, connect, kafka, job, DDL, insert, options) as qualified:
        wait_for("the snapshot", lambda: equal_to_mariadb(job, mariadb, qualified, COLUMNS))
        for statement in (
            f"UPDATE {qualified} SET balance = NULL, tier = 'free' WHERE id = 1",
            f"DELETE FROM {qualified} WHERE id = 2",
            f"INSERT INTO {qualified} (id, name, balance) VALUES (3, 'anne', 42.00)",
        ):
            mariadb.execute(statement)
        wait_for(
            "the changes",
            lambda: equal_to_mariadb(job, mariadb, qualified, COLUMNS)
            and {r["id"] for r in job.rows_spark("customers")} == {1, 3},
        )
        assert not [c for c in job.rows_spark("customers")[0] if c.startswith(("cdc_", "__"))], "metadata became columns"
        assert not {n for n in _apicurio_headers(spark, kafka, job.topic("customers")) if n.endswith("Id")}, "not the wire format"
