"""A local Hive Metastore (thrift) with embedded Derby, started from the pyspark wheel's Hive jars.

Production uses a metastore backed by a JDBC database (MySQL/PostgreSQL): point
`job.metastore_uris` at it. This one is for the demo and the tests: one process, one Derby
database under build/run/hms/, on Java 17 (Hadoop's UGI fails on Java 24+).
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import pyspark

from hudi_cdc.errors import ServiceError
from hudi_cdc.services.process import (
    LocalService,
    ServiceProcess,
    ensure_directory_free,
    free_port,
    java17_home,
    port_open,
    run_dir,
)

log = logging.getLogger(__name__)

SERVICE = "hms"
_SITE = """<?xml version="1.0"?>
<configuration>
  <property><name>javax.jdo.option.ConnectionURL</name><value>jdbc:derby:;databaseName={db};create=true</value></property>
  <property><name>javax.jdo.option.ConnectionDriverName</name><value>org.apache.derby.jdbc.EmbeddedDriver</value></property>
  <property><name>datanucleus.schema.autoCreateAll</name><value>true</value></property>
  <property><name>hive.metastore.schema.verification</name><value>false</value></property>
  <property><name>hive.metastore.warehouse.dir</name><value>file://{warehouse}</value></property>
  <property><name>hive.metastore.event.db.notification.api.auth</name><value>false</value></property>
  <!-- the disruptor jar async logging needs is not in the pyspark wheel -->
  <property><name>hive.async.log.enabled</name><value>false</value></property>
</configuration>
"""


def pyspark_jars() -> Path:
    """The jars folder of the installed pyspark wheel (Hive 2.3 metastore, Derby, DataNucleus)."""
    return Path(pyspark.__file__).parent / "jars"


class LocalMetastore(LocalService):
    """Hive Metastore thrift service on a free 127.0.0.1 port; a context manager."""

    def __init__(self, *, directory: Path | None = None, port: int | None = None, startup_timeout: float = 120.0) -> None:
        self.directory = directory or run_dir(SERVICE)
        self.port = port or 0
        self.startup_timeout = startup_timeout

    @property
    def uri(self) -> str:
        """thrift://127.0.0.1:<port> of the running metastore."""
        if not self.port:
            raise ServiceError(SERVICE, "not started")
        return f"thrift://127.0.0.1:{self.port}"

    def start(self, *, fresh: bool = True) -> LocalMetastore:
        """Start the metastore (a fresh Derby database unless `fresh=False`); return when it accepts connections."""
        began = time.monotonic()
        ensure_directory_free(SERVICE, self.directory)
        conf = self.directory / "conf"
        db = self.directory / "metastore_db"
        warehouse = self.directory / "warehouse"
        if fresh:
            # database and warehouse go together: a kept warehouse makes CREATE TABLE fail
            shutil.rmtree(db, ignore_errors=True)
            shutil.rmtree(warehouse, ignore_errors=True)
        conf.mkdir(parents=True, exist_ok=True)
        warehouse.mkdir(parents=True, exist_ok=True)
        (conf / "hive-site.xml").write_text(_SITE.format(db=db, warehouse=warehouse))
        self.port = self.port or free_port()
        java = str(java17_home() / "bin" / "java")
        process = ServiceProcess(
            SERVICE,
            [
                java,
                "-Xmx512m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                f"-Dderby.system.home={self.directory}",
                "-cp",
                f"{conf}:{pyspark_jars()}/*",
                "org.apache.hadoop.hive.metastore.HiveMetaStore",
                "-p",
                str(self.port),
            ],
            directory=self.directory,
        )
        self._launch(process, lambda: port_open(self.port), timeout=self.startup_timeout, began=began)
        log.info("hive metastore up at %s in %.1fs", self.uri, self.startup_seconds)
        return self

