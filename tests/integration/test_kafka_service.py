"""LocalKafka: topics are created, records go in and come back out in order, tombstones included."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Message

from devkit.services.kafka import LocalKafka

ReadTopic = Callable[..., list[Message]]

pytestmark = pytest.mark.integration


def test_produced_records_are_consumed_back_in_order_with_tombstone(
    kafka: LocalKafka, read_topic: ReadTopic
) -> None:
    topic = f"test-kafka-{uuid.uuid4().hex[:12]}"
    kafka.create_topics([topic])
    records = [
        (b'{"id": 1}', b'{"op": "c"}'),
        (None, b"keyless"),
        (b'{"id": 1}', b'{"op": "d"}'),
        (b'{"id": 1}', None),  # the tombstone Debezium sends after a delete
    ]

    assert kafka.produce(topic, records) == len(records)

    consumed = read_topic(topic, count=len(records))
    assert [(m.key(), m.value()) for m in consumed] == records
    assert [m.offset() for m in consumed] == [0, 1, 2, 3]


def test_bootstrap_servers_is_a_free_loopback_port(kafka: LocalKafka) -> None:
    host, port = kafka.bootstrap_servers.split(":")
    assert host == "127.0.0.1"
    assert int(port) not in (9092, 9093)
    assert kafka.log_path.is_file()
