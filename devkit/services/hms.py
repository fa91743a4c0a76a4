"""A local Hive Metastore (thrift) with embedded Derby, started from the pyspark wheel's Hive jars.

Production uses a metastore backed by a JDBC database (MySQL/PostgreSQL): point
`job.metastore_uris` at it. This one is for the demo and the tests: one process, one Derby
database under build/run/hms-<id>/, on Java 17 (Hadoop's UGI fails on Java 24+). It is ready
when a thrift `get_all_databases` call answers, not merely when the port is open.
"""

from __future__ import annotations

import logging
import shutil
import socket
import struct
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO
from xml.sax.saxutils import escape

import pyspark

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
from hudi_cdc.spark.session import local_s3_classpath

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


def hadoop_site(settings: Mapping[str, str]) -> str:
    """A Hadoop `*-site.xml` holding `settings`."""
    properties = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n" for k, v in settings.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{properties}</configuration>\n'


def pyspark_jars() -> Path:
    """The jars folder of the installed pyspark wheel (Hive 2.3 metastore, Derby, DataNucleus)."""
    return Path(pyspark.__file__).parent / "jars"


class LocalMetastore(LocalService):
    """Hive Metastore thrift service on a free 127.0.0.1 port; a context manager.

    Its files (hive-site.xml, Derby database, warehouse, `hms.log`) are in `directory`,
    by default a new `build/run/hms-<id>/`, so concurrent sessions do not collide.
    """

    def __init__(
        self,
        *,
        directory: Path | None = None,
        port: int | None = None,
        startup_timeout: float = 120.0,
        hadoop: Mapping[str, str] | None = None,
    ) -> None:
        self.directory = directory or run_dir(f"{SERVICE}-{uuid.uuid4().hex[:8]}")
        self.port = port or 0
        self.startup_timeout = startup_timeout
        self.hadoop = dict(hadoop or {})
        """Hadoop settings of the metastore's file systems (core-site.xml), e.g. an S3 endpoint: it
        checks and creates the locations of the tables it registers."""

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
        (conf / "core-site.xml").write_text(hadoop_site(self.hadoop))
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
                ":".join([str(conf), f"{pyspark_jars()}/*", *filter(None, [local_s3_classpath()])]),
                "org.apache.hadoop.hive.metastore.HiveMetaStore",
                "-p",
                str(self.port),
            ],
            directory=self.directory,
        )
        self._launch(process, self._ready, timeout=self.startup_timeout, began=began, interval=0.5)
        log.info("hive metastore up at %s in %.1fs", self.uri, self.startup_seconds)
        return self

    def _ready(self) -> bool:
        return port_open(self.port) and "default" in get_all_databases(self.port)

    def databases(self) -> list[str]:
        """The metastore's databases, asked over thrift."""
        return get_all_databases(self.port)


# Thrift binary protocol, enough for one argument-less call (the metastore's defaults: unframed,
# strict binary protocol). Written out because no thrift library is a dependency.
_VERSION_1 = 0x80010000
_CALL, _REPLY, _EXCEPTION = 1, 2, 3
_STOP, _BOOL, _BYTE, _DOUBLE, _I16, _I32, _I64, _STRING, _STRUCT, _MAP, _SET, _LIST = 0, 2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15
_FIXED_SIZE = {_BOOL: 1, _BYTE: 1, _DOUBLE: 8, _I16: 2, _I32: 4, _I64: 8}


def get_all_databases(port: int, host: str = "127.0.0.1", timeout: float = 5.0) -> list[str]:
    """ThriftHiveMetastore.get_all_databases(); raises ServiceError if the metastore answers with an error."""
    name = b"get_all_databases"
    request = struct.pack(">Ii", _VERSION_1 | _CALL, len(name)) + name + struct.pack(">i", 1) + bytes([_STOP])
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(request)
        reader = _Reader(sock.makefile("rb"))
        version = reader.u32()
        if version & 0xFFFF0000 != _VERSION_1:
            raise ServiceError(SERVICE, f"not a thrift binary-protocol reply on port {port} (0x{version:08x})")
        reader.string()  # method name
        reader.i32()  # sequence id
        if version & 0xFF == _EXCEPTION:
            raise ServiceError(SERVICE, f"get_all_databases failed: {_first_string(reader)}")
        databases: list[str] = []
        while (field_type := reader.byte()) != _STOP:
            field_id = reader.i16()
            if field_id == 0 and field_type == _LIST:
                reader.byte()  # element type: string
                databases = [reader.string() for _ in range(reader.i32())]
            elif field_type == _STRUCT:  # MetaException
                raise ServiceError(SERVICE, f"get_all_databases failed: {_first_string(reader)}")
            else:
                reader.skip(field_type)
        return databases


def _first_string(reader: _Reader) -> str:
    """The first string field of a struct (an exception's message), skipping the rest."""
    message = ""
    while (field_type := reader.byte()) != _STOP:
        reader.i16()
        if field_type == _STRING and not message:
            message = reader.string()
        else:
            reader.skip(field_type)
    return message


class _Reader:
    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    def _read(self, n: int) -> bytes:
        data = self._stream.read(n)
        if len(data) != n:
            raise ServiceError(SERVICE, "the metastore closed the connection mid-reply")
        return data

    def byte(self) -> int:
        return self._read(1)[0]

    def i16(self) -> int:
        return int(struct.unpack(">h", self._read(2))[0])

    def i32(self) -> int:
        return int(struct.unpack(">i", self._read(4))[0])

    def u32(self) -> int:
        return int(struct.unpack(">I", self._read(4))[0])

    def string(self) -> str:
        return self._read(self.i32()).decode("utf-8", errors="replace")

    def skip(self, field_type: int) -> None:
        if field_type in _FIXED_SIZE:
            self._read(_FIXED_SIZE[field_type])
        elif field_type == _STRING:
            self._read(self.i32())
        elif field_type == _STRUCT:
            while (inner := self.byte()) != _STOP:
                self.i16()
                self.skip(inner)
        elif field_type == _MAP:
            key_type, value_type, size = self.byte(), self.byte(), self.i32()
            for _ in range(size):
                self.skip(key_type)
                self.skip(value_type)
        elif field_type in (_SET, _LIST):
            element_type, size = self.byte(), self.i32()
            for _ in range(size):
                self.skip(element_type)
        else:
            raise ServiceError(SERVICE, f"unexpected thrift type {field_type} in a metastore reply")

