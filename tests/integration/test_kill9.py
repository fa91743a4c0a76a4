"""The job killed with SIGKILL at random points loses, duplicates and miscounts nothing.

A stream of creates, updates, deletes and tombstones for a copy-on-write and a merge-on-read
table (inline compaction every two delta commits, updates in log files) is in Kafka. The job runs as users run it
(`hudi-cdc run`, its own process and JVM), a few records per batch, and is killed with
SIGKILL after a random delay, again and again: during start-up, mid-batch, between the two
tables' commits. A final scheduled run finishes the stream. Then each table must equal the
reference fold of what Kafka holds (read by Spark and by hudi-rs), the counts committed
with the data must add up to exactly the records Kafka holds, and the merge-on-read table
must have compacted.

`make test` kills it twice; `make test-deep` (HYPOTHESIS_PROFILE=deep) ten times on a longer stream.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable, KafkaRecord
from devkit.services.kafka import LocalKafka
from hudi_cdc.hudi.status import table_status
from tests.support.harness import Job
from tests.support.reference_model import Event, ReferenceTable

pytestmark = pytest.mark.integration

DEEP = os.environ.get("HYPOTHESIS_PROFILE") == "deep"
KILLS = 10 if DEEP else 2
CHANGES = 400 if DEEP else 120
COLUMNS = [Column("id", "int64", optional=False), Column("name", "string"), Column("qty", "int64")]
DATA = ["name", "qty"]


def _stream(rng: random.Random, source: DebeziumTable) -> tuple[list[KafkaRecord], list[Event]]:
    """25 creates, then random updates and deletes (with tombstones) in event order: (Kafka records, reference events).

    Deleted keys are not created again: after the first batch the merge-on-read table then only
    receives updates and deletes, which Hudi writes to log files, so compaction has work to do
    (a batch with inserts rewrites small base files instead, leaving nothing to compact).
    """
    records: list[KafkaRecord] = []
    events: list[Event] = []
    live = list(range(25))
    for i in range(CHANGES):
        order = f"{i:06d}"
        if i < 25:
            key, op = i, "c"
        elif len(live) > 5 and rng.random() < 0.1:
            key = live.pop(rng.randrange(len(live)))
            records += [source.change("d", before={"id": key}, pos=1000 + i), source.tombstone({"id": key})]
            events.append(Event((key,), "d", order))
            continue
        else:
            key, op = rng.choice(live), "u"
        row = {"id": key, "name": rng.choice(["a", "b", None]), "qty": i}
        records.append(source.change(op, after=row, pos=1000 + i))
        events.append(Event((key,), op, order, {c: row[c] for c in DATA}))
    return records, events


def _run_and_kill(config: Path, delay: float, log: Path) -> None:
    """Start `hudi-cdc run` in its own process group and SIGKILL the whole group after `delay` s."""
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "hudi_cdc.cli.console", "--log-level", "WARNING", "run", "--config", str(config)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        time.sleep(delay)
        finished = process.poll() is not None
        if not finished:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert not finished, f"the job stopped on its own (exit {process.returncode}); see {log}"


def test_sigkill_at_random_points_loses_duplicates_and_miscounts_nothing(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    seed = random.randrange(10**6)
    rng = random.Random(seed)
    tables: list[dict[str, Any]] = [
        {"name": "cow", "key": ["id"]},
        {"name": "mor", "key": ["id"], "type": "MERGE_ON_READ",
         "compaction": {"mode": "inline", "strategy": "NUM_COMMITS", "max_delta_commits": 2},
         # Hudi merges updates of a file group smaller than this into a new base file instead of
         # a log file (a small table would never have anything to compact)
         "hoodie_options": {"hoodie.parquet.small.file.limit": 0}},
    ]  # fmt: skip
    job = Job(spark, kafka, tmp_path, tables)
    expected: dict[str, Any] = {}
    produced = 0
    for name in ("cow", "mor"):
        source = DebeziumTable(server=f"srv{job.suffix}", database="db", table=name, columns=COLUMNS, key=["id"])
        records, events = _stream(rng, source)
        job.produce(name, records)
        produced += len(records)
        reference = ReferenceTable(["id", *DATA], ["id"], soft_deletes=False)
        reference.apply_all(events)
        expected[name] = sorted(({c: r[c] for c in ["id", *DATA]} for r in reference.rows().values()), key=str)

    config = job.config_file(job={"trigger_interval": "1 second"}, kafka={"max_offsets_per_trigger": 30})
    log = tmp_path / "job.log"
    for _ in range(KILLS):
        _run_and_kill(config, delay=rng.uniform(15, 50), log=log)
    job.run(kafka={"max_offsets_per_trigger": 60})  # the scheduled run that finishes the stream, in this process

    context = f"seed {seed}, job log {log}"
    for name in ("cow", "mor"):
        for reader in (job.rows_spark, job.rows_hudi_rs):
            got = sorted(({c: r[c] for c in ["id", *DATA]} for r in reader(name)), key=str)
            assert got == expected[name], f"{name} read by {reader.__name__} ({context})"
    assert table_status(spark, job.config.table("mor")).last_compaction, f"no compaction ran ({context})"
    committed = [table_status(spark, job.config.table(name)).committed_counts for name in ("cow", "mor")]
    assert sum(c["read"] for c in committed) == produced, f"committed counts {committed} ({context})"
    for counts in committed:
        outcomes = sum(v for k, v in counts.items() if k not in ("read", "isolated", "behind_watermark"))
        assert outcomes == counts["read"], f"committed outcomes do not add up: {counts} ({context})"
        assert counts["dead_letter"] == 0, context
