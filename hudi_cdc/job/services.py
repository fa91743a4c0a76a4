"""Can the job reach every service its file names, with the credentials it gives? (`hudi-cdc check`)

One real call per component, each bounded, none writing anything: Kafka's metadata, the schema
registry's subjects, Kafka Connect's connectors, the Hive Metastore's databases, and whether
each folder of the job (checkpoint, dead letters, every table's base path) exists on its file
system. A component that fails does not stop the others from being checked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pyspark.sql import SparkSession

from hudi_cdc.avro.registry import SchemaFetcher
from hudi_cdc.config.models import Config
from hudi_cdc.errors import ConfigError, ConnectError, KafkaUnreachableError
from hudi_cdc.kafka.check import topic_names
from hudi_cdc.relay.connect import ConnectRest
from hudi_cdc.spark import fs
from hudi_cdc.spark.session import error_summary, jvm

log = logging.getLogger(__name__)

Status = Literal["ok", "unreachable", "configuration"]


@dataclass(frozen=True)
class Finding:
    """What one component answered: `ok`, `unreachable` (a service or the storage) or `configuration`
    (a setting of the file is wrong), with what it said and, when it failed, what to do."""

    component: str
    target: str
    status: Status
    detail: str
    fix: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def check_services(config: Config, *, session: Callable[[], SparkSession]) -> list[Finding]:
    """A finding per configured component, in the order of the data path (Kafka first, storage last).

    `session` makes the Spark session the metastore and storage checks need (Hadoop's file systems
    and the metastore client live in its JVM); it is called once, after the network services.
    """
    findings = [_kafka(config)]
    if config.schema_registry is not None:
        findings.append(_registry(config))
    if config.connector is not None:
        findings.append(_connect(config))
    spark = session()
    if config.job.metastore_uris:
        findings.append(_metastore(spark, config.job.metastore_uris))
    findings += [_storage(spark, what, path) for what, path in storage_paths(config)]
    return findings


def storage_paths(config: Config) -> list[tuple[str, str]]:
    """(what, path) of every folder the job writes: checkpoint, dead letters, each table's base path
    (a template's up to its first placeholder)."""
    paths = [("checkpoint", config.job.checkpoint_dir), ("dead letters", config.job.dead_letter_path)]
    paths += [(f"table {t.name}", t.base_path) for t in config.tables]
    for template in config.templates:
        prefix = template.base_path.split("{", 1)[0].rstrip("/") or "/"
        paths.append((f"template {template.pattern}", prefix))
    return paths


def _kafka(config: Config) -> Finding:
    kafka = config.kafka
    try:
        topics = topic_names(kafka)
    except KafkaUnreachableError as exc:
        status, fix = kafka_diagnosis(exc.reason)
        return Finding("kafka", kafka.bootstrap_servers, status, exc.reason, fix)
    except ConfigError as exc:
        return Finding("kafka", kafka.bootstrap_servers, "configuration", "; ".join(exc.problems),
                       "fix the TLS settings in `kafka.properties`")  # fmt: skip
    return Finding("kafka", kafka.bootstrap_servers, "ok", f"{len(topics)} topics")


def kafka_diagnosis(reason: str) -> tuple[Status, str]:
    """The status and the fix of librdkafka's `reason` for not answering: a refused certificate or
    login is a setting to fix (`configuration`), anything else the brokers being away."""
    if "certificate verify failed" in reason or "could not be verified" in reason:
        return "configuration", ("the broker's certificate is not signed by a trusted CA: set `ssl.truststore.location` "
                                 "(with `ssl.truststore.type: PEM` for a PEM file) in `kafka.properties`")  # fmt: skip
    if "SASL" in reason or "uthentication" in reason:
        return "configuration", "check the SASL settings (`sasl.mechanism`, `sasl.jaas.config`) in `kafka.properties`"
    return "unreachable", ("check that the brokers run, `kafka.bootstrap_servers`, and `security.protocol` with its "
                           "ssl/sasl settings in `kafka.properties`")  # fmt: skip


def _registry(config: Config) -> Finding:
    registry = config.schema_registry
    assert registry is not None
    try:
        subjects = SchemaFetcher(registry).ping()
    except ConfigError as exc:
        return Finding("schema registry", registry.url, "configuration", "; ".join(exc.problems),
                       "fix the files of `schema_registry.tls`")  # fmt: skip
    except (OSError, ValueError) as exc:
        reason = _http_reason(exc)
        return Finding("schema registry", registry.url, _http_status(reason), reason, _http_fix("schema_registry", reason))
    return Finding("schema registry", registry.url, "ok", f"{subjects} subjects")


def _connect(config: Config) -> Finding:
    section = config.connector
    assert section is not None
    try:
        connectors = ConnectRest.for_section(section).connectors()
    except ConfigError as exc:
        return Finding("kafka connect", section.connect_url, "configuration", "; ".join(exc.problems),
                       "fix the files of `connector.tls`")  # fmt: skip
    except ConnectError as exc:
        return Finding("kafka connect", section.connect_url, _http_status(str(exc)), str(exc), _http_fix("connector", str(exc)))
    return Finding("kafka connect", section.connect_url, "ok", f"{len(connectors)} connectors")


def _http_reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)  # urllib's URLError wraps the socket's or TLS's error
    return f"{type(exc).__name__}: {reason if reason is not None else exc}"


