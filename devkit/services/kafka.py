"""A single-node Kafka broker (KRaft, broker and controller in one JVM) for tests and the demo.

The classpath comes from `make kafka` (build/kafka/libs, pinned in infra/kafka/pom.xml). Each
start picks free 127.0.0.1 ports, wipes the data dir, formats it with a new cluster id and
runs `kafka.Kafka` on Java 17. Files live in build/run/kafka/.
"""

from __future__ import annotations

import base64
import logging
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from devkit import build_dir
from devkit.services.process import (
    LocalService,
    ServiceError,
    ServiceProcess,
    ensure_directory_free,
    free_port,
    java17_home,
    port_open,
    run_dir,
)

log = logging.getLogger(__name__)

SERVICE = "kafka"
KafkaRecord = tuple[bytes | None, bytes | None]
ClientConfig = dict[str, str | int | float | bool]
# Start-up over throughput: on 2 shared cores C1-only JIT and the serial GC start the broker
# in ~6 s instead of ~10 s, and test traffic is tiny.
FAST_START_JVM_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")

# Kafka 4.x logs through log4j2; a .properties file needs no YAML/JSON parser on the classpath.
LOG4J2_PROPERTIES = """\
status = warn
name = hudi-cdc-{service}
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRefs = stdout
rootLogger.appenderRef.stdout.ref = STDOUT
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
logger.common.name = org.apache.kafka.common.utils.AppInfoParser
logger.common.level = WARN
"""


def write_log4j2(directory: Path, service: str) -> Path:
    """Write the log4j2 config (console only: ServiceProcess sends stdout to the log file)."""
    path = directory / "log4j2.properties"
    path.write_text(LOG4J2_PROPERTIES.format(service=service))
    return path


@dataclass(frozen=True)
class BrokerTls:
    """A TLS listener beside the PLAINTEXT one: the broker's key store, and whether clients must show a certificate."""

    keystore: Path
    """PKCS12 key store with the broker's key and certificate chain (its host names: 127.0.0.1, localhost)."""
    password: str
    """Password of the key store and of its key."""
    client_auth: bool = False
    """Require a client certificate signed by a CA in `truststore` (mutual TLS)."""
    truststore: Path | None = None
    """PKCS12 store of the CAs whose client certificates the broker accepts (with `client_auth`)."""


def _cluster_id() -> str:
    # What `kafka-storage random-uuid` prints: a type-4 UUID, URL-safe base64 without padding.
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


