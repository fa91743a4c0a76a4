"""The snapshot ledger: what a snapshot relay has done so far, as frozen values and pure steps.

One ledger per connector. It holds the binlog position at which the FIRST snapshot run started
(never replaced: incremental capture must start there, or the changes made between that
position and a later run's are lost), every run since, and per table whether its snapshot is
done. Storing it is `relay/store.py`'s job; observing Kafka, Hudi and the source is
`relay/observe.py`'s. Every function here takes a ledger and returns a new one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hudi_cdc.errors import RelayRefused

TableState = Literal["done", "running", "interrupted", "not started"]
"""done: the snapshot's last record is in Kafka and landed in Hudi; running: a live run covers it
(or its snapshot is complete in Kafka and the job has not landed it yet); interrupted: a run
read some rows and stopped; not started: no run has read a row of it."""
LEDGER_VERSION = 1


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BinlogPosition(_Frozen):
    """A MySQL/MariaDB binlog coordinate (an event boundary) and the GTID state there."""

    file: str
    pos: int = Field(ge=4)
    gtids: str | None = None
    """MariaDB `BINLOG_GTID_POS(file, pos)`; None where the server has no GTID there."""

    def __str__(self) -> str:
        return f"{self.file}:{self.pos}" + (f" (gtids {self.gtids})" if self.gtids else "")


class SnapshotRun(_Frozen):
    """One snapshot-only deployment of the connector."""

    number: int = Field(ge=1)
    connector: str
    """The Connect name of this run's connector, `<name>-snapshot-<number>`."""
    tables: list[str]
    """Source tables (`database.table`) this run snapshots."""
    position: BinlogPosition
    """The source's binlog position read just before the run's connector was deployed."""
    started_at: datetime


class TableRecord(_Frozen):
    """One source table's snapshot, as far as the ledger knows."""

    source_table: str
    topic: str
    table: str
    """The Hudi table its topic feeds (from the job's routes)."""
    last_run: int | None = None
    """The newest run that snapshots it; None before any."""
    done_at: datetime | None = None
    marker: dict[str, int] | None = None
    """Kafka partition -> offset of the snapshot's last record (Debezium `source.snapshot` last*)."""
    read_rows: int = 0
    """Snapshot reads (op `r`) seen in the topic since `last_run` started."""
    scanned_to: dict[str, int] = Field(default_factory=dict)
    """Kafka partition -> next offset to scan, so each `status` reads only new records."""

    @property
    def done(self) -> bool:
        return self.done_at is not None


class Finish(_Frozen):
    """The hand-over to incremental capture."""

    at: datetime
    position: BinlogPosition
    forced_past: list[str] = Field(default_factory=list)
    """Tables that were not done when `--force` started the capture anyway."""


class Ledger(_Frozen):
    """The whole relay of one connector."""

    version: int = LEDGER_VERSION
    connector: str
    first_position: BinlogPosition
    """Where the FIRST run started; set once by `new_ledger`, never changed."""
    runs: list[SnapshotRun]
    tables: dict[str, TableRecord]
    """source table -> record, for every table of the connector section."""
    finished: Finish | None = None

    def run(self, number: int) -> SnapshotRun:
        return next(r for r in self.runs if r.number == number)

    @property
    def current_run(self) -> SnapshotRun:
        return self.runs[-1]


def run_connector_name(connector: str, number: int) -> str:
    """The Connect name of snapshot run `number`: a fresh name has no offsets, so the run starts clean."""
    return f"{connector}-snapshot-{number}"


def new_ledger(
    *,
    connector: str,
    tables: Mapping[str, tuple[str, str]],
    snapshot: Sequence[str],
    position: BinlogPosition,
    now: datetime,
) -> Ledger:
    """The ledger of a first run that snapshots `snapshot`; `tables` is source -> (topic, Hudi table)."""
    _known(snapshot, tables)
    run = SnapshotRun(
        number=1, connector=run_connector_name(connector, 1), tables=list(snapshot), position=position, started_at=now
    )
    records = {
        source: TableRecord(source_table=source, topic=topic, table=table, last_run=1 if source in snapshot else None)
        for source, (topic, table) in tables.items()
    }
    return Ledger(connector=connector, first_position=position, runs=[run], tables=records)


