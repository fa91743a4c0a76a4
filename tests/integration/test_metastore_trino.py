"""Tables synced to a real Hive Metastore and queried with Trino while ingestion runs.

What Trino 476 (its Hudi connector bundles Hudi 1.0.2) does with tables Hudi 1.2.0 writes
(table version 9), checked by the tests below:
- copy-on-write: exact current rows;
- merge-on-read `_ro`: rows as of the last compaction (base files);
- merge-on-read `_rt`: answers, but with the same rows as `_ro`: log files are not merged;
- once Hudi has archived instants of the last 3 days into `.hoodie/timeline/history`, every
  query of that table fails (apache/hudi#13994); an empty history folder fails too, which
  `keep_history_listable` avoids.
Bucket-index tables are read by Trino at versions 9 and 6 and by PrestoDB 0.287 at version 6.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import threading
import uuid
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import trino as trino_client
from pyspark.sql import DataFrame, SparkSession

from devkit.debezium import Column, DebeziumTable
from devkit.services.hms import LocalMetastore
from devkit.services.kafka import LocalKafka
from devkit.services.presto import LocalPresto
from devkit.services.trino import LocalTrino
from hudi_cdc.config.models import Compaction, HiveSync, TableConfig, TableType
from hudi_cdc.hoodie_keys import (
    CLEAN_MAX_COMMITS,
    CLEANER_COMMITS_RETAINED,
    KEEP_MAX_COMMITS,
    KEEP_MIN_COMMITS,
    RECORD_KEY,
)
from hudi_cdc.hudi import writer
from hudi_cdc.hudi.compactor import run_compaction
from hudi_cdc.hudi.hive_sync import HiveSyncOptions, MetastoreSync
from hudi_cdc.hudi.status import table_status
from hudi_cdc.hudi.table import latest_commit, table_exists
from hudi_cdc.hudi.table_options import write_options
from hudi_cdc.hudi.writer import keep_history_listable
from tests.support.harness import Job

pytestmark = pytest.mark.integration

ACCOUNTS = [Column("id", "int64", optional=False), Column("owner", "string"), Column("region", "string"), Column("balance", "decimal", scale=2)]
ORDERS = [Column("order_id", "int64", optional=False), Column("account_id", "int64"), Column("total", "decimal", scale=2)]
# MySQL columns are often camelCase: Hudi's files keep the case, the metastore and Trino lower it
PEOPLE = [Column("CustomerId", "int64", optional=False), Column("firstName", "string"), Column("Region", "string")]


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
            {"name": "people", "key": ["CustomerId"], "partition_by": ["Region"]},
        ],
        metastore_uris=metastore.uri,
    )
    accounts, orders = _source(job, "accounts", ACCOUNTS, "id"), _source(job, "orders", ORDERS, "order_id")
    people = _source(job, "people", PEOPLE, "CustomerId")
    named = {(i, f"n{i}", "eu" if i % 2 else "us") for i in range(1, 5)}
    job.produce("people", [people.change("c", after=dict(zip(("CustomerId", "firstName", "Region"), row, strict=True)), pos=50 + row[0]) for row in named])
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
    # every value of a camelCase key, data or partition column still arrives, quoted or not
    assert {(r["CustomerId"], r["firstName"], r["Region"]) for r in job.rows_spark("people")} == named
    assert set(trino.query(f"select customerid, firstname, region from {db}.people")) == named
    assert trino.query(f'select "firstName" from {db}.people where "CustomerId" = 3 and "Region" = \'eu\'') == [("n3",)]
    join = f"select a.owner, o.total from {db}.accounts a join {db}.orders_ro o on o.account_id = a.id where a.id = 2"
    assert trino.query(join) == [("o2", Decimal("20.00"))]

    # Trino reads MOR through the read-optimized view: the update is in a log file until compaction
    assert trino.query(f"select total from {db}.orders_ro where order_id = 11") == [(Decimal("10.00"),)]
    assert {r["total"] for r in job.rows_spark("orders") if r["order_id"] == 11} == {Decimal("99.99")}
    status = {s.table: s for s in (table_status(spark, t) for t in job.config.tables)}
    # schedule_only after 2 delta commits of the 10 that make one due: nothing is planned yet
    assert status["orders"].pending_compactions == 0 and status["accounts"].last_commit
    compacted = run_compaction(spark, job.config.table("orders"), force=True)
    assert compacted["compacted"] != "-"
    assert trino.query(f"select total from {db}.orders_ro where order_id = 11") == [(Decimal("99.99"),)]


# PrestoDB (Hudi 0.14) reads table version 6 only; there it also merges `_rt`'s log files.
# Deep, both versions: `make test` keeps the engines' reads of simple-index tables within 30 min;
# PrestoDB's version-6 snapshot reads run in `make test` (test_presto).
@pytest.mark.parametrize("table_version", [pytest.param(9, marks=pytest.mark.deep), pytest.param(6, marks=pytest.mark.deep)])
def test_sql_engines_read_bucket_tables_like_spark(
    spark: SparkSession, kafka: LocalKafka, metastore: LocalMetastore, trino: LocalTrino, tmp_path: Path,
    request: pytest.FixtureRequest, table_version: int,
) -> None:  # fmt: skip
    """`index: bucket` tables are ordinary file groups to the engines: COW exact, MOR `_ro` exact once compacted."""
    tables = [
        {"name": "accounts", "key": ["id"], "index": "bucket", "buckets": 4, "table_version": table_version},
        # a composite key: `hudi-cdc compact` cannot pass its fields in the procedure's options
        {"name": "orders", "key": ["order_id", "account_id"], "type": "MERGE_ON_READ", "index": "bucket",
         "buckets": 2, "compaction": {"mode": "schedule_only"}, "table_version": table_version},
    ]  # fmt: skip
    job = Job(spark, kafka, tmp_path, tables, metastore_uris=metastore.uri)
    accounts = _source(job, "accounts", ACCOUNTS, "id")
    orders = DebeziumTable(server=f"srv{job.suffix}", database="db", table="orders", columns=ORDERS, key=["order_id", "account_id"])
    created = {i: _account(i, f"o{i}", "eu" if i % 2 else "us", f"{i}.50") for i in range(1, 21)}
    job.produce("accounts", [accounts.change("c", after=row, pos=100 + i) for i, row in created.items()])
    job.produce("orders", [orders.change("c", after={"order_id": i, "account_id": i, "total": Decimal(f"{i}.00")}, pos=200 + i) for i in range(1, 21)])
    job.run()
    # a second batch: a partial update (region absent keeps its value), a delete with its tombstone
    job.produce("accounts", [
        accounts.change("u", after={"id": 3, "owner": "o3-new", "balance": Decimal("7.00")}, partial=True, pos=300),
        accounts.change("d", before=created[4], pos=301),
        accounts.tombstone(created[4]),
    ])  # fmt: skip
    job.produce("orders", [orders.change("u", after={"order_id": 5, "account_id": 5, "total": Decimal("55.55")}, pos=302)])
    (batch,) = job.run()
    assert batch.hive_sync_lagging == []

    db = job.database
    engines: dict[str, Callable[[str], list[tuple[Any, ...]]]] = {"trino": trino.query}
    if table_version == 6:
        presto: LocalPresto = request.getfixturevalue("presto")
        engines |= {f"presto {c}": functools.partial(presto.query, catalog=c) for c in ("hive", "hudi")}
    spark_accounts = {(r["id"], r["owner"], r["region"], r["balance"]) for r in job.rows_spark("accounts")}
    assert len(spark_accounts) == 19 and (3, "o3-new", "eu", Decimal("7.00")) in spark_accounts
    spark_orders = {(r["order_id"], r["account_id"], r["total"]) for r in job.rows_spark("orders")}
    assert len(spark_orders) == 20 and (5, 5, Decimal("55.55")) in spark_orders
    orders_sql = f"select order_id, account_id, total from {db}.orders"
    for engine, query in engines.items():
        assert set(query(f"select id, owner, region, balance from {db}.accounts")) == spark_accounts, engine
        assert query(f"select owner from {db}.accounts where id = 4") == [], engine
        assert query(f"select total from {db}.orders_ro where order_id = 5") == [(Decimal("5.00"),)], engine
        if engine.startswith("presto"):
            assert set(query(f"{orders_sql}_rt")) == spark_orders, engine
    assert run_compaction(spark, job.config.table("orders"), force=True)["compacted"] != "-"
    assert spark.conf.get(RECORD_KEY, None) is None, "the compaction's session settings are undone"
    for engine, query in engines.items():
        assert set(query(f"{orders_sql}_ro")) == spark_orders, engine


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
    # the logged and recorded cause is the JVM's (thrift/metastore), not py4j's "An error occurred while calling o..."
    failed = json.loads((job.root / "cp_hive_sync.json").read_text())["accounts"]
    assert failed["last_error"] and "An error occurred while calling" not in failed["last_error"]
    assert "Exception" in failed["last_error"]
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


def test_a_table_whose_first_commit_is_still_being_written_is_not_synced_yet(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    """The driver's wake-up sync can run while the batch thread writes a table's first commit:
    the table has its folders but no completed commit, so there is no schema to register yet.
    Before, that attempt failed with Hudi's "No schema found" and logged a failed sync."""
    job = Job(spark, kafka, tmp_path, [{"name": "accounts", "key": ["id"]}])
    accounts = _source(job, "accounts", ACCOUNTS, "id")
    job.produce("accounts", [accounts.change("c", after=_account(1, "a", "eu", "1.00"), pos=100)])
    job.run()
    path = job.path("accounts")
    # the commit as it stood before it completed: requested and inflight, not completed
    completed = [f for f in (Path(path) / ".hoodie" / "timeline").iterdir() if f.name.endswith(".commit")]
    assert completed, sorted(f.name for f in (Path(path) / ".hoodie" / "timeline").iterdir())
    for instant in completed:
        instant.unlink()
    assert table_exists(spark, path) and latest_commit(spark, path) is None

    sync = MetastoreSync("thrift://127.0.0.1:9")  # nothing listens there: an attempt would fail
    state = sync.sync_due(spark, [job.config.table("accounts")])["accounts"]
    assert (state.failed_attempts, state.last_error, state.last_attempt_at) == (0, None, None)
    assert state.lagging, "the table is registered once its commit completes"


