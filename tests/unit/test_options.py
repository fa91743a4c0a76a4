"""Table config -> Hudi write options: the operation, the table version and the column order of version-6 MOR tables."""

from __future__ import annotations

import pytest

from hudi_cdc.config import TableConfig, parse_config
from hudi_cdc.errors import ConfigError
from hudi_cdc.hudi.options import OPERATION, WRITE_TABLE_VERSION, trailing_columns, write_options
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


def test_an_unknown_table_version_is_a_config_error_listing_the_valid_ones() -> None:
    config = {
        "kafka": {"bootstrap_servers": "k:9092"},
        "job": {"checkpoint_dir": "/tmp/cp", "dead_letter_path": "/tmp/dl"},
        "tables": [{"name": "t", "key": ["id"], "base_path": "/tmp/t", "table_version": 8}],
        "routes": [{"topic": "a", "table": "t"}],
    }
    with pytest.raises(ConfigError, match=r"tables\.0\.table_version.*6.*9"):
        parse_config(config)
