"""Hive sync options: one model, the `hoodie.*` keys Hudi's `hms` mode needs."""

from __future__ import annotations

import pydantic
import pytest

from hudi_cdc.config import HiveSync, TableConfig
from hudi_cdc.hudi import hive_sync
from hudi_cdc.hudi.hive_sync import HiveSyncOptions, sync_options

URI = "thrift://127.0.0.1:19083"


def _table(**overrides: object) -> TableConfig:
    fields: dict[str, object] = {"name": "orders", "key": ["id"], "base_path": "/tmp/t/orders"}
    return TableConfig.model_validate(fields | overrides)


def test_partitioned_cow_table() -> None:
    table = _table(partition_by=["region", "day"], hive=HiveSync(database="shop", table="orders_v2"))
    options = HiveSyncOptions.for_table(table, URI).as_hoodie_options()
    assert options == {
        hive_sync.ENABLE: "true",
        hive_sync.MODE: "hms",
        hive_sync.METASTORE_URIS: URI,
        hive_sync.DATABASE: "shop",
        hive_sync.TABLE: "orders_v2",
        hive_sync.BASE_PATH: "/tmp/t/orders",
        hive_sync.BASE_FILE_FORMAT: "PARQUET",
        hive_sync.PARTITION_FIELDS: "region,day",
        hive_sync.PARTITION_EXTRACTOR: "org.apache.hudi.hive.MultiPartKeysValueExtractor",
        hive_sync.SUPPORT_TIMESTAMP: "true",
        hive_sync.AUTO_CREATE_DATABASE: "true",
    }
    assert HiveSyncOptions.for_table(table, URI).registered_tables == ("orders_v2",)


def test_unpartitioned_mor_table_registers_ro_and_rt() -> None:
    sync = HiveSyncOptions.for_table(_table(type="MERGE_ON_READ"), URI)
    options = sync.as_hoodie_options()
    assert options[hive_sync.PARTITION_FIELDS] == ""
    assert options[hive_sync.PARTITION_EXTRACTOR] == "org.apache.hudi.hive.NonPartitionedExtractor"
    assert options[hive_sync.TABLE_STRATEGY] == "ALL"
    assert options[hive_sync.SKIP_RO_SUFFIX] == "false"
    assert options[hive_sync.SNAPSHOT_WITH_TABLE_NAME] == "false"  # no third table under the plain name
    assert sync.registered_tables == ("orders_ro", "orders_rt")


def test_every_key_is_a_hive_or_meta_sync_key_and_sync_options_agrees() -> None:
    table = _table(type="MERGE_ON_READ")
    options = sync_options(table, URI)
    assert options == HiveSyncOptions.for_table(table, URI).as_hoodie_options()
    assert all(k.startswith(("hoodie.datasource.hive_sync.", "hoodie.datasource.meta.sync.", "hoodie.meta.sync.")) for k in options)


def test_model_is_frozen_and_rejects_unknown_fields() -> None:
    sync = HiveSyncOptions(metastore_uris=URI, table="t", base_path="/x")
    with pytest.raises(pydantic.ValidationError):
        sync.table = "other"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError, match="table_type"):
        HiveSyncOptions(metastore_uris=URI, table="t", base_path="/x", table_type="MOR")
    with pytest.raises(pydantic.ValidationError):
        HiveSyncOptions(metastore_uris=URI, table="t", base_path="/x", mode="jdbc")  # type: ignore[call-arg]
