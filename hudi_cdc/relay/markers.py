"""Scan a Debezium topic for snapshot progress: snapshot reads, and the table's last snapshot record.

Debezium (3.5, the version infra/connect pins) sets `source.snapshot` on snapshot reads (op `r`)
to `first`, `first_in_data_collection`, `true`, `last_in_data_collection` or, on the very last
record of the whole snapshot, `last`. The last record of a table is therefore the one marked
`last_in_data_collection` or `last`. A scan starts where the previous one stopped and reads up
to the high watermark, so `status` costs only the records added since it last ran.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from hudi_cdc.config.models import KafkaSource
from hudi_cdc.errors import ConnectError
from hudi_cdc.kafka.check import client_settings, librdkafka_client

LAST_MARKERS = frozenset({"last", "last_in_data_collection"})
_POLL_SECONDS = 1.0


@dataclass(frozen=True)
class TopicScan:
    """What one scan of a topic found."""

    scanned_to: dict[str, int]
    """partition -> next offset to read."""
    reads: int
    """Snapshot reads (op `r`) among the scanned records."""
    marker: dict[str, int] | None
    """partition -> offset of the table's last snapshot record, when the scan met it."""


def snapshot_flag(value: bytes | None) -> tuple[str | None, str | None]:
    """`(op, source.snapshot)` of a Debezium JSON record value (with or without a schema envelope)."""
    if value is None:
        return None, None
    try:
        document: Any = json.loads(value)
    except ValueError:
        return None, None
    if not isinstance(document, dict):
        return None, None
    payload = document.get("payload", document) if "schema" in document else document
    if not isinstance(payload, dict):
        return None, None
    source = payload.get("source") or {}
    flag = source.get("snapshot") if isinstance(source, dict) else None
    return payload.get("op"), (str(flag) if flag is not None else None)


def scan_topic(kafka: KafkaSource, topic: str, *, start: Mapping[str, int], timeout: float = 30.0) -> TopicScan:
    """Read `topic` from `start` (partition -> offset; 0 where absent) to its high watermarks."""
    consumer = librdkafka_client(
        Consumer, {**client_settings(kafka), "group.id": f"hudi-cdc-relay-{uuid.uuid4().hex}", "enable.auto.commit": "false"}
    )
    try:
        metadata = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return TopicScan(scanned_to=dict(start), reads=0, marker=None)  # no record yet: topic not created
        todo: dict[int, int] = {}
        positions: dict[str, int] = {}
        for partition in sorted(metadata.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
            begin = max(start.get(str(partition), 0), low)
            positions[str(partition)] = high
            if begin < high:
                todo[partition] = high
                positions[str(partition)] = begin
        reads, marker = 0, None
        if todo:
            consumer.assign([TopicPartition(topic, p, positions[str(p)]) for p in todo])
            while todo:
                msg = consumer.poll(_POLL_SECONDS)
                if msg is None:
                    continue
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise ConnectError(f"reading {topic}: {error}", where="kafka")
                partition, offset = int(msg.partition() or 0), int(msg.offset() or 0)
                op, flag = snapshot_flag(msg.value())
                if op == "r":
                    reads += 1
                    if flag in LAST_MARKERS:
                        marker = {str(partition): offset}
                positions[str(partition)] = offset + 1
                if offset + 1 >= todo.get(partition, 0):
                    todo.pop(partition, None)
        return TopicScan(scanned_to=positions, reads=reads, marker=marker)
    finally:
        consumer.close()
