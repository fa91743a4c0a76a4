"""Kafka Connect (one distributed worker) with the Debezium MariaDB connector, and its REST API.

`LocalConnect` runs the worker from `make connect` (build/connect/libs + build/connect/plugins,
pinned in infra/connect/pom.xml) on Java 17 and a free 127.0.0.1 REST port; files live in
build/run/connect/. `ConnectRest` is the REST client alone, usable against any Connect cluster.
`mariadb_connector_config` builds a Debezium config; `start_connector_at_binlog` starts
(or moves) a connector to an explicit binlog file + position (KIP-875 offsets API).
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from devkit.services.kafka import FAST_START_JVM_OPTIONS, write_log4j2
from devkit.services.mariadb import binlog_gtid_pos
from devkit.services.process import (
    LocalService,
    ServiceProcess,
    ensure_directory_free,
    free_port,
    java17_home,
    run_dir,
)
from hudi_cdc.errors import ServiceError
from hudi_cdc.spark_session import build_dir

log = logging.getLogger(__name__)

SERVICE = "connect"
MARIADB_CONNECTOR_CLASS = "io.debezium.connector.mariadb.MariaDbConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
InitialState = Literal["RUNNING", "PAUSED", "STOPPED"]
SnapshotMode = Literal[
    "initial", "initial_only", "no_data", "recovery", "when_needed", "always", "never", "configuration_based"
]
# Connect answers 409 while the worker group rebalances (e.g. right after start); retry those.
_REBALANCE_RETRY_SECONDS = 30.0


class ConnectRest:
    """The Kafka Connect REST API (connectors, status, KIP-875 offsets)."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

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
        Raises ServiceError at once when the connector or a task FAILED (with its trace).
        """
        deadline = time.monotonic() + timeout
        status: dict[str, Any] = {}
        reached: float | None = None
        while True:
            try:
                status = self.status(name)
            except ServiceError as exc:
                if "404" not in str(exc):  # not yet known to the herder
                    raise
            if status:
                failed = [
                    s for s in [status["connector"], *status.get("tasks", [])] if s["state"] == "FAILED"
                ]
                if failed:
                    raise ServiceError(SERVICE, f"connector {name} failed:\n{failed[0].get('trace', '')}")
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
                raise ServiceError(SERVICE, f"connector {name} not {state} after {timeout:.0f}s: {status}")
            time.sleep(0.25)

    def wait_running(self, name: str, *, timeout: float = 60.0, settle: float = 0.0) -> dict[str, Any]:
        """Wait until the connector and all its tasks are RUNNING (for `settle` seconds); return the status."""
        return self.wait_state(name, "RUNNING", timeout=timeout, settle=settle)

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        deadline = time.monotonic() + _REBALANCE_RETRY_SECONDS
        while True:
            request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    payload = response.read()
                return json.loads(payload) if payload else None
            except urllib.error.HTTPError as exc:
                text = exc.read().decode(errors="replace")
                if exc.code == 409 and time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                raise ServiceError(SERVICE, f"{method} {path} -> HTTP {exc.code}: {text}") from exc
            except (urllib.error.URLError, OSError) as exc:
                raise ServiceError(SERVICE, f"{method} {self.url}{path}: {exc}") from exc


class LocalConnect(ConnectRest, LocalService):
    stop_timeout = 30.0

    """One distributed Connect worker on a free REST port, with its own internal topics per start."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        directory: Path | None = None,
        home: Path | None = None,
        heap: str = "512m",
        jvm_options: tuple[str, ...] = FAST_START_JVM_OPTIONS,
        startup_timeout: float = 180.0,
    ) -> None:
        super().__init__("http://127.0.0.1:0")
        self.bootstrap_servers = bootstrap_servers
        self.directory = directory or run_dir(SERVICE)
        self.home = home or build_dir() / "connect"
        self.heap = heap
        self.jvm_options = jvm_options
        self.startup_timeout = startup_timeout
        self.port = 0
        self.group_id = ""
        self.startup_seconds: float | None = None
        """Wall time of the last `start()` until the worker served REST and listed the plugin."""
        self._process: ServiceProcess | None = None

    @property
    def log_path(self) -> Path:
        """The worker's log file (stdout and stderr of the JVM)."""
        return self.directory / f"{SERVICE}.log"


    def start(self) -> LocalConnect:
        """Start the worker; return when /health answers and the MariaDB connector plugin is listed."""
        began = time.monotonic()
        ensure_directory_free(SERVICE, self.directory)
        libs, plugins = self.home / "libs", self.home / "plugins"
        if not any(libs.glob("connect-runtime-*.jar")) or not any(
            plugins.glob("*/debezium-connector-mariadb-*.jar")
        ):
            raise ServiceError(
                SERVICE, f"no Connect runtime or Debezium plugin in {self.home}; run `make connect`"
            )
        self.directory.mkdir(parents=True, exist_ok=True)
        self.log_path.unlink(missing_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # Fresh group and internal topics per start: no connector or offset leaks between runs.
        self.group_id = f"hudi-cdc-connect-{uuid.uuid4().hex[:8]}"
        worker = self._write_worker_properties(plugins)
        log4j2 = write_log4j2(self.directory, SERVICE)
        command = [
            str(java17_home() / "bin" / "java"), "-Xms128m", f"-Xmx{self.heap}", *self.jvm_options,
            f"-Dlog4j2.configurationFile={log4j2}", "-Djava.awt.headless=true", "-cp", f"{libs}/*",
            "org.apache.kafka.connect.cli.ConnectDistributed", str(worker),
        ]  # fmt: skip
        process = ServiceProcess(SERVICE, command, directory=self.directory)
        self._launch(process, self._ready, timeout=self.startup_timeout, began=began, interval=0.5)
        log.info("connect up at %s in %.1fs", self.url, self.startup_seconds)
        return self



    def _write_worker_properties(self, plugins: Path) -> Path:
        props = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.group_id,
            "key.converter": JSON_CONVERTER,
            "value.converter": JSON_CONVERTER,
            "key.converter.schemas.enable": "true",
            "value.converter.schemas.enable": "true",
            "config.storage.topic": f"_{self.group_id}-configs",
            "offset.storage.topic": f"_{self.group_id}-offsets",
            "status.storage.topic": f"_{self.group_id}-status",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "offset.storage.partitions": "1",
            "status.storage.partitions": "1",
            # Commit source offsets every second so GET /offsets and restarts see recent positions.
            "offset.flush.interval.ms": "1000",
            # One worker: never hold tasks back waiting for a departed worker to return.
            "scheduled.rebalance.max.delay.ms": "0",
            "task.shutdown.graceful.timeout.ms": "5000",
            "listeners": f"http://127.0.0.1:{self.port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(self.port),
            "plugin.path": str(plugins),
            # Debezium ships ServiceLoader manifests; skipping the reflective scan saves start-up time.
            "plugin.discovery": "service_load",
        }
        path = self.directory / "connect-distributed.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    def _ready(self) -> bool:
        with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
            if response.status != 200:
                return False
        with urllib.request.urlopen(f"{self.url}/connector-plugins", timeout=5) as response:
            plugins = json.loads(response.read())
        return any(p.get("class") == MARIADB_CONNECTOR_CLASS for p in plugins)


