"""A failure of the table or its storage stops the job; it never dead-letters good records (rule: nothing lost).

Failure isolation splits a failing batch to find the records that break it. When the table's
metadata table is corrupt, every part fails alike: before failures.py, every record of the
batch went to the dead-letter store as BatchFailure and the job went on without them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from devkit.debezium import DebeziumTable
from devkit.services.kafka import LocalKafka
from hudi_cdc.cli.console import cli
from hudi_cdc.errors import ConfigError, TableFailure
from hudi_cdc.job import stream
from tests.support.accounts import COLUMNS, account, accounts_source
from tests.support.harness import Job

pytestmark = pytest.mark.integration


def _corrupt_metadata_table(base_path: str) -> list[str]:
    """Overwrite the data files of the metadata table's `files` partition, as a bad disk or a torn copy would."""
    partition = Path(base_path) / ".hoodie" / "metadata" / "files"
    corrupted = [p for p in partition.iterdir() if p.is_file() and ".hoodie_partition_metadata" not in p.name]
    for path in corrupted:
        path.write_bytes(b"not an hfile or a log block " * 4)
    return [p.name for p in corrupted]


@pytest.mark.parametrize(
    "layout",
    [{}, {"type": "MERGE_ON_READ", "index": "record_level"}],
    ids=["cow-simple-index", "mor-record-level-index"],
)
def test_a_corrupt_metadata_table_stops_the_job_and_the_batch_is_applied_after_the_repair(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path, layout: dict[str, str]
) -> None:
    job = Job(spark, kafka, tmp_path, [{"name": "accounts", "key": ["id"], **layout}])
    src = accounts_source(job)
    job.produce("accounts", [src.change("c", after=account(i, f"n{i}", "1.00"), pos=100 + i) for i in range(10, 14)])
    job.run()
    assert _corrupt_metadata_table(job.path("accounts"))

    updates = [
        src.change("u", before=account(i, f"n{i}", "1.00"), after=account(i, f"m{i}", "2.00"), pos=200 + i)
        for i in range(10, 14)
    ]
    job.produce("accounts", updates)
    with pytest.raises(TableFailure) as failed:
        job.run()
    message = str(failed.value)
    assert f"table accounts: batch 1 ({job.topic('accounts')}[0]@4..7) could not be written" in message
    assert "HoodieMetadataException" in message and "No record was dead-lettered" in message
    assert "run `hudi-cdc rebuild-metadata accounts`" in message
    assert not (tmp_path / "dead_letter").exists()

    config = str(job.config_file())
    repaired = CliRunner().invoke(cli, ["rebuild-metadata", "accounts", "--config", config])
    assert repaired.exit_code == 0, repaired.output
    assert "metadata table deleted; backup at" in repaired.output

    # Kafka kept the batch: the next run applies it, and Hudi rebuilds the metadata table
    (batch,) = job.run()
    (metrics,) = batch.tables
    assert (metrics.read, metrics.applied, metrics.dead_letter, metrics.isolated) == (4, 4, 0, 0)
    expected = [{"id": i, "name": f"m{i}"} for i in range(10, 14)]
    assert [{"id": r["id"], "name": r["name"]} for r in job.rows_spark("accounts")] == expected
    assert [{"id": r["id"], "name": r["name"]} for r in job.rows_hudi_rs("accounts")] == expected
    rebuilt = Path(job.path("accounts")) / ".hoodie" / "metadata"
    assert (rebuilt / ".hoodie").is_dir()
    if layout.get("index") == "record_level":
        assert any((rebuilt / "record_index").iterdir()), "the record-level index was not rebuilt"
    nothing = CliRunner().invoke(cli, ["rebuild-metadata", "nobody", "--config", config])
    assert nothing.exit_code == 1 and "no table 'nobody'" in nothing.output


@contextmanager
def _refusing_writes(table: Path) -> Iterator[None]:
    """The table's local storage refuses every new write while inside, whoever the process runs as.

    A file stands where Hudi creates each write's marker folder (`.hoodie/.temp`, written
    directly with `hoodie.write.markers.type: DIRECT`), so the local file system refuses the
    first file a commit writes (ENOTDIR), before any data file. Unlike a permission bit or
    `chattr +i`, this binds root and needs no capability, so the test never skips.
    """
    temp = table / ".hoodie" / ".temp"
    aside = table / ".hoodie" / ".temp-aside"
    if temp.exists():
        temp.rename(aside)
    temp.write_text("not a folder: writes under it are refused\n")
    try:
        yield
    finally:
        temp.unlink()
        if aside.exists():
            aside.rename(temp)


