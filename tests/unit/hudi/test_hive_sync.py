"""Hive sync options: one model, the `hoodie.*` keys Hudi's `hms` mode needs."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pydantic
import pytest
from pyspark.sql import SparkSession

from hudi_cdc.config.models import HiveSync, TableConfig
from hudi_cdc.hudi import hive_sync
from hudi_cdc.hudi.hive_sync import UNKNOWN_COMMIT, HiveSyncOptions, SyncState, sync_options

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

    def lagging(synced: str | None, pending: str | None) -> bool:
        return SyncState(synced_commit=synced, pending_commit=pending).lagging

    # start-up: the registration is checked once; any sync covers an unknown commit
    assert lagging(None, UNKNOWN_COMMIT) and not lagging(c1, UNKNOWN_COMMIT)
    # the driver's wake-up synced as of c2 before the batch noted c2: nothing left to sync
    assert not lagging(c2, c2) and not lagging(c2, c1)
    # a merge-on-read compaction (c3) synced before the batch noted its delta commit (c2)
    assert not lagging(c3, c2)
    # a commit noted while the sync ran, newer than what it saw, is still to sync
    assert lagging(c1, c2) and lagging(None, c1)
    assert not lagging(None, None)
    # a state saved by an earlier version, which stored the unknown commit as synced
    assert not lagging(UNKNOWN_COMMIT, UNKNOWN_COMMIT) and lagging(UNKNOWN_COMMIT, c1)


def test_a_saved_state_reads_back_and_ignores_keys_it_does_not_know() -> None:
    state = SyncState(synced_commit="20261129054409215", pending_commit="20261129054416296", failed_attempts=2)
    assert SyncState.from_saved(asdict(state) | {"retired_field": 1}) == state
    assert SyncState.from_saved({}) == SyncState()


def test_status_reads_the_sync_state_and_a_torn_one_only_empties_its_columns(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = hive_sync.state_path(str(tmp_path / "cp"))
    assert hive_sync.read_state(spark, path) == {}
    sync = hive_sync.MetastoreSync(URI, path)
    sync.note_commit(_table(), "20261129054416296")
    sync._save(spark)
    assert hive_sync.read_state(spark, path)["orders"]["pending_commit"] == "20261129054416296"
    Path(path).write_text('{"orders": {"pend')
    Path(path).with_name(f".{Path(path).name}.crc").unlink(missing_ok=True)
    with caplog.at_level("WARNING"):
        assert hive_sync.read_state(spark, path) == {}
    assert "cannot be read" in caplog.text and path in caplog.text