def mariadb_connector_config(
    *,
    hostname: str,
    port: int,
    user: str,
    password: str,
    server_id: int,
    topic_prefix: str,
    database: str,
    tables: Iterable[str],
    bootstrap_servers: str,
    snapshot_mode: SnapshotMode = "initial",
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A Debezium MariaDB connector config: JSON with schemas, topics `<prefix>.<db>.<table>`.

    `server_id` is the id the connector uses as a replica; it must differ from the server's own
    `server-id` and from every other connector's. `extra` overrides or adds keys
    (e.g. `decimal.handling.mode`).
    """
    if snapshot_mode not in get_args(SnapshotMode):
        raise ValueError(f"snapshot_mode {snapshot_mode!r}: valid are {', '.join(get_args(SnapshotMode))}")
    table_list = ",".join(f"{re.escape(database)}\\.{re.escape(t)}" for t in tables)
    config = {
        "connector.class": MARIADB_CONNECTOR_CLASS,
        "tasks.max": "1",
        "database.hostname": hostname,
        "database.port": str(port),
        "database.user": user,
        "database.password": password,
        "database.server.id": str(server_id),
        "topic.prefix": topic_prefix,
        "database.include.list": re.escape(database),
        "table.include.list": table_list,
        "snapshot.mode": snapshot_mode,
        "include.schema.changes": "false",
        "tombstones.on.delete": "true",
        "schema.history.internal.kafka.bootstrap.servers": bootstrap_servers,
        "schema.history.internal.kafka.topic": f"_schema_history.{topic_prefix}",
        "key.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": "true",
        "value.converter": JSON_CONVERTER,
        "value.converter.schemas.enable": "true",
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": "1",
    }
    config.update(extra or {})
    return config


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
        raise ServiceError(
            SERVICE,
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
