"""The start-up Kafka check speaks librdkafka: the Java client's settings are translated."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaException

from hudi_cdc.config.models import KafkaSource
from hudi_cdc.kafka.check import client_settings, librdkafka_client


def test_java_client_settings_are_translated_for_the_check() -> None:
    kafka = KafkaSource.model_validate(
        {
            "bootstrap_servers": "b:9092",
            "properties": {
                "sasl.jaas.config": 'x required username="u" password="p\\"w";',
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": "/t",
            },
        }
    )
    settings = client_settings(kafka)
    assert settings["sasl.username"] == "u" and settings["sasl.password"] == 'p"w'
    assert "sasl.jaas.config" not in settings and "ssl.truststore.location" not in settings
    assert settings["ssl.ca.location"] == "/t"


def test_the_drivers_kafka_clients_leave_out_java_only_settings_and_refuse_bad_values() -> None:
    """`kafka.properties` holds settings for Spark's Java client too; librdkafka refuses unknown names."""
    settings = {"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "default.api.timeout.ms": "3000"}
    with pytest.raises(KafkaException, match=r"default\.api\.timeout\.ms"):
        Consumer(dict(settings))
    consumer = librdkafka_client(Consumer, settings)
    consumer.close()
    with pytest.raises(KafkaException, match=r"session\.timeout\.ms"):
        librdkafka_client(Consumer, {**settings, "session.timeout.ms": "not a number"})
