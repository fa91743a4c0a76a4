"""What the job needs of a session it did not create: static settings are checked, never set."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hudi_cdc.errors import SessionSettingsError
from hudi_cdc.spark.session import (
    JOB_SQL_CONF,
    REQUIRED_HADOOP_CONF,
    REQUIRED_STATIC_CONF,
    for_job,
    get_or_create_session,
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
