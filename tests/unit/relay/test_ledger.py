"""The snapshot ledger's rules (hudi_cdc/relay/ledger.py, store.common_parent, markers.snapshot_flag), no services."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from hudi_cdc.config.models import parse_config
from hudi_cdc.errors import CdcError, ConfigError, RelayRefused
from hudi_cdc.relay import ledger as L
from hudi_cdc.relay.actions import binlog_config, snapshot_config
from hudi_cdc.relay.markers import snapshot_flag
from hudi_cdc.relay.store import common_parent, ledger_folder

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FIRST = L.BinlogPosition(file="mariadb-bin.000001", pos=1000, gtids="0-1-10")
LATER = L.BinlogPosition(file="mariadb-bin.000002", pos=400, gtids="0-1-99")
TABLES = {
    "shop.a": ("srv.shop.a", "a"),
    "shop.b": ("srv.shop.b", "b"),
    "shop.c": ("srv.shop.c", "c"),
}


def _first(snapshot: list[str] | None = None) -> L.Ledger:
    return L.new_ledger(connector="src", tables=TABLES, snapshot=snapshot or list(TABLES), position=FIRST, now=T0)


def _done(ledger: L.Ledger, *sources: str) -> L.Ledger:
    for source in sources:
        ledger = L.record_scan(ledger, source, scanned_to={"0": 5}, reads=5, marker={"0": 4})
        ledger = L.mark_done(ledger, source, now=T0)
    return ledger


def test_first_position_survives_every_relay_run() -> None:
    ledger = _done(_first(), "shop.a")

    ledger = L.add_run(ledger, snapshot=L.not_done(ledger), position=LATER, now=T0 + timedelta(days=1))
    ledger = _done(ledger, "shop.b")
    ledger = L.add_run(ledger, snapshot=L.not_done(ledger), position=LATER, now=T0 + timedelta(days=2))

    assert ledger.first_position == FIRST
    assert [r.number for r in ledger.runs] == [1, 2, 3]
    assert ledger.current_run.tables == ["shop.c"]
    assert ledger.current_run.connector == "src-snapshot-3"
    assert L.with_finish(_done(ledger, "shop.c"), now=T0).finished.position == FIRST  # type: ignore[union-attr]


def test_ledger_round_trips_through_json() -> None:
    ledger = L.add_run(_done(_first(), "shop.a"), snapshot=["shop.b", "shop.c"], position=LATER, now=T0)

    again = L.Ledger.model_validate_json(ledger.model_dump_json())

    assert again == ledger
    assert json.loads(ledger.model_dump_json())["first_position"] == {"file": "mariadb-bin.000001", "pos": 1000, "gtids": "0-1-10"}


@pytest.mark.parametrize(
    ("snapshot", "match"),
    [
        pytest.param(["shop.a"], "done already", id="a-done-table"),
        pytest.param([], "nothing to relay", id="nothing-left"),
        pytest.param(["shop.zz"], "not among", id="unknown-table"),
    ],
)
def test_relay_run_refuses(snapshot: list[str], match: str) -> None:
    ledger = _done(_first(), "shop.a")
    if not snapshot:
        ledger = _done(ledger, "shop.b", "shop.c")

    with pytest.raises(RelayRefused, match=match) as refused:
        L.add_run(ledger, snapshot=snapshot, position=LATER, now=T0)
    assert isinstance(refused.value, CdcError)


def test_a_new_run_counts_its_reads_afresh_and_done_stays_done() -> None:
    ledger = L.record_scan(_first(), "shop.b", scanned_to={"0": 70}, reads=70, marker=None)

    ledger = L.add_run(ledger, snapshot=["shop.a", "shop.b", "shop.c"], position=LATER, now=T0)
    ledger = L.record_scan(ledger, "shop.b", scanned_to={"0": 90}, reads=20, marker=None)

    assert ledger.tables["shop.b"].read_rows == 20
    assert ledger.tables["shop.b"].scanned_to == {"0": 90}
    done = _done(ledger, "shop.a")
    assert L.mark_done(done, "shop.a", now=T0 + timedelta(days=5)).tables["shop.a"].done_at == T0


@pytest.mark.parametrize(
    ("marker", "applied", "expected"),
    [
        pytest.param({"0": 41}, {"0": 41}, True, id="applied-through-marker"),
        pytest.param({"0": 41}, {"0": 90}, True, id="applied-past-marker"),
        pytest.param({"0": 41}, {"0": 40}, False, id="one-short"),
        pytest.param({"0": 41}, {}, False, id="nothing-applied"),
        pytest.param(None, {"0": 90}, False, id="no-marker-yet"),
    ],
)
def test_landed_needs_the_last_snapshot_record_applied(
    marker: dict[str, int] | None, applied: dict[str, int], expected: bool
) -> None:
    assert L.landed(marker, applied) is expected


@pytest.mark.parametrize(
    ("record", "alive", "state"),
    [
        pytest.param(L.TableRecord(source_table="s.t", topic="x", table="t"), False, "not started", id="never-run"),
        pytest.param(L.TableRecord(source_table="s.t", topic="x", table="t", last_run=1), True, "running", id="live-run"),
        pytest.param(L.TableRecord(source_table="s.t", topic="x", table="t", last_run=1, read_rows=9), False, "interrupted", id="run-died"),
        pytest.param(L.TableRecord(source_table="s.t", topic="x", table="t", last_run=1, marker={"0": 3}), False, "running", id="read-not-landed"),
        pytest.param(L.TableRecord(source_table="s.t", topic="x", table="t", last_run=1, done_at=T0), False, "done", id="done"),
    ],
)
def test_table_state(record: L.TableRecord, alive: bool, state: str) -> None:
    assert L.table_state(record, run_alive=alive) == state


def test_finish_is_refused_with_the_reason_until_every_table_is_done() -> None:
    ledger = _done(_first(), "shop.a")
    states: dict[str, L.TableState] = {"shop.a": "done", "shop.b": "interrupted", "shop.c": "running"}

    reason = L.finish_refusal(ledger, states)

    assert reason is not None
    assert "2 table(s) not done: shop.b (interrupted), shop.c (running)" in reason
    assert "--force" in reason
    assert L.finish_refusal(_done(ledger, "shop.b", "shop.c"), {}) is None


def test_finish_twice_is_refused_and_no_relay_follows_it() -> None:
    finished = L.with_finish(_done(_first(), "shop.a", "shop.b", "shop.c"), now=T0)

    assert "already started" in (L.finish_refusal(finished, {}) or "")
    with pytest.raises(RelayRefused, match="already started"):
        L.add_run(finished, snapshot=["shop.a"], position=LATER, now=T0)


@pytest.mark.parametrize(
    ("paths", "parent"),
    [
        pytest.param(["/w/wh/a", "/w/wh/b"], "/w/wh", id="siblings"),
        pytest.param(["/w/wh/a"], "/w/wh", id="one-table"),
        pytest.param(["s3a://bkt/wh/x/a", "s3a://bkt/wh/y/b/"], "s3a://bkt/wh", id="s3a"),
        pytest.param(["/a/t", "/b/t"], None, id="only-root"),
        pytest.param(["s3a://one/t", "s3a://two/t"], None, id="different-buckets"),
    ],
)
def test_ledger_lives_beside_the_tables(paths: list[str], parent: str | None) -> None:
    assert common_parent(paths) == parent


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(b'{"schema": {}, "payload": {"op": "r", "source": {"snapshot": "last_in_data_collection"}}}', ("r", "last_in_data_collection"), id="enveloped"),
        pytest.param(b'{"op": "r", "source": {"snapshot": "last"}}', ("r", "last"), id="plain"),
        pytest.param(b'{"op": "u", "source": {"snapshot": "false"}}', ("u", "false"), id="change"),
        pytest.param(None, (None, None), id="tombstone"),
        pytest.param(b"not json", (None, None), id="garbage"),
    ],
)
def test_snapshot_flag(value: bytes | None, expected: tuple[str | None, str | None]) -> None:
    assert snapshot_flag(value) == expected


def _config(connector: dict[str, object]) -> dict[str, object]:
    return {
        "kafka": {"bootstrap_servers": "k:9092"},
        "job": {"checkpoint_dir": "/w/cp", "dead_letter_path": "/w/dl"},
        "tables": [{"name": "a", "key": ["id"], "base_path": "/w/wh/a"}],
        "routes": [{"topic": "srv.shop.a", "table": "a"}],
        "connector": connector,
    }


DEBEZIUM = {
    "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
    "database.hostname": "db", "database.port": "3306", "database.user": "dbz", "database.password": "pw",
    "topic.prefix": "srv", "schema.history.internal.kafka.topic": "_history.srv",
}  # fmt: skip


def test_connector_section_sets_the_snapshot_keys_per_run() -> None:
    config = parse_config(_config({"connect_url": "http://c:8083", "name": "src", "tables": ["shop.a"], "config": DEBEZIUM}))
    assert config.connector is not None
    run = L.SnapshotRun(number=2, connector="src-snapshot-2", tables=["shop.a"], position=FIRST, started_at=T0)

    snap = snapshot_config(config.connector, run)

    assert snap["snapshot.mode"] == "initial_only"
    assert snap["snapshot.include.collection.list"] == snap["table.include.list"] == r"shop\.a"
    assert snap["schema.history.internal.kafka.topic"] == "_history.srv.snapshot-2"
    assert "snapshot.mode" not in binlog_config(config.connector)
    assert ledger_folder(config) == "/w/wh/_hudi_cdc/snapshots/src"
    assert "pw" not in repr(config.connector)


@pytest.mark.parametrize(
    ("connector", "problem"),
    [
        pytest.param({"tables": ["shop.b"]}, "no route or template takes their topics ['srv.shop.b']", id="unrouted-table"),
        pytest.param({"tables": ["a"]}, "must be `database.table`", id="bare-table"),
        pytest.param({"config": {**DEBEZIUM, "snapshot.mode": "initial"}}, "set by `hudi-cdc snapshot`", id="owned-key"),
        pytest.param({"config": {k: v for k, v in DEBEZIUM.items() if k != "topic.prefix"}}, "missing Debezium settings ['topic.prefix']", id="missing-key"),
    ],
)
def test_connector_section_is_validated(connector: dict[str, object], problem: str) -> None:
    section = {"connect_url": "http://c:8083", "name": "src", "tables": ["shop.a"], "config": DEBEZIUM, **connector}

    with pytest.raises(ConfigError, match=problem.replace("[", r"\[").replace("]", r"\]").replace("`", "`").replace(".", r"\.")):
        parse_config(_config(section))