def _http_status(message: str) -> Status:
    """A refused certificate or refused credentials are settings to fix; anything else the service being away."""
    refused = "CERTIFICATE_VERIFY_FAILED" in message or "refused the credentials" in message
    return "configuration" if refused else "unreachable"


def _http_fix(section: str, message: str) -> str:
    if "CERTIFICATE_VERIFY_FAILED" in message:
        return f"the server's certificate is not signed by a trusted CA: set `{section}.tls.ca_file`"
    if "401" in message or "403" in message or "credentials" in message:
        return f"check `{section}.username` and `{section}.password`"
    if "alert" in message or "EOF" in message:
        return f"the server may want a client certificate: set `{section}.tls.cert_file` and `key_file`"
    url = "connect_url" if section == "connector" else "url"
    return f"check that the service runs and `{section}.{url}`"


def _metastore(spark: SparkSession, uris: str) -> Finding:
    """The metastore's databases, through the Hive client Hudi's sync uses (in the session's JVM)."""
    gateway = jvm(spark)
    conf = gateway.org.apache.hadoop.hive.conf.HiveConf()
    conf.set("hive.metastore.uris", uris)
    # one attempt, bounded: a check must not retry for minutes as a long-lived client would
    conf.set("hive.metastore.connect.retries", "1")
    conf.set("hive.metastore.client.connect.retry.delay", "1")
    conf.set("hive.metastore.client.socket.timeout", "10")
    try:
        client = gateway.org.apache.hadoop.hive.metastore.HiveMetaStoreClient(conf)
        try:
            databases = list(client.getAllDatabases())
        finally:
            client.close()
    except Exception as exc:  # py4j's Java errors: MetaException, TTransportException
        return Finding("metastore", uris, "unreachable", _one_line(error_summary(exc)),
                       "check that the metastore runs and `job.metastore_uris`")  # fmt: skip
    return Finding("metastore", uris, "ok", f"{len(databases)} databases")


def _storage(spark: SparkSession, what: str, path: str) -> Finding:
    component = f"storage ({what})"
    try:
        exists = fs.exists(spark, path)
    except Exception as exc:  # py4j's Java errors: an unknown scheme, access denied, no such bucket
        return Finding(component, path, "unreachable", _one_line(error_summary(exc)),
                       "check the path and the file system's settings and credentials (`job.hadoop_conf`)")  # fmt: skip
    return Finding(component, path, "ok", "exists" if exists else "not there yet (made at the first write)")


def _one_line(text: str) -> str:
    return " ".join(text.split())[:400]


def exit_status(findings: list[Finding]) -> Status:
    """The worst finding: a configuration problem over an unreachable service over ok."""
    statuses = {f.status for f in findings}
    return "configuration" if "configuration" in statuses else "unreachable" if "unreachable" in statuses else "ok"

