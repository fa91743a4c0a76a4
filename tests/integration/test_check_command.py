"""`hudi-cdc check` against the real local services: a line per component, ok or the error and the fix,
and the exit code a supervisor acts on."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from pyspark.sql import SparkSession

from devkit.services.hms import LocalMetastore
from devkit.services.kafka import LocalKafka
from hudi_cdc.cli.console import cli
from hudi_cdc.cli.exit_codes import CONFIGURATION, OK, RETRY

pytestmark = pytest.mark.integration

CONNECTOR = {
    "connector.class": "io.debezium.connector.mysql.MySqlConnector", "database.hostname": "db", "database.port": "3306",
    "database.user": "u", "database.password": "p", "topic.prefix": "srv", "schema.history.internal.kafka.topic": "h",
}  # fmt: skip


def _silent_port() -> int:
    """A localhost port nothing listens on (bound, never listened on: connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _job_file(tmp_path: Path, *, kafka: dict[str, Any], **sections: Any) -> Path:
    (tmp_path / "lake").mkdir(exist_ok=True)
    document = {
        "kafka": {"connect_timeout": "5 seconds", **kafka},
        "job": {"checkpoint_dir": str(tmp_path / "cp"), "dead_letter_path": str(tmp_path / "dl"), **sections.pop("job", {})},
        "routes": [{"topic": "srv.db.t", "table": "t"}],
        "tables": [{"name": "t", "key": ["id"], "base_path": str(tmp_path / "lake" / "t")}],
        **sections,
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _check(path: Path) -> tuple[int, dict[str, dict[str, Any]]]:
    result = CliRunner().invoke(cli, ["check", "--config", str(path), "--json"])
    envelope = json.loads(result.stdout.strip().splitlines()[-1])
    assert envelope["command"] == "check", result.output
    return result.exit_code, {row["component"]: row for row in envelope["rows"]}


def test_every_configured_service_answers(
    spark: SparkSession, kafka: LocalKafka, metastore: LocalMetastore, tmp_path: Path
) -> None:
    (tmp_path / "cp").mkdir()
    path = _job_file(tmp_path, kafka={"bootstrap_servers": kafka.bootstrap_servers}, job={"metastore_uris": metastore.uri})

    code, rows = _check(path)

    assert code == OK, rows
    assert list(rows) == ["kafka", "metastore", "storage (checkpoint)", "storage (dead letters)", "storage (table t)"]
    assert all(row["status"] == "ok" for row in rows.values()), rows
    assert rows["metastore"]["detail"].endswith("databases")
    assert rows["storage (checkpoint)"]["detail"] == "exists"
    assert rows["storage (table t)"]["detail"].startswith("not there yet")


def test_a_service_that_is_down_is_named_with_the_fix_and_exits_75(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    metastore, registry = f"thrift://127.0.0.1:{_silent_port()}", f"http://127.0.0.1:{_silent_port()}/apis/ccompat/v7"
    connect = f"http://127.0.0.1:{_silent_port()}"
    path = _job_file(
        tmp_path,
        kafka={"bootstrap_servers": kafka.bootstrap_servers},
        job={"metastore_uris": metastore},
        schema_registry={"url": registry, "request_timeout": "3 seconds"},
        connector={
            "connect_url": connect,
            "username": "u",
            "password": "${CONNECT_PASSWORD:-hush-hush}",
            "name": "c",
            "tables": ["db.t"],
            "config": CONNECTOR,
        },
    )

    code, rows = _check(path)

    assert code == RETRY, rows
    assert rows["kafka"]["status"] == "ok"
    assert (rows["metastore"]["status"], rows["metastore"]["target"]) == ("unreachable", metastore)
    assert "job.metastore_uris" in rows["metastore"]["fix"]
    assert (rows["schema registry"]["status"], rows["schema registry"]["target"]) == ("unreachable", registry)
    assert "refused" in rows["schema registry"]["detail"].lower(), rows["schema registry"]
    assert "schema_registry.url" in rows["schema registry"]["fix"]
    assert (rows["kafka connect"]["status"], rows["kafka connect"]["target"]) == ("unreachable", connect)
    assert "connector.connect_url" in rows["kafka connect"]["fix"]

    text = CliRunner().invoke(cli, ["check", "--config", str(path)])
    (metastore_line,) = [line for line in text.output.splitlines() if line.startswith("metastore")]
    assert metastore in metastore_line and "unreachable" in metastore_line
    assert "hush-hush" not in text.output


def test_a_kafka_truststore_that_cannot_be_read_is_a_configuration_error(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path
) -> None:
    properties = {"security.protocol": "SSL", "ssl.truststore.location": str(tmp_path / "missing.jks")}
    path = _job_file(tmp_path, kafka={"bootstrap_servers": kafka.bootstrap_servers, "properties": properties})

    code, rows = _check(path)

    assert code == CONFIGURATION, rows
    assert rows["kafka"]["status"] == "configuration"
    assert "ssl.truststore.location" in rows["kafka"]["detail"]
    assert rows["storage (checkpoint)"]["status"] == "ok"  # the other components are still checked
