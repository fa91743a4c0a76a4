"""Declared column types are checked at `validate`, without a JVM, by Spark's own grammar."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hudi_cdc.config.models import TableConfig
from hudi_cdc.config.sql_types import type_problem

ACCEPTED = [
    "bigint", "STRING", "int", "integer", "long", "short", "byte", "double", "float", "real", "boolean", "date",
    "timestamp", "timestamp_ntz", "binary", "decimal", "decimal(10,2)", "DEC(5)", "numeric(38, 0)", "varchar(10)",
    "char(3)", "array<string>", "map<string, bigint>", "array<map<string,decimal(38,0)>>", "struct<>",
    "struct<a:int,b:string>", "struct<a int, `b c`: array<int>>", "struct<a:int NOT NULL COMMENT 'the a'>",
    "interval day to second", "interval year",
]  # fmt: skip
REFUSED = {
    "strin g": "'strin' is not a Spark SQL type",
    "strin": "'strin' is not a Spark SQL type",
    "array<strin>": "'strin' is not a Spark SQL type",
    "decimal(1,2,3)": "at most 2",
    "map<string>": "expected ','",
    "varchar": "needs a length",
    "": "ends early",
    "int)": "unexpected ')'",
    "array<int": "ends early",
}


@pytest.mark.parametrize("ddl", ACCEPTED)
def test_what_spark_reads_is_accepted(ddl: str) -> None:
    assert type_problem(ddl) is None


@pytest.mark.parametrize(("ddl", "reason"), REFUSED.items())
def test_what_spark_refuses_is_refused_with_its_reason(ddl: str, reason: str) -> None:
    problem = type_problem(ddl)
    assert problem is not None and reason in problem and repr(ddl) in problem


def test_the_table_refuses_a_declared_type_that_is_not_spark_sql() -> None:
    with pytest.raises(ValidationError, match=r"v: 'strin g': 'strin' is not a Spark SQL type"):
        TableConfig.model_validate({"name": "t", "key": ["id"], "base_path": "/x", "columns": {"id": "bigint", "v": "strin g"}})
    # a Connect schema mapping is not a Spark SQL type and is not read as one
    decimal = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}}
    TableConfig.model_validate({"name": "t", "key": ["id"], "base_path": "/x", "columns": {"id": "bigint", "v": decimal}})
