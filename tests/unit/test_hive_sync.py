"""Hive sync options: one model, the `hoodie.*` keys Hudi's `hms` mode needs."""

from __future__ import annotations

import pydantic
import pytest

from hudi_cdc.config import HiveSync, TableConfig
from hudi_cdc.hudi import hive_sync
from hudi_cdc.hudi.hive_sync import (
    UNKNOWN_COMMIT,
    HiveSyncOptions,
    SyncState,
    after_sync,
    noted,
    sync_options,
)

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


def test_a_sync_covers_every_commit_up_to_the_newest_it_saw_and_no_later_one() -> None:
    c1, c2, c3 = "20261129054409215", "20261129054416296", "20261129054420000"
    # start-up: nothing noted yet, the sync registered c1
    assert after_sync(UNKNOWN_COMMIT, c1) == (c1, c1)
    assert after_sync(None, c1) == (c1, c1)
    # the driver's wake-up synced c2 before the batch noted it: noting it then leaves nothing to sync
    synced, pending = after_sync(c1, c2)
    assert (synced, pending) == (c2, c2)
    assert noted(pending, synced, c2) == c2
    assert not SyncState(synced_commit=synced, pending_commit=noted(pending, synced, c2)).lagging
    # a merge-on-read compaction (c3) synced before the batch noted its delta commit (c2)
    assert noted(c3, c3, c2) == c3
    # a commit noted while the sync ran, newer than what it saw, is still to sync
    assert after_sync(c2, c1) == (c1, c2)
    assert SyncState(synced_commit=c1, pending_commit=c2).lagging


def test_a_noted_commit_is_pending_until_a_sync_covers_it() -> None:
    c1, c2 = "20261129054409215", "20261129054416296"
    assert noted(None, None, None) == UNKNOWN_COMMIT  # start-up: check the registration once
    assert noted(UNKNOWN_COMMIT, None, c1) == c1
    assert noted(c1, c1, c2) == c2
    assert noted(c2, c1, None) == c2  # start-up of a run keeps what is still pending
    assert noted(None, UNKNOWN_COMMIT, c1) == c1
