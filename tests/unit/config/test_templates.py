"""Table templates: the names, paths and settings they derive, and the configurations they refuse."""

from __future__ import annotations

from typing import Any

import pytest

from hudi_cdc.config.models import Config, parse_config
from hudi_cdc.config.route_regex import python_dialect, without_names
from hudi_cdc.errors import ConfigError

PATTERN = r"shop\.inventory\.(?<table>[a-z_]+)"


def _config(templates: list[dict[str, Any]], **extra: Any) -> Config:
    document = {
        "kafka": {"bootstrap_servers": "localhost:1"},
        "job": {"checkpoint_dir": "/w/cp", "dead_letter_path": "/w/dl"},
        "templates": templates,
        **extra,
    }
    return parse_config(document, source="job.yaml")


def _template(**fields: Any) -> dict[str, Any]:
    return {"pattern": PATTERN, "base_path": "/lake/{name}", **fields}


def test_a_template_derives_each_tables_name_path_settings_and_overrides() -> None:
    config = _config([_template(
        name="inv_{table}",
        settings={"type": "MERGE_ON_READ", "deletes": "soft", "hive": {"database": "inventory"}},
        overrides={"inv_orders": {"key": ["order_id"], "type": "COPY_ON_WRITE", "hive": {"database": "inventory", "table": "o"}}},
    )])  # fmt: skip
    [(template, name, groups)] = config.template_claims("shop.inventory.orders")
    assert (name, groups) == ("inv_orders", {"table": "orders"})
    orders = template.table(name, groups=groups)
    assert (orders.key, orders.type, orders.deletes, orders.base_path) == (["order_id"], "COPY_ON_WRITE", "soft", "/lake/inv_orders")
    assert (orders.hive.database, orders.hive_table) == ("inventory", "o")
    items = template.table("inv_items", key=["id"], groups={"table": "items"})
    assert (items.type, items.hive_table, items.base_path) == ("MERGE_ON_READ", "inv_items", "/lake/inv_items")
    assert config.table_of_topic("shop.inventory.orders") == "inv_orders"
    assert config.template_claims("shop.billing.orders") == [] and config.table_of_topic("shop.billing.orders") is None


def test_the_subscription_covers_routes_and_templates_without_repeating_a_group_name() -> None:
    config = _config([_template(), _template(pattern=r"shop\.billing\.(?<table>[a-z_]+)", base_path="/billing/{name}")])
    # Java refuses a group name defined twice in one pattern: the subscription drops the names
    assert "(?<" not in config.topic_pattern() and "shop\\.billing\\.(?:[a-z_]+)" in config.topic_pattern()


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        pytest.param(_template(name="{tbl}"), "`name` uses ['tbl']", id="unknown-group"),
        pytest.param(_template(base_path="/lake/{db}"), "`base_path` uses ['db']", id="unknown-path-group"),
        pytest.param(_template(base_path="/lake/all"), "no placeholder", id="one-folder-for-all"),
        pytest.param(_template(settings={"key": ["id"]}), "may not set ['key']", id="derived-in-settings"),
        pytest.param(_template(settings={"hive": {"table": "t"}}), "one metastore name", id="one-hive-name"),
        pytest.param(_template(settings={"type": "MOR"}), "type", id="bad-setting"),
        pytest.param(_template(overrides={"orders": {"deletes": "never"}}), "deletes", id="bad-override"),
        pytest.param(_template(overrides={"orders": {"name": "x"}}), "may not rename", id="rename"),
        pytest.param(_template(pattern=r"(?P<table>\w+)"), "Python-only named group", id="python-group"),
    ],
)
def test_a_bad_template_is_refused_with_its_field(template: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _config([template])
    assert problem in str(caught.value) and "templates.0" in str(caught.value)


def test_a_route_and_a_template_claiming_one_topic_are_refused() -> None:
    with pytest.raises(ConfigError, match="claimed by a route and by the template"):
        _config(
            [_template()],
            tables=[{"name": "orders", "key": ["id"], "base_path": "/lake/x"}],
            routes=[{"topic": "shop.inventory.orders", "table": "orders"}],
        )


def test_topic_problems_name_every_topic_that_has_no_single_table() -> None:
    config = _config(
        [_template(), _template(pattern=r"shop\.(?<table>[a-z.]+)", base_path="/all/{name}")],
        tables=[{"name": "audit", "key": ["id"], "base_path": "/lake/audit"}],
        routes=[{"pattern": r"shop\.audit_\d+", "table": "audit"}],
    )
    assert "matched by the templates" in config.topic_problems("shop.inventory.orders")[0]
    assert config.table_of_topic("shop.inventory.orders") is None  # ambiguous: no table
    assert "not a valid table name" in config.topic_problems("shop.a.b")[0]
    assert config.topic_problems("shop.audit_1") == []  # the route's alone (the template's [a-z.] stops at _)
    assert config.topic_problems("other") == []


def test_a_configuration_needs_a_table_or_a_template() -> None:
    with pytest.raises(ConfigError, match="no `tables` and no `templates`"):
        _config([])


@pytest.mark.parametrize(
    ("java", "python", "unnamed"),
    [
        (r"a\.(?<t>[a-z]+)", r"a\.(?P<t>[a-z]+)", r"a\.(?:[a-z]+)"),
        (r"(?<=x)a(?<!y)", r"(?<=x)a(?<!y)", r"(?<=x)a(?<!y)"),  # lookbehinds stay
        (r"\(?<n>x", r"\(?<n>x", r"\(?<n>x"),  # an escaped parenthesis opens no group
        (r"[(?<n>]", r"[(?<n>]", r"[(?<n>]"),  # nor one in a class
    ],
)
def test_named_groups_in_java_spelling_read_alike_in_python(java: str, python: str, unnamed: str) -> None:
    assert (python_dialect(java), without_names(java)) == (python, unnamed)
