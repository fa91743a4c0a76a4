"""Start a Debezium MySQL/MariaDB connector at an explicit binlog position (`hudi-cdc resume-binlog`).

`ConnectRest` is a client of Kafka Connect's REST API (connectors, status, KIP-875 offsets),
usable against any Connect cluster. `start_connector_at_binlog` moves a connector to a binlog
file + position; `binlog_gtid_pos` looks up the MariaDB GTID state there on the source, with
PyMySQL (the `mysql` extra: `pip install 'hudi-cdc[mysql]'`), imported only for that lookup.
Every failure is a `ConnectError`.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from typing import Any, Literal, get_args

from hudi_cdc.config.connector import ConnectorSection
from hudi_cdc.config.tls import TlsFiles
from hudi_cdc.errors import ConfigError, ConnectError

log = logging.getLogger(__name__)

InitialState = Literal["RUNNING", "PAUSED", "STOPPED"]
# Connect answers 409 while the worker group rebalances (e.g. right after start); retry those.
_REBALANCE_RETRY_SECONDS = 30.0


class ConnectRest:
    """The Kafka Connect REST API (connectors, status, KIP-875 offsets), over http or https, with
    HTTP basic auth when `username` is given (Connect's `rest.extension.classes` JAAS realm)."""

    def __init__(
        self, url: str, *, username: str | None = None, password: str | None = None, tls: TlsFiles | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self._authorization = (
            "Basic " + base64.b64encode(f"{username}:{password or ''}".encode()).decode() if username is not None else None
        )
        self._tls = tls
        self._context: ssl.SSLContext | None = None

    @classmethod
    def for_section(cls, section: ConnectorSection) -> ConnectRest:
        """The client of the job file's `connector:` Connect cluster, with its credentials and TLS."""
        return cls(section.connect_url, username=section.username, password=section.password, tls=section.tls)

    def _ssl_context(self) -> ssl.SSLContext | None:
        if self._tls is None:
            return None
        if self._context is None:
            try:
                self._context = self._tls.ssl_context()
            except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError: a file that is not PEM
                raise ConfigError("connector.tls", [f"{type(exc).__name__}: {exc}"]) from None
        return self._context

    def create_connector(
        self, name: str, config: Mapping[str, str], *, initial_state: InitialState = "RUNNING"
    ) -> dict[str, Any]:
        """POST /connectors; `initial_state` is RUNNING, PAUSED or STOPPED (KIP-980)."""
        if initial_state not in get_args(InitialState):
            raise ValueError(
                f"initial_state {initial_state!r}: valid are {', '.join(get_args(InitialState))}"
            )
        body = {"name": name, "config": dict(config), "initial_state": initial_state}
        result: dict[str, Any] = self._request("POST", "/connectors", body)
        return result

    def connectors(self) -> list[str]:
        """Names of the connectors the cluster knows."""
        names: list[str] = self._request("GET", "/connectors")
        return names

    def config(self, name: str) -> dict[str, str]:
        """The connector's current configuration."""
        config: dict[str, str] = self._request("GET", f"/connectors/{name}/config")
        return config

    def status(self, name: str) -> dict[str, Any]:
        """GET /connectors/{name}/status: connector and task states (with traces when FAILED)."""
        status: dict[str, Any] = self._request("GET", f"/connectors/{name}/status")
        return status

    def stop_connector(self, name: str) -> None:
        """PUT /connectors/{name}/stop: shut its tasks down, keep config and offsets."""
        self._request("PUT", f"/connectors/{name}/stop")

    def resume(self, name: str) -> None:
        """PUT /connectors/{name}/resume: run a PAUSED or STOPPED connector again."""
        self._request("PUT", f"/connectors/{name}/resume")

    def delete_connector(self, name: str) -> None:
        """DELETE /connectors/{name} (its committed offsets stay in the offsets topic)."""
        self._request("DELETE", f"/connectors/{name}")

    def offsets(self, name: str) -> list[dict[str, Any]]:
        """GET /connectors/{name}/offsets: the committed `{partition, offset}` pairs."""
        body: dict[str, Any] = self._request("GET", f"/connectors/{name}/offsets")
        offsets: list[dict[str, Any]] = body.get("offsets", [])
        return offsets

    def patch_offsets(self, name: str, offsets: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        """PATCH /connectors/{name}/offsets (the connector must be STOPPED); `offset: None` resets one."""
        body = {"offsets": [dict(o) for o in offsets]}
        result: dict[str, Any] = self._request("PATCH", f"/connectors/{name}/offsets", body)
        return result

    def wait_state(
        self, name: str, state: str, *, timeout: float = 60.0, settle: float = 0.0
    ) -> dict[str, Any]:
        """Wait until the connector (and, when RUNNING, every task) reaches `state`.

        With `settle`, keep watching that many seconds more: a task reports RUNNING before
        Debezium connects to the binlog, so early failures show only a moment later.
        Raises ConnectError at once when the connector or a task FAILED (with its trace).
        """
        deadline = time.monotonic() + timeout
        status: dict[str, Any] = {}
        reached: float | None = None
        while True:
            try:
                status = self.status(name)
            except ConnectError as exc:
                if exc.http_status != 404:  # 404: not yet known to the herder
                    raise
            if status:
                failed = [
                    s for s in [status["connector"], *status.get("tasks", [])] if s["state"] == "FAILED"
                ]
                if failed:
                    raise ConnectError(f"connector {name} failed:\n{failed[0].get('trace', '')}")
                tasks = status.get("tasks", [])
                if status["connector"]["state"] == state and (
                    state != "RUNNING" or (tasks and all(t["state"] == "RUNNING" for t in tasks))
                ):
                    reached = reached or time.monotonic()
                    if time.monotonic() - reached >= settle:
                        return status
                else:
                    reached = None
            if time.monotonic() >= deadline + settle:
                raise ConnectError(f"connector {name} not {state} after {timeout:.0f}s: {status}")
            time.sleep(0.25)

    def wait_running(self, name: str, *, timeout: float = 60.0, settle: float = 0.0) -> dict[str, Any]:
        """Wait until the connector and all its tasks are RUNNING (for `settle` seconds); return the status."""
        return self.wait_state(name, "RUNNING", timeout=timeout, settle=settle)

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if self._authorization is not None:
            headers["Authorization"] = self._authorization
        context = self._ssl_context()
        deadline = time.monotonic() + _REBALANCE_RETRY_SECONDS
        while True:
            request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=60, context=context) as response:
                    payload = response.read()
                return json.loads(payload) if payload else None
            except urllib.error.HTTPError as exc:
                text = exc.read().decode(errors="replace")
                if exc.code == 409 and time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                if exc.code in (401, 403):
                    text = f"the worker refused the credentials (`connector.username`/`password`): {text}"
                raise ConnectError(f"{method} {path} -> HTTP {exc.code}: {text}", http_status=exc.code) from exc
            except (urllib.error.URLError, OSError) as exc:
                raise ConnectError(f"{method} {self.url}{path}: {exc}") from exc


def binlog_gtid_pos(
    *, host: str, port: int, user: str, password: str, binlog_file: str, binlog_pos: int
) -> str:
    """The MariaDB GTID state at a binlog file + position (`BINLOG_GTID_POS`), e.g. `0-223344-9`.

    '' when no transaction precedes the position. Raises ConnectError when the position is not
    an event boundary of an existing binlog file (the server returns NULL), or when PyMySQL
    (the `mysql` extra) is not installed.
    """
    try:
        import pymysql  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ConnectError(
            "looking up the GTID state needs PyMySQL: pip install 'hudi-cdc[mysql]', or pass the GTID "
            "state at that position with --gtids",
            where="source database",
        ) from exc
    try:
        conn = pymysql.connect(host=host, port=port, user=user, password=password, connect_timeout=10)
    except pymysql.Error as exc:
        raise ConnectError(f"cannot connect to {host}:{port} as {user}: {exc}", where="source database") from exc
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT BINLOG_GTID_POS(%s, %s)", (binlog_file, binlog_pos))
            row = cursor.fetchone()
    finally:
        conn.close()
    if row is None or row[0] is None:
        raise ConnectError(
            f"{binlog_file}:{binlog_pos} is not an event boundary of a binlog on {host}:{port} "
            "(use a `SHOW MASTER STATUS` position or an end_log_pos from mariadb-binlog)",
            where="source database",
        )
    return str(row[0])


def binlog_offset(topic_prefix: str, binlog_file: str, binlog_pos: int, gtids: str) -> dict[str, Any]:
    """One KIP-875 offset entry placing a Debezium MariaDB connector at file + position.

    The partition key is Debezium's `{"server": <topic.prefix>}`. `gtids` must be the GTID state
    at that position: against a MariaDB server Debezium 3.5.0 streams by GTID, and an offset
    without one fails with a NullPointerException in the binlog client (debezium/dbz#1378).
    """
    offset = {"file": binlog_file, "pos": binlog_pos, "gtids": gtids}
    return {"partition": {"server": topic_prefix}, "offset": offset}


def start_connector_at_binlog(
    rest: ConnectRest,
    name: str,
    config: Mapping[str, str],
    *,
    binlog_file: str,
    binlog_pos: int,
    gtids: str | None = None,
    timeout: float = 120.0,
) -> dict[str, Any]:
    """Run connector `name` from an explicit binlog file + position; return its RUNNING status.

    `binlog_pos` must be an event boundary (a `SHOW MASTER STATUS` position or an `end_log_pos`).
    `gtids` (the GTID state there) is looked up on the source with the connector's credentials
    when None; the lookup also rejects a position that is not in the server's binlogs.
    Steps (KIP-875):
      1. New connector: create it STOPPED with `snapshot.mode=recovery`, which snapshots only the
         *current* table schemas into a missing history topic and never the rows. Existing
         connector: stop it (config, history topic and mode are kept).
      2. Wait until STOPPED (offsets can be changed only then), PATCH the offset.
      3. Resume, wait until the connector and its task are RUNNING and stay so for a few seconds
         (the binlog connection is made after the task reports RUNNING).
    Recovery reads today's schema: if DDL ran on these tables after the position, events in
    between are decoded with the wrong columns. `recovery` stays set: it re-snapshots the schema
    only when the history topic is missing, so later restarts resume normally.
    """
    existing = name in rest.connectors()
    effective = rest.config(name) if existing else {**config, "snapshot.mode": "recovery"}
    if gtids is None:
        gtids = binlog_gtid_pos(
            host=effective["database.hostname"], port=int(effective["database.port"]),
            user=effective["database.user"], password=effective["database.password"],
            binlog_file=binlog_file, binlog_pos=binlog_pos,
        )  # fmt: skip
    if not gtids:
        raise ConnectError(
            f"{binlog_file}:{binlog_pos} precedes every GTID on the server; Debezium 3.5.0 cannot stream "
            "from an empty GTID state (debezium/dbz#1378): take an initial snapshot instead",
        )
    if existing:
        log.info("moving existing connector %s to %s:%d (gtids %s)", name, binlog_file, binlog_pos, gtids)
        rest.stop_connector(name)
    else:
        log.info("creating connector %s at %s:%d (gtids %s)", name, binlog_file, binlog_pos, gtids)
        rest.create_connector(name, effective, initial_state="STOPPED")
    rest.wait_state(name, "STOPPED", timeout=timeout)
    rest.patch_offsets(name, [binlog_offset(effective["topic.prefix"], binlog_file, binlog_pos, gtids)])
    rest.resume(name)
    return rest.wait_running(name, timeout=timeout, settle=3.0)
