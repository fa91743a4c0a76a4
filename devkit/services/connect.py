"""Kafka Connect (one distributed worker) with the Debezium MariaDB and PostgreSQL connectors.

`LocalConnect` runs the worker from `make connect` (build/connect/libs + build/connect/plugins,
pinned in infra/connect/pom.xml) on Java 17 and a free 127.0.0.1 REST port; files live in
build/run/connect/. Its REST client is the production `hudi_cdc.relay.connect.ConnectRest` (which also
owns `start_connector_at_binlog`). `mariadb_connector_config` and `postgres_connector_config`
build Debezium configs.
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.request
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal, get_args

from devkit import build_dir
from devkit.services.kafka import FAST_START_JVM_OPTIONS, write_log4j2
from devkit.services.process import (
    LocalService,
    ServiceError,
    ServiceProcess,
    ensure_directory_free,
    free_port,
    java17_home,
    run_dir,
)
from hudi_cdc.relay.connect import ConnectRest

log = logging.getLogger(__name__)

SERVICE = "connect"
MARIADB_CONNECTOR_CLASS = "io.debezium.connector.mariadb.MariaDbConnector"
POSTGRES_CONNECTOR_CLASS = "io.debezium.connector.postgresql.PostgresConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
AVRO_CONVERTER = "io.apicurio.registry.utils.converter.AvroConverter"
SnapshotMode = Literal[
    "initial", "initial_only", "no_data", "recovery", "when_needed", "always", "never", "configuration_based"
]


class LocalConnect(ConnectRest, LocalService):
    """One distributed Connect worker on a free REST port, with its own internal topics per start."""

    stop_timeout = 10.0
    """Tasks get 5 s to stop (`task.shutdown.graceful.timeout.ms`); a worker that still hangs is
    killed: every start has a fresh group and internal topics, so nothing carries over."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        directory: Path | None = None,
        home: Path | None = None,
        heap: str = "512m",
        jvm_options: tuple[str, ...] = FAST_START_JVM_OPTIONS,
        startup_timeout: float = 180.0,
        worker_settings: dict[str, str] | None = None,
    ) -> None:
        super().__init__("http://127.0.0.1:0")
        self.worker_settings = dict(worker_settings or {})
        """Worker properties on top of this class's own (e.g. `exactly.once.source.support`)."""
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
            **self.worker_settings,
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
        **_JSON_TOPICS,
    }
    config.update(extra or {})
    return config


def postgres_connector_config(
    *,
    hostname: str,
    port: int,
    user: str,
    password: str,
    dbname: str,
    topic_prefix: str,
    tables: Iterable[str],
    slot: str,
    snapshot_mode: SnapshotMode = "initial",
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A Debezium PostgreSQL connector config over `pgoutput`: JSON with schemas, topics `<prefix>.<schema>.<table>`.

    `tables` are `schema.table` names. `slot` names the replication slot and the publication
    (one each per connector; the slot is dropped when the connector stops, so a deleted test
    connector holds no WAL back). Truncates are streamed (`skipped.operations=none`; Debezium
    skips them by default). `extra` overrides or adds keys.
    """
    if snapshot_mode not in get_args(SnapshotMode):
        raise ValueError(f"snapshot_mode {snapshot_mode!r}: valid are {', '.join(get_args(SnapshotMode))}")
    config = {
        "connector.class": POSTGRES_CONNECTOR_CLASS,
        "tasks.max": "1",
        "plugin.name": "pgoutput",
        "database.hostname": hostname,
        "database.port": str(port),
        "database.user": user,
        "database.password": password,
        "database.dbname": dbname,
        "topic.prefix": topic_prefix,
        "table.include.list": ",".join(re.escape(t) for t in tables),
        "slot.name": slot,
        "slot.drop.on.stop": "true",
        "publication.name": f"{slot}_publication",
        "publication.autocreate.mode": "filtered",
        "snapshot.mode": snapshot_mode,
        "skipped.operations": "none",
        "tombstones.on.delete": "true",
        **_JSON_TOPICS,
    }
    config.update(extra or {})
    return config


# What both connector configs write: JSON with schemas, into topics Connect creates with one
# partition (Debezium's per-table default).
_JSON_TOPICS = {
    "key.converter": JSON_CONVERTER,
    "key.converter.schemas.enable": "true",
    "value.converter": JSON_CONVERTER,
    "value.converter.schemas.enable": "true",
    "topic.creation.default.replication.factor": "1",
    "topic.creation.default.partitions": "1",
}


def avro_converter_config(registry_v2_url: str, *, framing: str = "wire") -> dict[str, str]:
    """Connector keys for Apicurio's Avro converter (2.6.x, Debezium's pin).

    `registry_v2_url` is Apicurio's v2 API (`.../apis/registry/v2`, which 3.x still serves).
    `framing` "wire": with `as-confluent` + `use-id=contentId` each record is 0x00, a 4-byte
    content id, the Avro body, and the content id is what the registry's
    `/apis/ccompat/v7/schemas/ids/{id}` takes. "headers": only the keys Debezium's documentation
    sets, so the converter's defaults hold: the bare body, the global id in a Kafka header
    (`apicurio.value.globalId`). Pass as `extra` to `mariadb_connector_config`.
    """
    config = {"schema.name.adjustment.mode": "avro", "field.name.adjustment.mode": "avro"}
    keys = {"url": registry_v2_url, "auto-register": "true", "find-latest": "true"}
    if framing == "wire":
        keys |= {"as-confluent": "true", "use-id": "contentId", "headers.enabled": "false"}
    for side in ("key", "value"):
        prefix = f"{side}.converter"
        config[prefix] = AVRO_CONVERTER
        for name, value in keys.items():
            config[f"{prefix}.apicurio.registry.{name}"] = value
    return config


def flattening_config(
    add_fields: str,
    deletes: str = "rewrite-with-tombstone",
    prefix: str = "__",
    *,
    add_headers: str = "",
    header_prefix: str = "__",
) -> dict[str, str]:
    """Connector keys that run Debezium's ExtractNewRecordState SMT (for `mode: flattened` tables).

    `add_fields` is the SMT's `add.fields` (e.g. `op,source.ts_ms,source.file,source.pos`);
    `deletes` its `delete.tombstone.handling.mode` (`rewrite`: a delete as its row, `__deleted`);
    `prefix` its `add.fields.prefix` (the table's `flattened_prefix`); `add_headers` and
    `header_prefix` its `add.headers` and `add.headers.prefix` (the table's
    `flattened_header_prefix`). Pass as `extra` to a connector config.
    """
    return {
        "transforms": "unwrap",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        "transforms.unwrap.delete.tombstone.handling.mode": deletes,
        "transforms.unwrap.add.fields": add_fields,
        "transforms.unwrap.add.fields.prefix": prefix,
        "transforms.unwrap.add.headers": add_headers,
        "transforms.unwrap.add.headers.prefix": header_prefix,
    }
