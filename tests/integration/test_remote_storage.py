"""The job with everything it writes in a remote store: tables, checkpoint and dead letters behind
`s3a://` URIs of a real S3 endpoint (the Versity S3 Gateway) and `hdfs://` URIs of a real HDFS
(Hadoop's MiniDFSCluster), reached through `job.hadoop_conf` alone; tables in both synced to the
metastore and read by Trino; and an S3 outage in the middle of a write."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner
from hudi import HudiTableBuilder
from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable
from devkit.services.hdfs import LocalHdfs
from devkit.services.hms import LocalMetastore
from devkit.services.kafka import LocalKafka
from devkit.services.s3 import LocalS3
from devkit.services.trino import LocalTrino
from hudi_cdc.cli.console import cli
from hudi_cdc.spark import fs
from tests.support.harness import Job

pytestmark = pytest.mark.integration

SOURCE = Column("id", "int64", optional=False), Column("name", "string"), Column("balance", "decimal", scale=2)
TABLES = {"people": "COPY_ON_WRITE", "accounts": "MERGE_ON_READ"}


@pytest.fixture(scope="module")
def hdfs() -> Iterator[LocalHdfs]:
    """A local HDFS for this module's tests: started by the first on each worker, stopped with the module."""
    with LocalHdfs() as cluster:
        yield cluster


def _row(i: int, name: str, balance: str = "1.00") -> dict[str, object]:
    return {"id": i, "name": name, "balance": Decimal(balance)}


def _hudi_rs_rows(s3: LocalS3, uri: str) -> list[tuple[Any, ...]]:
    """The table as hudi-rs (an independent reader, merging log files itself) reads it from S3."""
    table = (
        HudiTableBuilder.from_base_uri(uri.replace("s3a://", "s3://", 1))
        .with_storage_options(
            {
                "aws_endpoint_url": s3.endpoint,
                "aws_access_key_id": s3.access_key,
                "aws_secret_access_key": s3.secret_key,
                "aws_region": "us-east-1",
                "aws_allow_http": "true",
                "aws_virtual_hosted_style_request": "false",
            }
        )
        .build()
    )
    batches = table.read()
    rows = pa.Table.from_batches(batches).to_pylist() if batches else []
    return sorted((r["id"], r["name"], r["balance"]) for r in rows)


def _remote_job(
    spark: SparkSession,
    kafka: LocalKafka,
    tmp_path: Path,
    lake: str,
    hadoop_conf: dict[str, str],
    metastore_uris: str | None = None,
) -> tuple[Job, dict[str, DebeziumTable]]:
    """A job of COW `people` and MOR `accounts` with its tables, checkpoint and dead letters under
    `lake`, reached through `job.hadoop_conf` alone; and the tables' sources."""
    job = Job(
        spark, kafka, tmp_path, [{"name": name, "key": ["id"], "type": kind} for name, kind in TABLES.items()],
        lake=f"{lake}/{tmp_path.name}", job_settings={"hadoop_conf": hadoop_conf}, metastore_uris=metastore_uris,
    )  # fmt: skip
    sources = {name: DebeziumTable(server=f"srv{job.suffix}", database="db", table=name, columns=list(SOURCE), key=["id"]) for name in TABLES}
    return job, sources


