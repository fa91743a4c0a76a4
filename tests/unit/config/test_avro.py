"""The Avro settings of the configuration: per-table format, key format, the registry and its secrets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.config.models import load_config, parse_config
from hudi_cdc.errors import ConfigError


def _doc(tmp_path: Path, table: dict[str, Any], registry: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "kafka": {"bootstrap_servers": "localhost:9092"},
        "job": {"checkpoint_dir": str(tmp_path / "cp"), "dead_letter_path": str(tmp_path / "dl")},
        "tables": [{"name": "t", "key": ["id"], "base_path": str(tmp_path / "t"), **table}],
        "routes": [{"topic": "a.b.t", "table": "t"}],
    }
    if registry is not None:
        doc["schema_registry"] = registry
    return doc


@pytest.mark.parametrize("table", [{"format": "avro"}, {"format": "auto"}, {"key_format": "avro"}], ids=["avro", "auto", "avro-key"])
def test_avro_tables_need_a_registry(tmp_path: Path, table: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="no `schema_registry`"):
        parse_config(_doc(tmp_path, table))


def test_json_is_the_default_and_needs_no_registry(tmp_path: Path) -> None:
    config = parse_config(_doc(tmp_path, {}))
    assert config.tables[0].format == "json" and config.tables[0].key_format is None


def test_patch_tables_stay_json(tmp_path: Path) -> None:
    table = {"format": "avro", "mode": "patch", "columns": {"id": "int"}, "ordering": "ts"}
    with pytest.raises(ConfigError, match="patch tables read JSON only"):
        parse_config(_doc(tmp_path, table, {"url": "http://r:8080/apis/ccompat/v7"}))


def test_registry_credentials_come_from_the_environment_and_stay_hidden(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        f"""
kafka: {{bootstrap_servers: "localhost:9092"}}
job: {{checkpoint_dir: "{tmp_path / 'cp'}", dead_letter_path: "{tmp_path / 'dl'}"}}
schema_registry:
  url: http://registry:8080/apis/ccompat/v7
  username: ${{REGISTRY_USER}}
  password: ${{REGISTRY_PASSWORD}}
  retry_budget: 2 minutes
tables: [{{name: t, key: [id], base_path: "{tmp_path / 't'}", format: avro}}]
routes: [{{topic: a.b.t, table: t}}]
"""
    )
    config = load_config(path, environ={"REGISTRY_USER": "ingest", "REGISTRY_PASSWORD": "s3cret"})
    registry = config.schema_registry
    assert registry is not None and (registry.username, registry.password) == ("ingest", "s3cret")
    assert registry.retry_budget.total_seconds() == 120
    assert "s3cret" not in repr(config)
