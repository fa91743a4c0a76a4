"""Debezium's MariaDB connector on a real MariaDB: change events, binlog positions, start from a position."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Message

from devkit.services.connect import LocalConnect, mariadb_connector_config
from devkit.services.kafka import LocalKafka
from devkit.services.mariadb import BinlogPosition, LocalMariaDB
from hudi_cdc.errors import ConnectError
from hudi_cdc.relay.connect import start_connector_at_binlog

pytestmark = pytest.mark.integration

ReadTopic = Callable[..., list[Message]]


class Source:
    """One test's own database, table, topic prefix and connector name."""

    def __init__(self, mariadb: LocalMariaDB, kafka: LocalKafka) -> None:
        suffix = uuid.uuid4().hex[:8]
        self.mariadb = mariadb
        self.database = f"shop_{suffix}"
        self.table = "customers"
        self.prefix = f"cdc_{suffix}"
        self.connector = f"mariadb-{suffix}"
        self.topic = f"{self.prefix}.{self.database}.{self.table}"
        self.config = mariadb_connector_config(
            hostname=mariadb.host,
            port=mariadb.port,
            user=mariadb.debezium_user,
            password=mariadb.debezium_password,
            server_id=random.randint(10_000, 2**31 - 1),  # unique per connector: each is a replica
            topic_prefix=self.prefix,
            database=self.database,
            tables=[self.table],
            bootstrap_servers=kafka.bootstrap_servers,
        )
        mariadb.execute(f"CREATE DATABASE {self.database}")
        mariadb.execute(
            f"CREATE TABLE {self.database}.{self.table} (id INT PRIMARY KEY, name VARCHAR(50) NOT NULL, email VARCHAR(80))"
        )

    def run(self, sql: str) -> tuple[BinlogPosition, BinlogPosition]:
        """Execute one statement on this test's table; return the binlog positions around it."""
        before = self.mariadb.master_status()
        self.mariadb.execute(sql.format(t=f"{self.database}.{self.table}"))
        return before, self.mariadb.master_status()


@pytest.fixture
def source(mariadb: LocalMariaDB, kafka: LocalKafka, connect: LocalConnect) -> Iterator[Source]:
    src = Source(mariadb, kafka)
    yield src
    if src.connector in connect.connectors():
        connect.delete_connector(src.connector)  # frees its replication connection for later tests
    mariadb.execute(f"DROP DATABASE {src.database}")


def key_of(msg: Message) -> Any:
    key = msg.key()
    assert key is not None, "Debezium keys every change of a table with a primary key"
    return json.loads(key)["payload"]["id"]


def payload(msg: Message) -> dict[str, Any]:
    value = msg.value()
    assert value is not None, f"offset {msg.offset()} is a tombstone"
    body: dict[str, Any] = json.loads(value)
    assert set(body) == {"schema", "payload"}, "JSON converter with schemas.enable=true"
    result: dict[str, Any] = body["payload"]
    return result


def ops(records: list[Message]) -> list[str | None]:
    return [None if m.value() is None else payload(m)["op"] for m in records]


