"""The database bench's pure parts: the skewed trickle, CPU per batch and per touched table, the
per-table latencies, and the config it gives hudi_cdc. No timing is measured."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter

import pytest

from devkit.bench.database import expected_touched, fit, per_batch, per_table, trickle, zipf_weights
from devkit.bench.deferral import model
from devkit.bench.freshness import Sent
from devkit.bench.jobs import JobSpec, hudi_cdc_config
from devkit.bench.workloads import source


def test_zipf_weights_sum_to_one_and_fall_with_rank() -> None:
    weights = zipf_weights(200, 1.0)
    assert math.isclose(sum(weights), 1.0)
    assert all(a > b for a, b in itertools.pairwise(weights))
    assert math.isclose(weights[0] / weights[9], 10.0)
    assert 0.45 < sum(weights[:10]) < 0.55  # "a few hot tables": the 10 hottest of 200 get half
    assert zipf_weights(4, 0.0) == [0.25] * 4


def test_the_trickle_follows_the_skew_and_each_topic_s_positions_grow() -> None:
    topics = [source(f"db_{i}").topic for i in range(20)]
    sent = trickle(topics, rows=10, count=4000, skew=1.0)
    counts = Counter(topic for topic, _ in sent)
    assert counts[topics[0]] > 3 * counts[topics[9]] > 0
    for topic in topics[:3]:
        positions = [json.loads(value)["payload"]["source"]["pos"] for t, (_, value) in sent if t == topic]
        assert positions == sorted(positions) and len(set(positions)) == len(positions)


def test_expected_touched_counts_tables_hit_at_least_once() -> None:
    assert math.isclose(expected_touched([0.5, 0.5], 1), 1.0)
    assert math.isclose(expected_touched([1.0, 0.0], 50), 1.0)
    assert expected_touched(zipf_weights(200, 1.0), 10) < 10


def test_per_batch_takes_cpu_between_batch_ends_and_counts_the_tables_each_committed() -> None:
    batches = [
        {"batch_id": 3, "cpu_s": 110.0, "seconds": 4.0, "rows": 5},
        {"batch_id": 4, "cpu_s": 125.0, "seconds": 6.0, "rows": 9},
    ]
    commits = {(3, "a"): 1.0, (4, "a"): 2.0, (4, "b"): 2.5, (4, "c"): 2.6}
    got = per_batch(batches, commits, before_cpu=100.0)
    assert [(b["cpu_s"], b["touched"]) for b in got] == [(10.0, 1), (15.0, 3)]


def test_fit_finds_the_fixed_and_per_table_cost() -> None:
    intercept, slope = fit([(1, 3.0), (2, 5.0), (4, 9.0)])
    assert math.isclose(intercept, 1.0) and math.isclose(slope, 2.0)
    assert all(math.isnan(v) for v in fit([(2, 3.0), (2, 4.0)]))


def test_per_table_latencies_leave_out_records_never_applied() -> None:
    sent = [Sent("bench.db_1.accounts", 0, 0, 0.0), Sent("bench.db_1.accounts", 0, 1, 0.0), Sent("bench.db_2.accounts", 0, 0, 0.0)]
    tables = per_table(sent, [2.0, 4.0, None])
    assert tables == {"db_1": {"records": 2, "p50_s": 3.0, "p95_s": pytest.approx(3.9), "max_s": 4.0}}


def test_the_hudi_cdc_config_of_the_database_is_one_template_keyed_by_the_kafka_key(tmp_path: object) -> None:
    spec = JobSpec(job="hudi_cdc", bootstrap="localhost:9092", topics=["bench.db_0.accounts", "bench.db_1.accounts"],
                   batch=100, table_path="/lake", type="MERGE_ON_READ", partitioned=False, work_dir="/work",
                   template="db_[0-9]+")  # fmt: skip
    config = hudi_cdc_config(spec)
    assert config.tables == [] and config.routes == []
    (template,) = config.templates
    assert template.key is None and template.base_path == "/lake/{name}"
    assert template.settings.get("type") == "MERGE_ON_READ"
    assert template.match("bench.db_17.accounts") == {"table": "db_17"} and template.match("bench.start_1.accounts") is None


def test_the_deferral_model_commits_every_table_with_records_at_interval_zero() -> None:
    every_batch = model(tables=50, rate=2, skew=1.0, batch_seconds=10, interval=0, batches=300)
    assert every_batch.commits_per_touched == 1.0
    # arrived within the batch before its cut, committed half way through the next: 5 to 15 s
    assert 5 <= every_batch.p50_wait <= every_batch.p95_wait <= 15


def test_the_deferral_model_trades_commits_for_waits_as_the_interval_grows() -> None:
    runs = [model(tables=50, rate=2, skew=1.0, batch_seconds=10, interval=i, batches=300) for i in (0, 30, 60)]
    assert [r.commits_per_batch for r in runs] == sorted((r.commits_per_batch for r in runs), reverse=True)
    assert runs[2].commits_per_batch < 0.9 * runs[0].commits_per_batch
    assert runs[2].p95_wait > runs[0].p95_wait + 30  # a deferred record waits out most of the interval
    # a deferred table still holds records at the next cut, so it counts among that batch's tables
    assert runs[2].touched_per_batch > runs[0].touched_per_batch
