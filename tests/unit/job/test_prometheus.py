"""BatchMetrics become Prometheus counters and gauges per table; the textfile is what node_exporter reads."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hudi_cdc.commit.metrics import BatchMetrics, TableMetrics
from hudi_cdc.config.models import Config, parse_config
from hudi_cdc.errors import ConfigError
from hudi_cdc.job.prometheus import JobMetrics
from hudi_cdc.kafka.lag import Positions


def _config(**job: object) -> Config:
    return parse_config(
        {
            "kafka": {"bootstrap_servers": "b:9092"},
            "job": {"name": "shop", "checkpoint_dir": "/c", "dead_letter_path": "/d", **job},
            "routes": [{"topic": "t", "table": "customers"}, {"topic": "u", "table": "orders"}],
            "tables": [{"name": "customers", "key": ["id"], "base_path": "/a"}, {"name": "orders", "key": ["id"], "base_path": "/b"}],
        }
    )


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _batch(batch_id: int, applied: int, dead_letter: int, lagging: list[str]) -> BatchMetrics:
    table = TableMetrics(table="customers", read=applied + dead_letter, applied=applied, dead_letter=dead_letter, upserted_rows=applied, commit_time="20240101")
    return BatchMetrics(batch_id=batch_id, tables=[table], unrouted=1, seconds=2.5, hive_sync_lagging=lagging)


def _key(name: str, **labels: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return name, tuple(sorted({"pipeline": "shop", **labels}.items()))


def test_batches_add_up_per_table_and_outcome() -> None:
    metrics = JobMetrics(_config())
    metrics.observe(_batch(0, applied=5, dead_letter=1, lagging=["customers"]), now=1000.0)
    metrics.observe(_batch(1, applied=3, dead_letter=0, lagging=[]), now=2000.0)
    samples = _samples(metrics.render())
    assert samples[_key("hudi_cdc_records_total", table="customers", outcome="applied")] == 8
    assert samples[_key("hudi_cdc_records_total", table="customers", outcome="dead_letter")] == 1
    assert samples[_key("hudi_cdc_records_read_total", table="customers")] == 9
    assert samples[_key("hudi_cdc_records_lost_total", table="customers")] == 0
    assert samples[_key("hudi_cdc_rows_written_total", table="customers", kind="upserted")] == 8
    assert samples[_key("hudi_cdc_unrouted_records_total")] == 2
    assert samples[_key("hudi_cdc_batch_seconds_count")] == 2
    assert samples[_key("hudi_cdc_batch_seconds_sum")] == 5.0
    assert samples[_key("hudi_cdc_hive_sync_lagging", table="customers")] == 0
    assert samples[_key("hudi_cdc_last_commit_timestamp_seconds", table="customers")] == 2000.0
    committed = _batch(2, applied=1, dead_letter=0, lagging=[])
    committed.tables[0].committed_at = 2500.5  # the commit's own time, not the batch's end
    committed.tables[0].lost = 4  # gone past by a lenient run
    metrics.observe(committed, now=2600.0)
    after = _samples(metrics.render())
    assert after[_key("hudi_cdc_last_commit_timestamp_seconds", table="customers")] == 2500.5
    assert after[_key("hudi_cdc_records_lost_total", table="customers")] == 4
    # a table with no batch yet is visible with zero counts
    assert samples[_key("hudi_cdc_records_total", table="orders", outcome="applied")] == 0


def test_lagging_hive_sync_is_a_gauge() -> None:
    metrics = JobMetrics(_config())
    metrics.observe(_batch(0, applied=1, dead_letter=0, lagging=["customers"]))
    assert _samples(metrics.render())[_key("hudi_cdc_hive_sync_lagging", table="customers")] == 1


def test_textfile_and_http(tmp_path: Path) -> None:
    metrics = JobMetrics(_config())
    metrics.observe(_batch(0, applied=2, dead_letter=0, lagging=[]))
    textfile = tmp_path / "textfile" / "hudi_cdc.prom"
    metrics.write_textfile(str(textfile))
    assert 'hudi_cdc_records_total{outcome="applied",pipeline="shop",table="customers"} 2.0' in textfile.read_text()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    metrics.serve(port)
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    assert 'hudi_cdc_records_total{outcome="applied",pipeline="shop",table="customers"} 2.0' in body


def test_metrics_settings_are_validated() -> None:
    assert _config(metrics_port=9464, metrics_textfile="/var/lib/node_exporter/hudi_cdc.prom").job.metrics_port == 9464
    with pytest.raises(ConfigError, match=r"job\.metrics_port"):
        _config(metrics_port=70000)


def test_watermark_is_a_gauge_in_seconds_and_events_behind_it_are_counted() -> None:
    metrics = JobMetrics(_config())
    table = TableMetrics(table="orders", read=4, applied=3, late=1, behind_watermark=1, watermark_ts_ms=1_700_000_000_500)
    metrics.observe(BatchMetrics(batch_id=0, tables=[table]))
    samples = _samples(metrics.render())
    assert samples[_key("hudi_cdc_watermark_timestamp_seconds", table="orders")] == 1_700_000_000.5
    assert samples[_key("hudi_cdc_records_behind_watermark_total", table="orders")] == 1
    assert samples[_key("hudi_cdc_records_behind_watermark_total", table="customers")] == 0


def test_kafka_lag_and_pending_compactions_are_gauges_asked_after_each_batch() -> None:
    config = parse_config(
        {
            "kafka": {"bootstrap_servers": "b:9092"},
            "job": {"name": "shop", "checkpoint_dir": "/c", "dead_letter_path": "/d"},
            "routes": [{"topic": "t", "table": "customers"}, {"topic": "u", "table": "orders"}],
            "tables": [{"name": "customers", "key": ["id"], "base_path": "/a"},
                       {"name": "orders", "key": ["id"], "base_path": "/b", "type": "MERGE_ON_READ"}],
        }
    )  # fmt: skip
    asked: list[Positions] = []

    def end_offsets(partitions: Positions) -> Positions:
        asked.append(partitions)
        return {"t": {"0": 10, "1": 5}, "u": {"0": 3}}

    metrics = JobMetrics(config, end_offsets=end_offsets, pending_compactions=lambda table: 2)
    first = TableMetrics(table="customers", read=3, applied=3, applied_through={"t": {"0": 4, "1": 4}})
    metrics.observe(BatchMetrics(batch_id=0, tables=[first]))
    later = TableMetrics(table="orders", read=1, applied=1, applied_through={"u": {"0": 2}})
    metrics.observe(BatchMetrics(batch_id=1, tables=[later]))
    samples = _samples(metrics.render())
    # customers: partition 0 has offsets 5..9 left, partition 1 is caught up; remembered across batches
    assert samples[_key("hudi_cdc_kafka_lag_records", table="customers")] == 5
    assert samples[_key("hudi_cdc_kafka_lag_records", table="orders")] == 0
    assert samples[_key("hudi_cdc_pending_compactions", table="orders")] == 2
    assert _key("hudi_cdc_pending_compactions", table="customers") not in samples
    assert asked[-1] == {"t": {"0": 4, "1": 4}, "u": {"0": 2}}


def test_the_grafana_board_queries_only_metrics_the_job_publishes() -> None:
    import json
    import re

    board = json.loads((Path(__file__).parents[3] / "ops" / "grafana" / "hudi-cdc.json").read_text())
    exprs = [target["expr"] for panel in board["panels"] for target in panel["targets"]]
    queried = {
        re.sub(r"_(total|bucket|sum|count)$", "", name)
        for expr in exprs
        for name in re.findall(r"\b(?:hudi_cdc|process)_\w+", expr)
    }
    # family names: a counter's without `_total`, a histogram's without `_bucket`/`_sum`/`_count`
    published = {family.name for family in text_string_to_metric_families(JobMetrics(_config()).render())}
    assert queried - published == set(), "the board queries metrics the job does not publish"
    assert {"hudi_cdc_hive_last_sync_timestamp_seconds", "process_resident_memory_bytes"} <= queried
    assert len(board["panels"]) >= 8
    # the job's label is `pipeline`: a `job` label is the scrape's (or the Pushgateway's)
    variables = [v["name"] for v in board["templating"]["list"]]
    assert variables == ["datasource", "pipeline", "table"]
    assert all('pipeline=~"$pipeline"' in expr and not re.search(r"\bjob\b", expr) for expr in exprs)
    # rates and increases over Grafana's interval (at least 4 scrapes whatever the zoom), never a fixed window
    windows = [window for expr in exprs for window in re.findall(r"\[[^\]]*\]", expr)]
    assert windows and set(windows) == {"[$__rate_interval]"}
    assert all(re.search(r"\b(rate|increase)\(", expr) for expr in exprs if "[" in expr)
    undescribed = [panel["title"] for panel in board["panels"] if not panel.get("description", "").strip()]
    assert undescribed == [], "panels without a description"


def test_dead_letters_by_class_and_commit_latency() -> None:
    metrics = JobMetrics(_config())
    table = TableMetrics(table="customers", read=5, applied=2, dead_letter=3, commit_seconds=4.5,
                         dead_letters_by_class={"MalformedJson": 2, "BadValue": 1})  # fmt: skip
    metrics.observe(BatchMetrics(batch_id=0, tables=[table]))
    samples = {
        (s.name, s.labels.get("error_class", "")): s.value
        for family in text_string_to_metric_families(metrics.render())
        for s in family.samples
        if s.labels.get("table") == "customers"
    }
    assert samples[("hudi_cdc_dead_letters_total", "MalformedJson")] == 2
    assert samples[("hudi_cdc_dead_letters_total", "BadValue")] == 1
    assert samples[("hudi_cdc_commit_seconds_sum", "")] == 4.5
    assert samples[("hudi_cdc_commit_seconds_count", "")] == 1


def test_kafka_lag_counts_from_the_offsets_the_batch_consumed_not_its_last_record() -> None:
    """A transactional topic ends in a commit marker: an offset with no record. The batch's planned
    end (Spark's offset log) covers it, the last applied record does not."""
    config = parse_config(
        {
            "kafka": {"bootstrap_servers": "b:9092"},
            "job": {"name": "shop", "checkpoint_dir": "/c", "dead_letter_path": "/d"},
            "routes": [{"topic": "t", "table": "customers"}],
            "tables": [{"name": "customers", "key": ["id"], "base_path": "/a"}],
        }
    )  # fmt: skip
    metrics = JobMetrics(config, end_offsets=lambda _partitions: {"t": {"0": 5, "1": 9}})
    # records at offsets 0..3 of partition 0, the marker at 4; partition 1 got nothing but markers
    customers = TableMetrics(table="customers", read=4, applied=4, applied_through={"t": {"0": 3}})
    metrics.observe(BatchMetrics(batch_id=0, tables=[customers]))
    assert _samples(metrics.render())[_key("hudi_cdc_kafka_lag_records", table="customers")] == 1  # the marker
    consumed = {"t": {"0": 5, "1": 7}, "unrouted": {"0": 3}}
    metrics.observe(BatchMetrics(batch_id=1, tables=[TableMetrics(table="customers")]), consumed=consumed)
    # partition 0 caught up; partition 1's offsets 7 and 8 are still to be read
    assert _samples(metrics.render())[_key("hudi_cdc_kafka_lag_records", table="customers")] == 2
    assert list(metrics.applied) == ["customers"] and list(metrics.applied["customers"]) == ["t"]


def test_parked_tables_are_gauges_and_their_lag_is_not_taken_from_the_batch() -> None:
    metrics = JobMetrics(_config())
    parked = TableMetrics(table="orders", parked=4, error="parked: the storage failed")
    metrics.observe(BatchMetrics(batch_id=0, tables=[parked], parked={"orders": 4}), consumed={"u": {"0": 10}})
    samples = _samples(metrics.render())
    assert samples[_key("hudi_cdc_table_parked", table="orders")] == 1
    assert samples[_key("hudi_cdc_table_parked_records", table="orders")] == 4
    assert samples[_key("hudi_cdc_table_parked", table="customers")] == 0
    assert samples[_key("hudi_cdc_table_stopped_batches_total", table="orders")] == 1
    assert "orders" not in metrics.applied  # the batch consumed its offsets, but it applied none
    metrics.observe(BatchMetrics(batch_id=1, tables=[TableMetrics(table="orders", read=4, applied=4)]))
    assert _samples(metrics.render())[_key("hudi_cdc_table_parked", table="orders")] == 0


def test_build_info_names_the_versions() -> None:
    import pyspark

    from hudi_cdc import __version__

    info = [s for s in _samples(JobMetrics(_config()).render()) if s[0] == "hudi_cdc_build_info"]
    assert info == [("hudi_cdc_build_info", (("pipeline", "shop"), ("pyspark", pyspark.__version__), ("version", __version__)))]


def test_no_series_carries_a_job_label() -> None:
    """Prometheus sets `job` on what it scrapes and renames a target's own to `exported_job`."""
    samples = _samples(JobMetrics(_config()).render())
    labelled = {name for name, labels in samples if any(label == "job" for label, _ in labels)}
    assert labelled == set()
    # the process metrics too: a board selects the driver's memory by the pipeline, as the counts
    assert all(dict(labels)["pipeline"] == "shop" for name, labels in samples)


def test_the_registry_holds_the_driver_process_metrics() -> None:
    names = {name for name, _ in _samples(JobMetrics(_config()).render())}
    # Linux /proc: the CPU and memory of the process that runs the driver
    assert {"process_cpu_seconds_total", "process_resident_memory_bytes", "process_start_time_seconds"} <= names
    assert "python_info" in names


def test_last_metastore_sync_is_a_timestamp_per_table_synced() -> None:
    synced: dict[str, float | None] = {"customers": None, "orders": 1_700_000_100.0, "gone": 5.0}
    metrics = JobMetrics(_config(), synced_at=lambda: synced)
    metrics.observe(_batch(0, applied=1, dead_letter=0, lagging=["customers"]))
    samples = _samples(metrics.render())
    assert samples[_key("hudi_cdc_hive_last_sync_timestamp_seconds", table="orders")] == 1_700_000_100.0
    # not synced yet in this process: no sample rather than a zero that reads as 1970
    assert _key("hudi_cdc_hive_last_sync_timestamp_seconds", table="customers") not in samples
    assert _key("hudi_cdc_hive_last_sync_timestamp_seconds", table="gone") not in samples  # not a table of the job
    synced["customers"] = 1_700_000_200.0  # the run's last sync, after its last batch
    metrics.publish()
    assert _samples(metrics.render())[_key("hudi_cdc_hive_last_sync_timestamp_seconds", table="customers")] == 1_700_000_200.0


def test_the_pushgateway_setting_is_a_url_or_nothing() -> None:
    assert _config().job.metrics_pushgateway is None
    assert _config(metrics_pushgateway="http://gw:9091").job.metrics_pushgateway == "http://gw:9091"
    with pytest.raises(ConfigError, match=r"job\.metrics_pushgateway"):
        _config(metrics_pushgateway="")


def test_an_unreachable_pushgateway_is_logged_and_the_textfile_still_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as sock:  # a port nothing listens on once the socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    textfile = tmp_path / "hudi_cdc.prom"
    metrics = JobMetrics(_config(metrics_pushgateway=f"http://127.0.0.1:{port}", metrics_textfile=str(textfile)))
    metrics.observe(_batch(0, applied=2, dead_letter=0, lagging=[]))
    metrics.publish()
    assert f"metrics not pushed to http://127.0.0.1:{port}" in caplog.text
    assert 'hudi_cdc_records_total{outcome="applied",pipeline="shop",table="customers"} 2.0' in textfile.read_text()
