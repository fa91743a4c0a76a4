"""Merge-on-read snapshots through PrestoDB, on tables written at Hudi table version 6.

The real job ingests creates, then updates (one moving a row to another partition) and deletes into a
copy-on-write and a merge-on-read table with `table_version: 6`, syncs them to the metastore, and
PrestoDB 0.287 (Hudi 0.14 inside) reads them through both its connectors:
- copy-on-write: exactly Spark's rows;
- merge-on-read `_rt` before any compaction: exactly Spark's snapshot (log files merged);
- merge-on-read `_ro`: base files only, so stale before compaction and exact after it.
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable
from devkit.services.hms import LocalMetastore
from devkit.services.kafka import LocalKafka
from devkit.services.presto import LocalPresto
from hudi_cdc.cli.console import cli
from hudi_cdc.config.models import TableConfig
from hudi_cdc.errors import ConfigError
from hudi_cdc.hoodie_keys import (
    CLEAN_MAX_COMMITS,
    CLEANER_COMMITS_RETAINED,
    INLINE,
    KEEP_MAX_COMMITS,
    KEEP_MIN_COMMITS,
)
from hudi_cdc.hudi.compactor import run_compaction
from hudi_cdc.hudi.hive_sync import HiveSyncOptions
from hudi_cdc.hudi.status import table_status
from hudi_cdc.hudi.table_options import write_options
from tests.support.harness import Job

pytestmark = pytest.mark.integration

ACCOUNTS = [
    Column("id", "int64", optional=False),
    Column("owner", "string"),
    Column("region", "string"),
    Column("balance", "decimal", scale=2),
    Column("opened", "date"),
]
ORDERS = [
    Column("order_id", "int64", optional=False),
    Column("status", "string"),
    Column("total", "decimal", scale=2),
    Column("placed_at", "timestamp"),
]
# MySQL columns are often camelCase: Hudi's files keep the case, the metastore lowers it
PEOPLE = [Column("CustomerId", "int64", optional=False), Column("firstName", "string"), Column("Region", "string")]
T0 = dt.datetime(2024, 5, 1, 12, 0, 0)
CATALOGS = ("hive", "hudi")
# list files through the table's metadata table instead of the file system (off by default)
METADATA_LISTING = {"hive": {"hive.hudi_metadata_enabled": "true"}, "hudi": {"hudi.hudi_metadata_table_enabled": "true"}}


def _account(i: int, owner: str, region: str | None, balance: str) -> dict[str, object]:
    return {"id": i, "owner": owner, "region": region, "balance": Decimal(balance), "opened": dt.date(2020, 1, i)}


def _order(i: int, status: str, total: str) -> dict[str, object]:
    return {"order_id": i, "status": status, "total": Decimal(total), "placed_at": T0 + dt.timedelta(minutes=i)}


def _columns(spark: SparkSession, base_path: str) -> list[str]:
    """Every column of the table but Hudi's own (data columns, the partition column, `_cdc_*`)."""
    return [c for c in spark.read.format("hudi").load(base_path).columns if not c.startswith("_hoodie_")]


