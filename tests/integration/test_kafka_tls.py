"""Kafka over TLS with a private CA and client certificates: the TLS settings are given once, in
`kafka.properties` with the Java client's names, and both Spark's source and the driver's own
clients (the start check) reach a real broker with them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from devkit.services.kafka import BrokerTls, LocalKafka
from devkit.services.process import run_dir
from hudi_cdc.cli.console import cli
from hudi_cdc.cli.exit_codes import CONFIGURATION
from hudi_cdc.config.models import KafkaSource
from hudi_cdc.errors import KafkaUnreachableError
from hudi_cdc.kafka.check import check_reachable, topic_names
from tests.support.accounts import account, accounts_source
from tests.support.harness import Job
from tests.support.tls import PASSWORD, Identity, PrivateCA

pytestmark = pytest.mark.integration

PROBE = "tls-probe"
"""A topic the broker holds: the driver's clients list it once the TLS connection stands."""


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> PrivateCA:
    return PrivateCA.create(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def client(ca: PrivateCA) -> Identity:
    return ca.issue("client")


@pytest.fixture(scope="module")
def tls_kafka(ca: PrivateCA) -> Iterator[LocalKafka]:
    """A broker whose TLS listener shows a certificate of the private CA and requires a client certificate."""
    server = ca.issue("broker")
    tls = BrokerTls(keystore=server.p12, password=PASSWORD, client_auth=True, truststore=ca.truststore_p12)
    with LocalKafka(directory=run_dir("kafka-tls"), tls=tls) as broker:
        broker.create_topics([PROBE])
        yield broker


def _kafka(broker: LocalKafka, properties: dict[str, str]) -> KafkaSource:
    return KafkaSource.model_validate(
        {"bootstrap_servers": broker.tls_bootstrap_servers, "connect_timeout": "8 seconds",
         "properties": {"security.protocol": "SSL", **properties}}
    )  # fmt: skip


def test_a_job_reads_a_tls_broker_with_a_private_ca_and_a_client_certificate(
    spark: SparkSession, tls_kafka: LocalKafka, ca: PrivateCA, client: Identity, tmp_path: Path
) -> None:
    # PEM CA and PKCS12 client key store: files both clients read as they are
    properties = {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.ca_pem),
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(client.p12),
        "ssl.keystore.password": PASSWORD,
    }
    job = Job(spark, tls_kafka, tmp_path, [{"name": "accounts", "key": ["id"]}])
    src = accounts_source(job)
    # produced through the broker's PLAINTEXT listener; the job reads only the TLS one
    job.produce("accounts", [src.change("c", after=account(i, f"n{i}", "1.00"), pos=100 + i) for i in range(1, 4)])

    assert PROBE in topic_names(_kafka(tls_kafka, properties))  # the driver's start check, alone
    (batch,) = job.run(kafka={"bootstrap_servers": tls_kafka.tls_bootstrap_servers, "properties": properties})

    assert [t.read for t in batch.tables] == [3]
    assert [r["id"] for r in job.rows_spark("accounts")] == [1, 2, 3]


@pytest.mark.parametrize(
    "stores",
    [
        pytest.param({"truststore": "JKS", "keystore": "JKS"}, id="jks-truststore-jks-keystore"),
        pytest.param({"truststore": "PKCS12", "keystore": "PEM"}, id="pkcs12-truststore-pem-keystore"),
    ],
)
def test_the_start_check_reads_java_key_stores(
    tls_kafka: LocalKafka, ca: PrivateCA, client: Identity, stores: dict[str, str]
) -> None:
    """JKS and PKCS12 stores, which librdkafka cannot read, reach the driver's clients converted."""
    truststore = ca.truststore_jks if stores["truststore"] == "JKS" else ca.truststore_p12
    keystore = {"JKS": client.jks, "PEM": client.pem}[stores["keystore"]]
    properties = {
        "ssl.truststore.type": stores["truststore"],
        "ssl.truststore.location": str(truststore),
        "ssl.truststore.password": PASSWORD,
        "ssl.keystore.type": stores["keystore"],
        "ssl.keystore.location": str(keystore),
        **({"ssl.keystore.password": PASSWORD} if stores["keystore"] == "JKS" else {}),
    }

    assert PROBE in topic_names(_kafka(tls_kafka, properties))


def test_without_the_ca_the_start_check_fails_naming_the_broker(tls_kafka: LocalKafka, client: Identity) -> None:
    kafka = _kafka(tls_kafka, {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(client.p12),
                               "ssl.keystore.password": PASSWORD})  # fmt: skip

    with pytest.raises(KafkaUnreachableError) as raised:
        check_reachable(kafka)

    message = str(raised.value)
    assert tls_kafka.tls_bootstrap_servers in message
    assert "certificate verify failed" in message, message
    assert PASSWORD not in message


def test_without_a_client_certificate_the_broker_refuses(tls_kafka: LocalKafka, ca: PrivateCA) -> None:
    kafka = _kafka(tls_kafka, {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca.ca_pem)})

    with pytest.raises(KafkaUnreachableError) as raised:
        check_reachable(kafka)

    assert tls_kafka.tls_bootstrap_servers in str(raised.value)


def test_check_says_a_missing_ca_is_a_setting_to_fix(
    spark: SparkSession, tls_kafka: LocalKafka, client: Identity, tmp_path: Path
) -> None:
    job = Job(spark, tls_kafka, tmp_path, [{"name": "accounts", "key": ["id"]}])
    properties = {"security.protocol": "SSL", "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(client.p12),
                  "ssl.keystore.password": PASSWORD}  # fmt: skip
    path = job.config_file(kafka={"bootstrap_servers": tls_kafka.tls_bootstrap_servers, "properties": properties,
                                  "connect_timeout": "8 seconds"})  # fmt: skip

    result = CliRunner().invoke(cli, ["check", "--config", str(path), "--json"])

    assert result.exit_code == CONFIGURATION, result.output
    rows = {row["component"]: row for row in json.loads(result.stdout.strip().splitlines()[-1])["rows"]}
    assert rows["kafka"]["status"] == "configuration"
    assert "certificate verify failed" in rows["kafka"]["detail"]
    assert "ssl.truststore.location" in rows["kafka"]["fix"]
    assert PASSWORD not in result.output