# deep: test_presto's archival test runs a query loop during commits in `make test`
@pytest.mark.deep
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


# --- Spark + Hudi write with inline hms-mode sync, then Trino; no Kafka, no job ----------------

ROW_SCHEMA = "id long, name string, region string, amount decimal(10,2), updated_at timestamp"
T0 = dt.datetime(2024, 5, 1, 12, 0, 0)


def _rows(spark: SparkSession, rows: list[tuple[Any, ...]]) -> DataFrame:
    return spark.createDataFrame(rows, ROW_SCHEMA)


def _initial(spark: SparkSession) -> DataFrame:
    return _rows(
        spark,
        [(i, f"n{i}", "eu" if i % 2 else "us", Decimal(f"{i}.50"), T0 + dt.timedelta(minutes=i)) for i in range(1, 7)],
    )


def _table(tmp_path: Path, database: str, name: str, table_type: TableType) -> TableConfig:
    return TableConfig(
        name=name,
        key=["id"],
        base_path=str(tmp_path / name),
        type=table_type,
        partition_by=["region"],
        hive=HiveSync(database=database),
    )


def _write_synced(df: DataFrame, table: TableConfig, metastore_uri: str, **extra: str) -> None:
    """One Hudi commit that registers the table in the metastore itself (hive sync inline, `hms` mode).

    The session needs no Hive catalog and no `hive.metastore.uris`: the sync options carry the URI.
    """
    sync = HiveSyncOptions.for_table(table, metastore_uri)
    options = write_options(table) | sync.as_hoodie_options() | extra
    df.write.format("hudi").options(**options).mode("append").save(table.base_path)
    keep_history_listable(df.sparkSession, table.base_path)


