"""A bad configuration fails at start, naming the file, the field and what is allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.config import load_config, parse_config
from hudi_cdc.errors import ConfigError


def _valid() -> dict[str, Any]:
    return {
        "kafka": {"bootstrap_servers": "127.0.0.1:9092", "properties": {"sasl.jaas.config": "secret!", "acks": "all"}},
        "job": {"checkpoint_dir": "/tmp/cp", "dead_letter_path": "/tmp/dl"},
        "routes": [{"topic": "srv.db.customers", "table": "customers"}, {"pattern": r"srv\.db\.orders_\d+", "table": "orders"}],
        "tables": [
            {"name": "customers", "key": ["id"], "base_path": "/tmp/c"},
            {"name": "orders", "key": ["id"], "base_path": "/tmp/o", "type": "MERGE_ON_READ"},
        ],
    }


def test_valid_config_keeps_exact_topics_and_patterns() -> None:
    # which table a topic feeds is tested in test_routing.py (the routing the job runs)
    config = parse_config(_valid())
    assert [(r.topic, r.pattern, r.table) for r in config.routes] == [
        ("srv.db.customers", None, "customers"),
        (None, r"srv\.db\.orders_\d+", "orders"),
    ]


def test_secrets_are_redacted_and_not_in_repr() -> None:
    kafka = parse_config(_valid()).kafka
    assert kafka.redacted_properties() == {"sasl.jaas.config": "***", "acks": "all"}
    assert "secret!" not in repr(kafka)


@pytest.mark.parametrize(
    ("change", "field", "allowed"),
    [
        pytest.param(lambda c: c["tables"][0].update(type="MOR"), "tables.0.type", "COPY_ON_WRITE", id="bad-table-type"),
        pytest.param(lambda c: c["tables"][0].update(key=[]), "tables.0.key", "at least 1", id="empty-key"),
        pytest.param(lambda c: c["routes"].append({"topic": "x", "table": "nope"}), "<root>", "unknown tables", id="route-to-unknown"),
        pytest.param(lambda c: c["tables"][0].update(deletes="sometimes"), "tables.0.deletes", "'hard' or 'soft'", id="bad-deletes"),
        pytest.param(lambda c: c["kafka"].pop("bootstrap_servers"), "kafka.bootstrap_servers", "Field required", id="missing-bootstrap"),
        pytest.param(lambda c: c["routes"].append({"pattern": "(", "table": "orders"}), "routes.2", "not a valid regex", id="bad-regex"),
        pytest.param(lambda c: c["tables"][0].update(mode="patch"), "tables.0", "need `columns`", id="patch-without-columns"),
    ],
)
def test_bad_config_names_field_and_allowed_values(change: Any, field: str, allowed: str) -> None:
    data = _valid()
    change(data)
    with pytest.raises(ConfigError) as err:
        parse_config(data, source="job.yaml")
    message = str(err.value)
    assert "job.yaml" in message and field in message and allowed in message


def test_environment_references_are_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROKERS", "kafka-1:9093")
    path = tmp_path / "job.yaml"
    path.write_text(
        "kafka: {bootstrap_servers: '${BROKERS}'}\njob: {checkpoint_dir: /c, dead_letter_path: /d}\n"
        "routes: [{topic: t, table: a}]\ntables: [{name: a, key: [id], base_path: /a}]\n"
    )
    assert load_config(path).kafka.bootstrap_servers == "kafka-1:9093"


def test_missing_file_and_bad_yaml_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("kafka: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_demo_config_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUDI_CDC_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv("HUDI_CDC_RUN", "/tmp/run")
    config = load_config(Path(__file__).parents[2] / "schemas" / "demo.yaml")
    assert [t.name for t in config.tables] == ["customers", "orders"]  # routing: test_routing.py
