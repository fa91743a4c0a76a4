"""Bring a ledger up to date with the world: Kafka (snapshot markers), Hudi (what landed), Connect, the source.

`refresh` scans the topics of tables not done, marks a table done once its last snapshot record
is in Kafka AND the job's Hudi commit metadata shows it applied (offsets.py), and returns the
new ledger; `status_rows` adds the row counts and states the CLI shows.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import datetime

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from hudi_cdc.config.models import Config
from hudi_cdc.errors import ConnectError
from hudi_cdc.events import DELETED
from hudi_cdc.hudi import timeline
from hudi_cdc.hudi.table import read_table, table_exists
from hudi_cdc.relay import ledger as L
from hudi_cdc.relay.connect import ConnectRest
from hudi_cdc.relay.markers import scan_topic
from hudi_cdc.relay.source import row_counts

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TableStatus:
    """One table's line of `hudi-cdc snapshot status`."""

    source_table: str
    table: str
    state: L.TableState
    run: int | None
    rows_source: int | None
    rows_read: int
    """Snapshot reads of its newest run seen in Kafka."""
    rows_landed: int | None
    done_at: str | None

    def as_row(self) -> dict[str, object]:
        return asdict(self)


def applied_offsets(spark: SparkSession, base_path: str, topic: str) -> dict[str, int]:
    """partition -> newest offset of `topic` the table's newest job commit applied; {} before any."""
    if not table_exists(spark, base_path):
        return {}
    return {str(p): int(o) for p, o in timeline.summary(spark, base_path).applied_through.get(topic, {}).items()}


def alive_runs(rest: ConnectRest, ledger: L.Ledger) -> set[int]:
    """Runs whose connector is deployed and not FAILED (an unreachable Connect counts none alive)."""
    alive: set[int] = set()
    try:
        deployed = set(rest.connectors())
        for run in ledger.runs:
            if run.connector in deployed:
                status = rest.status(run.connector)
                states = [status["connector"]["state"], *(t["state"] for t in status.get("tasks", []))]
                if "FAILED" not in states and status["connector"]["state"] != "STOPPED":
                    alive.add(run.number)
    except ConnectError as exc:
        log.warning("cannot ask Kafka Connect about the snapshot connectors: %s", exc)
    return alive


def refresh(spark: SparkSession, config: Config, ledger: L.Ledger, *, now: datetime) -> L.Ledger:
    """Scan the topics of tables not done and mark those whose snapshot is complete and landed."""
    for source in L.not_done(ledger):
        record = ledger.tables[source]
        if record.marker is None:
            scan = scan_topic(config.kafka, record.topic, start=record.scanned_to)
            ledger = L.record_scan(ledger, source, scanned_to=scan.scanned_to, reads=scan.reads, marker=scan.marker)
            record = ledger.tables[source]
        if record.marker is not None:
            applied = applied_offsets(spark, config.table(record.table).base_path, record.topic)
            if L.landed(record.marker, applied):
                ledger = L.mark_done(ledger, source, now=now)
    return ledger


def landed_rows(spark: SparkSession, base_path: str) -> int | None:
    """Rows the Hudi table holds (soft-deleted rows not counted); None before the table exists."""
    df = read_table(spark, base_path)
    if df is None:
        return None
    if DELETED in df.columns:
        df = df.where(~F.coalesce(F.col(DELETED), F.lit(False)))
    return int(df.count())


def status_rows(spark: SparkSession, config: Config, ledger: L.Ledger, rest: ConnectRest) -> list[TableStatus]:
    """Per source table: state, rows in the source, snapshot rows read, rows in Hudi."""
    assert config.connector is not None
    alive = alive_runs(rest, ledger)
    try:
        counts = row_counts(config.connector.config, list(ledger.tables))
    except ConnectError as exc:  # status still shows the ledger, Kafka and Hudi when the source is away
        log.warning("cannot count the source's rows: %s", exc)
        counts = {}
    rows = []
    for source, record in ledger.tables.items():
        rows.append(
            TableStatus(
                source_table=source,
                table=record.table,
                state=L.table_state(record, run_alive=record.last_run in alive),
                run=record.last_run,
                rows_source=counts.get(source),
                rows_read=record.read_rows,
                rows_landed=landed_rows(spark, config.table(record.table).base_path),
                done_at=record.done_at.isoformat() if record.done_at else None,
            )
        )
    return rows
