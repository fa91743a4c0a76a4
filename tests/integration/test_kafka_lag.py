"""Kafka lag per table, from a real broker's high watermarks; its oldest offsets after a deletion."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from devkit.services.kafka import LocalKafka
from hudi_cdc.config.models import KafkaSource
from hudi_cdc.kafka.lag import Watermarks, lag

pytestmark = pytest.mark.integration


def test_lag_counts_the_records_after_the_last_applied_offset(kafka: LocalKafka) -> None:
    topic = f"lag{uuid.uuid4().hex[:8]}"
    kafka.create_topics([topic])
    kafka.produce(topic, [(b"k", b"v")] * 7)
    watermarks = Watermarks(KafkaSource(bootstrap_servers=kafka.bootstrap_servers))
    try:
        end = watermarks.ends({topic: {"0": 0}})
        assert end == {topic: {"0": 7}}
        assert lag({topic: {"0": 3}}, end) == 3  # offsets 4, 5 and 6 are not applied
        assert lag({topic: {"0": 6}}, end) == 0
        assert watermarks.starts({topic: {"0": 0}}) == {topic: {"0": 0}}
        admin = AdminClient(kafka.client_config())  # held: a client collected early never answers its futures
        for future in admin.delete_records([TopicPartition(topic, 0, 4)]).values():
            future.result()
        assert watermarks.starts({topic: {"0": 0}}) == {topic: {"0": 4}}  # what retention leaves
        assert watermarks.ends({topic: {"0": 0}}) == {topic: {"0": 7}}
    finally:
        watermarks.close()
