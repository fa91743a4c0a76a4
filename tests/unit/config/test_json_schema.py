"""The JSON Schema of a job file accepts the shipped examples and refuses what `validate` refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from hudi_cdc.cli.console import cli
from hudi_cdc.config.json_schema import config_schema
from hudi_cdc.config.models import load_config, parse_config
from hudi_cdc.config.yaml_file import read_yaml
from hudi_cdc.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = [ROOT / "examples" / "production.yaml", ROOT / "schemas" / "demo.yaml"]
ENVIRONMENT = {
    "KAFKA_BOOTSTRAP": "b-1:9096", "KAFKA_USER": "shop", "KAFKA_PASSWORD": "pw", "REGISTRY_URL": "https://registry/apis/ccompat/v7",
    "REGISTRY_USER": "u", "REGISTRY_PASSWORD": "pw", "MYSQL_DEBEZIUM_PASSWORD": "pw",
    "HUDI_CDC_BOOTSTRAP": "localhost:9092", "HUDI_CDC_RUN": "/tmp/hudi-cdc-run", "HUDI_CDC_METASTORE": "thrift://localhost:9083",
}  # fmt: skip


def _as_text(document: Any) -> Any:
    """What an editor sees: YAML scalars as JSON (a YAML timestamp is text to a schema)."""
    return json.loads(json.dumps(document, default=str))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_shipped_examples_pass_the_schema_and_validate(path: Path) -> None:
    jsonschema.validate(_as_text(read_yaml(path.read_text())), config_schema())  # ${VAR}s unfilled, as in an editor
    load_config(path, environ=ENVIRONMENT)


BASE: dict[str, Any] = {
    "kafka": {"bootstrap_servers": "k:9092"},
    "job": {"checkpoint_dir": "/w/cp", "dead_letter_path": "/w/dl"},
    "routes": [{"topic": "t", "table": "t"}],
    "tables": [{"name": "t", "key": ["id"], "base_path": "/w/t"}],
}


@pytest.mark.parametrize(
    "change",
    [
        {"job": {**BASE["job"], "trigger_interval": 30}},  # a duration without its unit
        {"job": {**BASE["job"], "trigger_interval": "10s"}},
        {"job": {**BASE["job"], "nmae": "typo"}},  # an unknown key
        {"tables": [{**BASE["tables"][0], "type": "MOR"}]},
        {"tables": [{**BASE["tables"][0], "key": []}]},
        {"kafka": {"bootstrap_servers": "k:9092", "max_offsets_per_trigger": 0}},
        {"job": {**BASE["job"], "metrics_port": "${NOT A REFERENCE"}},
    ],
)
def test_what_validate_refuses_the_schema_refuses(change: dict[str, Any]) -> None:
    document = {**BASE, **change}
    with pytest.raises(ConfigError):
        parse_config(document)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, config_schema())


def test_durations_read_as_written_and_references_stand_for_numbers() -> None:
    schema = config_schema()
    job = schema["$defs"]["JobConfig"]["properties"]
    assert job["trigger_interval"]["default"] == "30 seconds"
    assert "micro-batch" in job["trigger_interval"]["description"]  # the field's docstring
    document = {**BASE, "job": {**BASE["job"], "trigger_interval": "2 Minutes", "metrics_port": "${METRICS_PORT:-9464}"}}
    jsonschema.validate(document, schema)
    parse_config({**document, "job": {**document["job"], "metrics_port": "9464"}})


def test_the_cli_prints_the_schema() -> None:
    printed = CliRunner().invoke(cli, ["schema"])
    assert printed.exit_code == 0 and json.loads(printed.stdout) == config_schema()
