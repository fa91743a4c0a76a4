"""Kafka TLS given once: the Java client's `ssl.*` in `kafka.properties` become librdkafka's for the
driver's clients (the conversions of Java key stores run keytool: tests/integration/test_kafka_tls.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_cdc.config.models import KafkaSource
from hudi_cdc.errors import ConfigError
from hudi_cdc.kafka.check import client_settings
from hudi_cdc.kafka.tls import librdkafka_tls


@pytest.mark.parametrize(
    ("java", "librdkafka"),
    [
        pytest.param(
            {"ssl.truststore.type": "PEM", "ssl.truststore.location": "/ca.pem"},
            {"ssl.ca.location": "/ca.pem"},
            id="pem-truststore",
        ),
        pytest.param(
            {"ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----"},
            {"ssl.ca.pem": "-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----"},
            id="pem-truststore-inline",
        ),
        pytest.param(
            {"ssl.keystore.type": "PEM", "ssl.keystore.location": "/me.pem", "ssl.key.password": "kp"},
            {"ssl.certificate.location": "/me.pem", "ssl.key.location": "/me.pem", "ssl.key.password": "kp"},
            id="pem-keystore",
        ),
        pytest.param(
            {"ssl.keystore.certificate.chain": "CHAIN", "ssl.keystore.key": "KEY"},
            {"ssl.certificate.pem": "CHAIN", "ssl.key.pem": "KEY"},
            id="pem-keystore-inline",
        ),
        pytest.param(
            {"ssl.keystore.type": "pkcs12", "ssl.keystore.location": "/me.p12", "ssl.keystore.password": "sp"},
            {"ssl.keystore.location": "/me.p12", "ssl.keystore.password": "sp"},
            id="pkcs12-keystore-as-is",
        ),
        pytest.param(
            {"ssl.endpoint.identification.algorithm": ""},
            {"ssl.endpoint.identification.algorithm": "none"},
            id="hostname-check-off",
        ),
        pytest.param(
            # librdkafka's own name wins: the JKS store (not even there) is not converted
            {"ssl.truststore.location": "/missing.jks", "ssl.ca.location": "/ca.pem"},
            {},
            id="explicit-ca-location-wins",
        ),
    ],
)
def test_java_tls_settings_become_librdkafkas(java: dict[str, str], librdkafka: dict[str, str]) -> None:
    assert librdkafka_tls(java) == librdkafka


def test_the_drivers_clients_get_translated_tls_and_no_java_names() -> None:
    kafka = KafkaSource.model_validate(
        {
            "bootstrap_servers": "b:9093",
            "properties": {
                "security.protocol": "SSL",
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": "/ca.pem",
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": "/me.p12",
                "ssl.keystore.password": "sp",
                "ssl.ca.location": "/explicit.pem",
            },
        }
    )
    settings = client_settings(kafka)
    assert settings == {
        "bootstrap.servers": "b:9093",
        "log_level": "2",
        "security.protocol": "SSL",
        "ssl.ca.location": "/explicit.pem",
        "ssl.keystore.location": "/me.p12",
        "ssl.keystore.password": "sp",
    }


def test_a_java_store_that_is_not_there_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"ssl\.truststore\.location: cannot read .*missing\.jks"):
        librdkafka_tls({"ssl.truststore.location": str(tmp_path / "missing.jks")})


def test_without_keytool_a_java_store_is_refused_saying_what_to_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "trust.jks"
    store.write_bytes(b"not read")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))

    with pytest.raises(ConfigError, match=r"ssl\.truststore\.type: PEM") as raised:
        librdkafka_tls({"ssl.truststore.location": str(store), "ssl.truststore.password": "secret-pw"})

    assert "secret-pw" not in str(raised.value)


def test_a_jks_key_store_needs_its_password(tmp_path: Path) -> None:
    store = tmp_path / "me.jks"
    store.write_bytes(b"not read")

    with pytest.raises(ConfigError, match=r"ssl\.keystore\.password"):
        librdkafka_tls({"ssl.keystore.location": str(store)})
