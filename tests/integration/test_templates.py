"""A whole database from one template: tables made as their topics appear, with no restart, read by Trino.

One continuous job (the CLI, its own process) with a template and no declared table. Two topics
exist at start; a third is created while the job runs. Each becomes a Hudi table (the template's
settings, one override), registered in the metastore, and Trino reads every row exactly as the
source holds it, the late table included. The job never restarts.
"""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from pyspark.sql import SparkSession

from devkit.debezium import Column, DebeziumTable
from devkit.services.hms import LocalMetastore
from devkit.services.kafka import LocalKafka
from devkit.services.trino import LocalTrino
from hudi_cdc.cli.console import cli
from hudi_cdc.job.catalog import catalog_path
from tests.support.harness import Job, continuous, wait_for

pytestmark = pytest.mark.integration

ACCOUNTS = [Column("id", "int64", optional=False), Column("owner", "string"), Column("balance", "decimal", scale=2)]
ITEMS = [Column("wh", "int32", optional=False), Column("sku", "string", optional=False), Column("qty", "int32")]


def _table(job: Job, name: str, columns: list[Column], key: list[str]) -> DebeziumTable:
    return DebeziumTable(server=f"srv{job.suffix}", database="db", table=name, columns=columns, key=key)


def test_a_template_makes_tables_for_topics_created_while_the_job_runs(
    spark: SparkSession, kafka: LocalKafka, metastore: LocalMetastore, trino: LocalTrino, tmp_path: Path
) -> None:
    job = Job(spark, kafka, tmp_path, [], metastore_uris=metastore.uri)
    job.templates = [{
        "pattern": f"srv{job.suffix}" + r"\.db\.(?<table>[a-z_]+)",
        "base_path": str(tmp_path / "warehouse" / "{name}"),
        "settings": {"hive": {"database": job.database}},
        "overrides": {"orders": {"type": "MERGE_ON_READ"}},
    }]  # fmt: skip
    accounts, orders = _table(job, "accounts", ACCOUNTS, ["id"]), _table(job, "orders", ACCOUNTS, ["id"])
    job.produce("accounts", [accounts.change("c", after={"id": i, "owner": f"o{i}", "balance": Decimal(f"{i}.25")}, pos=100 + i) for i in range(1, 4)])
    job.produce("orders", [orders.change("c", after={"id": 7, "owner": "x", "balance": Decimal("7.00")}, pos=200)])
    db = job.database

    with continuous(job) as running:
        wait_for("Trino to read accounts and orders", lambda: (
            trino.query(f"select count(*) from {db}.accounts") == [(3,)] and trino.query(f"select count(*) from {db}.orders_ro") == [(1,)]
        ) if _tables(trino, db) >= {"accounts", "orders_ro", "orders_rt"} else False, timeout=300, interval=2)  # fmt: skip

        # a table created at the source while the job runs: a new topic, a composite key
        items = _table(job, "stock_items", ITEMS, ["wh", "sku"])
        job.produce("stock_items", [
            items.change("c", after={"sku": "a", "wh": 1, "qty": 5}, pos=300),
            items.change("c", after={"sku": "a", "wh": 2, "qty": 7}, pos=301),
            items.change("u", before={"sku": "a", "wh": 1, "qty": 5}, after={"sku": "a", "wh": 1, "qty": 6}, pos=302),
        ])  # fmt: skip
        job.produce("accounts", [accounts.change("u", after={"id": 2, "owner": "o2", "balance": Decimal("99.99")}, pos=400)])
        wait_for("Trino to read the new table", lambda: "stock_items" in _tables(trino, db), timeout=300, interval=2)
        wait_for("the new table's rows", lambda: set(trino.query(f"select wh, sku, qty from {db}.stock_items")) == {(1, "a", 6), (2, "a", 7)},
                 timeout=120, interval=2)  # fmt: skip
        wait_for("the update of a table made earlier", lambda: trino.query(f"select balance from {db}.accounts where id = 2") == [(Decimal("99.99"),)],
                 timeout=120, interval=2)  # fmt: skip
        assert running.process.poll() is None, running.output()
        # a batch publishes its metrics after all its tables committed and synced, so Trino may see rows first
        running.wait_read("stock_items", 3, seconds=120)  # its metrics exist

    assert set(trino.query(f"select id, owner, balance from {db}.accounts")) == {
        (1, "o1", Decimal("1.25")), (2, "o2", Decimal("99.99")), (3, "o3", Decimal("3.25"))}  # fmt: skip
    assert trino.query(f"select id, balance from {db}.orders_rt") == [(7, Decimal("7.00"))]
    made = json.loads(Path(catalog_path(job.config.job.checkpoint_dir)).read_text())
    assert {m["name"]: m["key"] for m in made} == {"accounts": ["id"], "orders": ["id"], "stock_items": ["wh", "sku"]}
    assert not (tmp_path / "dead_letter").exists()  # nothing was dead-lettered

    status = CliRunner().invoke(cli, ["status", "--config", str(tmp_path / "job.yaml"), "--json"], catch_exceptions=False)
    assert status.exit_code == 0, status.output
    listed = {row["table"]: row for row in json.loads(status.stdout.strip().splitlines()[-1])["rows"]}
    assert set(listed) == {"accounts", "orders", "stock_items"}


def _tables(trino: LocalTrino, database: str) -> set[str]:
    return {row[0] for row in trino.query(f"show tables from {database}")} if (database,) in trino.query("show schemas") else set()


def test_validate_with_kafka_shows_each_topics_table_and_refuses_a_topic_two_templates_claim(
    kafka: LocalKafka, tmp_path: Path
) -> None:
    prefix = f"val{uuid.uuid4().hex[:8]}"
    kafka.create_topics([f"{prefix}.db.orders", f"{prefix}.db.line_items", f"{prefix}.audit.log"])
    document = {
        "kafka": {"bootstrap_servers": kafka.bootstrap_servers},
        "job": {"checkpoint_dir": str(tmp_path / "cp"), "dead_letter_path": str(tmp_path / "dl")},
        "templates": [{"pattern": prefix + r"\.db\.(?<table>[a-z_]+)", "base_path": str(tmp_path / "{name}"),
                       "overrides": {"orders": {"key": ["order_id"], "type": "MERGE_ON_READ"}}}],
    }  # fmt: skip
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(document))
    shown = CliRunner().invoke(cli, ["validate", "--config", str(path), "--kafka"], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert any(f"topic {prefix}.db.orders" in line and "MERGE_ON_READ" in line and "order_id" in line for line in lines), shown.stdout
    assert any(f"topic {prefix}.db.line_items" in line and "(Kafka key)" in line for line in lines), shown.stdout
    assert not any("audit" in line for line in lines)

    document["templates"].append({"pattern": prefix + r"\.(?<db>[a-z]+)\.(?<table>[a-z]+)", "name": "{db}_{table}",
                                  "base_path": str(tmp_path / "x" / "{name}")})  # fmt: skip
    path.write_text(yaml.safe_dump(document))
    refused = CliRunner().invoke(cli, ["validate", "--config", str(path), "--kafka"], catch_exceptions=False)
    assert refused.exit_code == 2
    assert f"topic '{prefix}.db.orders' is matched by the templates" in refused.stderr
    assert "line_items" not in refused.stderr  # [a-z]+ stops at `_`: one template claims it