class LocalKafka(LocalService):
    """A one-node KRaft Kafka on free 127.0.0.1 ports; use as a context manager or start/stop."""

    def __init__(
        self,
        *,
        directory: Path | None = None,
        libs: Path | None = None,
        heap: str = "512m",
        jvm_options: tuple[str, ...] = FAST_START_JVM_OPTIONS,
        startup_timeout: float = 120.0,
        tls: BrokerTls | None = None,
    ) -> None:
        self.directory = directory or run_dir(SERVICE)
        self.tls = tls
        """With it, a TLS listener on `tls_port` too (clients of this class keep the PLAINTEXT one)."""
        self.tls_port = 0
        self.libs = libs or build_dir() / "kafka" / "libs"
        self.heap = heap
        self.jvm_options = jvm_options
        self.startup_timeout = startup_timeout
        self.port = 0
        self.controller_port = 0
        self.startup_seconds: float | None = None
        """Wall time of the last `start()` (format + JVM start + readiness)."""
        self._process: ServiceProcess | None = None

    @property
    def bootstrap_servers(self) -> str:
        """`127.0.0.1:<port>` of the running broker."""
        if not self.port:
            raise ServiceError(SERVICE, "not started")
        return f"127.0.0.1:{self.port}"

    @property
    def tls_bootstrap_servers(self) -> str:
        """`127.0.0.1:<port>` of the running broker's TLS listener (started with `tls`)."""
        if not self.tls_port:
            raise ServiceError(SERVICE, "not started with a TLS listener")
        return f"127.0.0.1:{self.tls_port}"

    @property
    def log_path(self) -> Path:
        """The broker's log file (stdout and stderr of the JVM)."""
        return self.directory / f"{SERVICE}.log"


    def client_config(self) -> ClientConfig:
        """The settings a confluent-kafka client needs to reach this broker."""
        return {"bootstrap.servers": self.bootstrap_servers}

    def start(self, *, fresh: bool = True) -> LocalKafka:
        """Start the broker; return when AdminClient answers.

        `fresh`: a newly formatted data dir on new free ports. Otherwise a restart of the broker
        this object started and stopped before: the same ports and data (topics, records,
        committed consumer offsets), as a broker restart in production keeps them.
        """
        began = time.monotonic()
        ensure_directory_free(SERVICE, self.directory)
        if not any(self.libs.glob("kafka_2.13-*.jar")):
            raise ServiceError(SERVICE, f"no broker classpath in {self.libs}; run `make kafka`")
        data = self.directory / "data"
        if not fresh and not self.port:
            raise ServiceError(SERVICE, "a restart needs a broker this object started before")
        if fresh:
            shutil.rmtree(data, ignore_errors=True)
            data.mkdir(parents=True)
            self.port, self.controller_port = free_port(), free_port()
            while self.controller_port == self.port:
                self.controller_port = free_port()
            if self.tls is not None:
                self.tls_port = free_port()
                while self.tls_port in (self.port, self.controller_port):
                    self.tls_port = free_port()
        server_properties = self._write_server_properties(data)
        log4j2 = write_log4j2(self.directory, SERVICE)
        java = str(java17_home() / "bin" / "java")
        common = [f"-Dlog4j2.configurationFile={log4j2}", "-Djava.awt.headless=true", "-cp", f"{self.libs}/*"]
        process = ServiceProcess(
            SERVICE,
            [
                java,
                "-Xms128m",
                f"-Xmx{self.heap}",
                *self.jvm_options,
                *common,
                "kafka.Kafka",
                str(server_properties),
            ],
            directory=self.directory,
        )
        if fresh:
            process.log_path.unlink(missing_ok=True)  # one log per data dir: a restart appends
            self._format(java, common, server_properties, process)
        self._launch(process, self._ready, timeout=self.startup_timeout, began=began)
        log.info("kafka up at %s in %.1fs", self.bootstrap_servers, self.startup_seconds)
        return self



    def create_topics(
        self, names: Iterable[str], partitions: int = 1, *, config: Mapping[str, str] | None = None
    ) -> None:
        """Create topics (replication factor 1) and wait until the broker confirms each."""
        admin = AdminClient(self.client_config())
        topics = [
            NewTopic(n, num_partitions=partitions, replication_factor=1, config=dict(config or {}))
            for n in names
        ]
        for name, future in admin.create_topics(topics, operation_timeout=30, request_timeout=30).items():
            try:
                future.result(timeout=60)
            except KafkaException as exc:
                raise ServiceError(SERVICE, f"could not create topic {name}: {exc}") from exc

    def produce(self, topic: str, records: Iterable[KafkaRecord]) -> int:
        """Send (key, value) records in order (None value = tombstone), flush, return the count."""
        producer = Producer({**self.client_config(), "linger.ms": 0, "enable.idempotence": True})
        failures: list[str] = []

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                failures.append(f"{msg.topic()}: {err}")

        count = 0
        for key, value in records:
            producer.produce(topic, key=key, value=value, on_delivery=delivered)
            producer.poll(0)
            count += 1
        remaining = producer.flush(60)
        if remaining or failures:
            raise ServiceError(
                SERVICE, f"{remaining} records unsent, {len(failures)} failed to {topic}: {failures[:3]}"
            )
        return count

    def _write_server_properties(self, data: Path) -> Path:
        # One node: every internal topic gets replication factor 1 and a single partition
        # (the default 50-partition __consumer_offsets makes the first consumer group slow).
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(data),
            "num.partitions": "1",
            "default.replication.factor": "1",
            "min.insync.replicas": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "share.coordinator.state.topic.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "true",
        }
        if self.tls is not None:
            props.update(self._tls_properties(self.tls))
        path = self.directory / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    def _tls_properties(self, tls: BrokerTls) -> dict[str, str]:
        # a listener named SSL: PLAINTEXT stays the inter-broker one, so the broker never needs
        # to trust its own certificate, and the test helpers' clients keep working unchanged
        props = {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},SSL://127.0.0.1:{self.tls_port},"
            f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port},SSL://127.0.0.1:{self.tls_port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL",
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(tls.keystore),
            "ssl.keystore.password": tls.password,
            "ssl.key.password": tls.password,
            "ssl.client.auth": "required" if tls.client_auth else "none",
        }
        if tls.truststore is not None:
            props.update({"ssl.truststore.type": "PKCS12", "ssl.truststore.location": str(tls.truststore),
                          "ssl.truststore.password": tls.password})  # fmt: skip
        return props

    def _format(self, java: str, common: list[str], server_properties: Path, process: ServiceProcess) -> None:
        # A static voter set (controller.quorum.voters) lets `format` run without --standalone.
        command = [java, "-Xmx256m", "-XX:TieredStopAtLevel=1", *common, "kafka.tools.StorageTool",
                   "format", f"--cluster-id={_cluster_id()}", "-c", str(server_properties)]  # fmt: skip
        with open(process.log_path, "ab") as out:
            out.write(f"\n=== {time.strftime('%H:%M:%S')} format: {' '.join(command)}\n".encode())
            out.flush()
            result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=120, check=False)
        if result.returncode != 0:
            raise ServiceError(
                SERVICE, f"formatting the data dir failed (exit {result.returncode})", process.log_tail()
            )

    def _ready(self) -> bool:
        # Probe the port first: librdkafka logs every refused connection to stderr.
        if not port_open(self.port):
            return False
        metadata = AdminClient(self.client_config()).list_topics(timeout=2)
        return bool(metadata.brokers)
