"""A local Hadoop cluster: HDFS and YARN (Hadoop's MiniDFSCluster and MiniYARNCluster) in one Java 17 process.

`make yarn` fetches what YARN adds to the minicluster jars of `make hdfs` (Bouncy Castle and JAXB,
which the shaded jar leaves out) into build/yarn/jars and compiles the launcher
(infra/yarn/MiniYarnCluster.java) into build/yarn/classes. The name node, data node, resource
manager and node manager are real: `spark-submit --master yarn` reaches them through the client
configuration written in `<directory>/conf` (`HADOOP_CONF_DIR`), and the node manager runs each
application's containers as processes of this machine, their logs under `<directory>/data`.
Sized for a 2-core machine: the node manager offers 6 GiB and 4 vcores, enough for a driver
(the application master) and one executor of 1 core and about 1 GiB each, with room for a second
application.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from devkit import build_dir
from devkit.services.hdfs import minicluster_jars
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

SERVICE = "yarn"

_LOG4J = """log4j.rootLogger=INFO,out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
log4j.logger.org.apache.hadoop.yarn.server.resourcemanager.scheduler=WARN
log4j.logger.org.apache.hadoop.hdfs.StateChange=WARN
log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit=WARN
"""

# a client command's (FsShell's) warnings to standard error, so its standard output is its answer
_CLIENT_LOG4J = """log4j.rootLogger=WARN,err
log4j.appender.err=org.apache.log4j.ConsoleAppender
log4j.appender.err.Target=System.err
log4j.appender.err.layout=org.apache.log4j.PatternLayout
log4j.appender.err.layout.ConversionPattern=%p %c{2}: %m%n
"""

# Guice (the resource manager's web services) and the node manager reflect into the JDK
_OPENS = [
    f"--add-opens=java.base/{package}=ALL-UNNAMED"
    for package in ("java.lang", "java.lang.reflect", "java.util", "java.util.concurrent", "java.io", "java.net", "java.nio", "sun.nio.ch")
]

CLUSTER_SETTINGS = {
    # FIFO: the capacity scheduler wants a queue file, and limits application masters to 10% of
    # the node (a Spark driver in cluster mode is one)
    "yarn.resourcemanager.scheduler.class": "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler",
    "yarn.nodemanager.resource.memory-mb": "6144",
    "yarn.nodemanager.resource.cpu-vcores": "4",
    "yarn.scheduler.minimum-allocation-mb": "256",
    "yarn.scheduler.maximum-allocation-mb": "4096",
    # a JVM reserves far more virtual memory than it uses; on a shared test machine the physical
    # check would kill a container for the page cache of the tests around it
    "yarn.nodemanager.vmem-check-enabled": "false",
    "yarn.nodemanager.pmem-check-enabled": "false",
    # the developer's disk may be fuller than YARN's default 90% without harm to a test
    "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "99",
    # Hadoop 3's node manager copies each container's launch script into its logs by default;
    # the script exports the container's environment, spark.yarn.appMasterEnv.* secrets included,
    # and aggregated logs are read by more people than the job's owner (docs/deployment.md)
    "yarn.nodemanager.log-container-debug-info.enabled": "false",
    # a finished application's containers are deleted at once (the logs stay, under data/)
    "yarn.nodemanager.delete.debug-delay-sec": "0",
    # one data node: no third replica and no replacement node to look for (devkit.services.hdfs)
    "dfs.replication": "1",
    "dfs.client.block.write.replace-datanode-on-failure.policy": "NEVER",
}
"""Settings of both clusters; `yarn.*` and `dfs.client.*`/`dfs.replication` also go to the client's
configuration files."""


def launcher_classes() -> Path:
    """Where `make yarn` compiled infra/yarn/MiniYarnCluster.java."""
    return build_dir() / "yarn" / "classes"


def launcher_jars() -> Path:
    """The jars `make yarn` fetched beside the minicluster's."""
    return build_dir() / "yarn" / "jars"


