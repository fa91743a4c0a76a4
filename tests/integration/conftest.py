"""Real services for integration tests: one Kafka, MariaDB, PostgreSQL and Connect worker per session.

Each is started by the same devkit.services module the demo uses, on free ports, with its
files under build/run/<service>/ (build/run/<xdist worker>/<service>/ under `make test`). The
services of SERVICE_GROUPS (tests/support/service_groups.py) stop after the last test that uses
them. When an integration test fails, the tails of the service logs written during this session
are attached to its report.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Generator, Iterator
from typing import TypeVar

import pytest
from confluent_kafka import Consumer, KafkaError, Message, TopicPartition
from confluent_kafka.admin import AdminClient

from devkit import run_root
from devkit.services.connect import LocalConnect
from devkit.services.hms import LocalMetastore
from devkit.services.kafka import LocalKafka
from devkit.services.mariadb import LocalMariaDB
from devkit.services.postgres import LocalPostgres
from devkit.services.presto import LocalPresto
from devkit.services.process import LocalService, log_tail
from devkit.services.pushgateway import LocalPushgateway
from devkit.services.registry import LocalRegistry
from devkit.services.s3 import LocalS3
from devkit.services.trino import LocalTrino
from tests.support.service_groups import SERVICE_GROUPS

SERVICE_FIXTURES = tuple(name for names in SERVICE_GROUPS.values() for name in names)

ReadTopic = Callable[..., list[Message]]
S = TypeVar("S", bound=LocalService)

_LOG_TAIL_LINES = 60
_session_began = time.time()
_stoppable: dict[str, LocalService] = {}
"""Running session services of SERVICE_GROUPS, by fixture name."""
_last_users: dict[str, list[str]] | None = None
"""Test id -> the grouped services no later test uses."""


def _until_last_user(name: str, service: S) -> S:
    """`service`, stopped after the last test that uses it: an idle Trino or PrestoDB costs a
    tenth of a core or more, for the rest of the run otherwise."""
    _stoppable[name] = service
    return service


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """After a test's own teardown, stop the grouped services that no later test uses.

    Safe under xdist: all the tests of a grouped service are one work unit, run in collection
    order by one worker (tests/conftest.py).
    """
    global _last_users
    result = yield
    if _last_users is None:
        last: dict[str, str] = {}
        for test in item.session.items:
            for name in set(getattr(test, "fixturenames", ())) & set(SERVICE_FIXTURES):
                last[name] = test.nodeid
        _last_users = {}
        for name, nodeid in last.items():
            _last_users.setdefault(nodeid, []).append(name)
    for name in _last_users.get(item.nodeid, []):
        if (service := _stoppable.pop(name, None)) is not None:
            service.stop()
    return result


@pytest.fixture(scope="session")
def kafka() -> Iterator[LocalKafka]:
    """A one-node KRaft broker for the whole session."""
    with LocalKafka() as broker:
        yield broker


@pytest.fixture(scope="session")
def metastore(s3: LocalS3) -> Iterator[LocalMetastore]:
    """A Hive Metastore (embedded Derby) for the whole session; it reaches the session's S3 too."""
    with LocalMetastore(hadoop=s3.hadoop_conf()) as hms:
        yield hms


@pytest.fixture(scope="session")
def trino(metastore: LocalMetastore, s3: LocalS3) -> Iterator[LocalTrino]:
    """Trino with the Hudi connector on the session's metastore, reading local files and the session's S3."""
    with LocalTrino(metastore.uri, s3=s3.trino_conf()) as engine:
        yield _until_last_user("trino", engine)


@pytest.fixture(scope="session")
def presto(metastore: LocalMetastore) -> Iterator[LocalPresto]:
    """PrestoDB with the Hive and Hudi connectors on the session's metastore."""
    with LocalPresto(metastore.uri) as engine:
        yield _until_last_user("presto", engine)


@pytest.fixture(scope="session")
def mariadb() -> Iterator[LocalMariaDB]:
    """A MariaDB server with a ROW binlog and a `debezium` replication user."""
    with LocalMariaDB() as server:
        yield _until_last_user("mariadb", server)


@pytest.fixture(scope="session")
def postgres() -> Iterator[LocalPostgres]:
    """A PostgreSQL server with logical decoding on (`wal_level=logical`)."""
    with LocalPostgres() as server:
        yield _until_last_user("postgres", server)


@pytest.fixture(scope="session")
def connect(kafka: LocalKafka) -> Iterator[LocalConnect]:
    """A Kafka Connect worker with the Debezium MariaDB and PostgreSQL plugins, on the session's broker."""
    with LocalConnect(kafka.bootstrap_servers) as worker:
        yield _until_last_user("connect", worker)


@pytest.fixture(scope="session")
def read_topic(kafka: LocalKafka) -> ReadTopic:
    """`read_topic(topic, count=n, timeout=60)`: the first n records of a topic, in offset order.

    Waits for the topic to exist (Debezium creates its topics on the first event).
    """

    def read(topic: str, *, count: int, timeout: float = 60.0) -> list[Message]:
        deadline = time.monotonic() + timeout
        admin = AdminClient(kafka.client_config())
        while (metadata := admin.list_topics(timeout=10)).topics.get(topic) is None:
            if time.monotonic() > deadline:
                pytest.fail(f"topic {topic} did not appear within {timeout:.0f}s")
            time.sleep(0.25)
        partitions = sorted(metadata.topics[topic].partitions)
        consumer = Consumer(
            {**kafka.client_config(), "group.id": f"test-{uuid.uuid4().hex}", "enable.auto.commit": False}
        )
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        records: list[Message] = []
        try:
            while len(records) < count and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                # A tombstone Message is falsy (its len() is that of its None value): test `is None`.
                if msg is None:
                    continue
                error = msg.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    pytest.fail(f"consuming {topic}: {msg.error()}")
                if msg.error() is None:
                    records.append(msg)
        finally:
            consumer.close()
        if len(records) < count:
            pytest.fail(f"{topic}: {len(records)} of {count} records within {timeout:.0f}s")
        return records

    return read


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """On a failed integration test (or fixture), attach the tails of this session's service logs."""
    report = yield
    if report.failed and item.get_closest_marker("integration") is not None:
        for path in sorted(run_root().glob("*/*.log")):
            if path.stat().st_mtime >= _session_began:
                report.sections.append(
                    (f"{path.parent.name} log tail ({path})", log_tail(path, _LOG_TAIL_LINES))
                )
    return report


@pytest.fixture(scope="session")
def registry() -> Iterator[LocalRegistry]:
    """An Apicurio Registry (in memory) for the whole session."""
    with LocalRegistry() as server:
        yield _until_last_user("registry", server)


@pytest.fixture(scope="session")
def pushgateway() -> Iterator[LocalPushgateway]:
    """A Prometheus Pushgateway (groups in memory) for the whole session; it starts in under a second."""
    with LocalPushgateway() as gateway:
        yield gateway


@pytest.fixture(scope="session")
def s3() -> Iterator[LocalS3]:
    """A local S3 endpoint (the Versity S3 Gateway over a folder) for the whole session: starts in
    under a second, so each worker that needs it has its own."""
    with LocalS3() as gateway:
        yield gateway
