"""The whole path from PostgreSQL: PostgreSQL -> Debezium (pgoutput) -> Kafka -> hudi_cdc -> Hudi, row for row.

What only a live PostgreSQL gives, in Debezium's real encodings: changes ordered by LSN, an
unchanged TOASTed column sent as `__debezium_unavailable_value` (the stored value must stay),
deletes with REPLICA IDENTITY DEFAULT (`before` holds the key alone), a primary-key update (a
delete of the old key, its tombstone, a create of the new one), a TRUNCATE (op `t`), and the
types NUMERIC with and without a scale, TIMESTAMPTZ, TIMESTAMP, DATE, UUID, JSONB and BOOLEAN.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from devkit.services.connect import LocalConnect, postgres_connector_config
from devkit.services.kafka import LocalKafka
from devkit.services.postgres import LocalPostgres
from hudi_cdc.decode import TOAST_PLACEHOLDER
from hudi_cdc.hudi.table import table_exists
from tests.integration.conftest import ReadTopic
from tests.integration.harness import Job

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
  note text
)"""
COLUMNS = ["id", "customer", "amount", "ratio", "placed", "due", "seen", "ref", "attrs", "vip", "note"]
# Stored out of line, uncompressed: an update that leaves it alone sends Debezium's placeholder.
LONG_NOTE = "toasted " * 1_000


def _note(row_id: int) -> str:
    return f"{row_id}:{LONG_NOTE}"


def _wait_for(condition: Callable[[], bool], timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("Debezium did not deliver the changes in time")
        time.sleep(1)


def _as_stored(column: str, value: Any) -> Any:
    """A PostgreSQL value as the Hudi table holds it (see hudi_cdc/debezium_types.py)."""
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


def _rows(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {r["id"]: {c: _as_stored(c, r[c]) for c in COLUMNS} for r in rows}


def test_postgres_changes_land_row_for_row(
    spark: SparkSession,
    kafka: LocalKafka,
    postgres: LocalPostgres,
    connect: LocalConnect,
    read_topic: ReadTopic,
    tmp_path: Path,
) -> None:
    suffix = uuid.uuid4().hex[:8]
    schema, prefix = f"shop_{suffix}", f"pg_{suffix}"
    qualified = f"{schema}.orders"
    postgres.execute(f"CREATE SCHEMA {schema}")
    postgres.execute(DDL.format(t=qualified))
    postgres.execute(f"ALTER TABLE {qualified} ALTER COLUMN note SET STORAGE EXTERNAL")
    insert = f"INSERT INTO {qualified} VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
    for row in (
        (1, "sally", Decimal("120.50"), Decimal("0.333333333333333333333"), "2024-03-01 12:30:15.123456+02",
         dt.date(1990, 5, 17), dt.datetime(2024, 3, 1, 12, 30, 15, 123456), uuid.UUID(int=1), '{"vip": true}',
         True, _note(1)),
        (2, "george", Decimal("-15.00"), Decimal("12"), None, None, None, None, None, False, _note(2)),
        (3, "edward", Decimal("0.99"), Decimal("-7.5"), "1969-12-31 23:59:59.5Z", dt.date(1960, 1, 1),
         dt.datetime(1960, 1, 1), uuid.uuid4(), "[1, 2]", None, _note(3)),
    ):  # fmt: skip
        postgres.execute(insert, row)

    config = postgres_connector_config(
        hostname=postgres.host, port=postgres.port, user=postgres.user, password=postgres.password,
        dbname="postgres", topic_prefix=prefix, tables=[qualified], slot=f"hudi_cdc_{suffix}",
    )  # fmt: skip
    connector = f"postgres-{suffix}"
    connect.create_connector(connector, config, initial_state="RUNNING")
    try:
        connect.wait_running(connector)
        job = Job(spark, kafka, tmp_path, [{"name": "orders", "key": ["id"], "type": "MERGE_ON_READ"}])
        job.topic = lambda _name: f"{prefix}.{qualified}"  # type: ignore[method-assign,assignment]

        def holds(ids: set[int]) -> Callable[[], bool]:
            def landed() -> bool:
                job.run()
                return (
                    table_exists(spark, job.path("orders"))
                    and {r["id"] for r in job.rows_spark("orders")} == ids
                )

            return landed

        def assert_equal_to_postgres() -> None:
            expected = _rows(
                [dict(zip(COLUMNS, r, strict=True)) for r in postgres.execute(f"SELECT * FROM {qualified}")]
            )
            for reader in (job.rows_spark, job.rows_hudi_rs):
                assert _rows(reader("orders")) == expected, reader.__name__

        # Changes made before the connector's snapshot began would be part of it: snapshot first.
        _wait_for(holds({1, 2, 3}))
        for statement in (
            f"INSERT INTO {qualified} (id, customer, amount, note) VALUES (4, 'anne', 42.00, 'short')",
            f"UPDATE {qualified} SET amount = 10.00 WHERE id = 2",  # note: TOASTed and unchanged
            f"UPDATE {qualified} SET amount = 25.00, vip = true, ratio = 1e-30 WHERE id = 2",
            f'UPDATE {qualified} SET ratio = NULL, due = NULL, attrs = \'{{"tier": "gold"}}\' WHERE id = 1',
            f"DELETE FROM {qualified} WHERE id = 3",
            f"UPDATE {qualified} SET id = 10 WHERE id = 4",  # a key change: delete 4, create 10
        ):
            postgres.execute(statement)
        _wait_for(holds({1, 2, 10}))
        assert_equal_to_postgres()
        stored = {r["id"]: r["note"] for r in job.rows_spark("orders")}
        assert stored[1] == _note(1) and stored[2] == _note(2), "an unchanged TOASTed column lost its value"
        outcomes = [t for b in job.batches for t in b.tables]
        assert sum(t.tombstone for t in outcomes) == 2  # id 3, and id 4 when its key changed
        assert sum(t.dead_letter for t in outcomes) == 0

        # A TRUNCATE removes every row written before it; what follows in the stream stays.
        postgres.execute(f"TRUNCATE {qualified}")
        postgres.execute(f"INSERT INTO {qualified} (id, customer, placed) VALUES (20, 'zoe', now())")
        _wait_for(holds({20}))
        assert_equal_to_postgres()
        outcomes = [t for b in job.batches for t in b.tables]
        assert sum(t.dead_letter for t in outcomes) == 0

        # The stream really held what this test is about (else it would pass on a simpler one):
        # 3 snapshot reads, 7 changes, 2 deletes with tombstones, the truncate and the last insert.
        records = read_topic(job.topic("orders"), count=14)
        values = [json.loads(value)["payload"] for m in records if (value := m.value()) is not None]
        assert [v["op"] for v in values] == ["r"] * 3 + ["c", "u", "u", "u", "d", "d", "c", "t", "c"]
        assert [v["after"]["note"] for v in values[4:7]] == [TOAST_PLACEHOLDER] * 3
        assert all(v["source"]["lsn"] > 0 for v in values)
    finally:
        connect.delete_connector(connector)
        postgres.execute(f"DROP SCHEMA {schema} CASCADE")
