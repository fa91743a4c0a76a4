"""Kafka lag per table, from a real broker's high watermarks."""

from __future__ import annotations

import uuid

import pytest

from devkit.services.kafka import LocalKafka
from hudi_cdc.config import KafkaSource
from hudi_cdc.kafka_lag import EndOffsets, lag

pytestmark = pytest.mark.integration


def test_lag_counts_the_records_after_the_last_applied_offset(kafka: LocalKafka) -> None:
    topic = f"lag{uuid.uuid4().hex[:8]}"
    kafka.create_topics([topic])
    kafka.produce(topic, [(b"k", b"v")] * 7)
    end_offsets = EndOffsets(KafkaSource(bootstrap_servers=kafka.bootstrap_servers))
    try:
        end = end_offsets.of({topic: {"0": 0}})
        assert end == {topic: {"0": 7}}
        assert lag({topic: {"0": 3}}, end) == 3  # offsets 4, 5 and 6 are not applied
        assert lag({topic: {"0": 6}}, end) == 0
    finally:
        end_offsets.close()