def _applies_counts_dead_letters_and_resumes(
    job: Job,
    sources: dict[str, DebeziumTable],
    tmp_path: Path,
    read_back: Callable[[str], list[tuple[Any, ...]]] | None = None,
) -> None:
    """The scenario both remote stores run: changes with a delete, its tombstone and a malformed
    record; the rows as Spark and `read_back` (another reader, given a table's URI) see them; the
    dead letters; a second run resumed from the remote checkpoint; `hudi-cdc status` on the same file."""
    assert job.lake is not None
    for name, src in sources.items():
        job.produce(
            name,
            [
                src.change("c", after=_row(1, "a"), pos=100),
                src.change("u", after=_row(1, "b", "3.50"), pos=200),
                src.change("c", after=_row(2, "x"), pos=300),
                src.change("d", before=_row(2, "x"), pos=400),
                src.tombstone(_row(2, "x")),
                (None, b"\x00not json"),
                src.change("c", after=_row(3, "z", "-7.25"), pos=500),
            ],
        )
    (batch,) = job.run()
    counts = {t.table: (t.read, t.tombstone, t.dead_letter, t.deleted) for t in batch.tables}
    assert counts == {name: (7, 1, 1, 1) for name in TABLES}
    expected = [(1, "b", Decimal("3.50")), (3, "z", Decimal("-7.25"))]
    for name in TABLES:
        assert [(r["id"], r["name"], r["balance"]) for r in job.rows_spark(name)] == expected
        assert read_back is None or read_back(job.path(name)) == expected
    letters = sorted((r["table"], r["offset"], r["error_class"]) for r in job.dead_letters())
    assert letters == [(name, 5, "MalformedJson") for name in sorted(TABLES)]

    # Everything the job keeps is in the remote store: the local folder holds nothing.
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert fs.names(job.spark, job.lake) == ["cp", "dead_letter", "warehouse"]
    assert fs.exists(job.spark, f"{job.path('accounts')}/.hoodie/hoodie.properties")

    # A second run resumes from the remote checkpoint: it reads only the new records, and an
    # older event arriving now is late.
    for name, src in sources.items():
        job.produce(name, [src.change("u", after=_row(1, "stale"), pos=150), src.change("u", after=_row(3, "w"), pos=600)])
    (later,) = job.run()
    assert {t.table: (t.read, t.late, t.applied) for t in later.tables} == {name: (2, 1, 1) for name in TABLES}
    expected = [(1, "b", Decimal("3.50")), (3, "w", Decimal("1.00"))]
    for name in TABLES:
        assert [(r["id"], r["name"], r["balance"]) for r in job.rows_spark(name)] == expected
        assert read_back is None or read_back(job.path(name)) == expected

    # The CLI's commands open the same storage from the same file: status reads both tables.
    config = job.config_file()
    result = CliRunner().invoke(cli, ["status", "--config", str(config), "--json"])
    assert result.exit_code == 0, result.output
    status = {row["table"]: row for row in json.loads(result.output.splitlines()[-1])["rows"]}
    assert set(status) == set(TABLES), status
    assert all(row["last_commit"] and row["files"] > 0 for row in status.values()), status

    # Dead letters are purged where they are kept: their files deleted through Hadoop's file system.
    result = CliRunner().invoke(
        cli, ["dead-letters", "purge", "--config", str(config), "--older-than", "1 second", "--json"]
    )
    assert result.exit_code == 0, result.output
    (purged,) = json.loads(result.output.splitlines()[-1])["rows"]
    assert purged["records"] == len(TABLES), purged
    result = CliRunner().invoke(cli, ["dead-letters", "list", "--config", str(config), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.splitlines()[-1])["rows"] == []


def test_a_job_on_s3_applies_counts_dead_letters_and_resumes_from_its_s3_checkpoint(
    spark: SparkSession, kafka: LocalKafka, s3: LocalS3, tmp_path: Path
) -> None:
    job, sources = _remote_job(spark, kafka, tmp_path, s3.bucket("lake"), s3.hadoop_conf())
    # hudi-rs is a second, independent reader of the files on S3
    _applies_counts_dead_letters_and_resumes(job, sources, tmp_path, lambda uri: _hudi_rs_rows(s3, uri))
    assert (s3.data / "lake" / tmp_path.name / "warehouse" / "accounts" / ".hoodie" / "hoodie.properties").is_file()


def test_a_job_on_hdfs_applies_counts_dead_letters_and_resumes_from_its_hdfs_checkpoint(
    spark: SparkSession, kafka: LocalKafka, hdfs: LocalHdfs, tmp_path: Path
) -> None:
    job, sources = _remote_job(spark, kafka, tmp_path, f"{hdfs.uri}/lake", hdfs.hadoop_conf())
    _applies_counts_dead_letters_and_resumes(job, sources, tmp_path)  # no reader of HDFS but Spark's here
    assert any(hdfs.data.rglob("blk_*")), "no block on the data node"


def _synced_and_read_by_trino(job: Job, sources: dict[str, DebeziumTable], trino: LocalTrino) -> None:
    """The tables, synced to the metastore as the job writes them, read by Trino from the remote store."""
    for name, src in sources.items():
        job.produce(
            name,
            [
                src.change("c", after=_row(1, "a"), pos=100),
                src.change("c", after=_row(2, "x"), pos=200),
                src.change("u", after=_row(1, "b", "3.50"), pos=300),
                src.change("d", before=_row(2, "x"), pos=400),
            ],
        )
    (batch,) = job.run()
    assert batch.hive_sync_lagging == []
    db = job.database
    expected = [(1, "b", Decimal("3.50"))]
    assert trino.query(f"select id, name, balance from {db}.people") == expected
    # a merge-on-read table's first commit writes base files only: its _ro view is the table
    assert trino.query(f"select id, name, balance from {db}.accounts_ro") == expected
    (location,) = trino.query(f'select "$path" from {db}.people')[0]
    assert location.startswith(f"{job.path('people')}/"), location  # Trino read the remote files

    job.produce("people", [sources["people"].change("c", after=_row(4, "n", "9.99"), pos=500)])
    job.run()
    assert sorted(trino.query(f"select id, name, balance from {db}.people")) == [*expected, (4, "n", Decimal("9.99"))]


def test_tables_on_s3_are_synced_to_the_metastore_and_trino_reads_them(
    spark: SparkSession, kafka: LocalKafka, s3: LocalS3, metastore: LocalMetastore, trino: LocalTrino, tmp_path: Path
) -> None:
    job, sources = _remote_job(spark, kafka, tmp_path, s3.bucket("lake"), s3.hadoop_conf(), metastore_uris=metastore.uri)
    _synced_and_read_by_trino(job, sources, trino)


# deep: the same sync-and-read scenario runs on S3 in `make test`, and the job on HDFS too
@pytest.mark.deep
def test_tables_on_hdfs_are_synced_to_the_metastore_and_trino_reads_them(
    spark: SparkSession, kafka: LocalKafka, hdfs: LocalHdfs, metastore: LocalMetastore, trino: LocalTrino, tmp_path: Path
) -> None:
    # the metastore and Trino need nothing for HDFS: the name node is in each location's URI
    job, sources = _remote_job(spark, kafka, tmp_path, f"{hdfs.uri}/lake", hdfs.hadoop_conf(), metastore_uris=metastore.uri)
    _synced_and_read_by_trino(job, sources, trino)


# S3A retries a refused connection many times by default (SDK attempts, then its own retries with
# growing waits); this test wants the failure in seconds
_FAIL_FAST = {
    "fs.s3a.attempts.maximum": "1",
    "fs.s3a.retry.limit": "1",
    "fs.s3a.retry.interval": "100ms",
    "fs.s3a.connection.establish.timeout": "2000",
}


def _stop_at_first_write(s3: LocalS3, warehouse: Path, stopped: threading.Event) -> threading.Thread:
    """A thread that stops the gateway as soon as a new Hudi instant goes inflight in a table's
    timeline under `warehouse`: the batch has begun writing and has not committed."""
    pattern = "*/.hoodie/timeline/*.inflight"  # instant files stay until archival; no temp folders
    before = set(warehouse.glob(pattern))

    def watch() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                started = set(warehouse.glob(pattern)) - before
            except OSError:  # a folder went away while it was listed: look again
                started = set()
            if started:
                s3.stop()
                stopped.set()
                return
            time.sleep(0.02)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_an_s3_outage_mid_batch_stops_the_job_and_the_rerun_applies_the_batch_exactly(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    with LocalS3() as s3:  # its own gateway: this test stops it
        # A bucket of its own too: Hadoop caches an open S3A file system per bucket for the whole
        # session, so a bucket the session's gateway served before would still be written there.
        job, sources = _remote_job(spark, kafka, tmp_path, s3.bucket("outage"), {**s3.hadoop_conf(), **_FAIL_FAST})
        for name, src in sources.items():
            job.produce(name, [src.change("c", after=_row(i, f"n{i}"), pos=100 + i) for i in range(1, 6)])
        job.run()
        for name, src in sources.items():
            job.produce(
                name,
                [src.change("u", after=_row(i, f"u{i}", "2.00"), pos=200 + i) for i in range(1, 6)]
                + [src.change("c", after=_row(i, f"n{i}"), pos=200 + i) for i in range(6, 9)],
            )

        stopped = threading.Event()
        watcher = _stop_at_first_write(s3, s3.data / "outage" / tmp_path.name / "warehouse", stopped)
        failed = CliRunner().invoke(cli, ["run", "--once", "--config", str(job.config_file())])
        watcher.join(timeout=1)
        assert stopped.is_set(), f"the gateway was not stopped inside the batch: {failed.output}"
        assert failed.exit_code == 75, failed.output  # EX_TEMPFAIL: run again later
        message = failed.output
        assert "Traceback" not in message and "py4j" not in message, message
        # the first table of the batch met the outage; it names the batch, blames the storage, and
        # no record paid for it
        assert re.match(r"error: table (people|accounts): batch 1 \(", message), message
        assert "could not be written: the storage failed" in message, message
        assert "No record was dead-lettered" in message, message

        # the endpoint is back (same port, same objects): the rerun rolls the cut write back and
        # applies the batch Kafka kept, once
        s3.start()
        (batch,) = job.run()
        assert {t.table: (t.read, t.dead_letter) for t in batch.tables} == {name: (8, 0) for name in TABLES}
        expected = [(i, f"u{i}", Decimal("2.00")) for i in range(1, 6)] + [(i, f"n{i}", Decimal("1.00")) for i in range(6, 9)]
        for name in TABLES:
            assert [(r["id"], r["name"], r["balance"]) for r in job.rows_spark(name)] == expected
        assert not fs.exists(spark, job.location("dead_letter"))