def test_storage_that_refuses_writes_stops_the_job_and_the_batch_is_applied_once_it_accepts_them(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    direct_markers = {"hoodie.write.markers.type": "DIRECT"}
    job = Job(spark, kafka, tmp_path, [{"name": "accounts", "key": ["id"], "hoodie_options": direct_markers}])
    src = accounts_source(job)
    job.produce("accounts", [src.change("c", after=account(i, f"n{i}", "1.00"), pos=100 + i) for i in range(10, 14)])
    job.run()
    job.produce("accounts", [src.change("c", after=account(i, f"n{i}", "1.00"), pos=100 + i) for i in range(20, 24)])

    # new data files cannot be created: the storage refuses the write, whatever the records.
    # Run as a user runs it: the CLI prints the error's text alone and exits 1
    with _refusing_writes(Path(job.path("accounts"))):
        failed = CliRunner().invoke(cli, ["run", "--once", "--config", str(job.config_file())])
    assert failed.exit_code == 1, failed.output
    message = failed.output
    assert message.startswith("error: table accounts: batch 1"), message
    assert "Traceback" not in message and "py4j" not in message
    assert f"table accounts: batch 1 ({job.topic('accounts')}[0]@4..7) could not be written" in message
    assert "the storage failed (" in message and "temp" in message, message
    assert "No record was dead-lettered" in message
    assert not (tmp_path / "dead_letter").exists()

    # the storage accepts writes again: the restarted job applies the batch Kafka kept
    (batch,) = job.run()
    (metrics,) = batch.tables
    assert (metrics.read, metrics.applied, metrics.dead_letter, metrics.isolated) == (4, 4, 0, 0)
    assert [r["id"] for r in job.rows_spark("accounts")] == [10, 11, 12, 13, 20, 21, 22, 23]


def test_a_changed_key_partitioning_or_type_is_refused_at_start_and_never_dead_letters(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hudi fixes a table's key, partition columns and type when it creates it. Before the start
    check, a batch after such a change had every record isolated and dead-lettered."""
    created: list[dict[str, Any]] = [{"name": name, "key": ["id"]} for name in ("keyed", "partitioned", "typed")]
    changed = [
        created[0] | {"key": ["id", "name"]},
        created[1] | {"partition_by": ["name"]},
        created[2] | {"type": "MERGE_ON_READ"},
    ]
    job = Job(spark, kafka, tmp_path, list(created))
    sources = {
        t["name"]: DebeziumTable(server=f"srv{job.suffix}", database="db", table=t["name"], columns=COLUMNS, key=["id"])
        for t in created
    }
    for name, src in sources.items():
        job.produce(name, [src.change("c", after=account(i, f"n{i}", "1.00"), pos=100 + i) for i in range(3)])
    job.run()
    before = {name: job.rows_spark(name) for name in sources}

    job.tables[:] = changed
    for name, src in sources.items():
        job.produce(name, [src.change("u", after=account(i, f"m{i}", "2.00"), pos=200 + i) for i in range(3)])
    with pytest.raises(ConfigError) as refused:
        job.run()
    message = str(refused.value)
    assert "tables.keyed.key: the settings ask for [id, name], but the table at" in message
    assert "was created with [id]" in message
    assert "tables.partitioned.partition_by: the settings ask for [name]" in message and "created with []" in message
    assert "tables.typed.type: the settings ask for MERGE_ON_READ" in message and "created with COPY_ON_WRITE" in message

    # past the start check (a job started before the change reached it): Hudi's refusal stops the
    # table, as the table's fault, and no record is dead-lettered
    monkeypatch.setattr(stream, "preflight", lambda *args, **kwargs: None)
    with pytest.raises(TableFailure, match="Hudi refused the table's settings") as failed:
        job.run()
    assert "No record was dead-lettered" in str(failed.value)
    assert not (tmp_path / "dead_letter").exists()
    assert {name: job.rows_spark(name) for name in sources} == before

    job.tables[:] = created  # restored: the job applies the updates it kept
    job.run()
    for name in sources:
        assert [(r["id"], r["name"]) for r in job.rows_spark(name)] == [(i, f"m{i}") for i in range(3)]
