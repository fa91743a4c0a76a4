"""No record stops the job and no bad record reaches a table (semantics §3, §6).

Good Debezium records are mixed with many kinds of bad ones and cut into batches; every bad
record must be in the dead-letter store with its position and reason, every good one applied
exactly, and the counts must add up. A record that breaks the Spark job in a way decoding did
not foresee is isolated by splitting the batch, never retried forever.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from devkit.debezium import DebeziumTable, KafkaRecord
from devkit.services.kafka import LocalKafka
from hudi_cdc.fold import merge
from hudi_cdc.job import table_batch
from tests.support.accounts import account, accounts_source
from tests.support.harness import Job

pytestmark = pytest.mark.integration


def _edit(record: KafkaRecord, edit: Any) -> KafkaRecord:
    """The record with its JSON value changed by `edit(envelope)`."""
    key, value = record
    envelope = json.loads(value or b"")
    edit(envelope)
    return key, json.dumps(envelope).encode()


def _set(path: str, value: Any) -> Any:
    def edit(envelope: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = envelope
        for p in parents:
            node = node[p]
        node[last] = value

    return edit


def bad_records(src: DebeziumTable, pos: int) -> dict[str, KafkaRecord]:
    """One bad record of each kind; every one names key 900+ so none may reach the table."""
    good = src.change("c", after=account(900, "bad", "1.00"), pos=pos)
    key = good[0]
    return {
        "garbage-bytes": (key, b"\x00\xff\xfe garbage"),
        "empty-value": (key, b""),
        "json-null": (key, b"null"),
        "truncated-json": (key, (good[1] or b"")[:-40]),
        "deeply-nested-json": (key, b"[" * 5000 + b"]" * 5000),
        "json-array": (key, b"[1, 2, 3]"),
        "invalid-utf8-in-string": (key, (good[1] or b"").replace(b'"bad"', b'"\xc3\x28"')),
        "unknown-op": _edit(good, _set("payload.op", "x")),
        "missing-op": _edit(good, lambda e: e["payload"].pop("op")),
        "missing-after": _edit(good, _set("payload.after", None)),
        "after-not-object": _edit(good, _set("payload.after", "text")),
        "missing-key": (None, _edit(good, lambda e: e["payload"]["after"].pop("id"))[1]),
        "null-key": (None, _edit(good, _set("payload.after.id", None))[1]),
        "id-wrong-type": (None, _edit(good, _set("payload.after.id", "abc"))[1]),
        "id-overflow": (None, _edit(good, _set("payload.after.id", 2**70))[1]),
        "decimal-as-number": _edit(good, _set("payload.after.balance", 12.5)),
        "decimal-bad-base64": _edit(good, _set("payload.after.balance", "!!!")),
        "decimal-overflow": _edit(good, _set("payload.after.balance", "f////////////////////w==")),
        "schema-contradicts-payload": _edit(good, _set("payload.after.balance", True)),
        "negative-pos": _edit(good, _set("payload.source.pos", -5)),
        "negative-row": _edit(good, _set("payload.source.row", -1)),
        "bad-binlog-file": _edit(good, _set("payload.source.file", "not a binlog")),
        "pos-not-a-number": _edit(good, _set("payload.source.pos", "12x")),
        "no-position": _edit(good, lambda e: e["payload"].update(source=None, ts_ms=None)),
        "negative-ts-ms": _edit(good, lambda e: e["payload"].update(source=None, ts_ms=-1)),
    }


def test_bad_records_mixed_into_a_good_stream_are_dead_lettered_and_counted(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    job = Job(spark, kafka, tmp_path, [{"name": "accounts", "key": ["id"]}])
    src = accounts_source(job)
    rng = random.Random(9)
    good: list[KafkaRecord] = []
    expected: dict[int, dict[str, Any]] = {}
    pos = 100
    for i in range(1, 31):
        for version in range(rng.randint(1, 3)):
            row = account(i, f"n{i}v{version}", f"{i}.{version}0")
            good.append(src.change("c" if version == 0 else "u", after=row, pos=pos))
            expected[i] = row
            pos += 10
    for i in (3, 7):  # a delete and its tombstone
        good.append(src.change("d", before=expected.pop(i), pos=pos))
        good.append(src.tombstone({"id": i}))
        pos += 10
    bad = bad_records(src, pos)
    stream: list[tuple[str | None, KafkaRecord]] = [(None, r) for r in good]
    for kind, record in bad.items():
        stream.insert(rng.randrange(len(stream) + 1), (kind, record))
    # two scheduled runs: the cut falls anywhere, a tombstone may be alone in its batch
    cut = rng.randrange(1, len(stream))
    job.produce("accounts", [r for _, r in stream[:cut]])
    batches = job.run()
    job.produce("accounts", [r for _, r in stream[cut:]])
    batches += job.run()

    rows = {r["id"]: {k: r[k] for k in ("id", "name", "balance")} for r in job.rows_spark("accounts")}
    assert rows == expected, "good records applied exactly, no bad record in the table"
    letters = {letter["offset"]: letter for letter in job.dead_letters()}
    for offset, (bad_kind, _) in enumerate(stream):
        if bad_kind is None:
            assert offset not in letters, f"good record at offset {offset} dead-lettered: {letters.get(offset)}"
            continue
        assert offset in letters, f"bad record {bad_kind} at offset {offset} is not in the dead-letter store"
        letter = letters[offset]
        assert letter["error_message"].startswith(f"{job.topic('accounts')}[0]@{offset} table accounts: "), bad_kind
    totals = [t for b in batches for t in b.tables]
    assert sum(t.read for t in totals) == len(stream)
    assert sum(t.dead_letter for t in totals) == len(bad)
    assert sum(t.tombstone for t in totals) == 2
    assert all(t.balanced() for t in totals)


def test_a_new_tables_batch_of_unusable_schemas_only_is_dead_lettered_not_failed(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    """More records than the isolation limit, none of whose schemas types a column: each is a
    BadSchema dead letter; nothing is folded (there is no column) and the job goes on."""
    job = Job(spark, kafka, tmp_path, [{"name": "accounts", "key": ["id"]}])
    payload = {"op": "c", "ts_ms": 1, "source": {"ts_ms": 1}, "after": {"id": 1}}
    records = [(b'{"id": 1}', json.dumps({"schema": "not a schema", "payload": payload}).encode())] * 25
    job.produce("accounts", records)
    (batch,) = job.run()
    (table,) = batch.tables
    assert (table.read, table.dead_letter, table.balanced()) == (25, 25, True)
    assert {letter["error_class"] for letter in job.dead_letters()} == {"BadSchema"}


def test_a_record_that_breaks_the_spark_job_is_isolated_not_retried_forever(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure decoding did not foresee (here: an expression that throws on key 13)."""
    original = merge.rows_to_write  # what the table batch calls

    def throws_on_13(*args: Any, **kwargs: Any) -> DataFrame:
        rows = original(*args, **kwargs)
        # a filter is always evaluated (a dropped column would be pruned away); assert_true returns NULL
        return rows.filter(F.assert_true(F.col("id") != 13, "poison value").isNull())

    monkeypatch.setattr(table_batch, "rows_to_write", throws_on_13)
    job = Job(spark, kafka, tmp_path, [{"name": "accounts", "key": ["id"]}])
    src = accounts_source(job)
    # four records: the batch, then its halves, then the failing half's halves (each split is a Spark job that fails)
    job.produce("accounts", [src.change("c", after=account(i, f"n{i}", "1.00"), pos=100 + i) for i in range(10, 14)])
    (batch,) = job.run()
    (metrics,) = batch.tables
    assert (metrics.read, metrics.isolated, metrics.dead_letter, metrics.applied) == (4, 1, 1, 3)
    assert sorted(r["id"] for r in job.rows_spark("accounts")) == [10, 11, 12]
    (letter,) = job.dead_letters()
    assert (letter["offset"], letter["error_class"]) == (3, "BatchFailure")
    assert "poison value" in letter["error_message"]
    # the checkpoint moved on: a rerun reads nothing new and the job does not loop on the record
    assert job.run() == [] or all(t.read == 0 for b in job.batches[-1:] for t in b.tables)
