"""A local S3 endpoint: the Versity S3 Gateway (Apache 2.0) serving a folder over the S3 API.

`make s3` builds the gateway from its Go module (version pinned in infra/s3/VERSITYGW_VERSION)
into build/s3/versitygw; `make s3-jars` fetches Hadoop's S3A, which Spark needs for `s3a://`
paths. Each top-level folder of the served directory is a bucket, so `bucket()` is a mkdir.
Jobs reach it through `job.hadoop_conf` (`hadoop_conf` below), as they would reach S3 or MinIO.
"""

from __future__ import annotations

import logging
import secrets
import time
import urllib.error
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

log = logging.getLogger(__name__)

SERVICE = "s3"
VERSION_FILE = CHECKOUT / "infra" / "s3" / "VERSITYGW_VERSION"


def gateway_binary() -> Path:
    """The gateway `make s3` built."""
    return build_dir() / "s3" / "versitygw"


class LocalS3(LocalService):
    """The gateway on a free 127.0.0.1 port, its objects under `<directory>/data`, its log in `directory`."""

    def __init__(self, *, directory: Path | None = None, startup_timeout: float = 30.0) -> None:
        self.directory = directory or run_dir(f"{SERVICE}-{uuid.uuid4().hex[:8]}")
        self.startup_timeout = startup_timeout
        self.port = 0
        self.access_key = "hudicdc"
        self.secret_key = secrets.token_hex(16)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def data(self) -> Path:
        """The folder the gateway serves: one sub-folder per bucket."""
        return self.directory / "data"

    def hadoop_conf(self) -> dict[str, str]:
        """The `job.hadoop_conf` that points S3A at this endpoint, as a user would for MinIO."""
        return {
            "fs.s3a.endpoint": self.endpoint,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.access.key": self.access_key,
            "fs.s3a.secret.key": self.secret_key,
            # The gateway keeps objects as files in folders, so a folder that holds files cannot be
            # deleted as an object; S3A's default deletes the empty "dir/" markers above every file
            # it writes and retries each refusal. Keeping markers is what S3A documents for stores
            # with real directories (and is the default from Hadoop 3.4).
            "fs.s3a.directory.marker.retention": "keep",
        }

    def trino_conf(self) -> dict[str, str]:
        """Trino's native S3 file system settings for this endpoint (a Hive or Hudi catalog's)."""
        return {
            "s3.endpoint": self.endpoint,
            "s3.region": "us-east-1",
            "s3.path-style-access": "true",
            "s3.aws-access-key": self.access_key,
            "s3.aws-secret-key": self.secret_key,
        }

    def bucket(self, name: str) -> str:
        """Create bucket `name` (a folder) and return its `s3a://` URI."""
        (self.data / name).mkdir(parents=True, exist_ok=True)
        return f"s3a://{name}"

    def start(self) -> LocalS3:
        began = time.monotonic()
        binary = gateway_binary()
        if not binary.is_file():
            raise ServiceError(SERVICE, f"no {binary}; run `make s3`")
        ensure_directory_free(SERVICE, self.directory)
        self.data.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()  # a restart keeps its port, and `data` its objects
        process = ServiceProcess(
            SERVICE,
            [
                str(binary),
                "--port", f"127.0.0.1:{self.port}",
                "--access", self.access_key,
                "--secret", self.secret_key,
                "--quiet",  # no line per request; errors are still logged
                "posix", str(self.data),
            ],
            directory=self.directory,
        )
        self._launch(process, self._ready, timeout=self.startup_timeout, began=began)
        log.info("s3 gateway %s up at %s in %.1fs", VERSION_FILE.read_text().strip(), self.endpoint, self.startup_seconds)
        return self

    def _ready(self) -> bool:
        try:
            urllib.request.urlopen(self.endpoint, timeout=2).close()
        except urllib.error.HTTPError:  # an unsigned request is refused (403): the gateway answers
            return True
        except OSError:
            return False
        return True
