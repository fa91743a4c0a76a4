"""A failure of the table or its storage parks the table (or stops the job); it never dead-letters good records.

Failure isolation splits a failing batch to find the records that break it. When the table's
metadata table is corrupt, every part fails alike: before failures.py, every record of the
batch went to the dead-letter store as BatchFailure and the job went on without them. With
`job.on_table_failure: park` (the default) the other tables go on and the parked table catches
up from Kafka, in order, once its storage works again; with `stop` the job stops.
"""

from __future__ import annotations

import json
import traceback
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from devkit.debezium import DebeziumTable
from devkit.services.kafka import LocalKafka
from hudi_cdc.cli.console import cli
from hudi_cdc.errors import ConfigError, TableFailure, TablesParked
from hudi_cdc.job import stream
from hudi_cdc.job.stream import CATCH_UP_BATCH
from tests.support.accounts import COLUMNS, account, accounts_source
from tests.support.harness import Job, continuous, wait_for
from tests.support.storage_faults import refusing_writes

pytestmark = pytest.mark.integration


def _corrupt_metadata_table(base_path: str) -> list[str]:
    """Overwrite the data files of the metadata table's `files` partition, as a bad disk or a torn copy would."""
    partition = Path(base_path) / ".hoodie" / "metadata" / "files"
    corrupted = [p for p in partition.iterdir() if p.is_file() and ".hoodie_partition_metadata" not in p.name]
    for path in corrupted:
        path.write_bytes(b"not an hfile or a log block " * 4)
    return [p.name for p in corrupted]


@pytest.mark.parametrize(
    ("layout", "on_failure"),
    # an unpartitioned simple-index table keeps a metadata table only when asked (`metadata_table_kept`)
    [({"hoodie_options": {"hoodie.metadata.enable": True}}, "stop"), ({"type": "MERGE_ON_READ", "index": "record_level"}, "park")],
    ids=["cow-simple-index-stop", "mor-record-level-index-park"],
)
def test_a_corrupt_metadata_table_stops_the_table_and_the_batch_is_applied_after_the_repair(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path, layout: dict[str, Any], on_failure: str
) -> None:
    job = Job(spark, kafka, tmp_path, [{"name": "accounts", "key": ["id"], **layout}])
    job.job_settings = {"on_table_failure": on_failure}
    src = accounts_source(job)
    job.produce("accounts", [src.change("c", after=account(i, f"n{i}", "1.00"), pos=100 + i) for i in range(10, 14)])
    job.run()
    assert _corrupt_metadata_table(job.path("accounts"))

    updates = [
        src.change("u", before=account(i, f"n{i}", "1.00"), after=account(i, f"m{i}", "2.00"), pos=200 + i)
        for i in range(10, 14)
    ]
    job.produce("accounts", updates)
    with pytest.raises(TableFailure if on_failure == "stop" else TablesParked) as failed:
        job.run()
    message = str(failed.value)
    assert f"table accounts: batch 1 ({job.topic('accounts')}[0]@4..7) could not be written" in message
    assert "HoodieMetadataException" in message and "No record was dead-lettered" in message
    assert "run `hudi-cdc rebuild-metadata --table accounts`" in message
    assert not (tmp_path / "dead_letter").exists()

    config = str(job.config_file())
    repaired = CliRunner().invoke(cli, ["rebuild-metadata", "--table", "accounts", "--config", config])
    assert repaired.exit_code == 0, repaired.output
    assert "metadata table deleted; backup at" in repaired.output

    # Kafka kept the batch: the next run applies it (stop: Spark reads the batch again; park: the
    # parked table catches up before the stream starts), and Hudi rebuilds the metadata table
    (batch,) = job.run()
    assert batch.batch_id == (1 if on_failure == "stop" else CATCH_UP_BATCH)
    (metrics,) = batch.tables
    assert (metrics.read, metrics.applied, metrics.dead_letter, metrics.isolated) == (4, 4, 0, 0)
    assert batch.parked == {}
    expected = [{"id": i, "name": f"m{i}"} for i in range(10, 14)]
    assert [{"id": r["id"], "name": r["name"]} for r in job.rows_spark("accounts")] == expected
    assert [{"id": r["id"], "name": r["name"]} for r in job.rows_hudi_rs("accounts")] == expected
    rebuilt = Path(job.path("accounts")) / ".hoodie" / "metadata"
    assert (rebuilt / ".hoodie").is_dir()
    if layout.get("index") == "record_level":
        assert any((rebuilt / "record_index").iterdir()), "the record-level index was not rebuilt"
    nothing = CliRunner().invoke(cli, ["rebuild-metadata", "--table", "nobody", "--config", config])
    assert nothing.exit_code == 2 and "no table 'nobody'" in nothing.output


