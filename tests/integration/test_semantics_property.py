"""Proof of the change semantics: random event histories through Kafka and the real job match the reference model.

The same events, in a random arrival order and cut into random batches, are applied to a
copy-on-write and a merge-on-read table (soft deletes, a partition column, patches with absent
fields and explicit NULLs); both tables, read by Spark and by hudi-rs, must equal the reference
fold of the events in event order.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable, flattened
from devkit.services.hms import LocalMetastore
from devkit.services.kafka import LocalKafka
from devkit.services.trino import LocalTrino
from hudi_cdc.hudi.compactor import run_compaction
from tests.support.harness import Job
from tests.support.reference_model import Event, ReferenceTable

pytestmark = pytest.mark.integration

COLUMNS = [Column("id", "int64", optional=False), Column("p", "string"), Column("name", "string"), Column("qty", "int64")]
DATA = ["p", "name", "qty"]

event_strategy = st.tuples(
    st.integers(1, 3),  # key
    st.sampled_from(["c", "u", "u", "d"]),
    st.sampled_from(["A", "B"]),  # partition value (an update may move the row)
    st.sampled_from(["x", "y", None]),  # name, None = explicit NULL
    st.lists(st.sampled_from(DATA), unique=True, max_size=3),  # columns a patch carries
)


Planned = list[tuple[Event, dict[str, Any], str]]
"""Events in event order: (reference event, Debezium image, op)."""


def _plan(raw: list[tuple[Any, ...]]) -> Planned:
    """Events in event order: (reference event, Debezium image, op)."""
    planned = []
    for i, (key, op, p, name, patch_columns) in enumerate(raw):
        order = f"{i:06d}"
        full = {"p": p, "name": name, "qty": i}
        if op == "d":
            planned.append((Event((key,), "d", order), {"id": key}, op))
            continue
        image = full if op == "c" else {c: full[c] for c in patch_columns}
        planned.append((Event((key,), op, order, image), {"id": key, **image}, op))
    return planned


def _arrival_batches(planned: Planned, rng: random.Random) -> list[Planned]:
    """The events in a random arrival order, cut into 1-3 batches at random."""
    arrival = planned[:]
    rng.shuffle(arrival)
    cuts = sorted(rng.sample(range(1, len(arrival)), k=min(len(arrival) - 1, rng.randint(0, 2))))
    return [arrival[start:end] for start, end in zip([0, *cuts], [*cuts, len(arrival)], strict=True)]


@settings(max_examples=40 if os.environ.get("HYPOTHESIS_PROFILE") == "deep" else 3)
@given(raw=st.lists(event_strategy, min_size=2, max_size=10), seed=st.integers(0, 1000))
def test_any_arrival_order_and_batching_matches_reference(
    spark: SparkSession,
    kafka: LocalKafka,
    metastore: LocalMetastore,
    trino: LocalTrino,
    tmp_path_factory: pytest.TempPathFactory,
    raw: list[Any],
    seed: int,
) -> None:
    rng = random.Random(seed)
    tables: list[dict[str, Any]] = [
        {"name": "cow", "key": ["id"], "partition_by": ["p"], "deletes": "soft"},
        # cow's settings and columns: after its first load, folded as one with cow (job.fold_together)
        {"name": "cow_twin", "key": ["id"], "partition_by": ["p"], "deletes": "soft"},
        {
            "name": "mor", "key": ["id"], "partition_by": ["p"], "deletes": "soft", "type": "MERGE_ON_READ",
            "compaction": {"mode": "inline", "strategy": "NUM_COMMITS", "max_delta_commits": 2},
        },
    ]  # fmt: skip
    job = Job(spark, kafka, Path(tmp_path_factory.mktemp("prop")), tables, metastore_uris=metastore.uri,
              job_settings={"fold_together": True})
    planned = _plan(raw)
    for batch in _arrival_batches(planned, rng):
        for name in ("cow", "cow_twin", "mor"):
            source = DebeziumTable(server=f"srv{job.suffix}", database="db", table=name, columns=COLUMNS, key=["id"])
            records = [
                source.change(op, before=image if op == "d" else None, after=None if op == "d" else image,
                              pos=100 + int(event.order), partial=op == "u")
                for event, image, op in batch
            ]  # fmt: skip
            job.produce(name, records)
        # each batch's records of a topic-partition are split among tasks: order comes from the events
        job.run(kafka={"min_partitions": 3})

    reference = ReferenceTable(["id", *DATA], ["id"], soft_deletes=True, partition_by=("p",))
    reference.apply_all(event for event, _, _ in planned)
    expected = sorted(
        ({c: row[c] for c in ["id", *DATA, "_cdc_deleted", "_cdc_op"]} for row in reference.rows().values()),
        key=lambda r: r["id"],
    )
    for name in ("cow", "cow_twin", "mor"):
        for reader in (job.rows_spark, job.rows_hudi_rs):
            got = [{c: r[c] for c in ["id", *DATA, "_cdc_deleted", "_cdc_op"]} for r in reader(name)]
            assert sorted(got, key=lambda r: r["id"]) == expected, f"{name} read by {reader.__name__}"

    # the SQL engine: copy-on-write as is, merge-on-read's read-optimized view once compacted
    run_compaction(spark, job.config.table("mor"), force=True)
    wanted = sorted(tuple(r[c] for c in ["id", *DATA, "_cdc_deleted"]) for r in expected)
    columns = ", ".join(["id", *DATA, "_cdc_deleted"])
    for view in ("cow", "mor_ro"):
        rows = trino.query(f"select {columns} from {job.database}.{view} order by id")
        # documented limit: Trino's Hudi connector shows a NULL partition value as the string '\N'
        rows = [(r[0], None if r[1] == "\\N" else r[1], *r[2:]) for r in rows]
        assert rows == wanted, view
    for name in ("cow", "mor"):
        got = [{c: r[c] for c in ["id", *DATA, "_cdc_deleted", "_cdc_op"]} for r in job.rows_hudi_rs(name)]
        assert sorted(got, key=lambda r: r["id"]) == expected, f"{name} after compaction"


def _full_images(raw: list[tuple[Any, ...]]) -> Planned:
    """Events in event order with full row images (what a flattened topic carries): (reference
    event, Debezium image, op). A delete's `before` is the row as it was."""
    planned: Planned = []
    rows: dict[int, dict[str, Any]] = {}
    for i, (key, op, p, name, _) in enumerate(raw):
        order = f"{i:06d}"
        if op == "d":
            planned.append((Event((key,), "d", order), {"id": key, **rows.pop(key, {})}, op))
            continue
        rows[key] = {"p": p, "name": name, "qty": i}
        planned.append((Event((key,), op, order, rows[key]), {"id": key, **rows[key]}, op))
    return planned


