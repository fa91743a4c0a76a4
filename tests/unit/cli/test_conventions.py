"""One CLI convention: the --json envelope, --table NAME, deprecations and progress on stderr.

Spark is not what these tests test: the library calls behind the commands are fakes (the
integration tests run the same commands on real tables).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from hudi_cdc.cli import console
from hudi_cdc.cli.console import cli
from hudi_cdc.commit.metrics import BatchMetrics, TableMetrics
from hudi_cdc.config.models import TableConfig
from hudi_cdc.hudi.relayout import Relayout

JOB = (
    "kafka: {bootstrap_servers: b:9092}\njob: {checkpoint_dir: /c, dead_letter_path: /d}\n"
    "routes: [{topic: ta, table: orders}, {topic: tb, table: people}]\n"
    "tables: [{name: orders, key: [id], base_path: /lake/orders, type: MERGE_ON_READ},\n"
    "         {name: people, key: [id], base_path: /lake/people}]\n"
)


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A two-table job file; commands get a stand-in for Spark."""
    path = tmp_path / "job.yaml"
    path.write_text(JOB)
    monkeypatch.setattr(console, "_session", lambda job, purpose, hudi_sql=False: SimpleNamespace(purpose=purpose, hudi_sql=hudi_sql))
    return str(path)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def envelopes(result: Result) -> list[dict[str, Any]]:
    """Every line of stdout as JSON: a line that is not fails the test."""
    return [json.loads(line) for line in result.stdout.splitlines()]


# --json: one envelope


def test_a_table_under_json_is_one_envelope_naming_the_command(job: str) -> None:
    result = invoke("validate", "--config", job, "--json")
    assert result.exit_code == 0, result.output
    (document,) = envelopes(result)
    assert (document["format"], document["command"], document["title"]) == (1, "validate", f"{job}: OK")
    assert [row["table"] for row in document["rows"]] == ["orders", "people"]


