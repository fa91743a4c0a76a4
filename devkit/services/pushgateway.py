"""A local Prometheus Pushgateway, where a scheduled (`--once`) job pushes its metrics.

The binary is Debian's `prometheus-pushgateway` (`make system-packages`; `PUSHGATEWAY` names
another). It keeps the pushed groups in memory only: each start is empty.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import urllib.request
import uuid
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from devkit.services.process import (
    LocalService,
    ServiceError,
    ServiceProcess,
    ensure_directory_free,
    free_port,
    run_dir,
)

log = logging.getLogger(__name__)

SERVICE = "pushgateway"

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
"""(sample name, sorted labels) -> value."""


def pushgateway_binary() -> Path:
    """The Pushgateway to run: `PUSHGATEWAY`, else Debian's, else one on PATH."""
    for candidate in (os.environ.get("PUSHGATEWAY", ""), "/usr/bin/prometheus-pushgateway"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    found = shutil.which("prometheus-pushgateway") or shutil.which("pushgateway")
    if found is None:
        raise ServiceError(SERVICE, "no prometheus-pushgateway found (run `make system-packages` or set PUSHGATEWAY)")
    return Path(found)


class LocalPushgateway(LocalService):
    """The Pushgateway on a free 127.0.0.1 port, its log in `directory`."""

    def __init__(self, *, directory: Path | None = None, startup_timeout: float = 30.0) -> None:
        self.directory = directory or run_dir(f"{SERVICE}-{uuid.uuid4().hex[:8]}")
        self.startup_timeout = startup_timeout
        self.port = 0

    @property
    def url(self) -> str:
        """What `job.metrics_pushgateway` names."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LocalPushgateway:
        began = time.monotonic()
        binary = pushgateway_binary()
        ensure_directory_free(SERVICE, self.directory)
        self.port = free_port()
        process = ServiceProcess(
            SERVICE,
            [str(binary), f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=info"],
            directory=self.directory,
        )
        self._launch(process, self._ready, timeout=self.startup_timeout, began=began)
        log.info("pushgateway up at %s in %.1fs", self.url, self.startup_seconds)
        return self

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def metrics(self) -> str:
        """What Prometheus scrapes from the gateway: every pushed group, and the gateway's own metrics."""
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=10) as response:
            return str(response.read().decode("utf-8"))

    def samples(self, **labels: str) -> Samples:
        """The samples whose labels include `labels` (e.g. `pipeline="shop"`), as Prometheus would store them."""
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(self.metrics())
            for s in family.samples
            if all(s.labels.get(k) == v for k, v in labels.items())
        }
