"""`hudi-cdc check`: which folders it asks the storage about, and which finding decides the exit code."""

from __future__ import annotations

from hudi_cdc.config.models import parse_config
from hudi_cdc.job.services import Finding, exit_status, kafka_diagnosis, storage_paths


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


def test_a_refused_certificate_or_login_is_a_setting_to_fix_a_silent_broker_is_away() -> None:
    verify = "ssl://b:9093/bootstrap: SSL handshake failed: certificate verify failed: broker certificate could not be verified"
    assert kafka_diagnosis(verify)[0] == "configuration" and "ssl.truststore.location" in kafka_diagnosis(verify)[1]
    assert kafka_diagnosis("SASL authentication error: Authentication failed")[0] == "configuration"
    assert kafka_diagnosis("Failed to get metadata: Local: Broker transport failure")[0] == "unreachable"
