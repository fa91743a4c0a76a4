"""The `accounts` source table of the bad-record, table-failure and Kafka data-loss tests."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from devkit.debezium import Column, DebeziumTable
from tests.support.harness import Job

COLUMNS = [
    Column("id", "int64", optional=False),
    Column("name", "string"),
    Column("balance", "decimal", scale=2, precision=12),
]


def accounts_source(job: Job) -> DebeziumTable:
    """The Debezium source table `db.accounts` of `job`'s server."""
    return DebeziumTable(server=f"srv{job.suffix}", database="db", table="accounts", columns=COLUMNS, key=["id"])


def account(i: int, name: str, balance: str) -> dict[str, Any]:
    """A row of `accounts`."""
    return {"id": i, "name": name, "balance": Decimal(balance)}
