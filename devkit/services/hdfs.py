"""A local HDFS: Hadoop's MiniDFSCluster (one name node, one data node) in one Java 17 process.

`make hdfs` fetches the minicluster jars (version pinned in infra/hdfs/pom.xml, the Hadoop of the
pyspark wheel) into build/hdfs/jars. Its name node and data node are real: a job reaches them over
Hadoop's RPC and data transfer protocols, by an `hdfs://127.0.0.1:<port>/...` URI, as it would a
cluster's. Blocks live under `<directory>/data`, the process's log in `directory`.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from pathlib import Path

from devkit import build_dir
from devkit.services.process import (
    LocalService,
    ServiceError,
    ServiceProcess,
    ensure_directory_free,
    free_port,
    java17_home,
    port_open,
    run_dir,
)

log = logging.getLogger(__name__)

SERVICE = "hdfs"

# the minicluster's own log4j 1.x configuration: everything at INFO to standard output, which
# ServiceProcess keeps in the service's log
_LOG4J = """log4j.rootLogger=INFO,out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
"""


def minicluster_jars() -> Path:
    """The jars `make hdfs` fetched."""
    return build_dir() / "hdfs" / "jars"


class LocalHdfs(LocalService):
    """A name node on a free 127.0.0.1 port and one data node; a context manager."""

    def __init__(self, *, directory: Path | None = None, startup_timeout: float = 90.0) -> None:
        self.directory = directory or run_dir(f"{SERVICE}-{uuid.uuid4().hex[:8]}")
        self.startup_timeout = startup_timeout
        self.port = 0

    @property
    def uri(self) -> str:
        """hdfs://127.0.0.1:<port>, the file system's root."""
        if not self.port:
            raise ServiceError(SERVICE, "not started")
        return f"hdfs://127.0.0.1:{self.port}"

    @property
    def data(self) -> Path:
        """Where the name node's metadata and the data node's blocks are kept."""
        return self.directory / "data"

    def hadoop_conf(self) -> dict[str, str]:
        """The `job.hadoop_conf` a client of this file system needs (`client_conf`)."""
        return self.client_conf()

    @staticmethod
    def client_conf() -> dict[str, str]:
        """The Hadoop settings a client of a one-data-node file system needs.

        A client writes 3 replicas by default, and when a pipeline loses a data node it looks for
        another to replace it; a one-node cluster has neither, which fails appends (Hudi's log
        files) as soon as a write pipeline is rebuilt. Small clusters set exactly these.
        """
        return {
            "dfs.replication": "1",
            "dfs.client.block.write.replace-datanode-on-failure.policy": "NEVER",
        }

    def start(self) -> LocalHdfs:
        began = time.monotonic()
        jars = minicluster_jars()
        if not any(jars.glob("hadoop-client-minicluster-*.jar")):
            raise ServiceError(SERVICE, f"no minicluster jars in {jars}; run `make hdfs`")
        ensure_directory_free(SERVICE, self.directory)
        conf = self.directory / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "log4j.properties").write_text(_LOG4J)
        details = self.directory / "details.json"
        details.unlink(missing_ok=True)
        self.port = free_port()
        process = ServiceProcess(
            SERVICE,
            [
                str(java17_home() / "bin" / "java"),
                "-Xmx512m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                f"-Dtest.build.data={self.data}",
                "-cp", f"{conf}:{jars}/*",
                "org.apache.hadoop.mapreduce.MiniHadoopClusterManager",
                "-nomr",  # HDFS only: no YARN, no MapReduce
                "-format",
                "-nnport", str(self.port),
                "-nnhttpport", "0",
                # written once the data node has registered, so a file can be written right away
                "-writeDetails", str(details),
            ],
            directory=self.directory,
        )  # fmt: skip
        self._launch(process, lambda: self._ready(details), timeout=self.startup_timeout, began=began)
        log.info("hdfs up at %s in %.1fs", self.uri, self.startup_seconds)
        return self

    def _ready(self, details: Path) -> bool:
        try:
            reported = json.loads(details.read_text()).get("namenode_port")
        except (OSError, ValueError):  # not written yet, or being written
            return False
        return reported == self.port and port_open(self.port)
