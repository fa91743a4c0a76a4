"""A job with no checkpoint starts where it is told: at a time (Kafka's record timestamps) or at given offsets."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from devkit.services.kafka import LocalKafka
from tests.support.accounts import account, accounts_source
from tests.support.harness import Job

pytestmark = pytest.mark.integration


def test_a_new_checkpoint_starts_at_a_time_or_at_offsets(spark: SparkSession, kafka: LocalKafka, tmp_path: Path) -> None:
    first = Job(spark, kafka, tmp_path / "a", [{"name": "accounts", "key": ["id"]}])
    src = accounts_source(first)
    first.produce("accounts", [src.change("c", after=account(i, f"n{i}", "1.00"), pos=100 + i) for i in range(1, 4)])
    time.sleep(1.2)  # Kafka stamps records with the broker's clock, in milliseconds
    between = datetime.now(UTC)
    time.sleep(0.2)
    first.produce("accounts", [src.change("c", after=account(i, f"n{i}", "1.00"), pos=100 + i) for i in range(4, 7)])

    (batch,) = first.run(kafka={"starting_timestamp": between.isoformat()})
    assert [t.read for t in batch.tables] == [3]
    assert [r["id"] for r in first.rows_spark("accounts")] == [4, 5, 6]

    second = Job(spark, kafka, tmp_path / "b", [{"name": "accounts", "key": ["id"]}], suffix=first.suffix)
    second.created = set(first.created)
    (batch,) = second.run(kafka={"starting_offsets": {first.topic("accounts"): {0: 4}}})  # the 5th record on
    assert [t.read for t in batch.tables] == [2]
    assert [r["id"] for r in second.rows_spark("accounts")] == [5, 6]
