"""Small files beside the checkpoint that a job replaces while others read them."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from hudi_cdc.spark import fs


def test_a_reader_never_meets_a_half_replaced_file(spark: SparkSession, tmp_path: Path) -> None:
    # `hudi-cdc status` reads the metastore sync state while the running job rewrites it every batch
    path = str(tmp_path / "cp_hive_sync.json")
    fs.replace_text(spark, path, json.dumps({"n": 0}))
    done = threading.Event()
    seen: list[dict[str, int] | None] = []
    failures: list[Exception] = []
    gaps: list[bool] = []

    def read_while_written() -> None:
        while not done.is_set():
            try:
                seen.append(fs.read_replaced_json(spark, path))
            except Exception as exc:
                failures.append(exc)

    def look_while_written() -> None:
        # on a local disk the move replaces the file in one step: it is never missing, not even
        # for the one look that the reader above would take again
        while not done.is_set():
            gaps.append(not Path(path).exists())

    readers = [threading.Thread(target=read_while_written), threading.Thread(target=look_while_written)]
    for reader in readers:
        reader.start()
    try:
        for n in range(1, 150):
            fs.replace_text(spark, path, json.dumps({"n": n, "pad": "x" * 2_000}))
    finally:
        done.set()
        for reader in readers:
            reader.join()
    assert not failures, failures[:1]
    assert len(gaps) > 100 and not any(gaps), f"the file was missing at {sum(gaps)} of {len(gaps)} looks"
    assert len(seen) > 20, "the reader hardly ran beside the writer"
    numbers = [state["n"] for state in seen if state is not None]
    assert len(numbers) == len(seen), "a reader found no file while it was being replaced"
    assert set(numbers) <= set(range(150)) and len(set(numbers)) > 5
    assert fs.read_replaced_json(spark, path)["n"] == 149
    assert [p.name for p in tmp_path.iterdir()] == ["cp_hive_sync.json"], "an aside copy or a checksum file was left"


def test_a_file_with_a_checksum_from_an_older_version_is_replaced_and_read(spark: SparkSession, tmp_path: Path) -> None:
    # written through Hadoop's checksummed local file system, as replace_text did before it moved in one step,
    # with the aside copy's checksum left by a crash: neither may stand beside the new file
    path = str(tmp_path / "cp_tables.json")
    fs.write_text(spark, path, "[1]\n")
    fs.write_text(spark, path + fs.ASIDE_SUFFIX, "[0]\n")
    (tmp_path / ("cp_tables.json" + fs.ASIDE_SUFFIX)).unlink()
    assert (tmp_path / ".cp_tables.json.crc").exists() and (tmp_path / ".cp_tables.json.new.crc").exists()
    fs.replace_text(spark, path, "[2, 3]\n")
    assert fs.read_replaced_json(spark, path, attempts=1) == [2, 3]
    assert [p.name for p in tmp_path.iterdir()] == ["cp_tables.json"]


def test_a_job_on_hadoops_raw_local_file_system_replaces_its_files_too(spark: SparkSession, tmp_path: Path) -> None:
    # some jobs set `fs.file.impl` to the raw local file system to write no checksum files
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    before = {key: conf.get(key) for key in ("fs.file.impl", "fs.file.impl.disable.cache")}
    conf.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
    conf.set("fs.file.impl.disable.cache", "true")
    try:
        path = str(tmp_path / "cp_parked.json")
        assert fs.open_fs(spark, path)[0].getClass().getName() == "org.apache.hadoop.fs.RawLocalFileSystem"
        for n in range(3):
            fs.replace_text(spark, path, json.dumps({"n": n}))
        assert fs.read_replaced_json(spark, path) == {"n": 2}
        assert sorted(p.name for p in tmp_path.iterdir()) == ["cp_parked.json"]
    finally:
        for key, value in before.items():
            conf.unset(key) if value is None else conf.set(key, value)


def test_a_crash_between_the_delete_and_the_move_leaves_the_aside_copy_to_read(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "catalog.json"
    fs.replace_text(spark, str(path), "[1]\n")
    path.rename(str(path) + fs.ASIDE_SUFFIX)
    assert fs.read_replaced_json(spark, str(path)) == [1]
    fs.replace_text(spark, str(path), "[2]\n")
    assert fs.read_replaced_json(spark, str(path)) == [2] and not Path(str(path) + fs.ASIDE_SUFFIX).exists()
    assert fs.read_replaced_json(spark, str(tmp_path / "none.json")) is None


def test_a_file_that_stays_torn_is_an_error_after_a_few_looks(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "parked.json"
    path.write_text('[{"table": "orders", "cau')
    with pytest.raises(ValueError):
        fs.read_replaced_json(spark, str(path), attempts=2)


def test_a_file_created_empty_is_read_once_its_writer_is_done(spark: SparkSession, tmp_path: Path) -> None:
    # a snapshot ledger is created exclusively, then written: `snapshot status` may list it in between
    path = tmp_path / "ledger-000002.json"
    path.write_text("")
    writer = threading.Timer(0.15, lambda: path.write_text('{"runs": 2}'))
    writer.start()
    try:
        assert fs.read_settled(spark, (str(path),), json.loads) == {"runs": 2}
    finally:
        writer.join()
    assert fs.read_settled(spark, (str(tmp_path / "ledger-000003.json"),), json.loads) is None