def test_an_error_under_json_is_an_envelope_on_stdout_and_its_text_on_stderr(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(JOB.replace("MERGE_ON_READ", "MOR"))
    result = invoke("validate", "--config", str(path), "--json")
    assert result.exit_code == 2  # the configuration: fix it, do not retry
    (document,) = envelopes(result)
    assert (document["format"], document["command"]) == (1, "validate")
    assert document["error"]["type"] == "ConfigError" and document["error"]["exit_code"] == 2
    assert "tables.0.type" in document["error"]["message"]
    assert result.stderr.startswith("error: ") and "tables.0.type" in result.stderr


def test_an_error_without_json_prints_nothing_on_stdout(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(JOB.replace("MERGE_ON_READ", "MOR"))
    result = invoke("validate", "--config", str(path))
    assert result.exit_code == 2 and result.stdout == "" and "tables.0.type" in result.stderr


def test_a_message_under_json_is_an_envelope(job: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hudi_cdc.hudi.recovery.drop_metadata_table", lambda spark, path: f"{path}.backup")
    result = invoke("rebuild-metadata", "--config", job, "--table", "people", "--json")
    assert result.exit_code == 0, result.output
    assert envelopes(result) == [{
        "format": 1, "command": "rebuild-metadata",
        "message": "table people: metadata table deleted; backup at /lake/people.backup; the table goes on without "
                   "one (set `hoodie.metadata.enable: true` in its `hoodie_options` to rebuild it)",
    }]  # fmt: skip


def test_a_command_of_a_group_is_named_as_typed(job: str, monkeypatch: pytest.MonkeyPatch) -> None:
    metrics = BatchMetrics(batch_id=-1, tables=[TableMetrics(table="orders", read=2, applied=2)])
    monkeypatch.setattr("hudi_cdc.job.replay.replay_dead_letters", lambda spark, config, **kwargs: metrics)
    result = invoke("dead-letters", "replay", "--config", job, "--json")
    assert result.exit_code == 0, result.output
    (document,) = envelopes(result)
    assert (document["command"], document["title"]) == ("dead-letters replay", "replayed")
    assert document["rows"][0]["table"] == "orders" and document["rows"][0]["applied"] == 2


# --table NAME


@pytest.fixture
def relayouts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`relayout` runs a fake rewrite that says its phases; the tables it rewrote."""
    done: list[str] = []

    def rewrite(spark: object, table: TableConfig, *, step: Callable[[str], None] | None = None) -> Relayout:
        assert step is not None
        step(f"table {table.name}: writing its rows")
        step(f"table {table.name}: moving the rewritten copy")
        done.append(table.name)
        return Relayout(table=table.name, layout="simple", previous="bucket:4", rows=7, backup=f"{table.base_path}.old")

    monkeypatch.setattr("hudi_cdc.hudi.relayout.relayout", rewrite)
    return done


def test_table_is_chosen_with_the_table_option(job: str, relayouts: list[str]) -> None:
    result = invoke("relayout", "--config", job, "--table", "orders")
    assert result.exit_code == 0, result.output
    assert relayouts == ["orders"] and "bucket:4 -> simple, 7 rows" in result.stdout
    assert "deprecated" not in result.stderr


def test_the_positional_table_still_works_with_a_deprecation_warning(job: str, relayouts: list[str]) -> None:
    result = invoke("relayout", "orders", "--config", job)
    assert result.exit_code == 0, result.output
    assert relayouts == ["orders"]
    assert "warning: the positional TABLE is deprecated" in result.stderr and "--table orders" in result.stderr
    assert "deprecated" not in result.stdout


@pytest.mark.parametrize("command", ["watermark", "relayout", "rebuild-metadata", "retry-table"])
def test_the_positional_table_is_hidden_from_help(command: str) -> None:
    result = invoke(command, "--help")
    assert result.exit_code == 0
    assert f"Usage: cli {command} [OPTIONS]\n" in result.stdout and "--table NAME" in result.stdout
    assert "TABLE" not in result.stdout.split("Options:")[0].replace(command, "")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        pytest.param(["relayout"], "Missing option '--table'", id="none"),
        pytest.param(["relayout", "--table", "orders", "--table", "people"], "one table only", id="two-for-one"),
        pytest.param(["relayout", "orders", "--table", "people"], "one table only", id="positional-and-option-differ"),
        pytest.param(["retry-table"], "Missing option '--table'", id="retry-none"),
    ],
)
def test_a_wrong_table_choice_is_a_usage_error(job: str, relayouts: list[str], args: list[str], says: str) -> None:
    result = invoke(*args, "--config", job)
    assert result.exit_code == 2 and says in result.stderr, result.output
    assert relayouts == []


def test_the_same_table_positional_and_option_is_one_table(job: str, relayouts: list[str]) -> None:
    result = invoke("relayout", "orders", "--table", "orders", "--config", job)
    assert result.exit_code == 0, result.output
    assert relayouts == ["orders"]


def test_an_unknown_table_exits_2_with_its_envelope(job: str, relayouts: list[str]) -> None:
    result = invoke("relayout", "--config", job, "--table", "nobody", "--json")
    assert result.exit_code == 2
    (document,) = envelopes(result)
    assert "no table 'nobody'; its tables are orders, people" in document["error"]["message"]
    assert relayouts == []


def test_retry_table_takes_several_tables(job: str, monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[str] = []
    monkeypatch.setattr("hudi_cdc.job.parking.read_parked", lambda spark, checkpoint: [
        SimpleNamespace(table="orders"), SimpleNamespace(table="people")])  # fmt: skip
    monkeypatch.setattr("hudi_cdc.job.parking.request_retry", lambda spark, checkpoint, table: written.append(table))
    result = invoke("retry-table", "--config", job, "--table", "orders", "--table", "people", "--json")
    assert result.exit_code == 0, result.output
    assert [d["message"] for d in envelopes(result)] == [
        "table orders: the running job tries it again at its next trigger",
        "table people: the running job tries it again at its next trigger",
    ]
    assert written == ["orders", "people"]


def test_retry_table_refuses_a_table_not_parked_and_writes_nothing(job: str, monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[str] = []
    monkeypatch.setattr("hudi_cdc.job.parking.read_parked", lambda spark, checkpoint: [SimpleNamespace(table="orders")])
    monkeypatch.setattr("hudi_cdc.job.parking.request_retry", lambda spark, checkpoint, table: written.append(table))
    result = invoke("retry-table", "--config", job, "--table", "orders", "--table", "people")
    assert result.exit_code == 2 and "table 'people' is not parked; parked tables: orders" in result.stderr
    assert written == []


# status


class FakeStatus:
    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row

    def as_row(self) -> dict[str, Any]:
        return self.row


@pytest.fixture
def statuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """`orders` not created yet, `people` with its statistics."""
    rows = {
        "orders": {"table": "orders", "type": "MERGE_ON_READ", "state": "not created yet"},
        "people": {"table": "people", "type": "COPY_ON_WRITE", "last_commit": "20261204031500123", "files": 3},
    }
    monkeypatch.setattr("hudi_cdc.hudi.status.table_status", lambda spark, table, sync: FakeStatus(rows[table.name]))
    monkeypatch.setattr("hudi_cdc.job.catalog.with_made_tables", lambda spark, config: config)
    monkeypatch.setattr("hudi_cdc.job.parking.read_parked", lambda spark, checkpoint: [])


def test_status_text_shows_every_tables_columns_when_the_first_is_not_created(job: str, statuses: None) -> None:
    result = invoke("status", "--config", job)
    assert result.exit_code == 0, result.output
    header, first, second = result.stdout.splitlines()[1:]
    assert header.split() == ["table", "type", "state", "last_commit", "files"]
    assert second.split() == ["people", "COPY_ON_WRITE", "20261204031500123", "3"]
    assert first.split() == ["orders", "MERGE_ON_READ", "not", "created", "yet"]


def test_status_takes_tables_with_the_table_option(job: str, statuses: None) -> None:
    result = invoke("status", "--config", job, "--table", "people", "--json")
    assert result.exit_code == 0, result.output
    (document,) = envelopes(result)
    assert (document["command"], [r["table"] for r in document["rows"]]) == ("status", ["people"])
    unknown = invoke("status", "--config", job, "--table", "nobody")
    assert unknown.exit_code == 2 and "no table 'nobody'" in unknown.stderr


# deprecations


def test_replay_dead_letters_is_hidden_and_warns_but_still_replays(job: str, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[dict[str, Any]] = []

    def replay(spark: object, config: object, **kwargs: Any) -> BatchMetrics:
        asked.append(kwargs)
        return BatchMetrics(batch_id=-1, tables=[TableMetrics(table="orders", read=1, applied=1)])

    monkeypatch.setattr("hudi_cdc.job.replay.replay_dead_letters", replay)
    assert "replay-dead-letters" not in invoke("--help").stdout
    result = invoke("replay-dead-letters", "--config", job, "--table", "orders", "--json")
    assert result.exit_code == 0, result.output
    (warning,) = [line for line in result.stderr.splitlines() if "deprecated" in line]
    assert "dead-letters replay --error-class SchemaChangeError" in warning
    assert asked == [{"tables": ["orders"], "error_class": "SchemaChangeError", "since": None, "until": None}]
    (document,) = envelopes(result)
    assert (document["command"], document["rows"][0]["table"]) == ("replay-dead-letters", "orders")


# progress: stderr (log lines off a terminal), never stdout


def test_compact_reports_each_table_as_log_lines_and_keeps_stdout_json(
    job: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("hudi_cdc.job.catalog.with_made_tables", lambda spark, config: config)
    sessions: list[bool] = []

    def compacted(spark: SimpleNamespace, table: TableConfig) -> dict[str, str]:
        sessions.append(spark.hudi_sql)
        return {"table": table.name, "compacted": "20261204", "strategy": "NUM_COMMITS"}

    monkeypatch.setattr("hudi_cdc.hudi.compactor.run_compaction", compacted)
    with caplog.at_level(logging.INFO, logger="hudi_cdc.cli.progress"):
        result = invoke("compact", "--config", job, "--json")
    assert sessions == [True]  # its session has Hudi's SQL, whose procedure compacts
    assert result.exit_code == 0, result.output
    (document,) = envelopes(result)
    assert (document["command"], [r["table"] for r in document["rows"]]) == ("compact", ["orders"])  # the MOR table
    assert [r.getMessage() for r in caplog.records if r.name == "hudi_cdc.cli.progress"] == ["compact: table orders (1/1)"]


def test_relayout_reports_its_phases(job: str, relayouts: list[str], caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="hudi_cdc.cli.progress"):
        result = invoke("relayout", "--config", job, "--table", "people", "--json")
    assert result.exit_code == 0, result.output
    assert [r.getMessage() for r in caplog.records if r.name == "hudi_cdc.cli.progress"] == [
        "table people: writing its rows", "table people: moving the rewritten copy"]  # fmt: skip
    assert envelopes(result)[0]["message"].startswith("table people: bucket:4 -> simple")


def test_watermark_reports_each_poll_and_exits_3_when_not_reached(
    job: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("hudi_cdc.hudi.table.table_exists", lambda spark, path: False)  # no watermark yet
    with caplog.at_level(logging.INFO, logger="hudi_cdc.cli.progress"):
        result = invoke("watermark", "--config", job, "--table", "people", "--wait-until", "2026-11-23T10:00:00Z",
                        "--timeout", "1 second", "--poll", "1 second", "--json")  # fmt: skip
    assert result.exit_code == 3, result.output
    (document,) = envelopes(result)
    assert document["rows"][0]["reached"] is False and document["rows"][0]["table"] == "people"
    polls = [r.getMessage() for r in caplog.records if r.name == "hudi_cdc.cli.progress"]
    assert polls and all(p.startswith("watermark: table people at none yet, waiting for 2026-11-23T10:00:00.000Z") for p in polls)


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found += _commands(command, f"{prefix}{name} ")
        else:
            found.append((prefix + name, command))
    return found


NO_RESULT = {"run", "schema", "submit-file"}
"""`run` logs and prints no result; `schema` prints a JSON Schema and `submit-file` a path, both for other tools."""


@pytest.mark.parametrize(("name", "command"), [pytest.param(n, c, id=n) for n, c in _commands(cli)])
def test_every_command_with_a_result_takes_json_and_every_table_choice_is_the_table_option(
    name: str, command: click.Command
) -> None:
    options = {opt for param in command.params for opt in getattr(param, "opts", [])}
    assert ("--json" in options) is (name not in NO_RESULT), name
    positional = [p.name for p in command.params if isinstance(p, click.Argument)]
    assert positional in ([], ["legacy_table"]), positional  # only the deprecated one
    choices = [p for p in command.params if "table" in (p.name or "") and isinstance(p, click.Option)]
    assert all(p.opts == ["--table"] for p in choices), name
