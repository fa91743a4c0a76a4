"""The relay's steps: start, resume, finish. The only module that sequences ledger, source and Connect.

Order inside every step, so a crash between two lines leaves a safe state:
  1. read the ledger (and bring it up to date: `observe.refresh`);
  2. decide (pure, `ledger.py`); a refusal changes nothing;
  3. read the source's binlog position, then SAVE the ledger;
  4. only then touch Kafka Connect.
A crash after 3 leaves a recorded run whose connector never ran: `status` shows it interrupted
and `resume` runs it again. `finish` saves after Connect accepted the position; repeating it
after a crash replays from the same first position again, which is harmless.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import SparkSession

from hudi_cdc.config.connector import ConnectorSection
from hudi_cdc.config.models import Config
from hudi_cdc.errors import ConfigError, RelayRefused
from hudi_cdc.relay import ledger as L
from hudi_cdc.relay import observe, store
from hudi_cdc.relay.connect import ConnectRest, start_connector_at_binlog
from hudi_cdc.relay.source import current_position

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Relay:
    """What every step needs: the job's config, a Spark session (for Hadoop FS and Hudi) and Connect."""

    spark: SparkSession
    config: Config
    rest: ConnectRest
    folder: str
    """The ledger's folder."""

    @property
    def section(self) -> ConnectorSection:
        assert self.config.connector is not None
        return self.config.connector


def relay_for(spark: SparkSession, config: Config, *, source: str, rest: ConnectRest | None = None) -> Relay:
    """A `Relay` for the job config; ConfigError when it has no `connector` section."""
    folder = store.ledger_folder(config, source=source)
    assert config.connector is not None  # ledger_folder refused a config without one
    return Relay(spark=spark, config=config, rest=rest or ConnectRest.for_section(config.connector), folder=folder)


def snapshot_config(section: ConnectorSection, run: L.SnapshotRun) -> dict[str, str]:
    """The connector config of a snapshot-only run: only `run.tables`, `initial_only`, its own history topic."""
    tables = _table_list(run.tables)
    return {
        **section.config,
        "snapshot.mode": "initial_only",
        "table.include.list": tables,
        "snapshot.include.collection.list": tables,
        "database.include.list": _database_list(run.tables),
        # each run keeps its schema history apart: the binlog connector's topic must stay unused
        # until `finish`, where `recovery` records the schemas for the first position
        "schema.history.internal.kafka.topic": f"{section.config['schema.history.internal.kafka.topic']}.snapshot-{run.number}",
    }


def binlog_config(section: ConnectorSection) -> dict[str, str]:
    """The config of the incremental (binlog) connector: every table of the section."""
    return {
        **section.config,
        "table.include.list": _table_list(section.tables),
        "database.include.list": _database_list(section.tables),
    }


def load_fresh(relay: Relay, *, now: datetime) -> tuple[L.Ledger, int]:
    """The stored ledger brought up to date (saved when the refresh changed it); refuses before `start`."""
    ledger, version = store.load(relay.spark, relay.folder)
    if ledger is None:
        raise RelayRefused(f"no snapshot ledger in {relay.folder}: run `hudi-cdc snapshot start` first")
    fresh = observe.refresh(relay.spark, relay.config, ledger, now=now)
    if fresh != ledger:
        version = store.save(relay.spark, relay.folder, fresh, after=version)
    return fresh, version


def start(relay: Relay, *, tables: Sequence[str] = (), now: datetime | None = None) -> L.Ledger:
    """Record the first position and deploy the first snapshot-only run (`tables`, default all)."""
    now = now or datetime.now(UTC)
    existing, version = store.load(relay.spark, relay.folder)
    if existing is not None:
        raise RelayRefused(
            f"{relay.section.name}: a relay started at {existing.runs[0].started_at:%Y-%m-%d %H:%M}Z from "
            f"{existing.first_position} (ledger {relay.folder}); use `hudi-cdc snapshot resume` for the tables not done"
        )
    snapshot = list(tables) or relay.section.tables
    position = current_position(relay.section.config)
    ledger = L.new_ledger(
        connector=relay.section.name, tables=_routes(relay), snapshot=snapshot, position=position, now=now
    )
    store.save(relay.spark, relay.folder, ledger, after=version)
    _deploy(relay, ledger.current_run)
    return ledger


