"""Documented Debezium events, with and without the schema envelope, under any batch cut.

Each file in tests/corpus/ holds one source table's records in Kafka order, as Debezium's
JsonConverter writes them (the value schema once, each record's key and payload), and the rows
the table must hold afterwards, worked out by hand from the change semantics. Every corpus is
fed twice: with the schema envelope (`schemas.enable=true`) and without it (the table declares
its columns by the connector's Connect schema, as docs/configuration.md tells users to). The records are
cut into batches three ways: one batch, every record alone (so each tombstone, each delete and
the truncate stand alone), and random cuts. The job must never fail, nothing may be
dead-lettered, the counts must add up, and every table must equal the expected rows, read by
Spark and by hudi-rs.

Cost: a batch costs a commit per table, so `make test` runs one batch on every variant and
every record alone on the PostgreSQL corpus; `make test-deep` runs every cut on all of them.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from devkit.debezium import KafkaRecord, connect_json
from devkit.services.kafka import LocalKafka
from tests.support.harness import Job

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).parents[1] / "corpus"
DEEP = os.environ.get("HYPOTHESIS_PROFILE") == "deep"
RANDOM_CUTS = 5


@dataclass(frozen=True)
class Corpus:
    """One source table's documented records and the rows they must leave."""

    name: str
    table: dict[str, Any]
    key_schema: dict[str, Any]
    value_schema: dict[str, Any]
    records: list[dict[str, Any]]
    expected: list[dict[str, Any]]

    @classmethod
    def load(cls, path: Path) -> Corpus:
        raw = json.loads(path.read_text())
        return cls(path.stem, raw["table"], raw["key_schema"], raw["value_schema"], raw["records"], raw["expected"])

    def table_name(self, with_schema: bool) -> str:
        return f"{self.name}_{'enveloped' if with_schema else 'plain'}"

    def table_config(self, with_schema: bool) -> dict[str, Any]:
        config = {"name": self.table_name(with_schema), **self.table}
        if not with_schema:
            # what a user copies from the connector's schema for a schema-less topic
            after = next(f for f in self.value_schema["fields"] if f["field"] == "after")
            config["columns"] = {f["field"]: f for f in after["fields"]}
        return config

    def kafka_records(self, with_schema: bool) -> list[KafkaRecord]:
        """The records as the JsonConverter writes them, with or without `{"schema", "payload"}`."""

        def encode(payload: dict[str, Any] | None, schema: dict[str, Any]) -> bytes | None:
            if payload is None:
                return None
            return connect_json({"schema": schema, "payload": payload} if with_schema else payload)

        return [(encode(r["key"], self.key_schema), encode(r["value"], self.value_schema)) for r in self.records]


CORPORA = [Corpus.load(path) for path in sorted(CORPUS.glob("*.json"))]


def _batches(count: int, cutting: str, rng: random.Random) -> list[tuple[int, int]]:
    """[start, end) record ranges, in order, covering `count` records."""
    if cutting == "one batch":
        return [(0, count)]
    if cutting == "two halves":
        return [(0, count // 2), (count // 2, count)]
    if cutting == "every record alone":
        return [(i, i + 1) for i in range(count)]
    cuts = sorted(rng.sample(range(1, count), k=rng.randint(1, 4)))
    return list(zip([0, *cuts], [*cuts, count], strict=True))


def _comparable(value: Any) -> Any:
    """Decimals, dates and (UTC, naive) timestamps as the strings the corpus writes them as."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None).isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def _variants(envelopes: tuple[bool, ...], only: str | None = None) -> list[tuple[Corpus, bool]]:
    """Each corpus (or the one named `only`) with the schema envelope (True) and/or without it (False)."""
    return [(c, with_schema) for c in CORPORA if only in (None, c.name) for with_schema in envelopes]


def _run(
    spark: SparkSession,
    kafka: LocalKafka,
    root: Path,
    cutting: str,
    seed: int,
    variants: list[tuple[Corpus, bool]],
    table_concurrency: int = 1,
) -> None:
    job = Job(spark, kafka, root, [c.table_config(with_schema) for c, with_schema in variants])
    job.job_settings = {"table_concurrency": table_concurrency}
    streams = {c.table_name(with_schema): c.kafka_records(with_schema) for c, with_schema in variants}
    longest = max(len(records) for records in streams.values())
    for start, end in _batches(longest, cutting, random.Random(seed)):
        for table, records in streams.items():
            if records[start:end]:
                job.produce(table, records[start:end])
        job.run()  # asserts that every batch's counts add up

    counts = {t: {"read": 0, "dead_letter": 0} for t in streams}
    for batch in job.batches:
        assert not batch.unrouted
        for metrics in batch.tables:
            counts[metrics.table]["read"] += metrics.read
            counts[metrics.table]["dead_letter"] += metrics.dead_letter
            assert metrics.error is None, f"{metrics.table} stopped: {metrics.error}"
    assert counts == {t: {"read": len(records), "dead_letter": 0} for t, records in streams.items()}

    for corpus, with_schema in variants:
        table = corpus.table_name(with_schema)
        for reader in (job.rows_spark, job.rows_hudi_rs):
            got = [{c: _comparable(row[c]) for c in corpus.expected[0]} for row in reader(table)]
            assert got == corpus.expected, f"{table} read by {reader.__name__}, cut {cutting!r} (seed {seed})"


@pytest.mark.deep
def test_documented_debezium_events_land_exactly_in_one_batch(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    """Every corpus, with and without the envelope, as tables of one batch (make test-deep: make test
    runs two halves, which applies most of the corpus in its first batch)."""
    _run(spark, kafka, tmp_path, "one batch", seed=0, variants=_variants((True, False)))


@pytest.mark.deep
def test_documented_debezium_events_land_exactly_with_tables_applied_three_at_a_time(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    """Every corpus, with and without the envelope, in two batches whose tables are applied three
    at a time (`job.table_concurrency`): the second batch reads the stored tables concurrently,
    which once deadlocked Spark's cache manager (see `hudi_cdc.hudi.table.read_table`)."""
    _run(spark, kafka, tmp_path, "two halves", seed=0, variants=_variants((True, False)), table_concurrency=3)


def test_documented_debezium_events_land_exactly_with_every_record_alone_in_its_batch(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    """Each tombstone, delete and truncate alone in its batch (make test: the PostgreSQL corpus, which
    has all three, enveloped; deep: every corpus, both ways)."""
    variants = _variants((True, False)) if DEEP else _variants((True,), only="postgres_public_orders")
    _run(spark, kafka, tmp_path, "every record alone", seed=0, variants=variants)


@pytest.mark.deep
@pytest.mark.parametrize("seed", range(RANDOM_CUTS))
def test_documented_debezium_events_land_exactly_under_random_batch_cuts(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path, seed: int
) -> None:
    """Random cuts, both ways, five seeds (make test-deep only: make test runs two halves and every
    record alone, and test_semantics_property cuts random batches)."""
    _run(spark, kafka, tmp_path, "random", seed=seed, variants=_variants((True, False)))
