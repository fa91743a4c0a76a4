"""Kafka topic -> table: the job's routes as one Spark expression over the Kafka rows."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from hudi_cdc.config.models import Config

TABLE_COLUMN = "__table"
"""The column `route` adds: the table a record feeds, NULL when no route matches its topic."""


def route(raw: DataFrame, config: Config) -> DataFrame:
    """Tag each Kafka record with its table (first matching route), NULL when none matches.

    An exact `topic` matches the whole name; a `pattern` is a regex over the whole name.
    """
    table: Column = F.lit(None).cast("string")
    for r in reversed(config.routes):
        matches = F.col("topic") == r.topic if r.topic is not None else F.col("topic").rlike(f"^(?:{r.pattern})$")
        table = F.when(matches, F.lit(r.table)).otherwise(table)
    return raw.withColumn(TABLE_COLUMN, table)