def resume(relay: Relay, *, force: bool = False, now: datetime | None = None) -> L.Ledger:
    """Deploy a new snapshot-only run of the tables not done; the first position stays."""
    now = now or datetime.now(UTC)
    ledger, version = load_fresh(relay, now=now)
    alive = observe.alive_runs(relay.rest, ledger)
    running = [r.number for r in ledger.runs if r.number in alive and set(r.tables) & set(L.not_done(ledger))]
    if running and not force:
        raise RelayRefused(
            f"snapshot run {running[-1]} ({L.run_connector_name(ledger.connector, running[-1])}) is still running; "
            "wait for it (`hudi-cdc snapshot status`), or pass --force to stop it and relay its tables anew"
        )
    snapshot = L.not_done(ledger)
    position = current_position(relay.section.config)
    ledger = L.add_run(ledger, snapshot=snapshot, position=position, now=now)
    store.save(relay.spark, relay.folder, ledger, after=version)
    _remove_runs(relay, ledger.runs[:-1])
    _deploy(relay, ledger.current_run)
    return ledger


def finish(relay: Relay, *, force: bool = False, now: datetime | None = None) -> tuple[L.Ledger, dict[str, Any]]:
    """Start incremental capture from the FIRST position (KIP-875); refuse while a table is not done."""
    now = now or datetime.now(UTC)
    ledger, version = load_fresh(relay, now=now)
    alive = observe.alive_runs(relay.rest, ledger)
    states = {s: L.table_state(r, run_alive=r.last_run in alive) for s, r in ledger.tables.items()}
    refusal = L.finish_refusal(ledger, states)
    if refusal is not None and (ledger.finished is not None or not force):
        raise RelayRefused(refusal)
    forced_past = L.not_done(ledger)
    _remove_runs(relay, ledger.runs)
    first = ledger.first_position
    log.info("starting %s from the first snapshot position %s", ledger.connector, first)
    status = start_connector_at_binlog(
        relay.rest, relay.section.name, binlog_config(relay.section),
        binlog_file=first.file, binlog_pos=first.pos, gtids=first.gtids,
    )  # fmt: skip
    ledger = L.with_finish(ledger, now=now, forced_past=forced_past)
    store.save(relay.spark, relay.folder, ledger, after=version)
    return ledger, status


def _routes(relay: Relay) -> dict[str, tuple[str, str]]:
    """source table -> (topic, Hudi table), by the job's routes."""
    routes: dict[str, tuple[str, str]] = {}
    for source in relay.section.tables:
        topic = relay.section.topic(source)
        table = relay.config.table_of_topic(topic)
        if table is None:  # pragma: no cover - Config refuses an unrouted connector table
            raise ConfigError("the configuration", [f"connector.tables: no route takes {topic}"])
        routes[source] = (topic, table)
    return routes


def _deploy(relay: Relay, run: L.SnapshotRun) -> None:
    log.info("deploying snapshot run %d (%s) of %s", run.number, run.connector, ", ".join(run.tables))
    relay.rest.create_connector(run.connector, snapshot_config(relay.section, run))


def _remove_runs(relay: Relay, runs: Sequence[L.SnapshotRun]) -> None:
    """Delete the connectors of earlier runs still deployed (their offsets are never reused: names are new)."""
    deployed = set(relay.rest.connectors())
    for run in runs:
        if run.connector in deployed:
            log.info("removing the connector of snapshot run %d (%s)", run.number, run.connector)
            relay.rest.delete_connector(run.connector)


def _table_list(tables: Sequence[str]) -> str:
    return ",".join(re.escape(t) for t in tables)


def _database_list(tables: Sequence[str]) -> str:
    return ",".join(re.escape(d) for d in dict.fromkeys(t.split(".", 1)[0] for t in tables))
