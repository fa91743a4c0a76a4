"""Schema changes (semantics §7): add and widen are applied, gone columns stay, anything else stops the table."""

from __future__ import annotations

import json

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

from hudi_cdc.config.models import TableConfig
from hudi_cdc.decode.schema import batch_types
from hudi_cdc.errors import SchemaChangeError
from hudi_cdc.hudi.schema_check import check, source_types_after

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


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_widening_is_logged_and_on_merge_on_read_names_the_compaction(
    table_type: str, caplog: pytest.LogCaptureFixture
) -> None:
    table = TABLE.model_copy(update={"type": table_type})
    with caplog.at_level("INFO", logger="hudi_cdc.hudi.schema_check"):
        check(_schema(id=LongType(), v=DecimalType(14, 2)), _schema(id=LongType(), v=DecimalType(12, 2)), table)
    assert "column v widened decimal(12,2) -> decimal(14,2)" in caplog.text
    assert ("hudi-cdc compact" in caplog.text) == (table_type == "MERGE_ON_READ")


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


def _marked(source: str | None) -> StructType:
    """`id` and `qty` decoded as int, `qty` marked with its narrow source type (decode_schema.SOURCE_TYPE)."""
    metadata = {"source_type": source} if source else None
    return StructType([StructField("id", LongType(), True), StructField("qty", IntegerType(), True, metadata)])


@pytest.mark.parametrize(
    ("recorded", "source", "narrowed"),
    [
        pytest.param({}, "int16", "int32 -> int16", id="int-to-smallint"),
        pytest.param({"qty": "int16"}, "int8", "int16 -> int8", id="smallint-to-tinyint"),
        pytest.param({}, "int8", "int32 -> int8", id="int-to-tinyint"),
        pytest.param({"qty": "int16"}, None, None, id="smallint-to-int"),
        pytest.param({"qty": "int8"}, "int16", None, id="tinyint-to-smallint"),
        pytest.param({"qty": "int16"}, "int16", None, id="unchanged"),
        pytest.param(None, "int16", None, id="nothing-recorded-yet"),
    ],
)
def test_an_integer_narrowed_at_the_source_stops_the_table_though_both_are_stored_as_int(
    recorded: dict[str, str] | None, source: str | None, narrowed: str | None
) -> None:
    stored = _schema(id=LongType(), qty=IntegerType())
    if narrowed is None:
        assert check(_marked(source), stored, TABLE, recorded).fieldNames() == ["id", "qty"]
        return
    with pytest.raises(SchemaChangeError) as err:
        check(_marked(source), stored, TABLE, recorded)
    assert f"column qty: type {narrowed} at the source" in str(err.value)


def test_source_types_recorded_after_a_batch() -> None:
    recorded = {"qty": "int16", "gone": "int8", "widened": "int8"}
    incoming = StructType([*_marked("int8").fields, StructField("widened", IntegerType(), True)])
    assert source_types_after(incoming, recorded) == {"qty": "int8", "gone": "int8"}
    assert source_types_after(_marked(None), None) == {}


def test_decode_marks_the_columns_every_envelope_sends_as_narrow_integers() -> None:
    def envelope(**kinds: str) -> str:
        fields = [{"field": name, "type": kind, "optional": True} for name, kind in kinds.items()]
        row = {"type": "struct", "fields": fields, "optional": True}
        return json.dumps({"type": "struct", "fields": [{**row, "field": "before"}, {**row, "field": "after"}]})

    types = batch_types(TABLE, [envelope(id="int64", a="int16", b="int8", c="int16", d="int32")])
    assert {f.name: dict(f.metadata) for f in types.schema.fields} == {
        "id": {}, "a": {"source_type": "int16"}, "b": {"source_type": "int8"}, "c": {"source_type": "int16"}, "d": {}
    }  # fmt: skip
    # a batch on both sides of a source change: the widest (here int32: nothing to mark)
    mixed = batch_types(TABLE, [envelope(id="int64", a="int16", b="int8"), envelope(id="int64", a="int32", b="int16")])
    assert {f.name: dict(f.metadata) for f in mixed.schema.fields} == {"id": {}, "a": {}, "b": {"source_type": "int16"}}
    declared = TableConfig(name="t", key=["id"], base_path="/unused", columns={"id": {"type": "int64"}, "a": {"type": "int16"}})
    assert batch_types(declared, [envelope(id="int64", a="int16")]).schema["a"].metadata == {}
