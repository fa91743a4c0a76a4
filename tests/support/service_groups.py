"""Which session services share one pytest-xdist worker (tests/conftest.py groups the tests by them)."""

from __future__ import annotations

SERVICE_GROUPS = {
    "sql-engines": ("trino", "presto"),
    "debezium": ("connect", "mariadb", "postgres", "registry"),
}
"""Tests that need one of these session services run on one xdist worker (`--dist loadgroup`),
so each heavy service starts once per run, not once per worker. Every other test runs with the
rest of its module, so module-scoped fixtures are built once too."""
