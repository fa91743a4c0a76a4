"""The dead-letter workflow over a real store written by dead_letter.store: select, render, dedupe, purge, CLI."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_cdc.cli.console import cli
from hudi_cdc.dead_letters import ops
from hudi_cdc.dead_letters import store as dead_letter

OLD = datetime(2024, 1, 1, 12, tzinfo=UTC)
NEW = datetime.now(UTC) - timedelta(minutes=5)


def _rejects(spark: SparkSession, rows: Sequence[tuple[str | None, int, str, bytes | None]]) -> DataFrame:
    """(table, offset, error_class, value) rejects on topic `srv.db.<table>` partition 0."""
    return spark.createDataFrame(
        [
            (table, f"srv.db.{table or 'unrouted'}", 0, offset, b'{"id": %d}' % offset, value, error_class, f"{error_class} at {offset}")
            for table, offset, error_class, value in rows
        ],
        "table string, topic string, partition int, offset long, key binary, value binary, "
        "error_class string, error_message string",
    )


@pytest.fixture()
def store(spark: SparkSession, tmp_path: Path) -> str:
    path = str(tmp_path / "dead_letter")
    old = [("customers", 1, "DecodeError", b"not json"), ("orders", 2, "SchemaChangeError", b'{"a": 1}')]
    new = [("customers", 3, "SchemaChangeError", b'{"name": "x\\u00e9"}'), ("customers", 4, "DecodeError", b"\xff\xfe")]
    dead_letter.store(_rejects(spark, old), path=path, job="j", batch_id=1, detected_at=OLD)
    dead_letter.store(_rejects(spark, new), path=path, job="j", batch_id=2, detected_at=NEW)
    return path


def _offsets(spark: SparkSession, path: str, selection: ops.Selection) -> list[int]:
    letters = ops.select(spark, path, selection)
    assert letters is not None
    return sorted(r["offset"] for r in letters.collect())


@pytest.mark.parametrize(
    ("selection", "offsets"),
    [
        pytest.param(ops.Selection(), [1, 2, 3, 4], id="everything"),
        pytest.param(ops.Selection(tables=("customers",)), [1, 3, 4], id="table"),
        pytest.param(ops.Selection(error_classes=("DecodeError",)), [1, 4], id="error-class"),
        pytest.param(ops.Selection(since=NEW - timedelta(seconds=1)), [3, 4], id="since"),
        pytest.param(ops.Selection(until=NEW - timedelta(days=1)), [1, 2], id="until"),
        pytest.param(ops.Selection(tables=("customers",), error_classes=("DecodeError",), since=OLD), [1, 4], id="combined"),
        pytest.param(ops.Selection(topic="srv.db.customers", partition=0, offset=3), [3], id="one-record"),
    ],
)
def test_selection_filters(spark: SparkSession, store: str, selection: ops.Selection, offsets: list[int]) -> None:
    assert _offsets(spark, store, selection) == offsets


def test_show_renders_position_reason_and_decoded_payloads(spark: SparkSession, store: str) -> None:
    letters = ops.select(spark, store, ops.Selection(tables=("customers",)))
    assert letters is not None
    shown = {r["record"]: r for r in ops.records(letters, limit=10)}
    assert list(shown) == ["srv.db.customers[0]@1", "srv.db.customers[0]@3", "srv.db.customers[0]@4"]
    first = shown["srv.db.customers[0]@1"]
    assert first["key"] == {"id": 1} and first["value"] == "not json"
    assert first["error_class"] == "DecodeError" and first["error_message"] == "DecodeError at 1"
    assert first["detected_at"] == "2024-01-01T12:00:00+00:00" and first["batch_id"] == 1
    assert shown["srv.db.customers[0]@3"]["value"] == {"name": "xé"}
    assert shown["srv.db.customers[0]@4"]["value"] == {"base64": "//4="}


def test_headers_are_kept_beside_a_store_written_before_they_were(spark: SparkSession, tmp_path: Path) -> None:
    """A store from before `headers` was a column (its files lack it) takes rejects with headers:
    selecting reads both kinds of file, old rows with no headers, new ones with theirs in order."""
    path = str(tmp_path / "dead_letter")
    before = _rejects(spark, [("flat", 1, "MissingOrder", b"{}")]).withColumn("job", F.lit("j"))
    before.withColumn("batch_id", F.lit(1).cast("long")).withColumn("detected_at", F.current_timestamp()).write.partitionBy(
        "table"
    ).parquet(path)
    headers = F.array(
        F.struct(F.lit("__source_pos").alias("key"), F.lit(b"12a").alias("value")),
        F.struct(F.lit("__op").alias("key"), F.lit(b"u").alias("value")),
    )
    dead_letter.store(
        _rejects(spark, [("flat", 2, "BadOrder", b"{}")]).withColumn("headers", headers), path=path, job="j", batch_id=2
    )
    letters = ops.select(spark, path, ops.Selection(tables=("flat",)))
    assert letters is not None
    shown = {r["record"]: r for r in ops.records(letters, limit=10)}
    assert shown["srv.db.flat[0]@1"]["headers"] is None
    assert shown["srv.db.flat[0]@2"]["headers"] == [["__source_pos", "12a"], ["__op", "u"]]


def test_listing_is_newest_first_with_one_line_messages(spark: SparkSession, store: str) -> None:
    letters = ops.select(spark, store, ops.Selection())
    assert letters is not None
    total, rows = ops.listing(letters, limit=3)
    assert total == 4 and len(rows) == 3
    assert [r["record"] for r in rows][:2] == ["srv.db.customers[0]@3", "srv.db.customers[0]@4"]
    summary = {(r["table"], r["error_class"]): r["records"] for r in ops.summary(letters)}
    assert summary == {("customers", "DecodeError"): 2, ("customers", "SchemaChangeError"): 1, ("orders", "SchemaChangeError"): 1}


def test_storing_the_same_failure_again_adds_nothing(spark: SparkSession, store: str) -> None:
    again = [("customers", 3, "SchemaChangeError", b"{}"), ("customers", 3, "SchemaChangeError", b"{}"), ("customers", 3, "DecodeError", b"x")]
    dead_letter.store(_rejects(spark, again), path=store, job="j", batch_id=-1)
    letters = ops.select(spark, store, ops.Selection(tables=("customers",)))
    assert letters is not None
    keys = sorted((r["offset"], r["error_class"]) for r in letters.collect())
    # the replayed SchemaChangeError is not duplicated; a new reason for the same record is kept
    assert keys == [(1, "DecodeError"), (3, "DecodeError"), (3, "SchemaChangeError"), (4, "DecodeError")]


def test_purge_deletes_only_what_is_older_than_the_retention(spark: SparkSession, store: str) -> None:
    dry = ops.purge(spark, store, older_than=timedelta(days=30), dry_run=True)
    assert (dry.records, dry.dry_run) == (2, True)
    assert _offsets(spark, store, ops.Selection()) == [1, 2, 3, 4]
    only_orders = ops.purge(spark, store, older_than=timedelta(days=30), tables=("orders",))
    assert only_orders.records == 1 and _offsets(spark, store, ops.Selection()) == [1, 3, 4]
    assert ops.purge(spark, store, older_than=timedelta(days=30)).records == 1
    assert _offsets(spark, store, ops.Selection()) == [3, 4]
    assert ops.purge(spark, store, older_than=timedelta(seconds=1)).records == 2
    assert ops.select(spark, store, ops.Selection()) is None


def test_point_in_time_is_iso_or_a_duration_ago() -> None:
    now = datetime(2024, 5, 2, tzinfo=UTC)
    assert ops.point_in_time("2024-05-01", now=now) == datetime(2024, 5, 1, tzinfo=UTC)
    assert ops.point_in_time("2024-05-01T12:00:00+02:00", now=now) == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert ops.point_in_time("1 day", now=now) == datetime(2024, 5, 1, tzinfo=UTC)
    with pytest.raises(ValueError, match="neither an ISO time"):
        ops.point_in_time("yesterday", now=now)


def _config(tmp_path: Path, store: str, retention: str | None = None) -> str:
    path = tmp_path / "job.yaml"
    extra = f", dead_letter_retention: {retention}" if retention else ""
    path.write_text(
        f"kafka: {{bootstrap_servers: b:9092}}\njob: {{checkpoint_dir: {tmp_path}/cp, dead_letter_path: {store}{extra}}}\n"
        f"routes: [{{topic: t, table: customers}}]\ntables: [{{name: customers, key: [id], base_path: {tmp_path}/c}}]\n"
    )
    return str(path)


def test_cli_list_show_and_purge(spark: SparkSession, store: str, tmp_path: Path) -> None:
    config = _config(tmp_path, store)
    runner = CliRunner()
    listed = runner.invoke(cli, ["dead-letters", "list", "--config", config, "--table", "customers", "--json"])
    assert listed.exit_code == 0, listed.output
    document = json.loads(listed.output)
    assert document["title"] == "3 dead letters" and {r["record"] for r in document["rows"]} == {
        "srv.db.customers[0]@1", "srv.db.customers[0]@3", "srv.db.customers[0]@4"
    }

    text = runner.invoke(cli, ["dead-letters", "list", "--config", config, "--error-class", "SchemaChangeError", "--since", "1 hour"])
    assert text.exit_code == 0 and "srv.db.customers[0]@3" in text.output and "@2" not in text.output

    shown = runner.invoke(cli, ["dead-letters", "show", "--config", config, "--topic", "srv.db.customers", "--offset", "3"])
    assert shown.exit_code == 0, shown.output
    assert "srv.db.customers[0]@3" in shown.output and '"name": "xé"' in shown.output and "SchemaChangeError" in shown.output

    bad = runner.invoke(cli, ["dead-letters", "list", "--config", config, "--since", "banana"])
    assert bad.exit_code == 2 and "neither an ISO time" in bad.output

    no_retention = runner.invoke(cli, ["dead-letters", "purge", "--config", config])
    assert no_retention.exit_code == 1 and "dead_letter_retention" in no_retention.output

    purged = runner.invoke(cli, ["dead-letters", "purge", "--config", _config(tmp_path, store, "30 days"), "--json"])
    assert purged.exit_code == 0, purged.output
    assert json.loads(purged.output)["rows"][0]["records"] == 2
