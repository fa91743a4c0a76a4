"""offsets.py: a batch's Kafka range as messages name it."""

from __future__ import annotations

from hudi_cdc.commit.offsets import KafkaRange


def test_a_range_names_every_partition_with_its_first_and_last_offset() -> None:
    kafka = KafkaRange(first={"b": {"0": 5}, "a": {"10": 7, "2": 1}}, last={"b": {"0": 9}, "a": {"10": 8, "2": 4}})
    assert kafka.describe() == "a[2]@1..4, a[10]@7..8, b[0]@5..9"
