"""The source database's side of the relay: its binlog position now, and table row counts.

Connects with the connector's own credentials (`database.*` of the connector section) through
PyMySQL (the `mysql` extra), like `connect.binlog_gtid_pos`, whose GTID lookup it reuses.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from hudi_cdc.errors import ConnectError
from hudi_cdc.relay.connect import binlog_gtid_pos
from hudi_cdc.relay.ledger import BinlogPosition


@contextmanager
def _cursor(config: Mapping[str, str]) -> Iterator[Any]:
    try:
        import pymysql  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ConnectError(
            "the snapshot relay reads the source's binlog position with PyMySQL: pip install 'hudi-cdc[mysql]'",
            where="source database",
        ) from exc
    host, port = config["database.hostname"], int(config["database.port"])
    try:
        conn = pymysql.connect(
            host=host, port=port, user=config["database.user"], password=config["database.password"],
            connect_timeout=10, autocommit=True,
        )  # fmt: skip
    except pymysql.Error as exc:
        raise ConnectError(f"cannot connect to {host}:{port}: {exc}", where="source database") from exc
    try:
        with conn.cursor() as cursor:
            yield cursor
    finally:
        conn.close()


def current_position(config: Mapping[str, str]) -> BinlogPosition:
    """The binlog position the next event will start at (`SHOW MASTER STATUS`), with its GTID state.

    Read just before a snapshot connector is deployed: Debezium reads its own snapshot position
    a moment later, so this one is at or before it, and streaming from it replays the changes
    in between, which the snapshot rows' order makes harmless (semantics §2).
    """
    with _cursor(config) as cursor:
        cursor.execute("SHOW MASTER STATUS")
        row = cursor.fetchone()
    if not row:
        raise ConnectError("SHOW MASTER STATUS returned nothing: the binlog is off", where="source database")
    binlog_file, pos = str(row[0]), int(row[1])
    gtids = binlog_gtid_pos(
        host=config["database.hostname"], port=int(config["database.port"]), user=config["database.user"],
        password=config["database.password"], binlog_file=binlog_file, binlog_pos=pos,
    )  # fmt: skip
    return BinlogPosition(file=binlog_file, pos=pos, gtids=gtids or None)


def row_counts(config: Mapping[str, str], tables: Sequence[str]) -> dict[str, int | None]:
    """`SELECT COUNT(*)` of each `database.table` now; None for a table that cannot be counted."""
    counts: dict[str, int | None] = {}
    with _cursor(config) as cursor:
        for table in tables:
            database, name = table.split(".", 1)
            try:
                cursor.execute(f"SELECT COUNT(*) FROM `{database}`.`{name}`")
                counts[table] = int(cursor.fetchone()[0])
            except Exception:  # a dropped or unreadable table: show it as unknown, never fail status
                counts[table] = None
    return counts
