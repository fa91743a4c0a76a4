"""Per-batch, per-table counts: every consumed record ends in exactly one outcome (semantics §6)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from hudi_cdc.events import Outcome

log = logging.getLogger(__name__)

OUTCOMES = tuple(o.value for o in Outcome)
"""Outcome names, in report order; each is a count field of TableMetrics."""
COUNTED = ("read", *OUTCOMES, "isolated", "behind_watermark")
"""The counts a commit records (see hudi_cdc.commit.progress)."""


@dataclass
class TableMetrics:
    """What one batch did to one table."""

    table: str
    read: int = 0
    applied: int = 0
    """Events whose values are in the table after the batch."""
    collapsed: int = 0
    """Events superseded by a newer event of the same key in the same batch."""
    late: int = 0
    """Events older than everything they touch in the stored row."""
    duplicate: int = 0
    deleted: int = 0
    """Delete and applied truncate events."""
    truncate_ignored: int = 0
    tombstone: int = 0
    skipped: int = 0
    """Records without a row change (see Outcome.SKIPPED)."""
    dead_letter: int = 0
    dead_letters_by_class: dict[str, int] = field(default_factory=dict)
    """Of dead_letter: records per error class (MalformedJson, BadValue, SchemaChangeError, ...)."""
    commit_seconds: float | None = None
    """Wall time of the Hudi write and commit (None when the batch wrote nothing)."""
    isolated: int = 0
    """Of dead_letter: records that failed the batch on their own and were isolated by splitting it."""
    behind_watermark: int = 0
    """Change events older than the watermark the table had already committed (applied or late)."""
    lost: int = 0
    """Offsets of the table's topics the batch skipped unread, in a run with `kafka.fail_on_data_loss:
    false`: deleted before it read them, or a recreated topic's first ones (`hudi_cdc.kafka.gaps`).
    Never read, so outside `read`."""
    parked: int = 0
    """Records of the batch set aside because the table is parked (`job.parking`). Never applied
    in this batch, so outside `read`: they are read again, and counted, when the table catches up."""
    upserted_rows: int = 0
    deleted_rows: int = 0
    commit_time: str | None = None
    write: str | None = None
    """How the commit was written: Hudi's operation (`bulk_insert`, `insert`, `upsert`), and
    `upsert_prepped` for an upsert that handed Hudi the stored rows' locations (`hudi.prepped`)."""
    committed_at: float | None = None
    """Epoch seconds when the Hudi commit completed: from then on an engine that reads the
    table's timeline at query time (Trino, Presto) sees these rows. Rows in a partition new to
    the metastore also wait for the batch's metastore sync (`BatchMetrics.hive_sync_lagging`)."""
    applied_through: dict[str, dict[str, int]] = field(default_factory=dict)
    """topic -> partition -> the last Kafka offset of the table's records in this batch."""
    watermark_ts_ms: int | None = None
    """The table's committed freshness watermark after the batch (hudi_cdc.commit.progress)."""
    replayed: bool = False
    """The batch was committed before a restart: these are that commit's counts, nothing was applied again."""
    error: str | None = None
    """Set when the table was stopped for this batch (its records went to the dead-letter store)."""

    def accounted(self) -> int:
        return sum(getattr(self, name) for name in OUTCOMES)

    def add(self, outcome: Outcome, count: int) -> None:
        """Count `count` more records with `outcome`."""
        setattr(self, outcome.value, getattr(self, outcome.value) + count)

    def absorb(self, other: TableMetrics) -> None:
        """Add the counts of `other` (a part of the same batch) to these; its newest commit wins."""
        for name in (*COUNTED, "upserted_rows", "deleted_rows", "lost", "parked"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.commit_time = other.commit_time or self.commit_time
        self.write = other.write or self.write
        self.watermark_ts_ms = other.watermark_ts_ms or self.watermark_ts_ms
        self.committed_at = max((t for t in (self.committed_at, other.committed_at) if t is not None), default=None)
        for error_class, count in other.dead_letters_by_class.items():
            self.dead_letters_by_class[error_class] = self.dead_letters_by_class.get(error_class, 0) + count
        if other.commit_seconds is not None:
            self.commit_seconds = (self.commit_seconds or 0.0) + other.commit_seconds
        for topic, partitions in other.applied_through.items():
            mine = self.applied_through.setdefault(topic, {})
            for partition, offset in partitions.items():
                mine[partition] = max(offset, mine.get(partition, offset))
        self.error = other.error or self.error

    def balanced(self) -> bool:
        """Do the outcomes add up to the records read?"""
        return self.accounted() == self.read


@dataclass
class BatchMetrics:
    """Everything one micro-batch did."""

    batch_id: int
    tables: list[TableMetrics] = field(default_factory=list)
    unrouted: int = 0
    """Records on topics no route maps (dead-lettered)."""
    seconds: float = 0.0
    hive_sync_lagging: list[str] = field(default_factory=list)
    """Tables whose newest commit is not registered in the metastore yet (retried next batch)."""
    first_read: dict[str, dict[str, int]] = field(default_factory=dict)
    """topic -> partition -> the first Kafka offset the batch read (any table's or unrouted)."""
    parked: dict[str, int] = field(default_factory=dict)
    """Tables parked after the batch -> records set aside while parked (`job.parking`)."""

    @property
    def read(self) -> int:
        return self.unrouted + sum(t.read for t in self.tables)

    def log(self) -> None:
        """One INFO line per table, WARNING when the counts do not add up or a table stopped."""
        for t in self.tables:
            counts = " ".join(f"{name}={getattr(t, name)}" for name in OUTCOMES)
            line = "batch %d table %s: read=%d %s upserted_rows=%d deleted_rows=%d commit=%s write=%s watermark=%s%s"
            args = (
                self.batch_id, t.table, t.read, counts, t.upserted_rows, t.deleted_rows, t.commit_time, t.write,
                t.watermark_ts_ms, " (committed before a restart; not applied again)" if t.replayed else "",
            )  # fmt: skip
            fields = {
                "batch_id": self.batch_id, "table": t.table, "read": t.read,
                **{name: getattr(t, name) for name in OUTCOMES},
                "upserted_rows": t.upserted_rows, "deleted_rows": t.deleted_rows, "commit": t.commit_time,
                "write": t.write, "watermark_ts_ms": t.watermark_ts_ms, "replayed": t.replayed,
            }  # fmt: skip
            if t.error or not t.balanced():
                fields["error"] = t.error or "counts do not add up"
                log.warning(line + " error=%s", *args, fields["error"], extra={"fields": fields})
            else:
                log.info(line, *args, extra={"fields": fields})
            if t.behind_watermark:
                log.warning(
                    "batch %d table %s: %d change event(s) older than the watermark already committed",
                    self.batch_id, t.table, t.behind_watermark,
                )  # fmt: skip
        if self.unrouted:
            log.warning(
                "batch %d: %d records on unrouted topics went to the dead-letter store",
                self.batch_id,
                self.unrouted,
            )
