"""`--config` takes a local path or a URI of the cluster's storage; a missing or unreadable local file
is a configuration error (exit 2) naming it. Reading `hdfs://` files runs in tests/integration/test_yarn.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli.console import cli
from hudi_cdc.config.yaml_file import is_remote


@pytest.mark.parametrize(
    ("location", "remote"),
    [
        ("hdfs://namenode:8020/jobs/shop.yaml", True),
        ("s3a://bucket/jobs/shop.yaml", True),
        ("abfss://container@account.dfs.core.windows.net/shop.yaml", True),
        ("file:///etc/hudi-cdc/shop.yaml", False),
        ("/etc/hudi-cdc/shop.yaml", False),
        ("jobs/shop.yaml", False),
        ("C://jobs/shop.yaml", False),
    ],
    ids=["hdfs", "s3a", "abfss", "file-uri", "absolute", "relative", "windows-drive"],
)
def test_is_remote(location: str, remote: bool) -> None:
    assert is_remote(location) is remote


def test_a_missing_local_file_is_a_configuration_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.yaml"
    result = CliRunner().invoke(cli, ["validate", "--config", str(missing)])
    assert result.exit_code == 2, result.output
    assert f"invalid configuration in {missing}" in result.output and "file not found" in result.output
    assert "Traceback" not in result.output


def test_a_folder_is_a_configuration_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", "--config", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "a folder, not a file" in result.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_a_configuration_error(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("job: {}\n")
    job.chmod(0)
    result = CliRunner().invoke(cli, ["validate", "--config", str(job)])
    assert result.exit_code == 2, result.output
    assert "cannot be read: permission denied" in result.output