def add_run(ledger: Ledger, *, snapshot: Sequence[str], position: BinlogPosition, now: datetime) -> Ledger:
    """The ledger after a relay run of `snapshot` (tables not done) started at `position`.

    The first position stays: only the first run's position is safe to stream from.
    """
    if ledger.finished is not None:
        raise RelayRefused(f"{ledger.connector}: incremental capture already started at {ledger.finished.at:%Y-%m-%d %H:%M}Z")
    _known(snapshot, ledger.tables)
    done = [t for t in snapshot if ledger.tables[t].done]
    if done:
        raise RelayRefused(f"{ledger.connector}: {done} are done already; a relay run takes only tables not done")
    if not snapshot:
        raise RelayRefused(f"{ledger.connector}: every table is done; nothing to relay (run `hudi-cdc snapshot finish`)")
    number = ledger.current_run.number + 1
    run = SnapshotRun(
        number=number,
        connector=run_connector_name(ledger.connector, number),
        tables=list(snapshot),
        position=position,
        started_at=now,
    )
    tables = dict(ledger.tables)
    for source in snapshot:
        # a new run re-reads the table from its first row: count its reads afresh
        tables[source] = tables[source].model_copy(update={"last_run": number, "read_rows": 0})
    return ledger.model_copy(update={"runs": [*ledger.runs, run], "tables": tables})


def not_done(ledger: Ledger) -> list[str]:
    """Source tables whose snapshot is not done, in the connector section's order."""
    return [source for source, record in ledger.tables.items() if not record.done]


def record_scan(
    ledger: Ledger, source: str, *, scanned_to: Mapping[str, int], reads: int, marker: Mapping[str, int] | None
) -> Ledger:
    """Add what a scan of the table's topic found: `reads` more snapshot rows, maybe the last one."""
    record = ledger.tables[source]
    update: dict[str, object] = {"scanned_to": dict(scanned_to), "read_rows": record.read_rows + reads}
    if marker is not None and record.marker is None:
        update["marker"] = dict(marker)
    return _replace_table(ledger, source, record.model_copy(update=update))


def mark_done(ledger: Ledger, source: str, *, now: datetime) -> Ledger:
    """The table's snapshot is complete and landed; done stays done."""
    record = ledger.tables[source]
    if record.done:
        return ledger
    return _replace_table(ledger, source, record.model_copy(update={"done_at": now}))


def landed(marker: Mapping[str, int] | None, applied: Mapping[str, int]) -> bool:
    """Whether Hudi applied through the snapshot's last record (`applied`: partition -> newest offset)."""
    if not marker:
        return False
    return all(partition in applied and applied[partition] >= offset for partition, offset in marker.items())


def table_state(record: TableRecord, *, run_alive: bool) -> TableState:
    """The state to show for a table; `run_alive`: its last run's connector is deployed and not failed."""
    if record.done:
        return "done"
    if record.marker is not None or (record.last_run is not None and run_alive):
        return "running"
    if record.read_rows > 0 or record.last_run is not None:
        return "interrupted"
    return "not started"


def finish_refusal(ledger: Ledger, states: Mapping[str, TableState]) -> str | None:
    """Why incremental capture must not start yet, or None when every table is done."""
    if ledger.finished is not None:
        return (
            f"incremental capture of {ledger.connector} already started at {ledger.finished.at:%Y-%m-%d %H:%M}Z "
            f"from {ledger.finished.position}; `hudi-cdc resume-binlog` moves a running connector"
        )
    waiting = [f"{source} ({states.get(source, 'not started')})" for source in not_done(ledger)]
    if waiting:
        return (
            f"{len(waiting)} table(s) not done: {', '.join(waiting)}. Starting the binlog now would leave them "
            "without their snapshot rows: run `hudi-cdc snapshot resume` (or wait for the running run and the job), "
            "or pass --force to start anyway"
        )
    return None


def with_finish(ledger: Ledger, *, now: datetime, forced_past: Sequence[str] = ()) -> Ledger:
    """The ledger after incremental capture started from the first position."""
    finish = Finish(at=now, position=ledger.first_position, forced_past=list(forced_past))
    return ledger.model_copy(update={"finished": finish})


def _replace_table(ledger: Ledger, source: str, record: TableRecord) -> Ledger:
    return ledger.model_copy(update={"tables": {**ledger.tables, source: record}})


def _known(snapshot: Sequence[str], tables: Mapping[str, object]) -> None:
    unknown = [t for t in snapshot if t not in tables]
    if unknown:
        raise RelayRefused(f"{unknown} are not among the connector's tables {list(tables)}")
