"""A table key that names no column its records carry stops the table with one clear error: the
job without a parking lot, only the table with one (the other tables of the batch commit).

Before: Spark's analysis of the fold failed (UNRESOLVED_COLUMN), failure isolation split the batch
looking for bad records, and dead-lettered every record as BatchFailure.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from hudi_cdc.config.models import parse_config
from hudi_cdc.errors import KeyColumnsMissing
from hudi_cdc.job.pipeline import BatchContext, run_batch
from tests.support.decode_rows import kafka_rows

SCHEMA = {"type": "struct", "fields": [
    {"field": "after", "type": "struct", "optional": True,
     "fields": [{"field": "id", "type": "int64"}, {"field": "v", "type": "string", "optional": True}]},
    {"field": "op", "type": "string"}, {"field": "ts_ms", "type": "int64"},
]}  # fmt: skip


def _records(n: int) -> list[tuple[bytes, bytes]]:
    """`n` Debezium creates keyed by `id`."""
    return [
        (json.dumps({"id": i}).encode(),
         json.dumps({"schema": SCHEMA, "payload": {"after": {"id": i, "v": "x"}, "op": "c", "ts_ms": 1000 + i}}).encode())
        for i in range(n)
    ]  # fmt: skip


def test_a_key_naming_no_carried_column_stops_the_table_before_any_split(spark: SparkSession, tmp_path: Path) -> None:
    config = parse_config(
        {
            "job": {"name": "keys", "checkpoint_dir": str(tmp_path / "cp"), "dead_letter_path": str(tmp_path / "dl")},
            "kafka": {"bootstrap_servers": "localhost:1"},
            "tables": [{"name": "t", "key": ["customer_id"], "base_path": str(tmp_path / "t")}],
            "routes": [{"topic": "shop.t", "table": "t"}],
        },
        source="test",
    )
    records = _records(3)
    with pytest.raises(KeyColumnsMissing) as caught:
        run_batch(kafka_rows(spark, records, topic="shop.t"), BatchContext(config=config, batch_id=0))
    message = str(caught.value)
    assert "key column(s) customer_id are not among the columns its records carry (id, v)" in message
    assert "shop.t[0]@0..2" in message
    assert not (tmp_path / "dl").exists()  # nothing was isolated or dead-lettered
    assert not (tmp_path / "t" / ".hoodie").exists()  # nothing was written


def test_with_a_parking_lot_the_table_is_parked_and_the_other_tables_commit(spark: SparkSession, tmp_path: Path) -> None:
    from hudi_cdc.job.parking import ParkingLot, read_parked

    config = parse_config(
        {
            "job": {"name": "keys", "checkpoint_dir": str(tmp_path / "cp"), "dead_letter_path": str(tmp_path / "dl")},
            "kafka": {"bootstrap_servers": "localhost:1"},
            "tables": [
                {"name": "t", "key": ["customer_id"], "base_path": str(tmp_path / "t")},
                {"name": "u", "key": ["id"], "base_path": str(tmp_path / "u")},
            ],
            "routes": [{"topic": "shop.t", "table": "t"}, {"topic": "shop.u", "table": "u"}],
        },
        source="test",
    )
    lot = ParkingLot(spark, config.job.checkpoint_dir)
    batch = kafka_rows(spark, _records(3), topic="shop.t").unionByName(kafka_rows(spark, _records(2), topic="shop.u"))
    metrics = run_batch(batch, BatchContext(config=config, batch_id=0, parking=lot))

    by_table = {m.table: m for m in metrics.tables}
    assert (by_table["t"].parked, by_table["t"].read, by_table["u"].applied) == (3, 0, 2)
    assert spark.read.format("hudi").load(str(tmp_path / "u")).count() == 2
    [parked] = read_parked(spark, config.job.checkpoint_dir)  # written before the batch returned
    assert parked.table == "t" and "key column(s) customer_id" in parked.cause
    assert (parked.first, parked.last) == ({"shop.t": {"0": 0}}, {"shop.t": {"0": 2}})
    assert not (tmp_path / "dl").exists()
