"""What the job needs of a session it did not create: static settings are checked, never set."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hudi_cdc.config.models import parse_config
from hudi_cdc.errors import SessionSettingsError
from hudi_cdc.hudi.compactor import run_compaction
from hudi_cdc.spark.session import (
    HUDI_SQL_EXTENSION,
    HUDI_SQL_STATIC_CONF,
    JOB_SQL_CONF,
    REQUIRED_HADOOP_CONF,
    REQUIRED_STATIC_CONF,
    SQL_EXTENSIONS,
    for_job,
    get_or_create_session,
    has_hudi_sql,
    hudi_session_conf,
    session_problems,
)


def _session(conf: dict[str, str], hadoop: dict[str, str]) -> Any:
    """A stand-in with the two places `session_problems` reads: the context's conf and its Hadoop conf."""
    return SimpleNamespace(
        sparkContext=SimpleNamespace(getConf=lambda: SimpleNamespace(get=conf.get)),
        _jsc=SimpleNamespace(hadoopConfiguration=lambda: SimpleNamespace(get=hadoop.get)),
    )


def test_a_session_with_the_static_settings_has_no_problem() -> None:
    assert session_problems(_session(dict(REQUIRED_STATIC_CONF), dict(REQUIRED_HADOOP_CONF))) == []
    # the registrar may be one of several
    several = {**REQUIRED_STATIC_CONF, "spark.kryo.registrator": "com.example.Mine,org.apache.spark.HoodieSparkKryoRegistrar"}
    assert session_problems(_session(several, dict(REQUIRED_HADOOP_CONF))) == []


def test_each_missing_static_setting_is_named_with_the_value_to_set() -> None:
    problems = session_problems(_session({"spark.serializer": "org.apache.spark.serializer.JavaSerializer"}, {}))
    assert problems == [
        "spark.serializer is 'org.apache.spark.serializer.JavaSerializer': build the session with "
        "spark.serializer=org.apache.spark.serializer.KryoSerializer",
        "spark.kryo.registrator is None: build the session with spark.kryo.registrator=org.apache.spark.HoodieSparkKryoRegistrar",
        "the Hadoop setting parquet.avro.write-old-list-structure is None: build the session with "
        "spark.hadoop.parquet.avro.write-old-list-structure=false",
    ]
    with pytest.raises(SessionSettingsError, match="does not change a session it did not create"):
        for_job(_session({}, {}))


def test_the_jobs_copy_has_the_jobs_sql_settings_and_the_session_keeps_its_own(spark: SparkSession) -> None:
    key = "spark.sql.session.timeZone"
    before = spark.conf.get(key)
    spark.conf.set(key, "Asia/Tokyo")
    try:
        job = for_job(spark)
        assert {k: job.conf.get(k) for k in JOB_SQL_CONF} == JOB_SQL_CONF
        assert spark.conf.get(key) == "Asia/Tokyo"
        assert job.sparkContext is spark.sparkContext
    finally:
        spark.conf.set(key, before)


def test_a_running_session_is_returned_as_it_is(spark: SparkSession, caplog: pytest.LogCaptureFixture) -> None:
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "7")
    try:
        with caplog.at_level("WARNING", logger="hudi_cdc.spark.session"):
            again = get_or_create_session(extra_conf={"spark.sql.shuffle.partitions": "3"})
        assert again._jsparkSession.equals(spark._jsparkSession)
        # Spark's builder would have set 2 (a local default) or 3 on it
        assert spark.conf.get("spark.sql.shuffle.partitions") == "7"
        assert "spark.sql.shuffle.partitions not applied" in caplog.text
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", partitions)


def test_hudis_sql_is_in_a_new_session_only_when_asked_for() -> None:
    without, with_sql = hudi_session_conf(hudi_sql=False), hudi_session_conf(hudi_sql=True)
    assert SQL_EXTENSIONS not in without and "spark.sql.catalog.spark_catalog" not in without
    assert with_sql == {**without, **HUDI_SQL_STATIC_CONF}
    # the job's required settings are there either way
    assert REQUIRED_STATIC_CONF.items() <= without.items() and JOB_SQL_CONF.items() <= without.items()


@pytest.mark.parametrize(
    ("extensions", "expected"),
    [
        (None, False),
        ("", False),
        ("com.example.Other", False),
        (HUDI_SQL_EXTENSION, True),
        (f"com.example.Other, {HUDI_SQL_EXTENSION}", True),
    ],
)
def test_hudis_sql_is_recognised_among_the_contexts_extensions(extensions: str | None, expected: bool) -> None:
    conf = {} if extensions is None else {SQL_EXTENSIONS: extensions}
    assert has_hudi_sql(_session(conf, {})) is expected


def test_compaction_in_a_session_without_hudis_sql_names_the_settings_and_the_command() -> None:
    table = parse_config({
        "kafka": {"bootstrap_servers": "localhost:9"},
        "job": {"name": "j", "checkpoint_dir": "/tmp/cp", "dead_letter_path": "/tmp/dl"},
        "routes": [{"topic": "t", "table": "orders"}],
        "tables": [{"name": "orders", "key": ["id"], "base_path": "/tmp/orders", "type": "MERGE_ON_READ"}],
    }).table("orders")  # fmt: skip
    with pytest.raises(SessionSettingsError) as raised:
        run_compaction(_session({}, {}), table)
    assert f"{SQL_EXTENSIONS}={HUDI_SQL_EXTENSION}" in str(raised.value)
    assert "hudi-cdc compact" in str(raised.value)


def test_the_tests_session_has_hudis_sql(spark: SparkSession) -> None:
    assert has_hudi_sql(spark)
