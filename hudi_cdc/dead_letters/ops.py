"""The dead-letter store as a workflow: select, list, show and purge rejected records.

Replaying is `job.replay.replay_dead_letters` (it runs the pipeline). Times are UTC instants;
`detected_at` is when a record was first rejected for its error class.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from hudi_cdc.avro.readable import AvroBodies, header_ref
from hudi_cdc.avro.registry import SchemaRef
from hudi_cdc.config.durations import parse_duration
from hudi_cdc.dead_letters.store import read
from hudi_cdc.events import kafka_position
from hudi_cdc.kafka.headers import KAFKA_HEADERS
from hudi_cdc.spark import fs

log = logging.getLogger(__name__)

LIST_MESSAGE_CHARS = 100
"""`list` shortens messages to one line of this length; `show` prints them whole."""

def _detected() -> Column:
    """Epoch seconds: comparisons in Spark independent of session and process time zones."""
    return F.col("detected_at").cast("double")


@dataclass(frozen=True)
class Selection:
    """Which dead letters a command works on; empty fields select everything."""

    tables: tuple[str, ...] = ()
    error_classes: tuple[str, ...] = ()
    since: datetime | None = None
    """Detected at or after this instant."""
    until: datetime | None = None
    """Detected before this instant."""
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None

    def condition(self) -> Column:
        """The filter as one Spark column expression."""
        condition = F.lit(True)
        if self.tables:
            condition &= F.col("table").isin(list(self.tables))
        if self.error_classes:
            condition &= F.col("error_class").isin(list(self.error_classes))
        if self.since is not None:
            condition &= _detected() >= self.since.timestamp()
        if self.until is not None:
            condition &= _detected() < self.until.timestamp()
        for name in ("topic", "partition", "offset"):
            value = getattr(self, name)
            if value is not None:
                condition &= F.col(name) == F.lit(value)
        return condition


def point_in_time(text: str, *, now: datetime | None = None) -> datetime:
    """An ISO 8601 time (UTC unless it names a zone) or a duration meaning that long ago (`2 hours`)."""
    now = now or datetime.now(UTC)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        try:
            return now - parse_duration(text)
        except ValueError:
            raise ValueError(
                f"{text!r} is neither an ISO time (2024-05-01, 2024-05-01T12:00:00Z) nor a duration ago (`2 hours`)"
            ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def select(spark: SparkSession, path: str, selection: Selection) -> DataFrame | None:
    """The selected dead letters, or None when the store is empty."""
    letters = read(spark, path, every_column=True)
    return None if letters is None else letters.filter(selection.condition())


def listing(letters: DataFrame, *, limit: int) -> tuple[int, list[dict[str, Any]]]:
    """(how many are selected, the newest `limit` of them as one line each)."""
    total = letters.count()
    newest = _with_epoch(letters).orderBy(F.col("_detected").desc(), "topic", "partition", "offset").limit(limit).collect()
    return total, [_line(row) for row in newest]


def summary(letters: DataFrame) -> list[dict[str, Any]]:
    """Counts per table and error class, with the first and last detection."""
    groups = (
        letters.groupBy("table", "error_class")
        .agg(F.count(F.lit(1)).alias("records"), F.min(_detected()).alias("first"), F.max(_detected()).alias("last"))
        .orderBy("table", "error_class")
        .collect()
    )
    return [
        {
            "table": g["table"],
            "error_class": g["error_class"],
            "records": g["records"],
            "first_detected": _iso(g["first"]),
            "last_detected": _iso(g["last"]),
        }
        for g in groups
    ]


def records(letters: DataFrame, *, limit: int, avro: AvroBodies | None = None) -> list[dict[str, Any]]:
    """Full records, oldest first by Kafka position, key and value decoded for reading."""
    rows = _with_epoch(letters).orderBy("topic", "partition", "offset").limit(limit).collect()
    return [render(row, avro=avro) for row in rows]


def render(row: Row, *, avro: AvroBodies | None = None) -> dict[str, Any]:
    """One dead letter for people and machines: position, reason, key and value decoded.

    With `avro`, Avro keys and values (framed, or named by an Apicurio id header) are decoded
    with their writer schemas.
    """
    headers = row.asDict().get(KAFKA_HEADERS)
    return {
        "record": _where(row),
        "table": row["table"],
        "error_class": row["error_class"],
        "error_message": row["error_message"],
        "detected_at": _iso(row["_detected"]),
        "job": row["job"],
        "batch_id": row["batch_id"],
        "key": decode_bytes(row["key"], avro=avro, header_ref=header_ref(headers, "key")),
        "value": decode_bytes(row["value"], avro=avro, header_ref=header_ref(headers, "value")),
        "headers": _headers(headers),
    }


def _headers(headers: list[Any] | None) -> list[list[Any]] | None:
    """Kafka headers as [key, value] pairs in record order (a key may repeat), values as `decode_bytes` reads them."""
    return None if headers is None else [[h["key"], decode_bytes(h["value"])] for h in headers]


def decode_bytes(data: bytes | bytearray | None, *, avro: AvroBodies | None = None, header_ref: SchemaRef | None = None) -> Any:
    """Avro (with `avro`) when framed or named by `header_ref`, else JSON when UTF-8 JSON, else the
    UTF-8 text, else {"base64": ...}."""
    if data is None:
        return None
    raw = bytes(data)
    if avro is not None:
        readable = avro.decode(raw, header_ref)
        if readable is not None:
            return readable
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode("ascii")}
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass(frozen=True)
class PurgeResult:
    """What a purge removed (or, dry, would remove)."""

    cutoff: str
    files: int
    records: int
    dry_run: bool


def purge(spark: SparkSession, path: str, *, older_than: timedelta, tables: tuple[str, ...] = (), dry_run: bool = False) -> PurgeResult:
    """Delete the dead letters detected more than `older_than` ago (of `tables`, or all).

    Works on whole files: every file holds the rejects of one `store` call, which share one
    `detected_at`, so deleting a file removes exactly the records it is old enough for. No
    file is rewritten, so a job appending meanwhile loses nothing.
    """
    cutoff = datetime.now(UTC) - older_than
    letters = read(spark, path)
    if letters is None:
        return PurgeResult(cutoff=cutoff.isoformat(), files=0, records=0, dry_run=dry_run)
    if tables:
        letters = letters.filter(F.col("table").isin(list(tables)))
    files = (
        letters.groupBy(F.input_file_name().alias("file"))
        .agg(F.max(_detected()).alias("newest"), F.count(F.lit(1)).alias("records"))
        .filter(F.col("newest") < cutoff.timestamp())
        .collect()
    )
    if not dry_run:
        for f in files:
            fs.delete(spark, f["file"])
        log.info("dead letters: purged %d records in %d files detected before %s", sum(f["records"] for f in files), len(files), cutoff.isoformat())
    return PurgeResult(cutoff=cutoff.isoformat(), files=len(files), records=sum(int(f["records"]) for f in files), dry_run=dry_run)


def _with_epoch(letters: DataFrame) -> DataFrame:
    return letters.withColumn("_detected", _detected())


def _line(row: Row) -> dict[str, Any]:
    message = re.sub(r"\s+", " ", row["error_message"] or "")
    if len(message) > LIST_MESSAGE_CHARS:
        message = message[: LIST_MESSAGE_CHARS - 3] + "..."
    return {
        "detected_at": _iso(row["_detected"]),
        "table": row["table"],
        "record": _where(row),
        "error_class": row["error_class"],
        "error_message": message,
    }


def _where(row: Row) -> str:
    return kafka_position(row["topic"], row["partition"], row["offset"])


def _iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")
