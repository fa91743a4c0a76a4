"""The rows a batch writes (fold.merge): `_cdc_ingested_at`, the same moment in every row of a write."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from hudi_cdc.config.models import TableConfig
from hudi_cdc.events import INGESTED_AT
from hudi_cdc.fold.collapse import CHANGED, EXISTS, HAD_ROW
from hudi_cdc.fold.merge import rows_to_write
from hudi_cdc.fold.stored_state import CDC_COLUMNS

TABLE = TableConfig.model_validate({"name": "t", "key": ["id"], "base_path": "/tmp/t"})
SCHEMA = StructType([StructField("id", IntegerType()), StructField("name", StringType())])


def _folded(spark: SparkSession) -> DataFrame:
    # two partitions, so the moment is checked to be the same in every task
    return (
        spark.createDataFrame([(i, f"v{i}") for i in range(6)], "id int, name string")
        .repartition(2)
        .withColumn(EXISTS, F.lit(True))
        .withColumn(CHANGED, F.col("id") != 5)  # an unchanged key is not written
        .withColumn(HAD_ROW, F.lit(True))
        .select("*", *[F.lit(None).alias(c) for c in CDC_COLUMNS if c != INGESTED_AT])
    )


def _moment(rows: DataFrame) -> dt.datetime:
    moments = {r[INGESTED_AT] for r in rows.collect()}
    assert len(moments) == 1, moments
    return moments.pop()


def test_ingested_at_is_one_moment_of_the_write_and_a_later_write_compiles_no_new_code(spark: SparkSession) -> None:
    """`current_timestamp()` became a literal in the generated Java source, so every table's write
    compiled classes of its own in every batch (docs/performance-journal.md, round 36)."""
    compiled = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()  # type: ignore[union-attr]
    folded = _folded(spark)
    began = dt.datetime.now()
    first = rows_to_write(folded, SCHEMA, TABLE)
    assert first.schema[INGESTED_AT].nullable is False  # as a table's first commit stored it
    first_at = _moment(first)
    before = compiled.getCount()
    second = rows_to_write(folded, SCHEMA, TABLE)
    second_at = _moment(second)
    assert compiled.getCount() == before
    assert began - dt.timedelta(seconds=1) <= first_at < second_at <= dt.datetime.now()
    assert first.count() == 5
