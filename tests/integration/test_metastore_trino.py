"""Issue 4: tables synced to a real Hive Metastore and queried with Trino while ingestion runs."""

from __future__ import annotations

import threading
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from hudi_cdc.devtools.debezium import Column, DebeziumTable
from hudi_cdc.hudi.compaction_job import run_compaction
from hudi_cdc.services.hms import LocalMetastore
from hudi_cdc.services.kafka import LocalKafka
from hudi_cdc.services.trino import LocalTrino
from hudi_cdc.status import table_status
from tests.integration.harness import Job

pytestmark = pytest.mark.integration

ACCOUNTS = [Column("id", "int64", optional=False), Column("owner", "string"), Column("region", "string"), Column("balance", "decimal", scale=2)]
ORDERS = [Column("order_id", "int64", optional=False), Column("account_id", "int64"), Column("total", "decimal", scale=2)]


def _source(job: Job, table: str, columns: list[Column], key: str) -> DebeziumTable:
    return DebeziumTable(server=f"srv{job.suffix}", database="db", table=table, columns=columns, key=[key])


def _account(i: int, owner: str, region: str, balance: str) -> dict[str, object]:
    return {"id": i, "owner": owner, "region": region, "balance": Decimal(balance)}


def test_trino_answers_match_spark_for_cow_and_mor(
    spark: SparkSession, kafka: LocalKafka, metastore: LocalMetastore, trino: LocalTrino, tmp_path: Path
) -> None:
    job = Job(
        spark,
        kafka,
        tmp_path,
        [
            {"name": "accounts", "key": ["id"], "partition_by": ["region"]},
            {"name": "orders", "key": ["order_id"], "type": "MERGE_ON_READ", "compaction": {"mode": "schedule_only"}},
        ],
        metastore_uris=metastore.uri,
    )
    accounts, orders = _source(job, "accounts", ACCOUNTS, "id"), _source(job, "orders", ORDERS, "order_id")
    job.produce("accounts", [accounts.change("c", after=_account(i, f"o{i}", "eu" if i % 2 else "us", f"{i}.50"), pos=100 + i) for i in range(1, 7)])
    job.produce("orders", [orders.change("c", after={"order_id": 10 + i, "account_id": i, "total": Decimal(f"{i}0.00")}, pos=200 + i) for i in range(1, 7)])
    job.run()
    # an update that moves a row to another partition, and an update of a MOR row (log file, not compacted)
    job.produce("accounts", [accounts.change("u", after=_account(1, "o1", "us", "100.00"), pos=300)])
    job.produce("orders", [orders.change("u", after={"order_id": 11, "account_id": 1, "total": Decimal("99.99")}, pos=301)])
    (batch,) = job.run()
    assert batch.hive_sync_lagging == []

    db = job.database
    spark_accounts = {(r["id"], r["region"], r["balance"]) for r in job.rows_spark("accounts")}
    assert set(trino.query(f"select id, region, balance from {db}.accounts")) == spark_accounts
    assert trino.query(f"select count(*) from {db}.accounts") == [(6,)]
    assert trino.query(f"select owner, balance from {db}.accounts where id = 1") == [("o1", Decimal("100.00"))]
    assert trino.query(f"select count(*) from {db}.accounts where region = 'us'") == [(4,)]
    join = f"select a.owner, o.total from {db}.accounts a join {db}.orders_ro o on o.account_id = a.id where a.id = 2"
    assert trino.query(join) == [("o2", Decimal("20.00"))]

    # Trino reads MOR through the read-optimized view: the update is in a log file until compaction
    assert trino.query(f"select total from {db}.orders_ro where order_id = 11") == [(Decimal("10.00"),)]
    assert {r["total"] for r in job.rows_spark("orders") if r["order_id"] == 11} == {Decimal("99.99")}
    status = {s["table"]: s for s in (table_status(spark, t) for t in job.config.tables)}
    assert status["orders"]["pending_compactions"] >= 0 and status["accounts"]["last_commit"]
    compacted = run_compaction(spark, job.config.table("orders"), force=True)
    assert compacted["compacted"] != "-"
    assert trino.query(f"select total from {db}.orders_ro where order_id = 11") == [(Decimal("99.99"),)]


def test_metastore_outage_loses_nothing_and_sync_recovers(spark: SparkSession, kafka: LocalKafka, tmp_path: Path) -> None:
    hms = LocalMetastore(directory=tmp_path / "hms").start()
    job = Job(spark, kafka, tmp_path, [{"name": "accounts", "key": ["id"]}], metastore_uris=hms.uri)
    accounts = _source(job, "accounts", ACCOUNTS, "id")
    job.produce("accounts", [accounts.change("c", after=_account(1, "a", "eu", "1.00"), pos=100)])
    job.run()

    port = hms.port
    hms.stop()
    job.produce("accounts", [accounts.change("c", after=_account(2, "b", "eu", "2.00"), pos=200)])
    (during,) = job.run()
    assert during.tables[0].commit_time is not None, "the data commit stands while the metastore is down"
    assert during.hive_sync_lagging == ["accounts"]
    assert {r["id"] for r in job.rows_spark("accounts")} == {1, 2}

    back = LocalMetastore(directory=tmp_path / "hms", port=port).start(fresh=False)
    try:
        assert job.run() == []  # nothing new in Kafka: no batch, yet the job retries the sync
        sync = (job.root / "cp_hive_sync.json").read_text()
        assert '"last_error": null' in sync and '"failed_attempts": 0' in sync
        with LocalTrino(back.uri, directory=tmp_path / "trino") as engine:
            assert engine.query(f"select id from {job.database}.accounts order by id") == [(1,), (2,)]
    finally:
        back.stop()


def test_queries_running_during_ingestion_all_succeed(
    spark: SparkSession, kafka: LocalKafka, metastore: LocalMetastore, trino: LocalTrino, tmp_path: Path
) -> None:
    job = Job(spark, kafka, tmp_path, [{"name": "accounts", "key": ["id"]}], metastore_uris=metastore.uri)
    accounts = _source(job, "accounts", ACCOUNTS, "id")
    job.produce("accounts", [accounts.change("c", after=_account(i, "x", "eu", "1.00"), pos=100 + i) for i in range(20)])
    job.run()
    failures: list[str] = []
    answered = 0
    stop = threading.Event()

    def query_loop() -> None:
        nonlocal answered
        while not stop.is_set():
            try:
                (count,) = trino.query(f"select count(*) from {job.database}.accounts")[0]
                assert count >= 20
                answered += 1
            except Exception as exc:
                failures.append(repr(exc))

    reader = threading.Thread(target=query_loop)
    reader.start()
    try:
        for round_ in range(3):
            job.produce("accounts", [accounts.change("u", after=_account(i, f"r{round_}", "eu", f"{round_}.00"), pos=1000 * (round_ + 1) + i) for i in range(20)])
            job.run()
    finally:
        stop.set()
        reader.join()
    assert failures == [] and answered > 0
