"""Kafka record headers as Spark's Kafka source gives them (`includeHeaders`), and reading one.

Headers are read only for tables that need them: flattened rows whose metadata the SMT put in
headers (`add.headers`), and Avro records whose schema id Apicurio's serializer put in headers.
"""

from __future__ import annotations

from pyspark.sql import Column
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
