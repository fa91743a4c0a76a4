"""The JVM options a local session starts its driver with."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest
from pyspark.sql import SparkSession

from hudi_cdc.spark.session import (
    BUILD_ENV,
    LOCAL_DRIVER_JAVA_OPTIONS,
    REQUIRED_JARS,
    jvm,
    local_java_options,
    local_s3_classpath,
    missing_jars,
)


def test_a_local_session_collects_with_parallel_gc_unless_the_caller_picks_a_collector() -> None:
    assert local_java_options(None) == LOCAL_DRIVER_JAVA_OPTIONS
    assert local_java_options("") == LOCAL_DRIVER_JAVA_OPTIONS
    # one flag more keeps the collector, so a bench measures the flag, not G1
    assert local_java_options("-XX:TieredStopAtLevel=1").split() == [LOCAL_DRIVER_JAVA_OPTIONS, "-XX:TieredStopAtLevel=1"]
    # a collector of the caller's own wins: two would make the JVM refuse to start
    assert local_java_options("-XX:+UseG1GC -Xss4m") == "-XX:+UseG1GC -Xss4m"
    assert local_java_options("-XX:+UseZGC") == "-XX:+UseZGC"
    # a flag that only tunes a collector is not one
    tuned = "-XX:+UseAdaptiveSizePolicyWithSystemGC"
    assert local_java_options(tuned).split() == [LOCAL_DRIVER_JAVA_OPTIONS, tuned]


def test_a_local_session_draws_no_progress_bars_into_its_log(spark: SparkSession) -> None:
    # a bar on stderr splits the log lines written beside it (make demo showed a Hudi warning glued to one)
    assert spark.sparkContext.getConf().get("spark.ui.showConsoleProgress") == "false"


def test_hudis_size_estimator_is_told_not_to_attach_to_its_own_jvm(spark: SparkSession) -> None:
    system = jvm(spark).java.lang.System
    assert system.getProperty("jol.skipDynamicAttach") == "true"
    assert system.getProperty("jol.skipHotspotSAAttach") == "true"


def test_s3a_jars_join_a_local_drivers_class_path_only_when_fetched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BUILD_ENV, str(tmp_path))
    assert local_s3_classpath() is None
    (tmp_path / "jars-s3").mkdir()
    assert local_s3_classpath() is None  # `make s3-jars` not run, or failed before a jar landed
    (tmp_path / "jars-s3" / "hadoop-aws-3.3.4.jar").touch()
    assert local_s3_classpath() == f"{tmp_path}/jars-s3/*"
    monkeypatch.delenv(BUILD_ENV)
    assert local_s3_classpath() is None  # an installed package under spark-submit: the cluster brings S3A


def test_the_required_jars_are_the_ones_make_fetches() -> None:
    """REQUIRED_JARS names the coordinates infra/spark/pom.xml pins: one fact, checked in both places."""
    pom = ET.parse(Path(__file__).parents[3] / "infra" / "spark" / "pom.xml").getroot()
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    properties = pom.find("m:properties", ns)
    props = {p.tag.split("}")[1]: p.text or "" for p in (properties if properties is not None else [])}

    def version(dep: ET.Element) -> str:
        text = dep.findtext("m:version", namespaces=ns) or ""
        return props.get(text.strip("${}"), text) if text.startswith("${") else text

    pinned = {
        f"{d.findtext('m:groupId', namespaces=ns)}:{d.findtext('m:artifactId', namespaces=ns)}:{version(d)}"
        for d in pom.iterfind("m:dependencies/m:dependency", ns)
    }
    assert set(REQUIRED_JARS) <= pinned, pinned


def test_a_session_without_the_jars_names_the_missing_coordinates() -> None:
    loadable = {"org.apache.spark.sql.kafka010.KafkaSourceProvider"}
    utils = SimpleNamespace(classIsLoadable=lambda name: name in loadable)
    gateway = SimpleNamespace(org=SimpleNamespace(apache=SimpleNamespace(spark=SimpleNamespace(util=SimpleNamespace(Utils=utils)))))
    assert missing_jars(gateway) == ["org.apache.hudi:hudi-spark3.5-bundle_2.12:1.2.0"]
    loadable.update(REQUIRED_JARS.values())
    assert missing_jars(gateway) == []


def test_the_live_session_loads_every_required_class(spark: SparkSession) -> None:
    assert missing_jars(jvm(spark)) == []
