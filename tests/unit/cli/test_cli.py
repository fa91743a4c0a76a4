"""The CLI: every command has --help; a bad config exits 2 with the field named, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli.console import cli

COMMANDS = [
    "run",
    "validate",
    "status",
    "compact",
    "replay-dead-letters",
    "resume-binlog",
    "dead-letters list",
    "dead-letters show",
    "dead-letters replay",
    "dead-letters purge",
    "watermark",
    "retry-table",
    "rebuild-metadata",
    "relayout",
    "snapshot start",
    "snapshot status",
    "snapshot resume",
    "snapshot finish",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str) -> None:
    result = CliRunner().invoke(cli, [*command.split(), "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output


def test_bad_config_exits_2_naming_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "kafka: {bootstrap_servers: b:9092}\njob: {checkpoint_dir: /c, dead_letter_path: /d}\n"
        "routes: [{topic: t, table: a}]\ntables: [{name: a, key: [id], base_path: /a, type: MOR}]\n"
    )
    result = CliRunner().invoke(cli, ["validate", "--config", str(path)])
    assert result.exit_code == 2  # the configuration: fix it, do not retry
    assert str(path) in result.output and "tables.0.type" in result.output and "Traceback" not in result.output


def test_validate_lists_tables(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "kafka: {bootstrap_servers: b:9092}\njob: {checkpoint_dir: /c, dead_letter_path: /d}\n"
        "routes: [{topic: t, table: a}]\ntables: [{name: a, key: [id], base_path: /a}]\n"
    )
    result = CliRunner().invoke(cli, ["validate", "--config", str(path)])
    assert result.exit_code == 0 and "COPY_ON_WRITE" in result.output


def test_unset_variable_fails_validate_without_leaking_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HUDI_CDC_TEST_UNSET", raising=False)
    monkeypatch.setenv("HUDI_CDC_TEST_PW", "p'a\"s: #s\nw")
    path = tmp_path / "job.yaml"
    path.write_text(
        "kafka: {bootstrap_servers: '${HUDI_CDC_TEST_UNSET}', properties: {sasl.jaas.config: '${HUDI_CDC_TEST_PW}'}}\n"
        "job: {checkpoint_dir: /c, dead_letter_path: /d, trigger_interval: '${HUDI_CDC_TEST_PW}'}\n"
        "routes: [{topic: t, table: a}]\ntables: [{name: a, key: [id], base_path: /a}]\n"
    )
    result = CliRunner().invoke(cli, ["validate", "--config", str(path)])
    assert result.exit_code == 2 and "HUDI_CDC_TEST_UNSET is not set" in result.output
    monkeypatch.setenv("HUDI_CDC_TEST_UNSET", "b:9092")
    result = CliRunner().invoke(cli, ["validate", "--config", str(path)])
    assert result.exit_code == 2 and "job.trigger_interval: ${HUDI_CDC_TEST_PW} is not a duration" in result.output
    assert "p'a" not in result.output and "s: #s" not in result.output and "Traceback" not in result.output


def test_exit_codes_tell_a_supervisor_what_to_do() -> None:
    from hudi_cdc.cli.exit_codes import CONFIGURATION, FAILED, RETRY, exit_code
    from hudi_cdc.errors import (
        ConfigError,
        KafkaUnreachableError,
        KeyColumnsMissing,
        TableFailure,
        TablesParked,
    )

    assert exit_code(ConfigError("job.yaml", ["x"])) == CONFIGURATION == 2
    assert exit_code(TablesParked({"t": "table t: batch 1 (...) could not be written"})) == RETRY == 75
    assert exit_code(TableFailure("t", batch_id=1, positions="t[0]@1..2", reason="r", error="e")) == RETRY
    assert exit_code(KafkaUnreachableError("k:9092", timeout="30 seconds", reason="down")) == RETRY
    assert exit_code(KeyColumnsMissing("t", missing=["k"], carried=["id"], positions="t[0]@1")) == FAILED == 1