def test_insert_update_delete_arrive_as_c_u_d_with_binlog_position_and_tombstone(
    source: Source, connect: LocalConnect, read_topic: ReadTopic
) -> None:
    source.run("INSERT INTO {t} VALUES (1, 'snapshot row', NULL)")
    connect.create_connector(source.connector, source.config)
    connect.wait_running(source.connector)
    # The snapshot read is the sync point: every later change is streamed from the binlog.
    (snapshot,) = read_topic(source.topic, count=1)
    assert payload(snapshot)["op"] == "r"

    insert_at = source.run("INSERT INTO {t} VALUES (2, 'Ann', 'ann@example.com')")
    update_at = source.run("UPDATE {t} SET email = 'ann@example.org' WHERE id = 2")
    delete_at = source.run("DELETE FROM {t} WHERE id = 2")

    records = read_topic(source.topic, count=5)
    assert ops(records) == ["r", "c", "u", "d", None]
    assert [key_of(m) for m in records] == [1, 2, 2, 2, 2]
    created, updated, deleted = (payload(m) for m in records[1:4])
    assert created["before"] is None
    assert created["after"] == {"id": 2, "name": "Ann", "email": "ann@example.com"}
    assert updated["before"]["email"] == "ann@example.com"
    assert updated["after"]["email"] == "ann@example.org"
    assert deleted["before"] == {"id": 2, "name": "Ann", "email": "ann@example.org"}
    assert deleted["after"] is None
    assert records[4].value() is None
    for event, at in zip([created, updated, deleted], [insert_at, update_at, delete_at], strict=True):
        src = event["source"]
        assert (src["db"], src["table"], src["snapshot"]) == (source.database, source.table, "false")
        # source.pos is the row event's own position: inside its transaction, after the GTID
        # and table-map events, so strictly between the master positions around the statement.
        before, after = at
        assert src["file"] == before.file == after.file
        assert before.pos < src["pos"] < after.pos


def test_connector_started_at_a_recorded_binlog_position_sees_only_later_changes(
    source: Source, connect: LocalConnect, read_topic: ReadTopic
) -> None:
    source.run("INSERT INTO {t} VALUES (1, 'before', NULL)")
    source.run("INSERT INTO {t} VALUES (2, 'before', NULL)")
    recorded = source.mariadb.master_status()
    source.run("INSERT INTO {t} VALUES (3, 'after', NULL)")
    source.run("UPDATE {t} SET name = 'after' WHERE id = 1")
    source.run("DELETE FROM {t} WHERE id = 2")

    status = start_connector_at_binlog(
        connect, source.connector, source.config, binlog_file=recorded.file, binlog_pos=recorded.pos
    )

    assert status["connector"]["state"] == "RUNNING"
    # Events come in binlog order, so anything from before the position would come first.
    records = read_topic(source.topic, count=4)
    assert ops(records) == ["c", "u", "d", None]
    assert [key_of(m) for m in records] == [3, 1, 2, 2]
    first = payload(records[0])["source"]
    assert first["file"] == recorded.file
    assert first["pos"] > recorded.pos
    assert connect.config(source.connector)["snapshot.mode"] == "recovery"


def test_a_position_that_is_not_an_event_boundary_is_rejected_before_any_connector_exists(
    source: Source, connect: LocalConnect
) -> None:
    source.run("INSERT INTO {t} VALUES (1, 'row', NULL)")
    recorded = source.mariadb.master_status()

    with pytest.raises(ConnectError, match="not an event boundary"):
        start_connector_at_binlog(
            connect, source.connector, source.config, binlog_file=recorded.file, binlog_pos=recorded.pos - 3
        )

    assert source.connector not in connect.connectors()


def test_moving_a_running_connector_back_replays_from_that_position(
    source: Source, connect: LocalConnect, read_topic: ReadTopic
) -> None:
    source.run("INSERT INTO {t} VALUES (1, 'snapshot row', NULL)")
    connect.create_connector(source.connector, source.config)
    connect.wait_running(source.connector)
    read_topic(source.topic, count=1)
    replay_from, _ = source.run("INSERT INTO {t} VALUES (2, 'replayed', NULL)")
    source.run("UPDATE {t} SET name = 'replayed too' WHERE id = 1")
    assert ops(read_topic(source.topic, count=3)) == ["r", "c", "u"]

    start_connector_at_binlog(
        connect, source.connector, source.config, binlog_file=replay_from.file, binlog_pos=replay_from.pos
    )

    records = read_topic(source.topic, count=5)
    assert ops(records) == ["r", "c", "u", "c", "u"]
    assert [payload(m)["after"] for m in records[3:]] == [payload(m)["after"] for m in records[1:3]]
    assert connect.config(source.connector)["snapshot.mode"] == "initial"