@settings(max_examples=25 if os.environ.get("HYPOTHESIS_PROFILE") == "deep" else 3)
@given(raw=st.lists(event_strategy, min_size=2, max_size=10), seed=st.integers(0, 1000))
def test_flattened_rows_in_any_arrival_order_and_batching_match_reference(
    spark: SparkSession,
    kafka: LocalKafka,
    tmp_path_factory: pytest.TempPathFactory,
    raw: list[Any],
    seed: int,
) -> None:
    """`mode: flattened`: the same histories as rows of ExtractNewRecordState (rewrite deletes,
    the binlog position in `add.fields`, tombstones after deletes). Soft deletes: a hard-delete
    table forgets a delete's order once committed (semantics §3), so a straggler may re-create a row."""
    rng = random.Random(seed)
    tables: list[dict[str, Any]] = [
        {"name": "flat", "key": ["id"], "partition_by": ["p"], "mode": "flattened", "deletes": "soft"}
    ]
    job = Job(spark, kafka, Path(tmp_path_factory.mktemp("flat")), tables)
    source = DebeziumTable(server=f"srv{job.suffix}", database="db", table="flat", columns=COLUMNS, key=["id"])
    add_fields = ["op", "source.ts_ms", "source.file", "source.pos", "source.row", "source.snapshot"]
    planned = _full_images(raw)
    for batch in _arrival_batches(planned, rng):
        records = []
        for event, image, op in batch:
            change = source.change(op, before=image if op == "d" else None, after=None if op == "d" else image,
                                   pos=100 + int(event.order))  # fmt: skip
            records.append(flattened(change, add_fields))
            if op == "d":
                records.append(source.tombstone(image))
        job.produce("flat", records)
        job.run()

    reference = ReferenceTable(["id", *DATA], ["id"], soft_deletes=True, partition_by=("p",))
    reference.apply_all(event for event, _, _ in planned)
    compared = ["id", *DATA, "_cdc_deleted", "_cdc_op"]
    expected = sorted(({c: row[c] for c in compared} for row in reference.rows().values()), key=lambda r: r["id"])
    got = [{c: r[c] for c in compared} for r in job.rows_spark("flat")]
    assert sorted(got, key=lambda r: r["id"]) == expected
    assert not [t for b in job.batches for t in b.tables if t.dead_letter or t.error]
