"""`hudi-cdc check`: which folders it asks the storage about, and which finding decides the exit code."""

from __future__ import annotations

from hudi_cdc.config.models import parse_config
from hudi_cdc.job.services import Finding, exit_status, storage_paths


def test_every_folder_of_the_job_is_checked_a_templates_up_to_its_first_placeholder() -> None:
    config = parse_config(
        {
            "kafka": {"bootstrap_servers": "b:9092"},
            "job": {"checkpoint_dir": "/lake/cp", "dead_letter_path": "s3a://b/dl"},
            "routes": [{"topic": "t", "table": "t"}],
            "tables": [{"name": "t", "key": ["id"], "base_path": "hdfs://nn/lake/t"}],
            "templates": [{"pattern": "srv\\.db\\.(?<table>[a-z]+)", "base_path": "s3a://b/lake/{name}"}],
        }
    )

    assert storage_paths(config) == [
        ("checkpoint", "/lake/cp"),
        ("dead letters", "s3a://b/dl"),
        ("table t", "hdfs://nn/lake/t"),
        ("template srv\\.db\\.(?<table>[a-z]+)", "s3a://b/lake"),
    ]


def test_a_wrong_setting_outranks_an_unreachable_service() -> None:
    ok, down, wrong = (Finding("c", "t", status, "d") for status in ("ok", "unreachable", "configuration"))

    assert exit_status([ok, ok]) == "ok"
    assert exit_status([ok, down]) == "unreachable"
    assert exit_status([down, wrong, ok]) == "configuration"
