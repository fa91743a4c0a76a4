"""Run-start checks in the JVM: Java's regex dialect, Hadoop's file systems, Spark's interval syntax."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pyspark.sql import SparkSession

from hudi_cdc.config.durations import spark_interval
from hudi_cdc.config.locations import base_path_problems
from hudi_cdc.config.route_regex import jvm_problems
from hudi_cdc.spark.fs import HadoopFiles
from hudi_cdc.spark.session import jvm


def test_java_compiles_the_patterns_it_accepts(spark: SparkSession) -> None:
    assert jvm_problems(jvm(spark), [r"shop\.inventory\.orders(_\d+)?", r"(?<db>\w+)\.t"]) == []
    found = jvm_problems(jvm(spark), [r"a{,3}", r"(?P<n>x)"])
    assert len(found) == 2 and all("not valid in Java" in p for p in found)


def test_hadoop_file_system_view_refuses_non_hudi_folders(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.csv").write_text("x")
    (tmp_path / "table" / ".hoodie").mkdir(parents=True)
    fs = HadoopFiles(spark)
    paths = [("a", f"file://{tmp_path}/data"), ("b", str(tmp_path / "table")), ("c", str(tmp_path / "new"))]
    found = base_path_problems(paths, fs)
    assert len(found) == 1 and "tables.0.base_path: table a" in found[0] and "x.csv" in found[0]


def test_spark_reads_the_trigger_interval_as_written(spark: SparkSession) -> None:
    trigger = jvm(spark).org.apache.spark.sql.streaming.Trigger.ProcessingTime(spark_interval(timedelta(days=1)))
    assert trigger.intervalMs() == 86_400_000
