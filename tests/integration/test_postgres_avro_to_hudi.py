"""PostgreSQL through Debezium's Avro converter lands the same rows as through its JSON converter.

One table, two connectors on it (one writing JSON, one Avro through the registry), two jobs:
after a snapshot and changes (TOAST placeholders, arrays, infinities, wide and variable-scale
numerics, a delete) both Hudi tables must hold the same rows, and those rows PostgreSQL's.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType

from devkit.services.connect import LocalConnect, avro_converter_config, postgres_connector_config
from devkit.services.kafka import LocalKafka
from devkit.services.postgres import LocalPostgres
from devkit.services.registry import LocalRegistry
from hudi_cdc.hudi.table import table_exists
from tests.support.databases import captured_postgres
from tests.support.harness import Job, wait_for

pytestmark = pytest.mark.integration

KINDS_DDL = """CREATE TABLE {t} (
  id integer PRIMARY KEY, flag integer, n numeric, wide numeric(50,10), amount numeric(12,2), money_col money,
  ints int[], tags text[], tz timestamptz, d date, ref uuid, doc jsonb, blob bytea, props hstore,
  bits bit(10), body text
)"""
TOASTED = ["ALTER TABLE {t} ALTER COLUMN body SET STORAGE EXTERNAL", "ALTER TABLE {t} ALTER COLUMN ints SET STORAGE EXTERNAL"]
BODY = "toasted " * 1_000
INSERT = """INSERT INTO {t} VALUES
  (1, 0, 1234.5678, 1234567890123456789012345678901234567890.0123456789, 12.34, 5.25, array_fill(7, ARRAY[3000]),
   '{{a,NULL}}', '2024-03-01 12:30:15.123456+02', 'infinity', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{{"k": [1, 2]}}',
   '\\x00ff', 'a=>1', B'1000000011', '{body}'),
  (2, 0, NULL, -0.5, NULL, NULL, '{{}}', NULL, '-infinity', '0001-01-01', NULL, 'null', '\\x', NULL, NULL, NULL),
  (3, 0, 'NaN', 0, -1, -0.01, '{{1,NULL}}', '{{}}', NULL, NULL, NULL, NULL, NULL, '', B'0000000000', 'short')"""
CHANGES = [
    "UPDATE {t} SET flag = 1 WHERE id = 1",  # body and ints unchanged: TOAST placeholders
    "UPDATE {t} SET flag = 2, n = -1e-20, wide = -9999999999999999999999999999999999999999.9999999999 WHERE id = 1",
    "UPDATE {t} SET tags = '{{x}}', d = '2024-02-29' WHERE id = 2",
    "DELETE FROM {t} WHERE id = 3",
    "INSERT INTO {t} (id, flag, body) VALUES (4, 4, 'four')",
]


def _stored(job: Job) -> dict[int, dict[str, Any]]:
    """The table's source columns by id; timestamps as text (PySpark cannot collect the year 1)."""
    if not table_exists(job.spark, job.path("kinds")):
        return {}
    table = job.spark.read.format("hudi").load(job.path("kinds"))
    columns = [
        F.col(f.name).cast("string").alias(f.name) if isinstance(f.dataType, TimestampType) else F.col(f.name)
        for f in table.schema.fields
        if not f.name.startswith("_")
    ]
    return {r["id"]: r.asDict() for r in table.select(*columns).collect()}


@pytest.mark.deep
def test_postgres_avro_and_json_land_the_same_rows(
    spark: SparkSession,
    kafka: LocalKafka,
    postgres: LocalPostgres,
    connect: LocalConnect,
    registry: LocalRegistry,
    tmp_path: Path,
) -> None:
    postgres.execute("CREATE EXTENSION IF NOT EXISTS hstore")
    as_json = Job(spark, kafka, tmp_path / "json", [{"name": "kinds", "key": ["id"], "type": "MERGE_ON_READ"}])
    as_avro = Job(
        spark, kafka, tmp_path / "avro", [{"name": "kinds", "key": ["id"], "type": "MERGE_ON_READ", "format": "avro"}],
        schema_registry={"url": registry.ccompat_url},
    )  # fmt: skip
    ddl = [KINDS_DDL, *TOASTED, INSERT.replace("{body}", BODY)]
    with captured_postgres(postgres, connect, as_json, ddl, []) as source:
        qualified = source.qualified
        prefix = f"pga_{as_avro.suffix}"
        as_avro.topic = lambda _name: f"{prefix}.{qualified}"  # type: ignore[method-assign,assignment]
        config = postgres_connector_config(
            hostname=postgres.host, port=postgres.port, user=postgres.user, password=postgres.password,
            dbname="postgres", topic_prefix=prefix, tables=[qualified], slot=f"hudi_cdc_{as_avro.suffix}",
            extra=avro_converter_config(registry.v2_url),
        )  # fmt: skip
        connector = f"postgres-avro-{as_avro.suffix}"
        connect.create_connector(connector, config, initial_state="RUNNING")
        try:
            connect.wait_running(connector)

            def both_hold(ids: set[int]) -> bool:
                for job in (as_json, as_avro):
                    job.run()
                    assert not any(t.dead_letter for b in job.batches for t in b.tables), job.dead_letters()
                return all(set(_stored(job)) == ids for job in (as_json, as_avro))

            wait_for("both snapshots", lambda: both_hold({1, 2, 3}))
            for statement in CHANGES:
                postgres.execute(statement.format(t=qualified))
            wait_for("both to apply the changes", lambda: both_hold({1, 2, 4})
                     and all(_stored(j)[1]["flag"] == 2 for j in (as_json, as_avro)))  # fmt: skip
            from_json, from_avro = (_stored(j) for j in (as_json, as_avro))
            assert from_avro == from_json
            # and what both hold is PostgreSQL's (the TOASTed columns kept through the placeholder)
            one, two = from_json[1], from_json[2]
            assert one["ints"] == [7] * 3000 and one["body"] == BODY and one["flag"] == 2
            assert (one["n"], one["wide"]) == ("-0.00000000000000000001", f"-{'9' * 40}.{'9' * 10}")
            assert (one["bits"], one["d"], two["tz"]) == (b"\x02\x03", dt.date(9999, 12, 31), "0001-01-01 00:00:00")
            assert set(from_json) == {r[0] for r in postgres.execute(f"SELECT id FROM {qualified}")}
        finally:
            connect.delete_connector(connector)
