"""`make demo`: a local Kafka, a small realistic Debezium stream, one scheduled run, the tables printed.

Two tables from a MySQL-style server `shop`:
- customers: schema envelope (schemas.enable=true), copy-on-write, hard deletes;
- orders: no envelope (declared columns), merge-on-read, soft deletes, partitioned by status,
  produced on a sharded topic matched by a route pattern.
The stream holds a snapshot, inserts, three updates of one row in one batch, a delete followed
by its tombstone, and one malformed record; a second round brings a late event and updates
that land in merge-on-read log files. PrestoDB then answers `orders_rt` (the snapshot, checked
against Spark's read) before compaction, and `orders_ro` before and after it.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import shutil
from decimal import Decimal

from pyspark.sql import SparkSession

from devkit import CHECKOUT, build_dir
from devkit.debezium import Column, DebeziumTable, KafkaRecord
from devkit.services.hms import LocalMetastore
from devkit.services.kafka import LocalKafka
from devkit.services.presto import LocalPresto
from hudi_cdc.cli.logs import configure
from hudi_cdc.commit.metrics import OUTCOMES, BatchMetrics
from hudi_cdc.config.models import Config, load_config
from hudi_cdc.hudi.compactor import run_compaction
from hudi_cdc.job import stream
from hudi_cdc.spark.session import get_or_create_session

log = logging.getLogger("devkit.demo")
CONFIG = CHECKOUT / "schemas" / "demo.yaml"

CUSTOMERS = DebeziumTable(
    server="shop",
    database="inventory",
    table="customers",
    key=["id"],
    columns=[
        Column("id", "int64", optional=False),
        Column("first_name", "string"),
        Column("email", "string"),
        Column("balance", "decimal", scale=2, precision=12),
        Column("signed_up", "date"),
        Column("updated_at", "micro_timestamp"),
    ],
)
ORDERS = DebeziumTable(
    server="shop",
    database="inventory",
    table="orders_1",
    key=["order_id"],
    with_schema=False,
    columns=[
        Column("order_id", "int64", optional=False),
        Column("customer_id", "int64"),
        Column("status", "string"),
        Column("amount", "string"),
        Column("ordered_at", "zoned_timestamp"),
    ],
)


def _customer(cid: int, name: str, balance: str, when: dt.datetime) -> dict[str, object]:
    return {
        "id": cid,
        "first_name": name,
        "email": f"{name.lower()}@example.com",
        "balance": Decimal(balance),
        "signed_up": dt.date(2024, 1, cid % 28 + 1),
        "updated_at": when,
    }


def first_round() -> tuple[list[KafkaRecord], list[KafkaRecord]]:
    """Snapshot, inserts, three updates of 1002, a delete + tombstone of 1003, one malformed record."""
    t0 = dt.datetime(2026, 11, 1, 9, 0, 0)
    sally, george, edward = (
        _customer(1001, "Sally", "120.50", t0),
        _customer(1002, "George", "-15.00", t0),
        _customer(1003, "Edward", "0.99", t0),
    )
    customers = [
        CUSTOMERS.change("r", after=sally, pos=154),
        CUSTOMERS.change("r", after=george, pos=154),
        CUSTOMERS.change("r", after=edward, pos=154),
        CUSTOMERS.change("c", after=_customer(1004, "Anne", "42.00", t0), pos=400),
        CUSTOMERS.change("u", before=george, after={**george, "balance": Decimal("10.00")}, pos=700),
        CUSTOMERS.change("u", before=george, after={**george, "balance": Decimal("25.00")}, pos=800),
        CUSTOMERS.change(
            "u",
            before=george,
            after={**george, "balance": Decimal("99.99"), "email": "g@shop.example"},
            pos=900,
        ),
        CUSTOMERS.change("d", before=edward, pos=1000),
        CUSTOMERS.tombstone(edward),
        (
            None,
            b'{"schema": {"type": "struct"}, "payload": {"op": "c", "after": ',
        ),  # truncated by a broken producer
    ]
    orders = [
        ORDERS.change("c", after=_order(1, 1001, "NEW", "19.99"), pos=500),
        ORDERS.change("c", after=_order(2, 1002, "NEW", "5.00"), pos=510),
        ORDERS.change("c", after=_order(3, 1004, "NEW", "7.50"), pos=520),
        ORDERS.change("u", after=_order(1, 1001, "SHIPPED", "19.99"), pos=600),
        ORDERS.change("d", before=_order(2, 1002, "NEW", "5.00"), pos=610),
    ]
    return customers, orders


def second_round() -> tuple[list[KafkaRecord], list[KafkaRecord]]:
    """A newer update of 1001, a late update of 1002 older than what the table holds; order 1
    moves to another partition (status), order 3 changes in place (a log file until compaction)."""
    t1 = dt.datetime(2026, 11, 1, 10, 0, 0)
    sally = _customer(1001, "Sally", "300.00", t1)
    stale_george = _customer(1002, "George", "-1.00", t1)
    customers = [
        CUSTOMERS.change("u", after=sally, file="mysql-bin.000004", pos=120),
        CUSTOMERS.change("u", after=stale_george, pos=750),  # binlog position before the stored 900
    ]
    orders = [
        ORDERS.change("u", after=_order(1, 1001, "DELIVERED", "19.99"), file="mysql-bin.000004", pos=130),
        ORDERS.change("u", after=_order(3, 1004, "NEW", "8.25"), file="mysql-bin.000004", pos=140),
    ]
    return customers, orders


def _order(oid: int, cid: int, status: str, amount: str) -> dict[str, object]:
    return {
        "order_id": oid,
        "customer_id": cid,
        "status": status,
        "amount": amount,
        "ordered_at": dt.datetime(2026, 11, 1, 9, 30, tzinfo=dt.UTC),
    }


def _print_batches(batches: list[BatchMetrics]) -> None:
    header = ["batch", "table", "read", *OUTCOMES, "upserted", "deleted_rows", "commit"]
    print("\nPer-batch summary")
    print("  ".join(f"{h:>12}" for h in header))
    for batch in batches:
        for t in batch.tables:
            cells = [batch.batch_id, t.table, t.read, *(getattr(t, o) for o in OUTCOMES)]
            cells += [t.upserted_rows, t.deleted_rows, t.commit_time or "-"]
            print("  ".join(f"{c!s:>12}" for c in cells))


def _print_tables(spark: SparkSession, config: Config) -> None:
    for table in config.tables:
        print(f"\nTable {table.name} ({table.type}, {table.deletes} deletes) at {table.base_path}")
        df = spark.read.format("hudi").load(table.base_path)
        data = [
            c
            for c in df.columns
            if not c.startswith("_hoodie") and c not in {"_cdc_ingested_at", "_cdc_column_orders"}
        ]
        df.select(*data).orderBy(*table.key).show(truncate=False)


def main() -> None:
    configure("WARNING")
    logging.getLogger("hudi_cdc").setLevel(logging.INFO)
    run_dir = build_dir() / "run" / "demo"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    with LocalKafka() as kafka, LocalMetastore(directory=run_dir / "hms") as hms:
        os.environ["HUDI_CDC_BOOTSTRAP"] = kafka.bootstrap_servers
        os.environ["HUDI_CDC_METASTORE"] = hms.uri
        os.environ["HUDI_CDC_RUN"] = str(run_dir)
        config = load_config(CONFIG)
        kafka.create_topics([CUSTOMERS.topic, ORDERS.topic])
        spark = get_or_create_session(app_name="hudi-cdc-demo", hudi_sql=True)  # it compacts too
        spark.sparkContext.setLogLevel("ERROR")
        batches: list[BatchMetrics] = []
        for produce in (first_round, second_round):
            customers, orders = produce()
            kafka.produce(CUSTOMERS.topic, customers)
            kafka.produce(ORDERS.topic, orders)
            stream.run(spark, config, once=True, on_batch=batches.append)
        _print_tables(spark, config)
        _print_batches(batches)
        letters = spark.read.parquet(config.job.dead_letter_path)
        print(f"\nDead-letter store {config.job.dead_letter_path}:")
        letters.select("table", "topic", "partition", "offset", "error_class", "error_message").show(
            truncate=90
        )
        with LocalPresto(hms.uri, directory=run_dir / "presto") as presto:
            _query_with_presto(spark, presto, config)
        spark.stop()


ORDER_COLUMNS = ("order_id", "status", "amount", "_cdc_deleted")


def _show(presto: LocalPresto, sql: str) -> list[tuple[object, ...]]:
    print(f"presto> {sql}")
    rows = presto.query(sql, catalog="hive")
    for row in rows:
        print("   ", row)
    return rows


def _query_with_presto(spark: SparkSession, presto: LocalPresto, config: Config) -> None:
    """The synced tables, queried the way users will: PrestoDB through the metastore.

    `orders_rt` is the merge-on-read snapshot (base files merged with the log files the second
    run wrote), checked against Spark's snapshot read; `orders_ro` shows only what compaction
    has merged so far, until `hudi-cdc compact` (here: run_compaction) catches it up.
    """
    print(f"\nPrestoDB {presto.url}, catalog hive:")
    _show(presto, "show tables from shop")
    _show(presto, "select id, first_name, balance, _cdc_op from shop.customers order by id")
    columns = ", ".join(ORDER_COLUMNS)
    print(
        "\nBefore compaction: the snapshot (_rt) has the second run's updates, the read-optimized view (_ro) not yet"
    )
    snapshot = _show(presto, f"select {columns} from shop.orders_rt order by order_id")
    read_optimized = _show(presto, f"select {columns} from shop.orders_ro order by order_id")
    ids = [str(row[0]) for row in read_optimized]
    for twice in sorted({i for i in ids if ids.count(i) > 1}):
        print(
            f"    (order {twice} moved partition: _ro reads base files only, and the delete at its old"
            " place waits in a log file, so it shows twice until compaction)"
        )
    orders = next(t for t in config.tables if t.name == "orders")
    expected = [
        tuple(r)
        for r in spark.read.format("hudi")
        .load(orders.base_path)
        .select(*ORDER_COLUMNS)
        .orderBy("order_id")
        .collect()
    ]
    if snapshot != expected:
        raise SystemExit(f"PrestoDB's orders_rt differs from Spark's snapshot read: {snapshot} != {expected}")
    print("    orders_rt equals Spark's snapshot read, row for row")
    # what `hudi-cdc compact` does: the read-optimized view catches up with the log files
    print("\ncompaction:", run_compaction(spark, orders, force=True))
    _show(presto, f"select {columns} from shop.orders_ro order by order_id")
    print('\nQuery them again any time: make sql Q="select * from shop.orders_rt"  (ENGINE=trino for Trino)')


if __name__ == "__main__":
    main()