def _spark_rows(spark: SparkSession, table: TableConfig) -> set[tuple[Any, ...]]:
    df = spark.read.format("hudi").load(table.base_path)
    return {tuple(r) for r in df.select("id", "name", "region", "amount", "updated_at").collect()}


def _table_version(table: TableConfig) -> str:
    props = (Path(table.base_path) / ".hoodie" / "hoodie.properties").read_text().splitlines()
    return next(line.split("=", 1)[1] for line in props if line.startswith("hoodie.table.version="))


@pytest.mark.deep
def test_hive_synced_cow_and_mor_read_through_trino_like_spark(
    spark: SparkSession, metastore: LocalMetastore, trino: LocalTrino, tmp_path: Path
) -> None:
    db = f"hms_{uuid.uuid4().hex[:8]}"
    cow = _table(tmp_path, db, "accounts", "COPY_ON_WRITE")
    mor = _table(tmp_path, db, "ledger", "MERGE_ON_READ")
    update = _rows(spark, [(1, "n1-upd", "eu", Decimal("100.00"), T0 + dt.timedelta(hours=1))])
    for table in (cow, mor):
        _write_synced(_initial(spark), table, metastore.uri)
        _write_synced(update, table, metastore.uri)
        assert _table_version(table) == "9"

    assert db in metastore.databases()
    tables = {row[0] for row in trino.query(f"show tables from {db}")}
    assert tables == {"accounts", "ledger_ro", "ledger_rt"}
    assert tables == {
        *HiveSyncOptions.for_table(cow, metastore.uri).registered_tables,
        *HiveSyncOptions.for_table(mor, metastore.uri).registered_tables,
    }

    # copy-on-write: Trino answers exactly what Spark answers (timestamps as TIMESTAMP, not bigint)
    columns = "id, name, region, amount, updated_at"
    spark_cow = _spark_rows(spark, cow)
    assert len(spark_cow) == 6
    assert set(trino.query(f"select {columns} from {db}.accounts")) == spark_cow
    assert trino.query(f"select count(*) from {db}.accounts") == [(6,)]
    point = f"select name, amount, updated_at from {db}.accounts where id = 1"
    assert trino.query(point) == [("n1-upd", Decimal("100.00"), T0 + dt.timedelta(hours=1))]
    assert trino.query(point, catalog="hive") == trino.query(point)  # hive catalog redirects to hudi

    # merge-on-read: the update sits in a log file (no compaction yet)
    spark_mor = _spark_rows(spark, mor)
    assert spark_mor == spark_cow
    ro = set(trino.query(f"select {columns} from {db}.ledger_ro"))
    assert ro == set(_initial(spark).collect()), "_ro: base files only, the update is not visible"
    assert trino.query(f"select name from {db}.ledger_ro where id = 1") == [("n1",)]
    rt = set(trino.query(f"select {columns} from {db}.ledger_rt"))
    # Trino 476 answers `_rt` without merging log files: the same stale rows as `_ro`
    assert rt == ro != spark_mor


