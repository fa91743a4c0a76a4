"""Kafka topic -> table: exact topics, whole-name patterns, first match wins, NULL when unrouted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hudi_cdc.config.models import Config, load_config, parse_config
from hudi_cdc.kafka.routing import TABLE_COLUMN, route


def _config(routes: list[dict[str, str]]) -> Config:
    return parse_config(
        {
            "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
            "job": {"checkpoint_dir": "/tmp/cp", "dead_letter_path": "/tmp/dl"},
            "routes": routes,
            "tables": [
                {"name": "customers", "key": ["id"], "base_path": "/tmp/c"},
                {"name": "orders", "key": ["id"], "base_path": "/tmp/o", "type": "MERGE_ON_READ"},
            ],
        }
    )


def _tables(spark: SparkSession, config: Config, topics: list[str]) -> dict[str, Any]:
    raw = spark.createDataFrame([(t, i) for i, t in enumerate(topics)], "topic string, offset long")
    return {row["topic"]: row[TABLE_COLUMN] for row in route(raw, config).collect()}


ROUTES = [{"topic": "srv.db.customers", "table": "customers"}, {"pattern": r"srv\.db\.orders_\d+", "table": "orders"}]


def test_exact_topics_and_patterns_route_to_their_tables(spark: SparkSession) -> None:
    tables = _tables(spark, _config(ROUTES), ["srv.db.customers", "srv.db.orders_7", "srv.db.orders_x"])

    assert tables == {"srv.db.customers": "customers", "srv.db.orders_7": "orders", "srv.db.orders_x": None}


def test_a_pattern_matches_the_whole_name_and_an_exact_topic_is_not_a_regex(spark: SparkSession) -> None:
    tables = _tables(spark, _config(ROUTES), ["xsrv.db.orders_1", "srv.db.orders_1x", "srvXdbXcustomers"])

    assert tables == {"xsrv.db.orders_1": None, "srv.db.orders_1x": None, "srvXdbXcustomers": None}


def test_the_first_matching_route_wins(spark: SparkSession) -> None:
    routes = [{"topic": "srv.db.orders_1", "table": "customers"}, {"pattern": r"srv\.db\.orders_\d+", "table": "orders"}]

    tables = _tables(spark, _config(routes), ["srv.db.orders_1", "srv.db.orders_2"])

    assert tables == {"srv.db.orders_1": "customers", "srv.db.orders_2": "orders"}


def test_demo_config_routes_its_sharded_orders_topics(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUDI_CDC_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv("HUDI_CDC_RUN", "/tmp/run")
    monkeypatch.setenv("HUDI_CDC_METASTORE", "thrift://127.0.0.1:1")
    config = load_config(Path(__file__).parents[3] / "schemas" / "demo.yaml")

    assert _tables(spark, config, ["shop.inventory.orders_2"]) == {"shop.inventory.orders_2": "orders"}


def test_templates_name_tables_from_the_topic_and_routes_win(spark: SparkSession) -> None:
    from hudi_cdc.kafka.routing import unrouted_reason

    config = parse_config(
        {
            "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
            "job": {"checkpoint_dir": "/tmp/cp", "dead_letter_path": "/tmp/dl"},
            "tables": [{"name": "customers", "key": ["id"], "base_path": "/tmp/c"}],
            "routes": [{"pattern": r"srv\.db\.customers(_\d+)?", "table": "customers"}],
            "templates": [
                {"pattern": r"srv\.(?<db>[a-z]+)\.(?<table>[a-z_0-9]+)", "name": "{db}_{table}", "base_path": "/lake/{name}"},
                {"pattern": r"srv\.billing\.(?<table>[a-z]+)", "base_path": "/billing/{name}"},
            ],
        }
    )
    topics = ["srv.db.customers", "srv.db.customers_2", "srv.db.orders", "srv.shop.line_items", "srv.billing.invoices",
              "srv.db.9lives", "other"]  # fmt: skip
    raw = spark.createDataFrame([(t, i) for i, t in enumerate(topics)], "topic string, offset long")
    rows = {r["topic"]: r for r in route(raw, config).withColumn("why", unrouted_reason(config)).collect()}

    assert {t: r[TABLE_COLUMN] for t, r in rows.items()} == {
        "srv.db.customers": "customers",  # the route, though the first template matches too
        "srv.db.customers_2": "customers",
        "srv.db.orders": "db_orders",
        "srv.shop.line_items": "shop_line_items",
        "srv.billing.invoices": None,  # both templates match it
        "srv.db.9lives": "db_9lives",  # starts with a letter: a valid name
        "other": None,
    }
    assert "two or more `templates`" in rows["srv.billing.invoices"]["why"]
    assert "no route maps this topic" in rows["other"]["why"]
    assert [config.table_of_topic(t) for t in topics] == [rows[t][TABLE_COLUMN] for t in topics]


def test_a_derived_name_that_is_no_table_name_is_left_unrouted_with_the_name(spark: SparkSession) -> None:
    from hudi_cdc.kafka.routing import unrouted_reason

    config = parse_config(
        {
            "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
            "job": {"checkpoint_dir": "/tmp/cp", "dead_letter_path": "/tmp/dl"},
            "templates": [{"pattern": r"srv\.db\.(?<table>.+)", "base_path": "/lake/{name}"}],
        }
    )
    raw = spark.createDataFrame([("srv.db.my-table", 0), ("srv.db.ok", 1)], "topic string, offset long")
    rows = {r["topic"]: r for r in route(raw, config).withColumn("why", unrouted_reason(config)).collect()}
    assert rows["srv.db.ok"][TABLE_COLUMN] == "ok"
    assert rows["srv.db.my-table"][TABLE_COLUMN] is None
    assert '["my-table"]' in rows["srv.db.my-table"]["why"] and "not a valid table name" in rows["srv.db.my-table"]["why"]