def _millis(value: Any) -> Any:
    # Presto's timestamps have millisecond precision, Spark's microsecond (`_cdc_ingested_at`)
    if isinstance(value, dt.datetime):
        return value.replace(microsecond=value.microsecond // 1000 * 1000)
    return value


def _normalized(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted((tuple(_millis(v) for v in row) for row in rows), key=repr)


def _spark_rows(spark: SparkSession, base_path: str, columns: list[str]) -> list[tuple[Any, ...]]:
    df = spark.read.format("hudi").load(base_path).select(*columns)
    return _normalized([tuple(r) for r in df.collect()])


def _presto_rows(
    presto: LocalPresto, catalog: str, table: str, columns: list[str], session: dict[str, str] | None = None
) -> list[tuple[Any, ...]]:
    return _normalized(presto.query(f"select {', '.join(columns)} from {table}", catalog=catalog, session=session))


def _table_version(base_path: str) -> str:
    props = (Path(base_path) / ".hoodie" / "hoodie.properties").read_text().splitlines()
    return next(line.split("=", 1)[1] for line in props if line.startswith("hoodie.table.version="))


def test_presto_reads_version_6_cow_and_mor_snapshots_like_spark(
    spark: SparkSession, kafka: LocalKafka, metastore: LocalMetastore, presto: LocalPresto, tmp_path: Path
) -> None:
    job = Job(
        spark,
        kafka,
        tmp_path,
        [
            {"name": "accounts", "key": ["id"], "partition_by": ["region"], "table_version": 6},
            {
                "name": "orders",
                "key": ["order_id"],
                "type": "MERGE_ON_READ",
                "partition_by": ["status"],
                "table_version": 6,
                "compaction": {"mode": "schedule_only"},
            },
            {"name": "people", "key": ["CustomerId"], "type": "MERGE_ON_READ", "partition_by": ["Region"], "table_version": 6,
             "compaction": {"mode": "schedule_only"}},
        ],
        metastore_uris=metastore.uri,
    )  # fmt: skip
    accounts = DebeziumTable(server=f"srv{job.suffix}", database="db", table="accounts", columns=ACCOUNTS, key=["id"])
    orders = DebeziumTable(server=f"srv{job.suffix}", database="db", table="orders", columns=ORDERS, key=["order_id"])
    people = DebeziumTable(server=f"srv{job.suffix}", database="db", table="people", columns=PEOPLE, key=["CustomerId"])
    named = {i: {"CustomerId": i, "firstName": f"n{i}", "Region": "eu" if i % 2 else "us"} for i in range(1, 5)}
    job.produce("people", [people.change("c", after=row, pos=50 + i) for i, row in named.items()])
    regions = {i: "eu" if i % 2 else "us" for i in range(1, 7)} | {7: None}  # NULL: Hive's default partition
    job.produce("accounts", [accounts.change("c", after=_account(i, f"o{i}", region, f"{i}.50"), pos=100 + i) for i, region in regions.items()])
    job.produce("orders", [orders.change("c", after=_order(i, "open", f"{i}0.00"), pos=200 + i) for i in range(1, 10)])
    job.run()
    # updates (one moves a row to another partition) and deletes: on merge-on-read, log files
    job.produce("accounts", [
        accounts.change("u", after=_account(1, "o1", "us", "100.00"), pos=300),
        accounts.change("u", after=_account(2, "o2-new", "us", "2.50"), pos=301),
        accounts.change("d", before=_account(3, "o3", "eu", "3.50"), pos=302),
    ])  # fmt: skip
    job.produce("orders", [
        orders.change("u", after=_order(1, "open", "99.99"), pos=400),
        orders.change("u", after=_order(2, "shipped", "20.00"), pos=401),
        orders.change("d", before=_order(3, "open", "30.00"), pos=402),
        orders.change("u", after=_order(4, "open", "44.44"), pos=403),
        orders.change("d", before=_order(5, "open", "50.00"), pos=404),
    ])  # fmt: skip
    job.produce("people", [people.change("u", after=named[2] | {"firstName": "renamed"}, pos=405)])
    (last,) = job.run()
    assert last.hive_sync_lagging == []

    cow, mor = job.path("accounts"), job.path("orders")
    assert _table_version(cow) == _table_version(mor) == "6"
    assert any(".log." in p.name for p in Path(mor).rglob("*")), "the merge-on-read table has log files"
    db = job.database
    assert {row[0] for row in presto.query(f"show tables from {db}")} == {"accounts", "orders_ro", "orders_rt", "people_ro", "people_rt"}

    cow_columns, mor_columns = _columns(spark, cow), _columns(spark, mor)
    assert {"opened", "placed_at", "_cdc_ingested_at", "_cdc_column_orders"} <= {*cow_columns, *mor_columns}
    spark_cow, spark_mor = _spark_rows(spark, cow, cow_columns), _spark_rows(spark, mor, mor_columns)
    assert len(spark_cow) == 6 and len(spark_mor) == 7
    assert (7, None) in {(row[cow_columns.index("id")], row[cow_columns.index("region")]) for row in spark_cow}
    for catalog in CATALOGS:
        assert _presto_rows(presto, catalog, f"{db}.accounts", cow_columns) == spark_cow, catalog
        # the snapshot before any compaction: updates and deletes in log files are visible
        assert _presto_rows(presto, catalog, f"{db}.orders_rt", mor_columns) == spark_mor, catalog
        # read-optimized: base files only, the updates and deletes are not in them yet
        ro = {row[0]: row for row in presto.query(f"select order_id, total from {db}.orders_ro", catalog=catalog)}
        assert ro[4] == (4, Decimal("40.00")) and 5 in ro, catalog
        # camelCase key, data and partition columns: every value arrives, the log file's update too
        rt = set(presto.query(f"select customerid, firstname, region from {db}.people_rt", catalog=catalog))
        assert rt == {(i, "renamed" if i == 2 else f"n{i}", row["Region"]) for i, row in named.items()}, catalog

    # hudi_cdc's own readers work on a version-6 table
    status = table_status(spark, job.config.table("orders"))
    assert status.last_commit and status.applied_through and status.committed_counts

    compacted = run_compaction(spark, job.config.table("orders"), force=True)
    assert compacted["compacted"] != "-"
    # the metadata table too: Hudi 0.14 cannot open one at version 9
    assert _table_version(mor) == _table_version(f"{mor}/.hoodie/metadata") == "6"
    for catalog in CATALOGS:
        assert _presto_rows(presto, catalog, f"{db}.orders_ro", mor_columns) == spark_mor, catalog
        listing = METADATA_LISTING[catalog]
        assert _presto_rows(presto, catalog, f"{db}.orders_rt", mor_columns, listing) == spark_mor, catalog


@pytest.mark.deep
def test_a_version_9_table_turns_version_6_through_relayout_and_presto_reads_its_snapshot(
    spark: SparkSession, kafka: LocalKafka, metastore: LocalMetastore, presto: LocalPresto, tmp_path: Path
) -> None:
    """Hudi never downgrades (with `table_version: 6` it would write a version-9 table on at 9): the
    job refuses, and `hudi-cdc relayout` rewrites the table at version 6, which PrestoDB reads."""
    # a bucket table: its updates go to log files, which `_rt` must merge
    # with a metadata table (an unpartitioned bucket table keeps none unless asked): relayout writes it at version 6
    orders_table = {"name": "orders", "key": ["order_id"], "type": "MERGE_ON_READ", "index": "bucket", "buckets": 2,
                    "compaction": {"mode": "schedule_only"}, "hoodie_options": {"hoodie.metadata.enable": True}}  # fmt: skip
    job = Job(spark, kafka, tmp_path, [orders_table], metastore_uris=metastore.uri)
    orders = DebeziumTable(server=f"srv{job.suffix}", database="db", table="orders", columns=ORDERS, key=["order_id"])
    job.produce("orders", [orders.change("c", after=_order(i, "open", f"{i}0.00"), pos=200 + i) for i in range(1, 10)])
    job.run()
    path = job.path("orders")
    assert _table_version(path) == "9"

    job.tables[0] = orders_table | {"table_version": 6}
    job.produce("orders", [
        orders.change("u", after=_order(1, "open", "99.99"), pos=400),
        orders.change("d", before=_order(3, "open", "30.00"), pos=401),
    ])  # fmt: skip
    with pytest.raises(ConfigError, match=r"table_version: 6, .* Hudi table version 9 and Hudi does not downgrade"):
        job.run()
    config = str(job.config_file())
    rewritten = CliRunner().invoke(cli, ["relayout", "--table", "orders", "--config", config])
    assert rewritten.exit_code == 0 and "9 rows" in rewritten.output, rewritten.output
    assert _table_version(path) == _table_version(f"{path}/.hoodie/metadata") == "6"

    (batch,) = job.run()
    assert batch.hive_sync_lagging == [] and batch.tables[0].upserted_rows == 1
    assert _table_version(path) == "6" and any(".log." in f.name for f in Path(path).iterdir())
    columns = _columns(spark, path)
    spark_rows = _spark_rows(spark, path, columns)
    assert len(spark_rows) == 8
    for catalog in CATALOGS:
        assert _presto_rows(presto, catalog, f"{job.database}.orders_rt", columns) == spark_rows, catalog


# --- archival: PrestoDB keeps reading version-6 tables whose timeline is archived ----------------

ARCHIVE_EARLY = {
    CLEANER_COMMITS_RETAINED: "1", CLEAN_MAX_COMMITS: "1", KEEP_MIN_COMMITS: "2", KEEP_MAX_COMMITS: "3",
    # the archiver keeps what the metadata table has not compacted yet (every 10 commits by default)
    "hoodie.metadata.compact.max.delta.commits": "3",
}  # fmt: skip
"""Archive as soon as Hudi allows (bypassing hudi_cdc's 100-hour bound, which no test can outlive)."""
LAST_WRITE = {INLINE: "false"}
"""The last write leaves its log files uncompacted, so `_rt` must merge them."""


def _row_table(tmp_path: Path, db: str, name: str, table_type: str) -> TableConfig:
    return TableConfig.model_validate({
        "name": name, "key": ["id"], "base_path": str(tmp_path / name), "type": table_type,
        "partition_by": ["region"], "table_version": 6, "hive": {"database": db},
        "compaction": {"mode": "inline", "strategy": "NUM_COMMITS", "max_delta_commits": 3},
    })  # fmt: skip


def _active_commits(table: TableConfig) -> list[str]:
    """Completed commits of a version-6 active timeline (`.hoodie/<instant>.<action>`)."""
    actions = (".commit", ".deltacommit")
    return sorted(p.name for p in (Path(table.base_path) / ".hoodie").iterdir() if p.suffix in actions)


def _write(spark: SparkSession, table: TableConfig, changes: range, extra: dict[str, str]) -> None:
    """Change i sets key 1 + i % 6 (keys stay in their partition)."""
    rows = spark.createDataFrame(
        [(1 + i % 6, f"v{i}", Decimal(i), T0 + dt.timedelta(seconds=i), "eu" if i % 2 == 0 else "us") for i in changes],
        "id long, owner string, balance decimal(10,2), changed_at timestamp, region string",  # partition column last
    )
    rows.write.format("hudi").options(**(write_options(table) | ARCHIVE_EARLY | extra)).mode("append").save(table.base_path)


# Deep (make test keeps PrestoDB's snapshot reads of both types, test_presto_reads_version_6_cow_and_mor_snapshots_like_spark):
# MOR until Hudi archives once (its three views read all along); COW and MOR until Hudi archives
# twice. Cleaning and inline compaction run in both.
@pytest.mark.parametrize(
    ("types", "archivals_wanted"),
    [
        pytest.param(("MERGE_ON_READ",), 1, marks=pytest.mark.deep),
        pytest.param(("COPY_ON_WRITE", "MERGE_ON_READ"), 2, marks=pytest.mark.deep),
    ],
)
def test_presto_reads_version_6_tables_across_archival_cleaning_and_compaction(
    spark: SparkSession, metastore: LocalMetastore, presto: LocalPresto, tmp_path: Path,
    types: tuple[str, ...], archivals_wanted: int,
) -> None:  # fmt: skip
    """Commit until Hudi has archived (cleaning one commit, compacting every 3 delta commits) while
    a query loop reads every view through PrestoDB: no query may fail, and at the end COW, `_rt`
    before compaction and `_ro` after it equal Spark's reads.
    """
    db = f"arch_{uuid.uuid4().hex[:8]}"
    tables = [_row_table(tmp_path, db, f"arch_{'cow' if t == 'COPY_ON_WRITE' else 'mor'}", t) for t in types]
    sync = {t.name: HiveSyncOptions.for_table(t, metastore.uri).as_hoodie_options() for t in tables}
    for table in tables:
        _write(spark, table, range(6), sync[table.name])  # keys 1..6 in both partitions, registered

    failures: list[str] = []
    answered = 0
    stop = threading.Event()
    views = [
        view
        for t in tables
        for view in ((f"{db}.{t.name}",) if t.type == "COPY_ON_WRITE" else (f"{db}.{t.name}_rt", f"{db}.{t.name}_ro"))
    ]

    def query_loop() -> None:
        nonlocal answered
        while not stop.is_set():
            for view in views:
                try:
                    rows = presto.query(f"select count(distinct id), max(balance) from {view}", catalog="hive")
                    assert rows[0][0] == 6, rows
                    answered += 1
                except Exception as exc:
                    failures.append(f"{view}: {exc!r}"[:400])
            stop.wait(1.5)  # a round of 3 queries takes about a second: the engine must not starve the writes

    archivals = {t.name: 0 for t in tables}
    oldest = {t.name: _active_commits(t)[0] for t in tables}
    reader = threading.Thread(target=query_loop)
    reader.start()
    try:
        for i in range(6, 60):
            for table in tables:
                _write(spark, table, range(i, i + 1), {})
                first = _active_commits(table)[0]
                archivals[table.name] += first != oldest[table.name]
                oldest[table.name] = first
            if min(archivals.values()) >= archivals_wanted:
                break
        for table in tables:
            _write(spark, table, range(i + 1, i + 2), LAST_WRITE | sync[table.name])
    finally:
        stop.set()
        reader.join()

    assert min(archivals.values()) >= archivals_wanted, f"Hudi archived too rarely in {i - 5} commits: {archivals}"
    for table in tables:  # a version-6 archive: `.commits_.archive.<n>` files in `hoodie.archivelog.folder`
        props = dict(line.split("=", 1) for line in (Path(table.base_path) / ".hoodie" / "hoodie.properties").read_text().splitlines() if "=" in line)
        archive = Path(table.base_path) / ".hoodie" / props.get("hoodie.archivelog.folder", "archived")
        assert [p for p in archive.iterdir() if p.name.startswith(".commits_.archive.")], table.name
    assert answered >= len(views) and failures == [], failures[:3]
    columns = ["id", "owner", "balance", "changed_at", "region"]
    for table in tables:
        if table.type == "COPY_ON_WRITE":
            assert _presto_rows(presto, "hive", f"{db}.{table.name}", columns) == _spark_rows(spark, table.base_path, columns)
            continue
        assert any(".log." in p.name for p in Path(table.base_path).rglob("*")), "the last write left log files"
        assert _presto_rows(presto, "hive", f"{db}.{table.name}_rt", columns) == _spark_rows(spark, table.base_path, columns)
        assert run_compaction(spark, table, force=True)["compacted"] != "-"
        assert _presto_rows(presto, "hive", f"{db}.{table.name}_ro", columns) == _spark_rows(spark, table.base_path, columns)
