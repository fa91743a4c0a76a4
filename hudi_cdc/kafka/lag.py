"""Kafka lag per table: records in its topics' partitions that the table has not applied yet.

Asked by the Prometheus listener after each batch, on the driver: one metadata request per
partition (librdkafka's watermark query), never a read of the records. The oldest offsets
serve `kafka_gaps` the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaException, TopicPartition

from hudi_cdc.config.models import KafkaSource
from hudi_cdc.kafka.check import client_settings, librdkafka_client

log = logging.getLogger(__name__)

Positions = Mapping[str, Mapping[str, int]]
"""topic -> partition (as text) -> offset."""


def lag(applied: Positions, end: Positions) -> int:
    """Records after the applied offset, summed over the partitions the table has applied from.

    `applied` holds the last offset applied or consumed (a transaction marker has no record),
    `end` Kafka's high watermark (the next offset to be written), so a caught-up partition has
    end = applied + 1.
    """
    return sum(
        max(0, end.get(topic, {}).get(partition, offset + 1) - offset - 1)
        for topic, partitions in applied.items()
        for partition, offset in partitions.items()
    )


class Watermarks:
    """Kafka's oldest and next offsets of topic partitions, through one long-lived consumer (never subscribed)."""

    def __init__(self, kafka: KafkaSource) -> None:
        settings = client_settings(kafka) | {"group.id": "hudi-cdc-lag", "enable.auto.commit": "false"}
        self._consumer = librdkafka_client(Consumer, settings)
        self._timeout = kafka.connect_timeout.total_seconds()

    def ends(self, partitions: Positions) -> dict[str, dict[str, int]]:
        """The high watermark (next offset to be written) of each partition named in `partitions`;
        missing where Kafka did not answer."""
        return self._watermark(partitions, high=True)

    def starts(self, partitions: Positions) -> dict[str, dict[str, int]]:
        """The log start offset (oldest offset held) of each partition named in `partitions`;
        missing where Kafka did not answer."""
        return self._watermark(partitions, high=False)

    def _watermark(self, partitions: Positions, *, high: bool) -> dict[str, dict[str, int]]:
        found: dict[str, dict[str, int]] = {}
        for topic, names in partitions.items():
            for partition in names:
                try:
                    low_high = self._consumer.get_watermark_offsets(
                        TopicPartition(topic, int(partition)), timeout=self._timeout, cached=False
                    )
                except KafkaException as exc:
                    log.warning("kafka: no watermark for %s[%s]: %s", topic, partition, exc)
                    continue
                if low_high is not None:  # None: Kafka did not answer in time
                    found.setdefault(topic, {})[partition] = int(low_high[1 if high else 0])
        return found

    def close(self) -> None:
        self._consumer.close()
