"""Table config -> Hudi write options: the operation, the table version, the column order of version-6 MOR tables, the index."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    DataType,
    DecimalType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from hudi_cdc.config.models import TableConfig, parse_config
from hudi_cdc.errors import ConfigError
from hudi_cdc.fold.stored_state import index_lookup_column
from hudi_cdc.hoodie_keys import (
    BUCKET_COUNT,
    BUCKET_HASH_FIELD,
    BUCKET_QUERY_PRUNING,
    CLEAN_MAX_COMMITS,
    DATA_SKIPPING,
    INDEX_TYPE,
    METADATA_TABLE,
    OPERATION,
    RECORD_INDEX,
    RECORD_INDEX_UPDATE_PARTITION_PATH,
    RECORD_KEY,
    SIMPLE_INDEX_UPDATE_PARTITION_PATH,
    WRITE_TABLE_VERSION,
)
from hudi_cdc.hudi.compactor import procedure_options
from hudi_cdc.hudi.table_options import (
    index_layout,
    index_options,
    key_lookup_options,
    trailing_columns,
    write_options,
)
from hudi_cdc.hudi.writer import RowCounts, operation


def _table(**fields: object) -> TableConfig:
    return TableConfig.model_validate({"name": "t", "key": ["id"], "base_path": "/tmp/t", **fields})


@pytest.mark.parametrize(
    ("fields", "version"),
    [({}, "9"), ({"table_version": 6}, "6"), ({"table_version": 6, "type": "MERGE_ON_READ"}, "6")],
    ids=["default-9", "cow-6", "mor-6"],
)
def test_write_options_name_the_table_version(fields: dict[str, object], version: str) -> None:
    assert write_options(_table(**fields))[WRITE_TABLE_VERSION] == version


@pytest.mark.parametrize(
    ("counts", "exists", "expected"),
    [
        (RowCounts(upserted=5, deleted=0, new_keys=5), False, "bulk_insert"),
        (RowCounts(upserted=5, deleted=0, new_keys=5), True, "insert"),
        (RowCounts(upserted=5, deleted=0, new_keys=4), True, "upsert"),
        (RowCounts(upserted=5, deleted=1, new_keys=5), True, "upsert"),
        (RowCounts(upserted=5, deleted=0), True, "upsert"),
    ],
    ids=["no-table", "only-new-keys", "a-stored-key", "a-delete", "not-known"],
)
def test_the_write_operation_skips_only_work_the_fold_made_redundant(
    counts: RowCounts, exists: bool, expected: str
) -> None:
    chosen = operation(counts, table_exists=exists)
    assert chosen == expected
    assert write_options(_table(type="MERGE_ON_READ"), operation=chosen)[OPERATION] == expected


def test_an_upsert_is_the_default_operation() -> None:
    assert write_options(_table())[OPERATION] == "upsert"


def test_a_table_cleans_every_10_commits_unless_its_hoodie_options_say_otherwise() -> None:
    assert write_options(_table())[CLEAN_MAX_COMMITS] == "10"
    every_commit = _table().model_copy(update={"hoodie_options": {CLEAN_MAX_COMMITS: 1}})
    assert write_options(every_commit)[CLEAN_MAX_COMMITS] == "1"
    # the name Hudi deprecated still works: passed under the current one, which Hudi reads first
    old_name = _table().model_copy(update={"hoodie_options": {"hoodie.clean.max.commits": 1}})
    options = write_options(old_name)
    assert options[CLEAN_MAX_COMMITS] == "1" and "hoodie.clean.max.commits" not in options


@pytest.mark.parametrize(
    ("fields", "trailing"),
    [
        ({"type": "MERGE_ON_READ", "table_version": 6, "partition_by": ["region", "day"]}, ("region", "day")),
        ({"type": "MERGE_ON_READ", "table_version": 9, "partition_by": ["region"]}, ()),
        ({"type": "COPY_ON_WRITE", "table_version": 6, "partition_by": ["region"]}, ()),
        ({"type": "MERGE_ON_READ", "table_version": 6}, ()),
    ],
    ids=["mor-6-partitioned", "mor-9", "cow-6", "mor-6-unpartitioned"],
)
def test_only_version_6_mor_tables_write_partition_columns_last(fields: dict[str, object], trailing: tuple[str, ...]) -> None:
    assert trailing_columns(_table(**fields)) == trailing


@pytest.mark.parametrize(
    ("fields", "has_one", "kept"),
    [
        ({}, False, "false"),
        ({"index": "bucket"}, False, "false"),
        ({"type": "MERGE_ON_READ"}, False, "false"),
        ({}, True, "true"),
        ({"index": "bucket"}, True, "true"),
        ({"partition_by": ["region"]}, False, "true"),
        ({"index": "record_level"}, False, "true"),
        ({"hoodie_options": {"hoodie.metadata.enable": True}}, False, "true"),
        ({"hoodie_options": {"hoodie.metadata.enable": False}}, True, "false"),
        ({"partition_by": ["region"], "hoodie_options": {"hoodie.metadata.enable": "false"}}, False, "false"),
    ],
    ids=[
        "new-unpartitioned-simple", "new-unpartitioned-bucket", "new-unpartitioned-mor", "existing-keeps-it",
        "existing-bucket-keeps-it", "partitioned", "record-level-index", "asked-for", "asked-off-deletes-it",
        "partitioned-asked-off",
    ],
)  # fmt: skip
def test_a_metadata_table_is_kept_where_it_pays_or_exists_and_hoodie_options_decide_last(
    fields: dict[str, object], has_one: bool, kept: str
) -> None:
    assert write_options(_table(**fields), has_metadata_table=has_one)[METADATA_TABLE] == kept


def test_an_unknown_table_version_is_a_config_error_listing_the_valid_ones() -> None:
    config = {
        "kafka": {"bootstrap_servers": "k:9092"},
        "job": {"checkpoint_dir": "/tmp/cp", "dead_letter_path": "/tmp/dl"},
        "tables": [{"name": "t", "key": ["id"], "base_path": "/tmp/t", "table_version": 8}],
        "routes": [{"topic": "a", "table": "t"}],
    }
    with pytest.raises(ConfigError, match=r"tables\.0\.table_version.*6.*9"):
        parse_config(config)


@pytest.mark.parametrize(
    ("fields", "index", "record_index"),
    [
        ({}, "SIMPLE", None),
        ({"partition_by": ["region"]}, "GLOBAL_SIMPLE", None),
        ({"index": "record_level"}, "GLOBAL_RECORD_LEVEL_INDEX", "true"),
        ({"index": "record_level", "partition_by": ["region"]}, "GLOBAL_RECORD_LEVEL_INDEX", "true"),
    ],
    ids=["simple", "simple-partitioned", "record-level", "record-level-partitioned"],
)
def test_every_index_is_global_and_moves_a_row_whose_partition_changed(
    fields: dict[str, object], index: str, record_index: str | None
) -> None:
    options = write_options(_table(**fields))
    assert options[INDEX_TYPE] == index
    assert options.get(RECORD_INDEX) == record_index
    moves = RECORD_INDEX_UPDATE_PARTITION_PATH if record_index else SIMPLE_INDEX_UPDATE_PARTITION_PATH
    assert options[moves] == "true"


def test_a_bucket_index_hashes_the_key_into_the_configured_buckets_and_its_reads_prune_by_them() -> None:
    table = _table(index="bucket", buckets=32, key=["id", "region"], partition_by=["region"])
    options = write_options(table)
    assert (options[INDEX_TYPE], options[BUCKET_COUNT], options[BUCKET_HASH_FIELD]) == ("BUCKET", "32", "id,region")
    lookup = key_lookup_options(table)
    # a reader knows the buckets only from its options: the write's bucket settings must travel with it
    assert lookup[DATA_SKIPPING] == lookup[BUCKET_QUERY_PRUNING] == "true"
    assert (lookup[INDEX_TYPE], lookup[BUCKET_COUNT], lookup[BUCKET_HASH_FIELD]) == ("BUCKET", "32", "id,region")
    # Hudi validates the hash field against the record key option: every user of the bucket settings gets both
    assert index_options(table)[RECORD_KEY] == lookup[RECORD_KEY] == "id,region"
    assert index_layout(table) == "bucket:32"
    assert index_layout(_table(index="bucket")) == "bucket:8"
    assert index_layout(_table(index="record_level")) == "record_level"
    assert key_lookup_options(_table(index="record_level"))[RECORD_INDEX] == "true"
    assert INDEX_TYPE not in key_lookup_options(_table())


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"index": "bucket", "partition_by": ["region"]}, "kept twice"),
        ({"index": "bucket", "key": ["id", "day"], "partition_by": ["region", "day"]}, "kept twice"),
        ({"index": "record_level", "buckets": 4}, "applies to `index: bucket` only"),
        ({"buckets": 4}, "applies to `index: bucket` only"),
        ({"index": "bucket", "buckets": 0}, "greater than 0"),
    ],
    ids=["partition-not-key", "one-partition-column-not-key", "buckets-with-record-level", "buckets-with-simple", "zero"],
)
def test_a_bucket_index_is_refused_where_a_row_could_change_bucket(fields: dict[str, object], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        _table(**fields)


def test_the_index_cannot_be_overridden_through_hoodie_options() -> None:
    for key in (INDEX_TYPE, RECORD_INDEX, RECORD_INDEX_UPDATE_PARTITION_PATH, BUCKET_COUNT, BUCKET_HASH_FIELD):
        with pytest.raises(ValueError, match="set by hudi_cdc for correctness"):
            _table(hoodie_options={key: "false"})


@pytest.mark.parametrize(
    ("fields", "key_type", "column"),
    [
        ({"index": "record_level"}, LongType(), "id"),
        ({"index": "record_level"}, StringType(), "id"),
        ({"index": "record_level", "partition_by": ["region"]}, IntegerType(), "id"),
        ({}, LongType(), None),
        ({"index": "record_level", "key": ["id", "region"]}, LongType(), None),
        ({"index": "record_level", "partition_by": ["region", "day"]}, LongType(), None),
        ({"index": "record_level"}, DecimalType(10, 0), None),
        ({"index": "record_level"}, TimestampType(), None),
        ({"index": "bucket"}, LongType(), "id"),
        ({"index": "bucket", "key": ["id", "region"], "partition_by": ["region"]}, LongType(), None),
    ],
    ids=["bigint", "string", "int-partitioned", "simple-index", "composite-key", "complex-keygen", "decimal", "timestamp",
         "bucket", "bucket-composite-key"],
)
def test_the_stored_row_read_looks_keys_up_only_where_the_stored_key_is_the_value_as_text(
    fields: dict[str, object], key_type: DataType, column: str | None
) -> None:
    schema = StructType([StructField("id", key_type), StructField("region", StringType()), StructField("day", StringType())])
    assert index_lookup_column(_table(**fields), schema) == column


def test_a_compaction_procedure_gets_comma_values_through_the_session_conf() -> None:
    options = index_options(_table(index="bucket", buckets=4, key=["id", "region"], partition_by=["region"]))
    inline, by_session = procedure_options(options)
    # the procedure splits its `options` string on commas: a composite key cannot travel in it
    assert by_session == {BUCKET_HASH_FIELD: "id,region", RECORD_KEY: "id,region"}
    assert inline == {k: v for k, v in options.items() if k not in by_session} and inline[BUCKET_COUNT] == "4"
    assert procedure_options(index_options(_table(index="bucket"))) == (index_options(_table(index="bucket")), {})
