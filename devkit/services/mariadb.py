"""A throw-away MariaDB server (Debian's mariadb-server-core) with a ROW binlog, for Debezium.

Each start creates a fresh data dir under build/run/mariadb/, runs `mariadbd` unprivileged on a
free 127.0.0.1 port plus a unix socket, and creates the `debezium` replication user.
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pymysql  # type: ignore[import-untyped]
from pymysql.converters import escape_string  # type: ignore[import-untyped]

from devkit.services.process import (
    LocalService,
    ServiceError,
    ServiceProcess,
    ensure_directory_free,
    free_port,
    run_dir,
    run_setup_step,
)
from hudi_cdc.relay.connect import binlog_gtid_pos

log = logging.getLogger(__name__)

SERVICE = "mariadb"
PACKAGES = "mariadb-server-core mariadb-client"

# The privileges Debezium's MariaDB connector documents for its user.
_DEBEZIUM_GRANTS = "SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT, LOCK TABLES"


class BinlogPosition(NamedTuple):
    """A binlog coordinate as `SHOW MASTER STATUS` reports it (an event boundary)."""

    file: str
    pos: int


def _binary(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
    if found is None:
        raise ServiceError(
            SERVICE, f"{name} not found; install the Debian packages: apt-get install {PACKAGES}"
        )
    return found


class LocalMariaDB(LocalService):
    stop_timeout = 30.0

    """A MariaDB server on a free port with binlog_format=ROW; start/stop or use as a context manager."""

    def __init__(
        self,
        *,
        directory: Path | None = None,
        server_id: int = 223344,
        debezium_user: str = "debezium",
        debezium_password: str = "dbz",
        startup_timeout: float = 60.0,
    ) -> None:
        self.directory = directory or run_dir(SERVICE)
        self.server_id = server_id
        """MariaDB's own server-id; a Debezium connector's `database.server.id` must differ."""
        self.debezium_user = debezium_user
        self.debezium_password = debezium_password
        self.startup_timeout = startup_timeout
        self.host = "127.0.0.1"
        self.port = 0
        self.startup_seconds: float | None = None
        """Wall time of the last `start()` (install-db + server start + user setup)."""
        self._process: ServiceProcess | None = None
        self._conn: Any = None

    @property
    def socket_path(self) -> Path:
        """The unix socket root connects through."""
        return self.directory / "mysqld.sock"

    @property
    def log_path(self) -> Path:
        """The server's log file (install-db and mariadbd output)."""
        return self.directory / f"{SERVICE}.log"

    def start(self) -> LocalMariaDB:
        """Create a fresh data dir, start the server and create the Debezium user."""
        began = time.monotonic()
        ensure_directory_free(SERVICE, self.directory)
        user = getpass.getuser()
        data, binlog = self.directory / "data", self.directory / "binlog"
        for folder in (data, binlog, self.directory / "tmp"):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
        self.log_path.unlink(missing_ok=True)
        self._install_db(user, data)
        self.port = free_port()
        # --no-defaults must come first: ignore /etc/mysql. --user is required when run as root.
        command = [
            _binary("mariadbd"), "--no-defaults", f"--user={user}",
            f"--datadir={data}", f"--socket={self.socket_path}", f"--pid-file={self.directory / 'mysqld.pid'}",
            f"--tmpdir={self.directory / 'tmp'}", f"--port={self.port}", "--bind-address=127.0.0.1",
            "--skip-name-resolve", f"--server-id={self.server_id}",
            f"--log-bin={binlog / 'mariadb-bin'}", "--binlog-format=ROW", "--binlog-row-image=FULL",
            "--expire-logs-days=1", "--innodb-buffer-pool-size=64M", "--innodb-log-file-size=8M",
            "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
            "--default-time-zone=+00:00",
        ]  # fmt: skip
        process = ServiceProcess(SERVICE, command, directory=self.directory)
        self._launch(process, self._ready, timeout=self.startup_timeout, began=began, interval=0.1)
        try:
            self._create_root_over_tcp()
            self._create_debezium_user()
        except BaseException:
            self.stop()
            raise
        log.info("mariadb up at %s:%d in %.1fs", self.host, self.port, self.startup_seconds)
        return self

    def stop(self) -> None:
        """Shut the server down (SIGTERM to its PID is a clean shutdown). Idempotent."""
        if self._conn is not None:
            with contextlib.suppress(pymysql.Error):
                self._conn.close()
            self._conn = None
        super().stop()

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        """Run one statement as root (autocommit) and return its rows ([] for DML/DDL)."""
        conn = self._connection()
        with conn.cursor() as cursor:
            cursor.execute(sql, params)
            return list(cursor.fetchall())

    def master_status(self) -> BinlogPosition:
        """The current binlog file and position (where the next event will start)."""
        rows = self.execute("SHOW MASTER STATUS")
        if not rows:
            raise ServiceError(SERVICE, "SHOW MASTER STATUS returned nothing: the binlog is off")
        return BinlogPosition(str(rows[0][0]), int(rows[0][1]))

    def gtid_binlog_pos(self) -> str:
        """The GTID of the last binlogged transaction, e.g. `0-223344-9`."""
        return str(self.execute("SELECT @@gtid_binlog_pos")[0][0])

    def gtid_at(self, position: BinlogPosition) -> str:
        """The GTID state at `position` ('' before the first transaction)."""
        return binlog_gtid_pos(
            host=self.host, port=self.port, user=self.debezium_user, password=self.debezium_password,
            binlog_file=position.file, binlog_pos=position.pos,
        )  # fmt: skip

    def connect_root(self) -> Any:
        """A new autocommit connection as root, over TCP.

        Why not the unix socket: once, in CI, the socket file vanished while the server ran and
        every new connection failed (cause not found); a TCP port cannot vanish that way. The
        socket is used only until the TCP root account exists (`start`).
        """
        return pymysql.connect(
            host=self.host, port=self.port, user="root", autocommit=True, connect_timeout=10
        )

    def _connection(self) -> Any:
        if self._process is None:
            raise ServiceError(SERVICE, "not started")
        if self._conn is None:
            self._conn = self.connect_root()
        else:
            self._conn.ping(reconnect=True)
        return self._conn

    def _ready(self) -> bool:
        if not self.socket_path.exists():
            return False
        pymysql.connect(unix_socket=str(self.socket_path), user="root", connect_timeout=1).close()
        return True

    def _install_db(self, user: str, data: Path) -> None:
        command = [
            _binary("mariadb-install-db"), "--no-defaults", f"--user={user}", f"--datadir={data}",
            "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve",
            "--innodb-log-file-size=8M",
        ]  # fmt: skip
        run_setup_step(SERVICE, "mariadb-install-db", command, self.log_path)

    def _create_root_over_tcp(self) -> None:
        # install-db may create root@localhost only, which matches socket connections alone
        by_socket = pymysql.connect(unix_socket=str(self.socket_path), user="root", autocommit=True)
        with contextlib.closing(by_socket), by_socket.cursor() as cursor:
            cursor.execute(f"CREATE USER IF NOT EXISTS 'root'@'{self.host}'")
            cursor.execute(f"GRANT ALL PRIVILEGES ON *.* TO 'root'@'{self.host}' WITH GRANT OPTION")

    def _create_debezium_user(self) -> None:
        for host in ("%", "localhost"):
            account = f"'{self.debezium_user}'@'{host}'"
            self.execute(f"CREATE USER {account} IDENTIFIED BY '{escape_string(self.debezium_password)}'")
            self.execute(f"GRANT {_DEBEZIUM_GRANTS} ON *.* TO {account}")