# deep: documents the Trino failure (apache/hudi#13994) that hudi_cdc's archival bound avoids
@pytest.mark.deep
def test_trino_fails_on_a_table_with_recently_archived_instants(
    spark: SparkSession, metastore: LocalMetastore, trino: LocalTrino, tmp_path: Path
) -> None:
    """Documents apache/hudi#13994 with Trino 476: archiving recent commits makes the table unreadable.

    Hudi 1.0.2 in Trino reads archived instants of the last 3 days (or since the oldest active
    instant) with a Parquet reader Trino does not provide. hudi_cdc keeps archival far behind
    (see `KEEP_MIN_COMMITS`); this test archives on purpose after 3 commits.
    """
    db = f"hms_{uuid.uuid4().hex[:8]}"
    table = _table(tmp_path, db, "archived", "COPY_ON_WRITE")
    archive_early = {CLEANER_COMMITS_RETAINED: "1", CLEAN_MAX_COMMITS: "1", KEEP_MIN_COMMITS: "2", KEEP_MAX_COMMITS: "3"}
    history = Path(table.base_path) / ".hoodie" / "timeline" / "history"
    for i in range(12):  # archival also waits for the metadata table, so the count is not exact
        _write_synced(_rows(spark, [(1, f"v{i}", "eu", Decimal(i), T0)]), table, metastore.uri, **archive_early)
        if any(p.name.startswith("manifest_") for p in history.iterdir()):
            break
    else:
        pytest.fail("Hudi archived nothing after 12 commits")
    assert spark.read.format("hudi").load(table.base_path).count() == 1
    with pytest.raises(trino_client.exceptions.TrinoQueryError, match="does not support Parquet file reader"):
        trino.query(f"select count(*) from {db}.archived")


