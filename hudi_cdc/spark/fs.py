"""Hadoop file systems, opened in one place: local paths, `hdfs://` and `s3a://` alike.

Everything hudi_cdc reads or writes beside a Spark DataFrame (table markers, the metastore
sync state, file statistics) goes through the session's Hadoop configuration here, so a
cluster's credentials and file system settings apply to it too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql import SparkSession

from hudi_cdc.config.locations import PathKind
from hudi_cdc.errors import ConfigError
from hudi_cdc.spark.session import error_summary, hadoop_conf, jvm


def open_fs(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """The Hadoop `(FileSystem, Path)` of `path` (JVM objects), with the session's configuration."""
    target = jvm(spark).org.apache.hadoop.fs.Path(path)
    return target.getFileSystem(hadoop_conf(spark)), target


def exists(spark: SparkSession, path: str) -> bool:
    """Whether a file or folder exists at `path`."""
    fs, target = open_fs(spark, path)
    return bool(fs.exists(target))


def touch(spark: SparkSession, path: str) -> None:
    """Create an empty file at `path` unless one exists."""
    fs, target = open_fs(spark, path)
    if not fs.exists(target):
        fs.create(target, False).close()


def write_text(spark: SparkSession, path: str, text: str) -> None:
    """Write (replace) a small text file."""
    fs, target = open_fs(spark, path)
    stream = fs.create(target, True)
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()


def create_text(spark: SparkSession, path: str, text: str) -> bool:
    """Create a small text file only if none exists (one atomic create); False when one did."""
    fs, target = open_fs(spark, path)
    if fs.exists(target):
        return False
    try:
        stream = fs.create(target, False)
    except Exception as exc:  # py4j wraps FileAlreadyExistsException: a concurrent writer won the create
        if "FileAlreadyExists" in str(exc):
            return False
        raise
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()
    return True


def names(spark: SparkSession, folder: str) -> list[str]:
    """The names of the entries directly in `folder`; [] when it does not exist."""
    fs, target = open_fs(spark, folder)
    if not fs.exists(target):
        return []
    return sorted(str(status.getPath().getName()) for status in fs.listStatus(target))


def read_text(spark: SparkSession, path: str) -> str | None:
    """The text of a small file, or None when there is none."""
    gateway = jvm(spark)
    fs, target = open_fs(spark, path)
    if not fs.exists(target):
        return None
    stream = fs.open(target)
    try:
        reader = gateway.java.io.BufferedReader(gateway.java.io.InputStreamReader(stream))
        lines = []
        while (line := reader.readLine()) is not None:
            lines.append(line)
    finally:
        stream.close()
    return "\n".join(lines)


def read_job_file(spark: SparkSession, uri: str) -> str:
    """The text of the job file at `uri` (`hdfs://`, `s3a://`), as HoodieStreamer reads its `--props`.

    Through a file system opened for this read and closed after it, not Hadoop's cached one: the
    job's own `hadoop_conf` is only known once this file is read, and a cached file system would
    keep the settings it was opened with for every later access to the same storage.

    Raises:
        ConfigError: there is no file at `uri`, or it cannot be read (permissions, the storage
            does not answer, no file system for the scheme).
    """
    gateway = jvm(spark)
    target = gateway.org.apache.hadoop.fs.Path(uri)
    try:
        fs = gateway.org.apache.hadoop.fs.FileSystem.newInstance(target.toUri(), hadoop_conf(spark))
        try:
            if not fs.exists(target):
                raise ConfigError(uri, ["file not found"])
            if fs.getFileStatus(target).isDirectory():
                raise ConfigError(uri, ["a folder, not a file"])
            stream = fs.open(target)
            try:
                data = gateway.org.apache.commons.io.IOUtils.toByteArray(stream)
            finally:
                stream.close()
        finally:
            fs.close()
    except ConfigError:
        raise
    except Exception as exc:  # py4j wraps the storage's IOException (AccessControlException, ConnectException...)
        raise ConfigError(uri, [f"cannot be read: {error_summary(exc)}"]) from None
    return bytes(data).decode("utf-8")


def list_files(spark: SparkSession, path: str) -> Iterator[tuple[str, int]]:
    """`(path, length)` of every file under `path`, recursively."""
    fs, root = open_fs(spark, path)
    files = fs.listFiles(root, True)
    while files.hasNext():
        status = files.next()
        yield str(status.getPath()), int(status.getLen())


def rename(spark: SparkSession, source: str, target: str) -> None:
    """Move a file or folder; fails when `target` exists. On object stores this copies every file."""
    fs, source_path = open_fs(spark, source)
    _, target_path = open_fs(spark, target)
    if fs.exists(target_path) or not fs.rename(source_path, target_path):
        raise OSError(f"could not move {source} to {target}")


def delete(spark: SparkSession, path: str) -> bool:
    """Delete a file or a folder with everything under it; False when there was nothing."""
    fs, target = open_fs(spark, path)
    return bool(fs.exists(target) and fs.delete(target, True))


class HadoopFiles:
    """Any file system Hadoop knows (s3a://, hdfs://, ...) as `config.locations.FileSystemView`."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark

    def kind(self, path: str) -> PathKind:
        fs, target = open_fs(self._spark, path)
        if not fs.exists(target):
            return "missing"
        return "dir" if fs.getFileStatus(target).isDirectory() else "file"

    def names(self, path: str) -> list[str]:
        return names(self._spark, path)
