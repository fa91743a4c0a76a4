"""Tables a template makes within a batch: key from the Kafka key, checks, the list kept beside the checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from hudi_cdc.config.models import Config, parse_config
from hudi_cdc.dead_letters.store import read
from hudi_cdc.job import catalog as catalog_module
from hudi_cdc.job.catalog import TableCatalog, catalog_path, with_made_tables
from hudi_cdc.job.pipeline import BatchContext, run_batch
from tests.support.decode_rows import kafka_rows

SCHEMA = {"type": "struct", "fields": [
    {"field": "after", "type": "struct", "optional": True, "fields": [
        {"field": "sku", "type": "string"}, {"field": "wh", "type": "int32"}, {"field": "qty", "type": "int32", "optional": True}]},
    {"field": "op", "type": "string"}, {"field": "ts_ms", "type": "int64"},
]}  # fmt: skip
KEY_SCHEMA = {"type": "struct", "fields": [{"field": "wh", "type": "int32"}, {"field": "sku", "type": "string"}]}


def _config(tmp_path: Path) -> Config:
    return parse_config(
        {
            "job": {"name": "made", "checkpoint_dir": str(tmp_path / "cp"), "dead_letter_path": str(tmp_path / "dl")},
            "kafka": {"bootstrap_servers": "localhost:1"},
            "templates": [{
                "pattern": r"shop\.inv\.(?<table>[a-z_]+)", "base_path": str(tmp_path / "lake" / "{name}"),
                "settings": {"type": "MERGE_ON_READ"}, "overrides": {"bins": {"type": "COPY_ON_WRITE"}},
            }],
        },
        source="test",
    )  # fmt: skip


def _change(sku: str, wh: int, qty: int, ts: int, *, keyed: bool = True) -> tuple[bytes | None, bytes]:
    key = json.dumps({"schema": KEY_SCHEMA, "payload": {"wh": wh, "sku": sku}}).encode() if keyed else None
    value = {"schema": SCHEMA, "payload": {"after": {"sku": sku, "wh": wh, "qty": qty}, "op": "c", "ts_ms": ts}}
    return key, json.dumps(value).encode()


def _batch(spark: SparkSession, topics: dict[str, list[tuple[bytes | None, bytes]]]) -> DataFrame:
    frames = [kafka_rows(spark, records, topic=topic) for topic, records in topics.items()]
    batch = frames[0]
    for frame in frames[1:]:
        batch = batch.unionByName(frame)
    return batch


def _letters(spark: SparkSession, config: Config) -> list[Any]:
    letters = read(spark, config.job.dead_letter_path)
    return [] if letters is None else letters.collect()


def _rows(spark: SparkSession, path: Path) -> dict[tuple[Any, ...], int]:
    return {(r["wh"], r["sku"]): r["qty"] for r in spark.read.format("hudi").load(str(path)).collect()}


def test_a_template_makes_its_tables_as_their_records_arrive(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config(tmp_path)
    catalog = TableCatalog(spark, config)
    written: list[str] = []
    replace_text = catalog_module.fs.replace_text

    def counted(session: SparkSession, path: str, text: str) -> None:
        written.append(path)
        replace_text(session, path, text)

    monkeypatch.setattr(catalog_module.fs, "replace_text", counted)
    batch = _batch(spark, {
        "shop.inv.stock": [_change("a", 1, 5, 1000), _change("a", 2, 7, 1001), _change("a", 1, 6, 1002)],
        "shop.inv.bins": [_change("b", 3, 1, 1000)],
        "shop.inv.loose": [_change("c", 4, 1, 1000, keyed=False)],  # no Kafka key: no key to take
    })  # fmt: skip
    metrics = run_batch(batch, BatchContext(config=catalog.config, batch_id=0, catalog=catalog))

    assert sorted(t.table for t in metrics.tables) == ["bins", "stock"]
    assert _rows(spark, tmp_path / "lake" / "stock") == {(1, "a"): 6, (2, "a"): 7}
    assert _rows(spark, tmp_path / "lake" / "bins") == {(3, "b"): 1}
    made = {t.name: t for t in catalog.config.tables}
    assert (made["stock"].key, made["stock"].type, made["bins"].type) == (["wh", "sku"], "MERGE_ON_READ", "COPY_ON_WRITE")
    letters = _letters(spark, config)
    assert [(r["table"], r["error_class"]) for r in letters] == [("loose", "TableNotMade")]
    assert "no Kafka key" in letters[0]["error_message"] and "overrides.loose.key" in letters[0]["error_message"]
    assert "shop.inv.loose[0]@0" in letters[0]["error_message"]

    # the list is written once for the batch, however many tables it made
    assert written.count(catalog_path(config.job.checkpoint_dir)) == 1
    listed = json.loads(Path(catalog_path(config.job.checkpoint_dir)).read_text())
    assert listed == [{"name": "bins", "topic": "shop.inv.bins", "key": ["wh", "sku"]},
                      {"name": "stock", "topic": "shop.inv.stock", "key": ["wh", "sku"]}]  # fmt: skip
    # a restart (and every other command) knows them without a record
    assert [t.name for t in TableCatalog(spark, config).config.tables] == ["bins", "stock"]
    assert [t.name for t in with_made_tables(spark, config).tables] == ["bins", "stock"]

    # the next batch of a known table needs no key again; a lost list is rebuilt from hoodie.properties
    Path(catalog_path(config.job.checkpoint_dir)).unlink()
    restarted = TableCatalog(spark, config)
    later = _batch(spark, {"shop.inv.stock": [_change("a", 2, 9, 2000)]})
    run_batch(later, BatchContext(config=restarted.config, batch_id=1, catalog=restarted))
    assert _rows(spark, tmp_path / "lake" / "stock") == {(1, "a"): 6, (2, "a"): 9}
    assert [t.key for t in restarted.config.tables] == [["wh", "sku"]]


def test_a_made_table_whose_folder_is_not_a_hudi_table_is_not_made(spark: SparkSession, tmp_path: Path) -> None:
    config = _config(tmp_path)
    (tmp_path / "lake" / "stock").mkdir(parents=True)
    (tmp_path / "lake" / "stock" / "data.csv").write_text("x\n")
    catalog = TableCatalog(spark, config)
    metrics = run_batch(_batch(spark, {"shop.inv.stock": [_change("a", 1, 5, 1000)]}),
                        BatchContext(config=catalog.config, batch_id=0, catalog=catalog))  # fmt: skip
    assert metrics.tables == [] and catalog.config.tables == []
    [letter] = _letters(spark, config)
    assert letter["error_class"] == "TableNotMade" and "not a Hudi table" in letter["error_message"]
