"""A throw-away PostgreSQL server (Debian's `postgresql` package) with logical decoding, for Debezium.

Each start makes a fresh cluster under build/run/postgres/ with `initdb` (trust authentication,
UTF-8, UTC) and runs `postgres` on a free 127.0.0.1 port with `wal_level=logical`, so Debezium's
PostgreSQL connector can stream through the built-in `pgoutput` plugin. PostgreSQL refuses to run
as root: as root, the cluster belongs to the `postgres` user the package creates, and the server
runs as that user (`setpriv` execs it, so the PID stopped is the server's own).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import shutil
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg

from devkit.services.process import (
    LocalService,
    ServiceError,
    ServiceProcess,
    ensure_directory_free,
    free_port,
    run_dir,
    run_setup_step,
)

log = logging.getLogger(__name__)

SERVICE = "postgres"
PACKAGE = "postgresql"
SERVER_USER = "postgres"
"""The superuser `initdb` creates; Debezium connects as it (trust authentication on 127.0.0.1)."""

# Settings given on the command line (they win over postgresql.conf). Durability is off: a
# throw-away test server, where fsync only costs time.
_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "wal_level": "logical",
    "max_wal_senders": "10",
    "max_replication_slots": "10",
    "shared_buffers": "32MB",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "timezone": "UTC",
    "log_timezone": "UTC",
}


def _binary(name: str) -> str:
    """The newest installed major version's `name` (/usr/lib/postgresql/<major>/bin is not on PATH)."""
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name), reverse=True
    )
    for folder in versions:
        if (folder / name).is_file():
            return str(folder / name)
    found = shutil.which(name)
    if found is None:
        raise ServiceError(
            SERVICE, f"{name} not found; install the Debian package: apt-get install {PACKAGE}"
        )
    return found


def _as_server_user() -> list[str]:
    """The command prefix that drops root to the `postgres` user ([] when not root)."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError as exc:
        raise ServiceError(
            SERVICE, f"running as root needs the '{SERVER_USER}' user: apt-get install {PACKAGE}"
        ) from exc
    return [shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={SERVER_USER}", f"--regid={SERVER_USER}",
            "--init-groups", "--"]  # fmt: skip


class LocalPostgres(LocalService):
    """A PostgreSQL server on a free port with logical decoding on; start/stop or use as a context manager."""

    stop_timeout = 30.0

    def __init__(self, *, directory: Path | None = None, startup_timeout: float = 60.0) -> None:
        self.directory = directory or run_dir(SERVICE)
        self.startup_timeout = startup_timeout
        self.host = "127.0.0.1"
        self.port = 0
        self.user = SERVER_USER
        self.password = SERVER_USER
        """Any password: the cluster trusts 127.0.0.1, but Debezium's config wants one."""
        self.startup_seconds: float | None = None
        self._process: ServiceProcess | None = None
        self._conn: psycopg.Connection[Any] | None = None

    @property
    def log_path(self) -> Path:
        """The server's log file (initdb and postgres output)."""
        return self.directory / f"{SERVICE}.log"

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def socket_dir(self) -> Path:
        return self.directory / "socket"

    def start(self) -> LocalPostgres:
        """Create a fresh cluster and start the server on a free port."""
        began = time.monotonic()
        ensure_directory_free(SERVICE, self.directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        for folder in (self.data_dir, self.socket_dir):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(mode=0o700)
            if os.geteuid() == 0:
                shutil.chown(folder, SERVER_USER, SERVER_USER)
        self.log_path.unlink(missing_ok=True)
        self._initdb()
        self.port = free_port()
        settings = {**_SETTINGS, "port": str(self.port), "unix_socket_directories": str(self.socket_dir)}
        command = [
            *_as_server_user(), _binary("postgres"), "-D", str(self.data_dir),
            *(arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")),
        ]  # fmt: skip
        # SIGINT is PostgreSQL's fast shutdown; its SIGTERM waits for Debezium's replication
        # connection to leave.
        process = ServiceProcess(SERVICE, command, directory=self.directory, stop_signal=signal.SIGINT)
        self._launch(process, self._ready, timeout=self.startup_timeout, began=began, interval=0.2)
        log.info("postgres up at %s:%d in %.1fs", self.host, self.port, self.startup_seconds)
        return self

    def stop(self) -> None:
        """Close the admin connection and shut the server down (fast shutdown). Idempotent."""
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None
        super().stop()

    def connect(self, dbname: str = "postgres") -> psycopg.Connection[Any]:
        """A new autocommit connection as the superuser, over TCP."""
        return psycopg.connect(
            host=self.host, port=self.port, user=self.user, dbname=dbname, autocommit=True, connect_timeout=10
        )

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        """Run one statement in the `postgres` database (autocommit); its rows, [] when it returns none."""
        if self._process is None:
            raise ServiceError(SERVICE, "not started")
        if self._conn is None or self._conn.closed:
            self._conn = self.connect()
        with self._conn.cursor() as cursor:
            cursor.execute(sql.encode(), params)  # bytes: a composed test statement, not a literal query
            return list(cursor.fetchall()) if cursor.description is not None else []

    def _ready(self) -> bool:
        self.connect().close()
        return True

    def _initdb(self) -> None:
        command = [
            *_as_server_user(), _binary("initdb"), "-D", str(self.data_dir), f"--username={SERVER_USER}",
            "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync",
        ]  # fmt: skip
        run_setup_step(SERVICE, "initdb", command, self.log_path)
