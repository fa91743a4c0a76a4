"""Source tables in MariaDB and PostgreSQL, each streamed by its own Debezium connector into a hudi_cdc job."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from devkit.services.connect import LocalConnect, mariadb_connector_config, postgres_connector_config
from devkit.services.kafka import LocalKafka
from devkit.services.mariadb import LocalMariaDB
from devkit.services.postgres import LocalPostgres
from hudi_cdc.hudi.table import table_exists
from tests.support.harness import Job


@contextlib.contextmanager
def captured_mariadb(
    mariadb: LocalMariaDB,
    connect: LocalConnect,
    kafka: LocalKafka,
    job: Job,
    ddl: str,
    insert: str,
    connector_options: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """Create `<database>.<table>` (the job's first table) with `ddl` and `insert` (a `{t}`
    placeholder each), stream it through its own Debezium connector into the job, and yield its
    qualified name; the connector and the database are removed at the end."""
    table = job.tables[0]["name"]
    database, prefix = f"db_{job.suffix}", f"cdc_{job.suffix}"
    qualified = f"{database}.{table}"
    mariadb.execute(f"CREATE DATABASE {database}")
    mariadb.execute(ddl.format(t=qualified))
    mariadb.execute(insert.format(t=qualified))
    config = mariadb_connector_config(
        hostname=mariadb.host, port=mariadb.port, user=mariadb.debezium_user, password=mariadb.debezium_password,
        server_id=random.randint(10_000, 2**31 - 1), topic_prefix=prefix, database=database, tables=[table],
        bootstrap_servers=kafka.bootstrap_servers, extra=connector_options,
    )  # fmt: skip
    job.topic = lambda _name: f"{prefix}.{qualified}"  # type: ignore[method-assign,assignment]
    connector = f"mariadb-{job.suffix}"
    connect.create_connector(connector, config, initial_state="RUNNING")
    try:
        connect.wait_running(connector)
        yield qualified
    finally:
        connect.delete_connector(connector)
        mariadb.execute(f"DROP DATABASE {database}")


def equal_to_mariadb(job: Job, mariadb: LocalMariaDB, qualified: str, columns: list[str]) -> bool:
    """Run the job once (no record may be dead-lettered): does its table hold MariaDB's rows?"""
    job.run()
    assert sum(t.dead_letter for b in job.batches for t in b.tables) == 0, job.dead_letters()
    table = job.tables[0]["name"]
    stored = job.rows_spark(table) if table_exists(job.spark, job.path(table)) else []
    expected = mariadb.execute(f"SELECT {', '.join(columns)} FROM {qualified}")
    return {r["id"]: tuple(r[c] for c in columns) for r in stored} == {r[0]: tuple(r) for r in expected}


@dataclass
class Captured:
    """A PostgreSQL table streamed by its own Debezium connector into a hudi_cdc job's table."""

    qualified: str
    job: Job

    def holds(self, ids: set[int]) -> Callable[[], bool]:
        """A condition for `wait_for`: run the job once; does the Hudi table hold exactly `ids`?"""
        table = self.job.tables[0]["name"]

        def landed() -> bool:
            self.job.run()
            self.assert_no_dead_letters()
            if not table_exists(self.job.spark, self.job.path(table)):
                return False
            stored = self.job.spark.read.format("hudi").load(self.job.path(table)).select("id").collect()
            return {r["id"] for r in stored} == ids

        return landed

    def assert_no_dead_letters(self) -> None:
        """Fail at once (not after the wait) when a record went to the dead-letter store."""
        dead = [t for b in self.job.batches for t in b.tables if t.dead_letter]
        assert not dead, f"records were dead-lettered: {dead}"


@contextlib.contextmanager
def captured_postgres(
    postgres: LocalPostgres,
    connect: LocalConnect,
    job: Job,
    ddl: Sequence[str],
    rows: list[tuple[Any, ...]],
    connector_options: Mapping[str, str] | None = None,
) -> Iterator[Captured]:
    """Create `<schema>.<table>` with the statements `ddl` (a `{t}` placeholder) and `rows`, and stream it.

    The connector snapshots the rows, then streams through `pgoutput`; its schema, slot and
    connector are removed at the end. `connector_options` are added to its config.
    """
    table = job.tables[0]["name"]
    schema, prefix = f"s_{job.suffix}", f"pg_{job.suffix}"
    qualified = f"{schema}.{table}"
    postgres.execute(f"CREATE SCHEMA {schema}")
    for statement in ddl:
        postgres.execute(statement.format(t=qualified))
    for row in rows:
        postgres.execute(f"INSERT INTO {qualified} VALUES ({', '.join(['%s'] * len(row))})", row)
    job.topic = lambda _name: f"{prefix}.{qualified}"  # type: ignore[method-assign,assignment]
    config = postgres_connector_config(
        hostname=postgres.host, port=postgres.port, user=postgres.user, password=postgres.password,
        dbname="postgres", topic_prefix=prefix, tables=[qualified], slot=f"hudi_cdc_{job.suffix}",
        extra=connector_options,
    )  # fmt: skip
    connector = f"postgres-{job.suffix}"
    connect.create_connector(connector, config, initial_state="RUNNING")
    try:
        connect.wait_running(connector)
        yield Captured(qualified, job)
    finally:
        connect.delete_connector(connector)
        postgres.execute(f"DROP SCHEMA {schema} CASCADE")