def _accounts_and_orders(spark: SparkSession, kafka: LocalKafka, tmp_path: Path) -> tuple[Job, DebeziumTable, DebeziumTable]:
    """A job of two tables; `accounts` writes its markers directly, so `refusing_writes` can refuse them."""
    job = Job(spark, kafka, tmp_path, [
        {"name": "accounts", "key": ["id"], "hoodie_options": {"hoodie.write.markers.type": "DIRECT"}},
        {"name": "orders", "key": ["id"]},
    ])  # fmt: skip
    orders = DebeziumTable(server=f"srv{job.suffix}", database="db", table="orders", columns=COLUMNS, key=["id"])
    return job, accounts_source(job), orders


def test_a_table_whose_storage_refuses_writes_is_parked_the_others_go_on_and_it_catches_up_in_order(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    job, accounts, orders = _accounts_and_orders(spark, kafka, tmp_path)
    job.produce("accounts", [accounts.change("c", after=account(i, f"n{i}", "1.00"), pos=100 + i) for i in range(10, 14)])
    job.produce("orders", [orders.change("c", after=account(i, f"o{i}", "1.00"), pos=100 + i) for i in range(3)])
    job.run()
    config = str(job.config_file())

    # while the storage refuses accounts' writes: its changes wait (an insert, then an update and
    # a delete of the same keys in later runs: applied out of order they would leave other rows)
    parked_runs = [
        [accounts.change("c", after=account(i, f"n{i}", "1.00"), pos=200 + i) for i in range(20, 24)],
        [accounts.change("u", after=account(20, "changed", "2.00"), pos=300), accounts.change("d", before=account(21, "n21", "1.00"), pos=301),
         accounts.change("d", before=account(10, "n10", "1.00"), pos=302)],
        [accounts.change("c", after=account(21, "again", "3.00"), pos=400)],
    ]  # fmt: skip
    with refusing_writes(Path(job.path("accounts"))):
        for n, changes in enumerate(parked_runs):
            job.produce("accounts", changes)
            job.produce("orders", [orders.change("u", after=account(n, f"o{n}-{len(changes)}", "5.00"), pos=500 + n)])
            # run as a user runs it: the CLI says what is parked and why, exits 1, no traceback
            failed = CliRunner().invoke(cli, ["run", "--once", "--config", config])
            assert failed.exit_code == 75, failed.output  # EX_TEMPFAIL: run again later
            assert failed.output.startswith("error: 1 table(s) parked: accounts"), failed.output
            assert "Traceback" not in failed.output and "py4j" not in failed.output
            assert "the storage failed (" in failed.output and "temp" in failed.output, failed.output
            assert "No record was dead-lettered" in failed.output
            # the other table went on, every run
            assert job.rows_spark("orders")[n]["name"] == f"o{n}-{len(changes)}"

        status = CliRunner().invoke(cli, ["status", "--config", config, "--json"], catch_exceptions=False)
        rows = {r["table"]: r for r in json.loads(status.stdout.strip().splitlines()[-1])["rows"]}
        assert "the storage failed" in rows["accounts"]["parked"] and rows["accounts"]["parked_backlog"] == 8
        assert rows["accounts"]["retries"] == 2  # each later run tried it first, and it failed again
        assert "parked" not in rows["orders"]
        assert [r["id"] for r in job.rows_spark("accounts")] == [10, 11, 12, 13]  # nothing applied meanwhile

    # the storage accepts writes again: the next run catches accounts up, in order, before the stream
    batches = job.run()
    assert [b.batch_id for b in batches] == [CATCH_UP_BATCH]
    (metrics,) = batches[0].tables
    assert (metrics.read, metrics.dead_letter, metrics.isolated) == (8, 0, 0)
    rows = {r["id"]: r["name"] for r in job.rows_spark("accounts")}
    assert rows == {11: "n11", 12: "n12", 13: "n13", 20: "changed", 21: "again", 22: "n22", 23: "n23"}
    assert not (tmp_path / "dead_letter").exists()
    assert json.loads((tmp_path / f"{job.checkpoint}_parked.json").read_text()) == []
    # and it runs with the others again
    job.produce("accounts", [accounts.change("u", after=account(22, "later", "1.00"), pos=600)])
    (batch,) = job.run()
    assert [(t.table, t.applied) for t in batch.tables] == [("accounts", 1)]
    assert {r["id"]: r["name"] for r in job.rows_spark("accounts")}[22] == "later"


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
    with pytest.raises(TablesParked, match="Hudi refused the table's settings") as failed:
        job.run()
    assert "No record was dead-lettered" in str(failed.value) and "3 table(s) parked" in str(failed.value)
    assert not (tmp_path / "dead_letter").exists()
    refused = ("keyed", "partitioned")  # Hudi refuses their writes; `typed`'s commit lands, then its compaction fails
    assert {name: job.rows_spark(name) for name in refused} == {name: before[name] for name in refused}

    job.tables[:] = created  # restored: the job applies the updates it kept
    job.run()
    for name in sources:
        assert [(r["id"], r["name"]) for r in job.rows_spark(name)] == [(i, f"m{i}") for i in range(3)]


@pytest.mark.deep  # about 2 minutes: the scheduled-run parking test above keeps the catch-up in `make test`
def test_a_continuous_job_parks_a_table_and_catches_it_up_without_a_restart(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    job, accounts, orders = _accounts_and_orders(spark, kafka, tmp_path)
    job.produce("accounts", [accounts.change("c", after=account(1, "n1", "1.00"), pos=100)])
    job.produce("orders", [orders.change("c", after=account(1, "o1", "1.00"), pos=100)])
    job.run()

    with continuous(job) as running:
        with refusing_writes(Path(job.path("accounts"))):
            job.produce("accounts", [accounts.change("c", after=account(i, f"n{i}", "1.00"), pos=200 + i) for i in range(2, 5)])
            job.produce("accounts", [accounts.change("d", before=account(2, "n2", "1.00"), pos=300)])
            job.produce("orders", [orders.change("c", after=account(i, f"o{i}", "1.00"), pos=200 + i) for i in range(2, 5)])
            wait_for("accounts parked, orders written", lambda: running.metrics().get(("hudi_cdc_table_parked", "accounts", "")) == 1
                     and running.read("orders") == 3, timeout=300)  # fmt: skip
            samples = running.metrics()
            assert samples[("hudi_cdc_table_parked_records", "accounts", "")] == 4
            assert samples[("hudi_cdc_table_parked", "orders", "")] == 0
            assert [r["id"] for r in job.rows_spark("orders")] == [1, 2, 3, 4]
            assert [r["id"] for r in job.rows_spark("accounts")] == [1]

        # the storage works again; the operator asks for a try now, with no restart
        retried = CliRunner().invoke(cli, ["retry-table", "--table", "accounts", "--config", str(tmp_path / "job.yaml")])
        assert retried.exit_code == 0, (retried.output, "".join(traceback.format_exception(retried.exception)) if retried.exception else "")
        request = tmp_path / f"{job.checkpoint}_retry" / "accounts"
        wait_for("accounts caught up", lambda: running.metrics().get(("hudi_cdc_table_parked", "accounts", "")) == 0, timeout=300)
        assert not request.exists() and "table accounts: tried again at once" in running.output(20_000), "the running job did not take the request"
        job.produce("accounts", [accounts.change("u", after=account(3, "later", "2.00"), pos=400)])
        wait_for("the update after the catch-up", lambda: {r["id"]: r["name"] for r in job.rows_spark("accounts")} == {1: "n1", 3: "later", 4: "n4"},
                 timeout=300)  # fmt: skip
        assert running.process.poll() is None, running.output()
        assert "table accounts is parked" in running.output(20_000) and "table accounts caught up" in running.output(20_000)
    assert not (tmp_path / "dead_letter").exists()
