"""The CLI: every command has --help; a bad config exits 1 with the field named, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli.console import cli

COMMANDS = ["run", "validate", "status", "compact", "replay-dead-letters", "resume-binlog"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str) -> None:
    result = CliRunner().invoke(cli, [command, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output


def test_bad_config_exits_1_naming_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "kafka: {bootstrap_servers: b:9092}\njob: {checkpoint_dir: /c, dead_letter_path: /d}\n"
        "routes: [{topic: t, table: a}]\ntables: [{name: a, key: [id], base_path: /a, type: MOR}]\n"
    )
    result = CliRunner().invoke(cli, ["validate", "--config", str(path)])
    assert result.exit_code == 1
    assert str(path) in result.output and "tables.0.type" in result.output and "Traceback" not in result.output


def test_validate_lists_tables(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "kafka: {bootstrap_servers: b:9092}\njob: {checkpoint_dir: /c, dead_letter_path: /d}\n"
        "routes: [{topic: t, table: a}]\ntables: [{name: a, key: [id], base_path: /a}]\n"
    )
    result = CliRunner().invoke(cli, ["validate", "--config", str(path)])
    assert result.exit_code == 0 and "COPY_ON_WRITE" in result.output
