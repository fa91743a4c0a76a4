"""`make demo-relay`: the snapshot relay on a small MariaDB, with local Kafka and Kafka Connect.

Three tables; the first snapshot run is killed after its first table (its connector deleted),
`finish` is refused, `resume` relays the other two, `finish` starts the binlog from the first
position, and every Hudi table is compared with its source. Everything runs under
build/run/demo-relay/; the `hudi-cdc snapshot` commands are the real CLI.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import yaml
from pyspark.sql import SparkSession

from devkit import build_dir
from devkit.services.connect import LocalConnect, mariadb_connector_config
from devkit.services.kafka import LocalKafka
from devkit.services.mariadb import LocalMariaDB
from hudi_cdc.cli.console import cli
from hudi_cdc.cli.logs import configure
from hudi_cdc.config.connector import RELAY_OWNED_KEYS
from hudi_cdc.config.models import Config, load_config
from hudi_cdc.hudi.table import read_table
from hudi_cdc.job import stream
from hudi_cdc.relay.markers import scan_topic
from hudi_cdc.spark.session import get_or_create_session

log = logging.getLogger("devkit.demo_relay")
DATABASE, PREFIX, NAME = "demo_shop", "demo", "demo-shop"
TABLES = {"customers": 30, "orders": 600, "items": 100}
PASSWORD_VARIABLE = "DEMO_DEBEZIUM_PASSWORD"


def hudi_cdc(*args: str) -> int:
    """Run one `hudi-cdc` command in this process, echo it, return its exit code."""
    print(f"\n$ hudi-cdc {' '.join(args)}", flush=True)
    try:
        cli.main(args=list(args), standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def wait_for(what: str, condition: Callable[[], bool], timeout: float = 300.0, interval: float = 1.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"demo: timed out waiting for {what}")
        time.sleep(interval)


def write_config(root: Path, mariadb: LocalMariaDB, kafka: LocalKafka, connect: LocalConnect) -> Path:
    debezium = mariadb_connector_config(
        hostname=mariadb.host, port=mariadb.port, user=mariadb.debezium_user, password=f"${{{PASSWORD_VARIABLE}}}",
        server_id=random.randint(10_000, 2**31 - 1), topic_prefix=PREFIX, database=DATABASE, tables=list(TABLES),
        bootstrap_servers=kafka.bootstrap_servers,
        # orders and items are read slowly (a SLEEP per row), so the demo can kill the first run
        # after customers and in the middle of orders. Debezium marks a table's last record only
        # when it reads the next table's first row, so items must be slow too.
        extra={
            "snapshot.select.statement.overrides": f"{DATABASE}.orders,{DATABASE}.items",
            f"snapshot.select.statement.overrides.{DATABASE}.orders": f"SELECT * FROM {DATABASE}.orders WHERE SLEEP(0.02) = 0",
            f"snapshot.select.statement.overrides.{DATABASE}.items": f"SELECT * FROM {DATABASE}.items WHERE SLEEP(0.1) = 0",
        },
    )  # fmt: skip
    document = {
        "kafka": {"bootstrap_servers": kafka.bootstrap_servers},
        "job": {"name": "demo-relay", "checkpoint_dir": str(root / "checkpoint"), "dead_letter_path": str(root / "dead_letter")},
        "routes": [{"topic": f"{PREFIX}.{DATABASE}.{t}", "table": t} for t in TABLES],
        "tables": [{"name": t, "key": ["id"], "base_path": str(root / "warehouse" / t)} for t in TABLES],
        "connector": {
            "connect_url": connect.url, "name": NAME, "tables": [f"{DATABASE}.{t}" for t in TABLES],
            "config": {k: v for k, v in debezium.items() if k not in RELAY_OWNED_KEYS},
        },
    }  # fmt: skip
    path = root / "job.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def change_something(mariadb: LocalMariaDB, step: int) -> None:
    """A few changes on every table, as a live database would have."""
    for table in TABLES:
        mariadb.execute(f"INSERT INTO {DATABASE}.{table} VALUES ({10_000 + step}, 'new {step}', {step}.25)")
        mariadb.execute(f"UPDATE {DATABASE}.{table} SET amount = amount + 1 WHERE id = {1 + step % 20}")
        mariadb.execute(f"DELETE FROM {DATABASE}.{table} WHERE id = {21 + step}")


def all_done(config_path: Path) -> bool:
    from hudi_cdc.relay import actions
    from hudi_cdc.relay.ledger import not_done

    config = load_config(config_path)
    spark = get_or_create_session(app_name="demo-relay")
    ledger, _ = actions.load_fresh(actions.relay_for(spark, config, source=str(config_path)), now=_now())
    return not not_done(ledger)


def _now() -> datetime:
    return datetime.now(UTC)


def tables_equal(spark: SparkSession, config: Config, mariadb: LocalMariaDB) -> bool:
    equal = True
    for table in TABLES:
        source = {r[0]: r for r in mariadb.execute(f"SELECT id, name, amount FROM {DATABASE}.{table}")}
        df = read_table(spark, config.table(table).base_path)
        landed = {} if df is None else {r["id"]: (r["id"], r["name"], r["amount"]) for r in df.collect()}
        equal = equal and source == landed
    return equal


def main() -> None:
    configure("WARNING")
    root = build_dir() / "run" / "demo-relay"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    with LocalMariaDB() as mariadb, LocalKafka() as kafka, LocalConnect(kafka.bootstrap_servers) as connect:
        os.environ[PASSWORD_VARIABLE] = mariadb.debezium_password
        mariadb.execute(f"CREATE DATABASE {DATABASE}")
        for table, rows in TABLES.items():
            mariadb.execute(f"CREATE TABLE {DATABASE}.{table} (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(12,2))")
            mariadb.execute(
                f"INSERT INTO {DATABASE}.{table} VALUES " + ", ".join(f"({i}, '{table} {i}', {i}.50)" for i in range(1, rows + 1))
            )
        config_path = write_config(root, mariadb, kafka, connect)
        config = load_config(config_path)
        spark = get_or_create_session(app_name="demo-relay")

        def job() -> bool:
            """One scheduled (`--once`) run of the ingestion job."""
            stream.run(spark, config, once=True)
            return True

        hudi_cdc("snapshot", "start", "--config", str(config_path))
        wait_for(
            "customers' snapshot",
            lambda: scan_topic(config.kafka, f"{PREFIX}.{DATABASE}.customers", start={}).marker is not None,
            interval=0.2,
        )
        connect.delete_connector(f"{NAME}-snapshot-1")
        print("\n(the first snapshot run is killed: its connector is deleted in the middle of `orders`)")
        change_something(mariadb, 1)
        job()
        hudi_cdc("snapshot", "status", "--config", str(config_path))
        code = hudi_cdc("snapshot", "finish", "--config", str(config_path))
        print(f"(exit {code})")
        change_something(mariadb, 2)
        hudi_cdc("snapshot", "resume", "--config", str(config_path))
        wait_for("the relayed snapshot", lambda: job() and all_done(config_path))
        hudi_cdc("snapshot", "status", "--config", str(config_path))
        hudi_cdc("snapshot", "finish", "--config", str(config_path))
        change_something(mariadb, 3)
        wait_for("every table to equal its source", lambda: job() and tables_equal(spark, config, mariadb))
        print("\nevery Hudi table equals its MariaDB table, row for row:")
        for table in TABLES:
            print(f"  {table}: {mariadb.execute(f'SELECT COUNT(*) FROM {DATABASE}.{table}')[0][0]} rows")
        print(json.dumps({"ledger": str(root / "warehouse" / "_hudi_cdc" / "snapshots" / NAME)}))
        spark.stop()


if __name__ == "__main__":
    main()
