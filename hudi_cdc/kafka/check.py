"""Is Kafka reachable? Asked once at run start, with a bound, before the streaming query starts.

Spark's Kafka source retries an unreachable cluster forever with a warning a minute; this
check turns that into one clear error within `kafka.connect_timeout`.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from hudi_cdc.config.durations import format_duration
from hudi_cdc.config.models import KafkaSource
from hudi_cdc.errors import KafkaUnreachableError
from hudi_cdc.kafka.tls import is_java_tls_setting, librdkafka_tls

log = logging.getLogger(__name__)

# The Java client's SASL login module line; librdkafka takes the user and password as two settings.
_JAAS_FIELD = re.compile(r'\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')
# Java-client settings librdkafka does not know; they matter to Spark's source, not to this check.
# (TLS settings are translated by `kafka.tls`.)
_JAVA_ONLY = re.compile(r"^(sasl\.jaas\.config|.*\.class|.*\.callback\.handler.*)$")


def client_settings(kafka: KafkaSource) -> dict[str, str]:
    """The librdkafka settings equivalent to the job's Kafka settings (Java client names).

    ConfigError when a Java key store in `kafka.properties` cannot be read (`kafka.tls`).
    """
    settings = {"bootstrap.servers": kafka.bootstrap_servers, "log_level": "2"}
    for key, value in kafka.properties.items():
        if key == "sasl.jaas.config":
            for name, field_value in _JAAS_FIELD.findall(value):
                settings[f"sasl.{name}"] = re.sub(r"\\(.)", r"\1", field_value)
        if not _JAVA_ONLY.match(key) and not is_java_tls_setting(key):
            settings[key] = value
    for key, value in librdkafka_tls(kafka.properties).items():
        settings.setdefault(key, value)  # a librdkafka name set explicitly wins
    return settings


def check_reachable(kafka: KafkaSource) -> int:
    """Ask the brokers for their metadata; return the number of topics, or raise KafkaUnreachableError.

    Returns within `kafka.connect_timeout` (plus client start-up): the metadata request is the
    only call that waits.
    """
    return len(topic_names(kafka))


def topic_names(kafka: KafkaSource) -> list[str]:
    """The brokers' topics (internal ones included), sorted; KafkaUnreachableError as `check_reachable`."""
    timeout = kafka.connect_timeout.total_seconds()
    began = time.monotonic()
    # librdkafka tells why a connection failed (a TLS handshake, SASL) only to the error callback;
    # the metadata request itself ends with "transport failure" or a timeout
    connection_errors: list[str] = []

    def admin(settings: dict[str, str | int | float | bool]) -> AdminClient:
        conf: dict[str, Any] = {**settings, "error_cb": lambda error: connection_errors.append(str(error.str()))}
        return AdminClient(conf)

    client = librdkafka_client(admin, client_settings(kafka))
    try:
        metadata = client.list_topics(timeout=timeout)
    except KafkaException as exc:
        client.poll(0.5)  # serves the error callbacks queued meanwhile
        # the error names the broker state, never a setting's value
        reason = "; ".join(dict.fromkeys([_reason(exc), *connection_errors[-2:]]))
        raise KafkaUnreachableError(
            kafka.bootstrap_servers, timeout=format_duration(kafka.connect_timeout), reason=reason
        ) from None
    log.info("kafka %s answered in %.1fs (%d topics)", kafka.bootstrap_servers, time.monotonic() - began, len(metadata.topics))
    return sorted(metadata.topics)


_UNKNOWN_SETTING = re.compile(r'No such configuration property: "([^"]+)"')


Client = TypeVar("Client")


def librdkafka_client(make: Callable[[dict[str, str | int | float | bool]], Client], settings: dict[str, str]) -> Client:
    """`make(settings)` (a confluent-kafka client), leaving out each setting librdkafka refuses as unknown.

    Why: `kafka.properties` holds Java-client settings for Spark's source (`default.api.timeout.ms`...);
    the driver's own clients must not refuse to start over them. They still reach Spark.
    """
    while True:
        try:
            return make(dict[str, str | int | float | bool](settings))
        except KafkaException as exc:
            unknown = _UNKNOWN_SETTING.search(_reason(exc))
            if unknown is None or unknown.group(1) not in settings:
                raise
            log.debug("librdkafka does not know %s; left out of the driver's Kafka client", unknown.group(1))
            settings = {k: v for k, v in settings.items() if k != unknown.group(1)}


def _reason(exc: KafkaException) -> str:
    error = exc.args[0] if exc.args else None
    return str(error.str()) if error is not None and hasattr(error, "str") else str(exc)