# --- readable forever: past the archival threshold with the project's defaults ----------------

OLD_KEEP_MAX = 50  # the static hoodie.keep.max.commits hudi_cdc used before hudi_cdc.hudi.retention


def _completed_commits(table: TableConfig) -> int:
    timeline = Path(table.base_path) / ".hoodie" / "timeline"
    return sum(1 for p in timeline.iterdir() if p.suffix in (".commit", ".deltacommit"))


def _archived_files(table: TableConfig) -> list[str]:
    history = Path(table.base_path) / ".hoodie" / "timeline" / "history"
    return sorted(p.name for p in history.iterdir() if p.suffix == ".parquet")


@pytest.mark.deep
def test_trino_reads_cow_and_mor_past_two_archival_thresholds_with_project_defaults(
    spark: SparkSession, metastore: LocalMetastore, trino: LocalTrino, tmp_path: Path
) -> None:
    """Tiny upserts through `writer.write` with `write_options` (cleaning 10 commits, MOR inline
    compaction every 5 delta commits), until the static archival settings hudi_cdc used to have
    (keep 40-50) would have archived twice; a query loop runs through Trino the whole time.
    """
    db = f"hms_{uuid.uuid4().hex[:8]}"
    cow = _table(tmp_path, db, "forever_cow", "COPY_ON_WRITE")
    mor = _table(tmp_path, db, "forever_mor", "MERGE_ON_READ").model_copy(
        update={"compaction": Compaction(mode="inline", strategy="NUM_COMMITS", max_delta_commits=5)}
    )
    sync = {t.name: HiveSyncOptions.for_table(t, metastore.uri).as_hoodie_options() for t in (cow, mor)}
    for table in (cow, mor):
        writer.write(
            _initial(spark),
            table=table.name,
            base_path=table.base_path,
            options=write_options(table) | sync[table.name],
            commit_metadata={},
            archive_after_hours=table.archive_after_hours,
        )

    failures: list[str] = []
    answered = 0
    stop = threading.Event()

    def query_loop() -> None:
        nonlocal answered
        while not stop.is_set():
            for sql in (
                f"select count(*) from {db}.forever_cow",
                f"select count(*) from {db}.forever_mor_ro",
            ):
                try:
                    assert trino.query(sql) == [(6,)]
                    answered += 1
                except Exception as exc:
                    failures.append(f"{sql}: {exc!r}"[:400])
            stop.wait(1.0)

    reader = threading.Thread(target=query_loop)
    reader.start()
    try:
        i = 0
        # two archival rounds of the old settings: one past keep.max, one keep.max - keep.min later
        while min(_completed_commits(cow), _completed_commits(mor)) < OLD_KEEP_MAX + 12:
            i += 1
            row = _rows(spark, [(1 + i % 6, f"v{i}", "eu" if (1 + i % 6) % 2 else "us", Decimal(i), T0)])
            for table in (cow, mor):
                if _completed_commits(table) < OLD_KEEP_MAX + 12:
                    writer.write(
                        row,
                        table=table.name,
                        base_path=table.base_path,
                        options=write_options(table),
                        commit_metadata={},
                        archive_after_hours=table.archive_after_hours,
                    )
    finally:
        stop.set()
        reader.join()

    for table in (cow, mor):
        # the last write registers the table's newest state
        writer.write(
            _rows(spark, [(1, "last", "eu", Decimal("1.00"), T0)]),
            table=table.name,
            base_path=table.base_path,
            options=write_options(table) | sync[table.name],
            commit_metadata={},
            archive_after_hours=table.archive_after_hours,
        )
    assert failures == [], failures[:3]
    assert answered > 0
    columns = "id, name, region, amount, updated_at"
    assert set(trino.query(f"select {columns} from {db}.forever_cow")) == _spark_rows(spark, cow)
    compacted = run_compaction(spark, mor, force=True)
    assert compacted["compacted"] != "-"
    assert set(trino.query(f"select {columns} from {db}.forever_mor_ro")) == _spark_rows(spark, mor)
    # nothing younger than ARCHIVE_AFTER_HOURS was archived, so Trino never meets the archive
    for table in (cow, mor):
        assert table_status(spark, table).trino["trino_readable"] == "ok"
