"""Kafka record headers as Spark's Kafka source gives them (`includeHeaders`), and reading one.

Headers are read only for tables that need them: flattened rows whose metadata the SMT put in
headers (`add.headers`), and Avro records whose schema id Apicurio's serializer put in headers.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BinaryType, StringType, StructField, StructType

KAFKA_HEADERS = "headers"
"""The Kafka source rows' headers column: an array of (key, value bytes) in record order, a key
possibly repeated."""

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
"""Its type."""


def last_header(headers: Column, name: str) -> Column:
    """The value bytes of the record's last header named `name` (Kafka's `lastHeader`), NULL without one."""
    return F.aggregate(
        headers, F.lit(None).cast(BinaryType()), lambda found, h: F.when(h["key"] == name, h["value"]).otherwise(found)
    )


def headers_column(present: bool) -> Column:
    """KAFKA_HEADERS when the records were read with them (`present`), else a NULL of its type."""
    return F.col(KAFKA_HEADERS) if present else F.lit(None).cast(HEADERS_TYPE).alias(KAFKA_HEADERS)


def with_headers(records: DataFrame) -> DataFrame:
    """`records` with a KAFKA_HEADERS column (NULL when they were read without headers)."""
    return records if KAFKA_HEADERS in records.columns else records.withColumn(KAFKA_HEADERS, headers_column(False))
