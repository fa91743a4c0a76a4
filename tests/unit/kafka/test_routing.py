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
