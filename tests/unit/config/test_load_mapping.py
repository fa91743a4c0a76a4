"""load_config from a mapping (the Python API's form): the same substitution, checks and masking as a file."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from hudi_cdc.config.models import load_config
from hudi_cdc.errors import ConfigError


def _job(tmp_path: Path) -> dict[str, Any]:
    return {
        "kafka": {"bootstrap_servers": "${KAFKA_BOOTSTRAP:-localhost:9092}", "properties": {"sasl.jaas.config": "${PW}"}},
        "job": {"checkpoint_dir": "${LAKE}/cp", "dead_letter_path": "${LAKE}/dl"},
        "routes": [{"topic": "srv.db.customers", "table": "customers"}],
        "tables": [{"name": "customers", "key": ("id",), "base_path": "${LAKE}/customers"}],
    }


def test_a_mapping_is_loaded_as_its_file_would_be_and_left_unchanged(tmp_path: Path) -> None:
    data = _job(tmp_path)
    # any Mapping, tuples as lists: what a caller builds in Python
    config = load_config(MappingProxyType(data), environ={"LAKE": str(tmp_path), "PW": "s3cret"})
    assert config.kafka.bootstrap_servers == "localhost:9092"
    assert config.kafka.properties["sasl.jaas.config"] == "s3cret"
    assert config.table("customers").base_path == f"{tmp_path}/customers"
    assert config.table("customers").key == ["id"]
    assert data == _job(tmp_path)  # references stay in the caller's mapping


def test_a_mappings_errors_name_the_configuration_and_never_show_a_secret(tmp_path: Path) -> None:
    data = _job(tmp_path)
    data["routes"][0]["table"] = "${PW}"  # a table name's error quotes its value
    with pytest.raises(ConfigError) as raised:
        load_config(data, environ={"LAKE": str(tmp_path), "PW": "s3cret-name"})
    assert raised.value.path == "the configuration"
    assert "s3cret-name" not in str(raised.value)
    with pytest.raises(ConfigError, match="environment variable LAKE is not set"):
        load_config(_job(tmp_path), environ={"PW": "x"})
