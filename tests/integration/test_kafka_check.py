"""Kafka unreachable at start: one clear error within `kafka.connect_timeout`, no broker needed."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

import pytest

from hudi_cdc.config.models import KafkaSource
from hudi_cdc.errors import KafkaUnreachableError
from hudi_cdc.kafka.check import check_reachable

pytestmark = pytest.mark.integration


def _silent_port() -> int:
    """A localhost port with nothing listening (bound, never listened on, so connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _capture(call: Callable[[KafkaSource], object], kafka: KafkaSource, raised: list[BaseException]) -> None:
    try:
        call(kafka)
    except BaseException as exc:
        raised.append(exc)


def test_unreachable_kafka_fails_within_the_bound() -> None:
    kafka = KafkaSource.model_validate(
        {
            "bootstrap_servers": f"127.0.0.1:{_silent_port()}",
            "connect_timeout": "3 seconds",
            "properties": {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="s3cr3t!";',
                "max.poll.records": "10",
            },
        }
    )
    # The broker accepts the connection and never answers: only the bound ends the metadata request.
    # Run beside the test, so that a check that ignored its bound fails here instead of hanging.
    raised: list[BaseException] = []
    checking = threading.Thread(target=_capture, args=(check_reachable, kafka, raised), daemon=True)
    checking.start()
    checking.join(timeout=120)
    assert not checking.is_alive(), "check_reachable never returned: the connect_timeout bound did not end the request"
    (error,) = raised
    assert isinstance(error, KafkaUnreachableError), repr(error)
    message = str(error)
    assert kafka.bootstrap_servers in message and "did not answer within 3 seconds" in message
    assert "kafka.connect_timeout" in message and "s3cr3t!" not in message
