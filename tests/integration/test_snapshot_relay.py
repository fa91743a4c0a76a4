"""The snapshot relay on the real chain: MariaDB -> Debezium (Kafka Connect) -> Kafka -> the job -> Hudi.

Three tables, a DML workload running the whole time. `hudi-cdc snapshot start` deploys a
snapshot-only run; it is killed after its first table (connector deleted; the job only runs
in `--once` steps, so it is "killed" between them); `finish` is refused while tables are not
done; `resume` relays the rest from a later position; `finish` starts the binlog from the
FIRST position. Every Hudi table must then equal its source table row for row (exact decimals
and timestamps, no duplicate key), although the binlog replays changes both snapshots hold.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from pyspark.sql import SparkSession

from devkit.services.connect import LocalConnect, mariadb_connector_config
from devkit.services.kafka import LocalKafka
from devkit.services.mariadb import LocalMariaDB
from hudi_cdc.cli.console import cli
from hudi_cdc.cli.snapshot import EXIT_REFUSED
from hudi_cdc.config.connector import RELAY_OWNED_KEYS
from hudi_cdc.hudi.table import table_exists
from hudi_cdc.relay.markers import scan_topic
from tests.support.harness import Job, wait_for

pytestmark = pytest.mark.integration

TABLES = {"a_accounts": 40, "b_orders": 1500, "c_items": 300}
"""Table -> seed rows; Debezium snapshots them in this (alphabetical) order."""
DDL = """CREATE TABLE {t} (
  id INT PRIMARY KEY,
  name VARCHAR(40) NOT NULL,
  amount DECIMAL(14,4),
  seen DATETIME(6)
)"""
COLUMNS = ["id", "name", "amount", "seen"]
# b_orders and c_items are read slowly (a SLEEP per row in their snapshot SELECT), so the run can
# be killed after a_accounts and before b_orders completes. Debezium marks a table's last record
# only when it reads the next table's first row (the driver returns a query's rows at its end),
# so c_items must be slow too, or b_orders' marker follows a_accounts' within milliseconds.
SLOW_SELECT = "SELECT * FROM {t} WHERE SLEEP({s}) = 0"


def _after_a_run(job: Job, landed: Callable[[], bool]) -> Callable[[], bool]:
    """A wait_for probe: run the job once over what Kafka holds, then ask whether `landed`."""

    def probe() -> bool:
        job.run()
        return landed()

    return probe


def _wait_for_changes(workload: Workload, count: int) -> None:
    """Wait until the workload has changed the source `count` more times (not for a span of time)."""
    start = workload.statements
    wait_for(f"{count} more source changes", lambda: workload.statements >= start + count, interval=0.1, timeout=120)


class Workload(threading.Thread):
    """Random inserts, updates and deletes on every table, on its own connection, until stopped."""

    def __init__(self, mariadb: LocalMariaDB, database: str) -> None:
        super().__init__(daemon=True)
        self.conn = mariadb.connect_root()
        self.database = database
        self.halt = threading.Event()
        self.statements = 0
        self.next_id = 100_000
        self.error: BaseException | None = None
        self.rng = random.Random(12)

    def run(self) -> None:
        try:
            while not self.halt.is_set():
                self.step()
                time.sleep(0.02)
        except BaseException as exc:  # surfaced by the test, never swallowed
            self.error = exc

    def step(self) -> None:
        table = f"{self.database}.{self.rng.choice(list(TABLES))}"
        kind = self.rng.random()
        with self.conn.cursor() as cur:
            if kind < 0.4:
                self.next_id += 1
                cur.execute(
                    f"INSERT INTO {table} VALUES (%s, %s, %s, NOW(6))",
                    (self.next_id, f"new{self.next_id}", Decimal(self.rng.randint(-10**8, 10**8)) / 10**4),
                )
            elif kind < 0.85:
                cur.execute(
                    f"UPDATE {table} SET amount = amount + %s, name = CONCAT(LEFT(name, 30), 'u'), seen = NOW(6) "
                    f"WHERE id IN (SELECT id FROM (SELECT id FROM {table} ORDER BY RAND() LIMIT 2) x)",
                    (Decimal("0.0001") * self.rng.randint(1, 999),),
                )
            else:
                cur.execute(f"DELETE FROM {table} ORDER BY RAND() LIMIT 1")
        self.statements += 1

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=30)
        self.conn.close()
        if self.error is not None:
            raise self.error


def _invoke(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    # shown with `pytest -s` (docs/snapshot-relay.md's walkthrough output comes from here) and on failure
    print(f"$ hudi-cdc {' '.join(args)}  # exit {result.exit_code}\n{result.stdout}{result.stderr}")
    return result


def _status(config_path: Path) -> dict[str, Any]:
    result = _invoke("snapshot", "status", "--config", str(config_path), "--json")
    assert result.exit_code == 0, result.output
    envelope: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    assert (envelope["format"], envelope["command"]) == (1, "snapshot status"), envelope
    # the relay's facts and its tables, as one document
    return {**envelope["details"], "tables": envelope["rows"]}


def test_relayed_snapshot_then_binlog_from_first_position_equals_the_source(
    spark: SparkSession, kafka: LocalKafka, mariadb: LocalMariaDB, connect: LocalConnect, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    database, prefix, name = f"relay_{suffix}", f"rl{suffix}", f"relay-{suffix}"
    mariadb.execute(f"CREATE DATABASE {database}")
    for table, rows in TABLES.items():
        mariadb.execute(DDL.format(t=f"{database}.{table}"))
        mariadb.execute(
            f"INSERT INTO {database}.{table} VALUES " + ", ".join(
                f"({i}, 'seed{i}', {i * 7919 % 100000}.{i % 10000:04d}, '2024-0{1 + i % 9}-1{i % 10} 0{i % 10}:{i % 60:02d}:00.{i:06d}')"
                for i in range(1, rows + 1)
            )
        )  # fmt: skip
    debezium = mariadb_connector_config(
        hostname=mariadb.host, port=mariadb.port, user=mariadb.debezium_user, password=mariadb.debezium_password,
        server_id=random.randint(10_000, 2**31 - 1), topic_prefix=prefix, database=database, tables=list(TABLES),
        bootstrap_servers=kafka.bootstrap_servers,
        extra={
            "snapshot.select.statement.overrides": f"{database}.b_orders,{database}.c_items",
            f"snapshot.select.statement.overrides.{database}.b_orders": SLOW_SELECT.format(t=f"{database}.b_orders", s=0.004),
            f"snapshot.select.statement.overrides.{database}.c_items": SLOW_SELECT.format(t=f"{database}.c_items", s=0.015),
        },
    )  # fmt: skip
    debezium = {k: v for k, v in debezium.items() if k not in RELAY_OWNED_KEYS}
    job = Job(spark, kafka, tmp_path, [{"name": t, "key": ["id"]} for t in TABLES])
    job.topic = lambda table: f"{prefix}.{database}.{table}"  # type: ignore[method-assign]
    document: dict[str, Any] = {
        "kafka": {"bootstrap_servers": kafka.bootstrap_servers},
        "job": {"name": f"relay-{suffix}", "checkpoint_dir": str(tmp_path / job.checkpoint), "dead_letter_path": str(tmp_path / "dead_letter")},
        "routes": [{"topic": job.topic(t), "table": t} for t in TABLES],
        "tables": [{"name": t, "key": ["id"], "base_path": job.path(t)} for t in TABLES],
    }
    document["connector"] = {
        "connect_url": connect.url,
        "name": name,
        "tables": [f"{database}.{t}" for t in TABLES],
        "config": {**debezium, "database.password": "${RELAY_TEST_DB_PASSWORD}"},
    }
    config_path = tmp_path / "job.yaml"
    config_path.write_text(yaml.safe_dump(document))
    monkey = pytest.MonkeyPatch()
    monkey.setenv("RELAY_TEST_DB_PASSWORD", mariadb.debezium_password)
    workload = Workload(mariadb, database)
    workload.start()
    try:
        # 1. first run: every table; killed once a_accounts is complete in Kafka
        started = _invoke("snapshot", "start", "--config", str(config_path))
        assert started.exit_code == 0, started.output
        first = _status(config_path)["first_position"]
        scans: dict[str, Any] = {}

        def accounts_read() -> bool:
            scans["a"] = scan_topic(job.config.kafka, job.topic("a_accounts"), start={})
            return scans["a"].marker is not None

        wait_for("a_accounts' last snapshot record", accounts_read, interval=0.2)
        connect.delete_connector(f"{name}-snapshot-1")  # the connector dies mid-snapshot
        orders = scan_topic(job.config.kafka, job.topic("b_orders"), start={})
        assert orders.marker is None, "b_orders finished before the kill: make its SELECT slower"

        # 2. the job lands what there is; a_accounts is done, the others are not
        wait_for("the job to land a_accounts", _after_a_run(job, lambda: table_exists(spark, job.path("a_accounts"))))
        status = _status(config_path)
        states = {t["source_table"].split(".")[1]: t["state"] for t in status["tables"]}
        assert states == {"a_accounts": "done", "b_orders": "interrupted", "c_items": "interrupted"}, status

        # 3. finish is refused, with the reason, while tables are not done
        refused = _invoke("snapshot", "finish", "--config", str(config_path))
        assert refused.exit_code == EXIT_REFUSED, refused.output
        assert "not done: " in refused.stderr and "b_orders (interrupted)" in refused.stderr
        assert name not in connect.connectors()

        # 4. the DML goes on for a while, then the rest is relayed from a later position
        _wait_for_changes(workload, 100)
        resumed = _invoke("snapshot", "resume", "--config", str(config_path))
        assert resumed.exit_code == 0, resumed.output
        status = _status(config_path)
        assert status["first_position"] == first
        assert status["runs"][1]["tables"] == [f"{database}.b_orders", f"{database}.c_items"]
        second = status["runs"][1]["position"]
        assert (second["file"], second["pos"]) > (first["file"], first["pos"])

        def all_done() -> bool:
            job.run()
            return _status(config_path)["all_done"] is True

        wait_for("the relayed snapshot to land", all_done, timeout=600)

        # 5. the binlog from the FIRST position; the workload runs on, then stops
        finished = _invoke("snapshot", "finish", "--config", str(config_path))
        assert finished.exit_code == 0, finished.output
        assert f"{first['file']}:{first['pos']}" in finished.stdout
        assert connect.status(name)["connector"]["state"] == "RUNNING"
        assert not [c for c in connect.connectors() if c.startswith(f"{name}-snapshot-")]
        _wait_for_changes(workload, 100)  # changes the binlog carries after the handover
    finally:
        workload.stop()
    assert workload.statements > 100

    expected = {
        table: {row[0]: row for row in mariadb.execute(f"SELECT {', '.join(COLUMNS)} FROM {database}.{table}")}
        for table in TABLES
    }
    landed: dict[str, dict[int, tuple[Any, ...]]] = {}

    def equal() -> bool:
        job.run()
        for table in TABLES:
            rows = job.rows_spark(table)
            landed[table] = {r["id"]: tuple(r[c] for c in COLUMNS) for r in rows}
            assert len(landed[table]) == len(rows), f"{table}: duplicate keys"
        return landed == expected

    try:
        wait_for("every Hudi table to equal its source", equal, timeout=300, interval=2)
    finally:
        for table in TABLES:
            missing = set(expected[table]) - set(landed.get(table, {}))
            extra = set(landed.get(table, {})) - set(expected[table])
            differ = [k for k in set(expected[table]) & set(landed.get(table, {})) if expected[table][k] != landed[table][k]]
            print(f"{table}: {len(expected[table])} rows, missing {sorted(missing)[:5]}, extra {sorted(extra)[:5]}, differ {differ[:5]}")
        if name in connect.connectors():
            connect.delete_connector(name)
    assert all(isinstance(r[2], Decimal) or r[2] is None for rows in landed.values() for r in rows.values())
    final = _status(config_path)
    monkey.undo()
    assert final["first_position"] == first and final["finished"]["position"] == first
    mariadb.execute(f"DROP DATABASE {database}")


# deep: why the relay starts from the first position; the relay itself is tested in `make test`
@pytest.mark.deep
def test_binlog_from_the_later_run_position_loses_changes_the_first_position_keeps(
    spark: SparkSession, kafka: LocalKafka, mariadb: LocalMariaDB, connect: LocalConnect, tmp_path: Path
) -> None:
    """What the first-position rule prevents: start the binlog at run 2's position and a_accounts misses
    the changes made between the runs; `snapshot finish` (first position) then brings them back."""
    suffix = uuid.uuid4().hex[:8]
    database, prefix, name = f"later_{suffix}", f"lt{suffix}", f"later-{suffix}"
    tables = ["a_accounts", "b_orders"]
    mariadb.execute(f"CREATE DATABASE {database}")
    for table in tables:
        mariadb.execute(DDL.format(t=f"{database}.{table}"))
        mariadb.execute(
            f"INSERT INTO {database}.{table} VALUES "
            + ", ".join(f"({i}, 'seed{i}', {i}.5000, '2024-01-01 00:00:0{i % 10}.{i:06d}')" for i in range(1, 21))
        )
    debezium = mariadb_connector_config(
        hostname=mariadb.host, port=mariadb.port, user=mariadb.debezium_user, password=mariadb.debezium_password,
        server_id=random.randint(10_000, 2**31 - 1), topic_prefix=prefix, database=database, tables=tables,
        bootstrap_servers=kafka.bootstrap_servers,
    )  # fmt: skip
    debezium = {k: v for k, v in debezium.items() if k not in RELAY_OWNED_KEYS}
    job = Job(spark, kafka, tmp_path, [{"name": t, "key": ["id"]} for t in tables])
    job.topic = lambda table: f"{prefix}.{database}.{table}"  # type: ignore[method-assign]
    config_path = tmp_path / "job.yaml"
    config_path.write_text(
        yaml.safe_dump(
            {
                "kafka": {"bootstrap_servers": kafka.bootstrap_servers},
                "job": {"name": f"later-{suffix}", "checkpoint_dir": str(tmp_path / job.checkpoint), "dead_letter_path": str(tmp_path / "dead_letter")},
                "routes": [{"topic": job.topic(t), "table": t} for t in tables],
                "tables": [{"name": t, "key": ["id"], "base_path": job.path(t)} for t in tables],
                "connector": {"connect_url": connect.url, "name": name, "tables": [f"{database}.{t}" for t in tables], "config": debezium},
            }
        )
    )  # fmt: skip

    def done(table: str) -> bool:
        job.run()
        states = {t["table"]: t["state"] for t in _status(config_path)["tables"]}
        return bool(states[table] == "done")

    def hudi(table: str) -> dict[int, tuple[Any, ...]]:
        return {r["id"]: tuple(r[c] for c in COLUMNS) for r in job.rows_spark(table)}

    def source(table: str) -> dict[int, tuple[Any, ...]]:
        return {r[0]: r for r in mariadb.execute(f"SELECT {', '.join(COLUMNS)} FROM {database}.{table}")}

    try:
        assert _invoke("snapshot", "start", "--config", str(config_path), "--table", f"{database}.a_accounts").exit_code == 0
        wait_for("a_accounts' snapshot to land", lambda: done("a_accounts"))
        # changes between the first run's position and the second's
        mariadb.execute(f"INSERT INTO {database}.a_accounts VALUES (9001, 'between', 1.2345, '2025-02-03 04:05:06.789012')")
        mariadb.execute(f"UPDATE {database}.a_accounts SET name = 'changed between', amount = 99.9999 WHERE id = 1")
        mariadb.execute(f"DELETE FROM {database}.a_accounts WHERE id = 2")
        assert _invoke("snapshot", "resume", "--config", str(config_path)).exit_code == 0
        wait_for("b_orders' snapshot to land", lambda: done("b_orders"))
        _invoke("snapshot", "status", "--config", str(config_path))
        status = _status(config_path)
        later = status["runs"][1]["position"]
        assert (later["file"], later["pos"]) > (status["first_position"]["file"], status["first_position"]["pos"])

        # the mistake: incremental capture from the LATER run's position (by hand, with resume-binlog)
        for run in status["runs"]:
            if run["connector"] in connect.connectors():
                connect.delete_connector(run["connector"])
        connector_json = tmp_path / "connector.json"
        connector_json.write_text(json.dumps({**debezium, "table.include.list": rf"{database}\.a_accounts,{database}\.b_orders", "database.include.list": database}))
        wrong = _invoke(
            "resume-binlog", "--connect-url", connect.url, "--connector", name, "--file", later["file"],
            "--pos", str(later["pos"]), "--connector-config", str(connector_json),
        )  # fmt: skip
        assert wrong.exit_code == 0, wrong.output
        mariadb.execute(f"INSERT INTO {database}.a_accounts VALUES (9002, 'after', 2.0000, '2025-03-04 05:06:07.000001')")
        wait_for("the change after the later position", _after_a_run(job, lambda: 9002 in hudi("a_accounts")))
        lost = hudi("a_accounts")
        assert 9001 not in lost and 2 in lost and lost[1][1] == "seed1", "the later position lost nothing?"
        assert lost != source("a_accounts")

        # the rule: `finish` moves the same connector to the FIRST position, and the changes come back
        finished = _invoke("snapshot", "finish", "--config", str(config_path))
        assert finished.exit_code == 0, finished.output
        wait_for(
            "a_accounts to equal its source",
            _after_a_run(job, lambda: hudi("a_accounts") == source("a_accounts") and hudi("b_orders") == source("b_orders")),
            timeout=180,
        )
        assert hudi("a_accounts")[1][1:3] == ("changed between", Decimal("99.9999"))
    finally:
        if name in connect.connectors():
            connect.delete_connector(name)
    mariadb.execute(f"DROP DATABASE {database}")
