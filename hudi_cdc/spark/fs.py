"""Hadoop file systems, opened in one place: local paths, `hdfs://` and `s3a://` alike.

Everything hudi_cdc reads or writes beside a Spark DataFrame (table markers, the metastore
sync state, file statistics) goes through the session's Hadoop configuration here, so a
cluster's credentials and file system settings apply to it too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from pyspark.sql import SparkSession

from hudi_cdc.config.locations import PathKind
from hudi_cdc.errors import ConfigError
from hudi_cdc.spark.session import error_summary, hadoop_conf, jvm

T = TypeVar("T")


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
    _write(*open_fs(spark, path), text)


def _write(fs: Any, target: Any, text: str) -> None:
    stream = fs.create(target, True)
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()


ASIDE_SUFFIX = ".new"


def replace_text(spark: SparkSession, path: str, text: str) -> None:
    """Replace a small text file that others read while it changes (a job's state beside its checkpoint).

    Written aside, then moved over the old one, so a reader or a crash never meets a half-written
    file: `write_text` truncates first, and a reader between that and the write read nothing.
    On a local disk the move replaces the old file in one step (`_replace_locally`), so a reader
    always finds one whole file. HDFS and S3 refuse to move onto a file, so there the old one is
    deleted first: a crash between the delete and the move leaves only the aside copy, whole, and
    `read_replaced_json` reads it.
    """
    aside = path + ASIDE_SUFFIX
    fs, aside_path = open_fs(spark, aside)
    if fs.getUri().getScheme() == "file":  # not getScheme(): the raw local file system has none
        # beneath the checksummed local file system (Hadoop's default, or Hive's proxy of it) is
        # the raw one; a job configured with the raw one itself (`fs.file.impl`) has nothing beneath
        checksummed = jvm(spark).org.apache.hadoop.fs.FilterFileSystem._java_lang_class.isInstance(fs)
        _replace_locally(fs.getRawFileSystem() if checksummed else fs, aside_path, open_fs(spark, path)[1], text)
        return
    write_text(spark, aside, text)
    delete(spark, path)
    rename(spark, aside, path)


def _replace_locally(raw: Any, aside: Any, target: Any, text: str) -> None:
    """Replace a local file in one step, through Hadoop's raw local file system (`raw`).

    The checksummed local file system refuses to move onto a file, as HDFS does; the raw one moves
    with POSIX rename, which replaces the target atomically. The new file is written without a
    checksum file and the old one's is deleted first, so at every moment, a kill -9 included, the
    target is the old file or the new one, whole, and never beside the other's checksum (which a
    checksummed read would refuse); a file without one is read unchecked.
    """
    for path in (aside, target):
        raw.delete(_checksum_path(path), False)
    _write(raw, aside, text)
    if not raw.rename(aside, target):
        raise OSError(f"could not move {aside} over {target}")


def _checksum_path(path: Any) -> Any:
    """Where Hadoop's checksummed local file system keeps `path`'s checksums: `.<name>.crc` beside it."""
    return path.getParent().suffix(f"/.{path.getName()}.crc")


def read_replaced_json(spark: SparkSession, path: str, *, attempts: int = 5) -> Any:
    """The JSON value of a file kept by `replace_text`, or None when there is none.

    Raises:
        ValueError, Py4JJavaError: the file stays unreadable (torn JSON, a failed checksum) for
            `attempts` looks; the last look's error.
    """
    # a reader between the writer's delete and its move finds the aside copy; one that then lands
    # after the move finds the file again on a second look
    return read_settled(spark, (path, path + ASIDE_SUFFIX, path), json.loads, attempts=attempts)


def read_settled(
    spark: SparkSession, looks: Sequence[str], parse: Callable[[str], T], *, attempts: int = 5
) -> T | None:
    """`parse` of the first of `looks` that exists, read again while a writer may still be at it;
    None when none exists (on two rounds of looks, as one can fall in a quick writer's gaps).

    Raises:
        Exception: `parse`'s or the read's error, when the file stays unreadable for `attempts` looks.
    """
    missed = 0
    for attempt in range(1, attempts + 1):
        try:
            text = next((t for t in (read_text(spark, look) for look in looks) if t is not None), None)
            if text is None:
                missed += 1
                if missed < 2:
                    continue
                return None
            return parse(text)
        except Exception:
            # a file still being written (created empty, or the aside copy of the next replace):
            # done within moments
            if attempt == attempts:
                raise
            time.sleep(0.05 * attempt)
    return None


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
    try:
        stream = fs.open(target)
    except Exception as exc:  # py4j wraps it: the file went between the look and the open
        if "FileNotFoundException" in str(exc):
            return None
        raise
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
