"""The start-up Kafka check speaks librdkafka: the Java client's settings are translated."""

from __future__ import annotations

from hudi_cdc.config import KafkaSource
from hudi_cdc.kafka_check import client_settings


def test_java_client_settings_are_translated_for_the_check() -> None:
    kafka = KafkaSource.model_validate(
        {
            "bootstrap_servers": "b:9092",
            "properties": {"sasl.jaas.config": 'x required username="u" password="p\\"w";', "ssl.truststore.location": "/t"},
        }
    )
    settings = client_settings(kafka)
    assert settings["sasl.username"] == "u" and settings["sasl.password"] == 'p"w'
    assert "sasl.jaas.config" not in settings and "ssl.truststore.location" not in settings