class LocalYarn(LocalService):
    """HDFS (a name node on a free 127.0.0.1 port, one data node) and YARN (one resource manager,
    one node manager); a context manager."""

    stop_timeout = 30.0

    def __init__(self, *, directory: Path | None = None, startup_timeout: float = 120.0) -> None:
        self.directory = directory or run_dir(f"{SERVICE}-{uuid.uuid4().hex[:8]}")
        self.startup_timeout = startup_timeout
        self.port = 0
        self.resource_manager = ""

    @property
    def uri(self) -> str:
        """hdfs://localhost:<port>, the file system's root (as `fs.defaultFS` names it)."""
        if not self.port:
            raise ServiceError(SERVICE, "not started")
        return f"hdfs://localhost:{self.port}"

    @property
    def conf_dir(self) -> Path:
        """The client configuration (core-site.xml, hdfs-site.xml, yarn-site.xml): `HADOOP_CONF_DIR`."""
        return self.directory / "conf"

    @property
    def data(self) -> Path:
        """The name node's metadata, the data node's blocks, the containers and their logs."""
        return self.directory / "data"

    def client_env(self) -> dict[str, str]:
        """The environment a `spark-submit --master yarn` (or any Hadoop client) of this cluster needs."""
        return {"HADOOP_CONF_DIR": str(self.conf_dir), "JAVA_HOME": str(java17_home())}

    def container_logs(self, application_id: str) -> list[Path]:
        """The log files of every container of an application (stdout, stderr), as the node manager kept them.

        Only the node manager's log folders (`*-logDir-nm-*`). Its local folders hold the containers'
        working folders (`appcache`: the localized jars and archives) and `nmPrivate` (each
        container's launch script, which exports the container's environment, secrets included, as
        YARN passes it): neither is a log, and the node manager deletes both once the application
        ends, maybe while they are read.
        """
        found = self.data.glob(f"**/{application_id}/container_*/*")
        return sorted(p for p in found if any("-logDir-" in part for part in p.parts) and p.is_file())

    def start(self) -> LocalYarn:
        began = time.monotonic()
        jars, extra, classes = minicluster_jars(), launcher_jars(), launcher_classes()
        if not any(jars.glob("hadoop-client-minicluster-*.jar")):
            raise ServiceError(SERVICE, f"no minicluster jars in {jars}; run `make yarn`")
        if not (classes / "MiniYarnCluster.class").is_file():
            raise ServiceError(SERVICE, f"no launcher in {classes}; run `make yarn`")
        ensure_directory_free(SERVICE, self.directory)
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        details = self.conf_dir / "details.json"
        details.unlink(missing_ok=True)
        log4j = self.directory / "log4j"
        log4j.mkdir(parents=True, exist_ok=True)
        (log4j / "log4j.properties").write_text(_LOG4J)
        client_log4j = self.directory / "client-log4j"
        client_log4j.mkdir(parents=True, exist_ok=True)
        (client_log4j / "log4j.properties").write_text(_CLIENT_LOG4J)
        self.port = free_port()
        process = ServiceProcess(
            SERVICE,
            [
                str(java17_home() / "bin" / "java"),
                "-Xmx768m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                *_OPENS,
                f"-Dtest.build.data={self.data}",
                "-cp", f"{log4j}:{classes}:{jars}/*:{extra}/*",
                "MiniYarnCluster",
                str(self.port),
                str(self.conf_dir),
                *(f"{key}={value}" for key, value in CLUSTER_SETTINGS.items()),
            ],
            # containers run `$JAVA_HOME/bin/java`: the node manager passes its own JAVA_HOME on
            env={"JAVA_HOME": str(java17_home())},
            directory=self.directory,
        )  # fmt: skip
        self._launch(process, lambda: self._ready(details), timeout=self.startup_timeout, began=began)
        self.resource_manager = json.loads(details.read_text())["resourcemanager_address"]
        log.info("yarn up: hdfs %s, resource manager %s in %.1fs", self.uri, self.resource_manager, self.startup_seconds)
        return self

    def _ready(self, details: Path) -> bool:
        try:
            reported = json.loads(details.read_text()).get("namenode_port")
        except (OSError, ValueError):  # not written yet
            return False
        return reported == self.port and port_open(self.port)

    def hdfs(self, *args: str, env: Mapping[str, str] | None = None, timeout: float = 120) -> str:
        """Run `hdfs dfs <args>` (Hadoop's FsShell, in its own JVM) against this cluster; its output.

        Raises:
            ServiceError: the command failed; its output is in the message.
        """
        command = [
            str(java17_home() / "bin" / "java"),
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1",
            "-cp", f"{self.conf_dir}:{self.directory / 'client-log4j'}:{minicluster_jars()}/*",
            "org.apache.hadoop.fs.FsShell",
            *args,
        ]  # fmt: skip
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env={**os.environ, **(env or {})},
        )
        if result.returncode != 0:
            raise ServiceError(SERVICE, f"hdfs dfs {' '.join(args)} failed: {result.stdout}{result.stderr}")
        return result.stdout
