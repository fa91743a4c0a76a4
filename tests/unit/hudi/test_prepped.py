"""Prepped writes (hudi.prepped): which batches tell Hudi where their rows live, and the rows they write."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from hudi_cdc.config.models import TableConfig
from hudi_cdc.fold.collapse import CHANGED, EXISTS, HAD_ROW
from hudi_cdc.fold.merge import NEW_KEY, UNLOCATED, key_state, rows_to_write
from hudi_cdc.fold.stored_state import CDC_COLUMNS, touched_rows
from hudi_cdc.hoodie_keys import MERGE_INTO_PREPPED, NULL_FOR_MISSING_COLUMNS
from hudi_cdc.hudi import prepped
from hudi_cdc.hudi.table_options import write_options


def _table(**fields: object) -> TableConfig:
    return TableConfig.model_validate({"name": "t", "key": ["id"], "base_path": "/tmp/t", **fields})


@pytest.mark.parametrize(
    ("fields", "applies"),
    [
        ({}, True),
        ({"index": "record_level"}, True),
        ({"type": "MERGE_ON_READ"}, True),
        # a global index moves a row whose partition changed: a read location cannot say so
        ({"partition_by": ["region"]}, False),
        # a bucket index places a new key by its hash, which a pass-through index would not
        ({"index": "bucket", "buckets": 4}, False),
        # the user's switch, e.g. for a small table where reading the locations costs more
        ({"prepped_writes": False}, False),
        ({"index": "record_level", "prepped_writes": False}, False),
    ],
    ids=["simple", "record-level", "mor", "partitioned", "bucket", "off", "off-record-level"],
)
def test_only_tables_whose_read_locations_stay_right_write_prepped(fields: dict[str, object], applies: bool) -> None:
    table = _table(**fields)
    assert prepped.applies(table) is applies
    assert prepped.use(table, "upsert", unlocated_rows=0) is applies


def test_a_batch_goes_prepped_only_as_an_upsert_whose_stored_keys_all_have_locations() -> None:
    table = _table()
    assert prepped.use(table, "upsert", unlocated_rows=0)
    assert not prepped.use(table, "upsert", unlocated_rows=1)  # it would be inserted a second time
    assert not prepped.use(table, "upsert", unlocated_rows=None)  # not counted
    assert not prepped.use(table, "insert", unlocated_rows=0)  # new keys only: nothing to look up
    assert not prepped.use(table, "bulk_insert", unlocated_rows=0)


def test_prepped_write_options() -> None:
    options = write_options(_table(), prepped=True)
    assert options[MERGE_INTO_PREPPED] == "true" and options[NULL_FOR_MISSING_COLUMNS] == "false"
    assert MERGE_INTO_PREPPED not in write_options(_table())


def test_located_rows_carry_hudis_meta_columns_first_and_unlocated_stored_keys_are_labelled(
    spark: SparkSession,
) -> None:
    table = _table()
    schema = StructType([StructField("id", IntegerType()), StructField("name", StringType())])
    location = F.struct(*[F.lit(f"{c}-of-{{id}}").alias(c) for c in prepped.LOCATION_COLUMNS])
    folded = (
        spark.createDataFrame([(1, "stored"), (2, "new"), (3, "lost")], "id int, name string")
        .withColumn(EXISTS, F.lit(True))
        .withColumn(CHANGED, F.lit(True))
        .withColumn(HAD_ROW, F.col("id") != 2)
        .withColumn(
            prepped.LOCATION,
            F.when(F.col("id") == 1, location)
            .when(F.col("id") == 3, F.struct(*[F.lit(None).cast("string").alias(c) for c in prepped.LOCATION_COLUMNS]))
            .cast(prepped.LOCATION_TYPE),
        )
        .select("*", *[F.lit(None).alias(c) for c in CDC_COLUMNS])
    )
    labels = {r["id"]: r["label"] for r in folded.select("id", key_state(table).alias("label")).collect()}
    assert labels == {1: None, 2: NEW_KEY, 3: UNLOCATED}
    rows = rows_to_write(folded, schema, table, located=True)
    assert rows.columns[: len(prepped.META_COLUMNS)] == list(prepped.META_COLUMNS)
    assert prepped.LOCATION not in rows.columns
    written = {r["id"]: r for r in rows.collect()}
    assert {i: r["_hoodie_file_name"] for i, r in written.items()} == {1: "_hoodie_file_name-of-{id}", 2: None, 3: None}
    assert written[1]["_hoodie_commit_time"] == "_hoodie_commit_time-of-{id}"
    # the meta columns a merge-into write does not read are never read from the table: NULL
    unread = [c for c in prepped.META_COLUMNS if c not in prepped.LOCATION_COLUMNS]
    assert unread and all(r[c] is None for r in written.values() for c in unread)
    assert rows_to_write(folded, schema, table).columns[0] == "id"


def test_a_table_that_never_writes_prepped_has_no_unlocated_keys(spark: SparkSession) -> None:
    # its stored read keeps no meta columns, so every stored key lacks a location: not a fallback
    table = _table(partition_by=["region"])
    nowhere = F.struct(*[F.lit(None).cast("string").alias(c) for c in prepped.LOCATION_COLUMNS])
    folded = (
        spark.createDataFrame([(1,)], "id int")
        .withColumn(EXISTS, F.lit(True))
        .withColumn(CHANGED, F.lit(True))
        .withColumn(HAD_ROW, F.lit(True))
        .withColumn(prepped.LOCATION, nowhere)
    )
    assert [r["label"] for r in folded.select(key_state(table).alias("label")).collect()] == [None]


@pytest.mark.parametrize(("fields", "carried"), [({}, True), ({"prepped_writes": False}, False)], ids=["on", "off"])
def test_only_a_table_that_writes_prepped_carries_locations_through_the_fold(
    spark: SparkSession, fields: dict[str, object], carried: bool
) -> None:
    table = _table(**fields)
    schema = StructType([StructField("id", IntegerType()), StructField("name", StringType())])
    stored = spark.createDataFrame([(1, "stored", "f1")], "id int, name string, _hoodie_file_name string")
    events = spark.createDataFrame([(1,)], "id int")
    for lookup in (stored, None):  # a stored table, and a table not written yet
        rows = touched_rows(lookup, events, schema, table, every_row=False)
        assert (prepped.LOCATION in rows.columns) is carried
    if carried:
        located = touched_rows(stored, events, schema, table, every_row=False).collect()
        assert [r[prepped.LOCATION][prepped.LOCATED_BY] for r in located] == ["f1"]
