"""Schema changes (spec §7): add and widen are applied, gone columns stay, anything else stops the table."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from hudi_cdc.config import TableConfig
from hudi_cdc.errors import SchemaChangeError
from hudi_cdc.schema_check import check

TABLE = TableConfig(name="customers", key=["id"], base_path="/unused")


def _schema(**columns: DataType) -> StructType:
    return StructType([StructField(name, dtype, True) for name, dtype in columns.items()])


def test_new_table_takes_incoming_schema_nullable() -> None:
    incoming = StructType([StructField("id", LongType(), False)])
    assert check(incoming, None, TABLE) == _schema(id=LongType())


def test_new_column_is_appended_nullable() -> None:
    result = check(_schema(id=LongType(), email=StringType()), _schema(id=LongType()), TABLE)
    assert result.fieldNames() == ["id", "email"]


def test_gone_column_stays(caplog: pytest.LogCaptureFixture) -> None:
    result = check(_schema(id=LongType()), _schema(id=LongType(), legacy=StringType()), TABLE)
    assert result.fieldNames() == ["id", "legacy"]
    assert "legacy is gone" in caplog.text


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(IntegerType(), LongType(), id="int-bigint"),
        pytest.param(FloatType(), DoubleType(), id="float-double"),
        pytest.param(DecimalType(10, 2), DecimalType(12, 2), id="decimal-precision-up"),
    ],
)
def test_widening_is_applied(old: DataType, new: DataType) -> None:
    assert check(_schema(id=LongType(), v=new), _schema(id=LongType(), v=old), TABLE)["v"].dataType == new


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(LongType(), IntegerType(), id="narrowing"),
        pytest.param(StringType(), LongType(), id="string-to-number"),
        pytest.param(DecimalType(10, 2), DecimalType(12, 3), id="scale-change"),
    ],
)
def test_incompatible_change_stops_with_table_column_types_and_advice(old: DataType, new: DataType) -> None:
    with pytest.raises(SchemaChangeError) as err:
        check(_schema(id=LongType(), v=new, w=StringType()), _schema(id=LongType(), v=old, w=LongType()), TABLE)
    message = str(err.value)
    assert "customers" in message and f"column v: type {old.simpleString()} -> {new.simpleString()}" in message
    assert "column w" in message, "every mismatch is listed, not just the first"
    assert "dead-letter store" in message


def test_key_type_change_is_incompatible_even_when_widening() -> None:
    with pytest.raises(SchemaChangeError, match="key column type"):
        check(_schema(id=LongType()), _schema(id=IntegerType()), TABLE)


def test_new_column_on_a_version_6_mor_table_stops_unless_opted_in() -> None:
    mor6 = TABLE.model_copy(update={"type": "MERGE_ON_READ", "table_version": 6})
    stored, incoming = _schema(id=LongType()), _schema(id=LongType(), email=StringType())
    with pytest.raises(SchemaChangeError, match="column email: new column on a table_version 6 merge-on-read table"):
        check(incoming, stored, mor6)
    opted_in = mor6.model_copy(update={"schema_policy": "allow_incompatible"})
    assert check(incoming, stored, opted_in).fieldNames() == ["id", "email"]
    cow6 = TABLE.model_copy(update={"table_version": 6})
    assert check(incoming, stored, cow6).fieldNames() == ["id", "email"]
