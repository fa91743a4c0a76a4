"""`make metrics-png`: run the job continuously on a local Kafka, scrape its Prometheus metrics, plot them.

The picture in docs/metrics.png comes from this: waves of Debezium changes (creates, updates,
deletes with tombstones, a few late events and malformed records) for a copy-on-write and a
merge-on-read table; `hudi-cdc run` (its own process, as users run it) serves its metrics; this
script scrapes them every few seconds and plots records by outcome, Kafka lag, watermark age
and batch duration over the run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from devkit import CHECKOUT
from devkit.debezium import Column, DebeziumTable, KafkaRecord
from devkit.services import free_port, run_dir
from devkit.services.kafka import LocalKafka

Sample = dict[tuple[str, str, str], float]
"""(metric, table, outcome) -> value."""

COLUMNS = [Column("id", "int64", optional=False), Column("name", "string"), Column("qty", "int64")]


def scrape(url: str) -> Sample:
    """Every hudi_cdc sample the endpoint serves now."""
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    return {
        (s.name, s.labels.get("table", ""), s.labels.get("outcome", "")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("hudi_cdc_")
    }


def _wave(source: DebeziumTable, rng: random.Random, start: int, size: int, now_ms: int) -> list[KafkaRecord]:
    """`size` changes over 2,000 keys; a few late events (older positions) and malformed records."""
    records: list[KafkaRecord] = []
    for i in range(start, start + size):
        key = rng.randrange(2000)
        roll = rng.random()
        if roll < 0.1:
            records += [source.change("d", before={"id": key}, pos=10_000 + i, ts_ms=now_ms), source.tombstone({"id": key})]
        elif roll < 0.12:
            records.append(source.change("u", after={"id": key, "name": "late", "qty": 0}, pos=5, ts_ms=now_ms - 600_000))
        elif roll < 0.13:
            records.append((None, b"{not json"))
        else:
            records.append(source.change("u" if roll < 0.6 else "c", after={"id": key, "name": f"n{i}", "qty": i},
                                         pos=10_000 + i, ts_ms=now_ms))  # fmt: skip
    return records


def _produce(kafka: LocalKafka, topics: dict[str, DebeziumTable], waves: int, pause: float, stop: threading.Event) -> None:
    rng = random.Random(7)
    for wave in range(waves):
        if stop.is_set():
            return
        now_ms = int(time.time() * 1000)
        for topic, source in topics.items():
            kafka.produce(topic, _wave(source, rng, wave * 2000, rng.choice([100, 300, 600]), now_ms))
        stop.wait(pause)


def plot(series: list[tuple[float, Sample]], out: Path) -> None:
    """Four panels over time: records/s by outcome, Kafka lag, watermark age, mean batch seconds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = series[0][0]
    times = [t - t0 for t, _ in series]
    tables = sorted({table for _, s in series for (_, table, _) in s if table})
    fig, axes = plt.subplots(2, 2, figsize=(13, 8), sharex=True)
    rate_ax, lag_ax, age_ax, batch_ax = axes.flat

    def values(metric: str, table: str = "", outcome: str = "") -> list[float]:
        return [s.get((metric, table, outcome), float("nan")) for _, s in series]

    def rate(points: list[float]) -> list[float]:
        return [0.0] + [max(0.0, (b - a) / (t2 - t1)) for a, b, t1, t2 in zip(points, points[1:], times, times[1:], strict=False)]

    for table in tables:
        for outcome in ("applied", "collapsed", "late", "deleted", "tombstone", "dead_letter"):
            points = values("hudi_cdc_records_total", table, outcome)
            if max((p for p in points if p == p), default=0) > 0:
                rate_ax.plot(times, rate(points), label=f"{table} {outcome}")
        lag_ax.plot(times, values("hudi_cdc_kafka_lag_records", table), label=table)
        age_ax.plot(times, [t - w for (t, _), w in zip(series, values("hudi_cdc_watermark_timestamp_seconds", table), strict=True)],
                    label=table)  # fmt: skip
    sums, counts = values("hudi_cdc_batch_seconds_sum"), values("hudi_cdc_batch_seconds_count")
    batch_ax.plot(times, [s / c if c else float("nan") for s, c in zip(sums, counts, strict=True)], label="mean batch seconds")
    for ax, title in ((rate_ax, "records/s by outcome"), (lag_ax, "Kafka lag (records)"),
                      (age_ax, "watermark age (s)"), (batch_ax, "batch duration (s, running mean)")):  # fmt: skip
        ax.set_title(title)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("seconds since the job started")
    fig.suptitle("hudi_cdc: a continuous job's Prometheus metrics, scraped every few seconds (local[2])")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=300, help="How long to run and scrape.")
    parser.add_argument("--out", type=Path, default=CHECKOUT / "docs" / "metrics.png")
    args = parser.parse_args()
    root = run_dir("metrics-plot") / uuid.uuid4().hex[:8]
    with LocalKafka() as kafka:
        series, log = _run(kafka, root, args.seconds)
    if len(series) < 2:
        sys.exit(f"no metrics scraped; see {log}")
    plot(series, args.out)
    print(f"{args.out}: {len(series)} scrapes over {series[-1][0] - series[0][0]:.0f} s (job log {log})")


def _run(kafka: LocalKafka, root: Path, seconds: int) -> tuple[list[tuple[float, Sample]], Path]:
    """Produce waves, run the job, scrape it every 3 s for `seconds`; the samples and the job's log."""
    suffix = uuid.uuid4().hex[:6]
    sources = {name: DebeziumTable(server=f"plot{suffix}", database="db", table=name, columns=COLUMNS, key=["id"])
               for name in ("accounts", "orders")}  # fmt: skip
    topics = {source.topic: source for source in sources.values()}
    kafka.create_topics(list(topics))
    port = free_port()
    config: dict[str, Any] = {
        "kafka": {"bootstrap_servers": kafka.bootstrap_servers, "max_offsets_per_trigger": 2000},
        "job": {"name": f"plot-{suffix}", "checkpoint_dir": str(root / "cp"), "dead_letter_path": str(root / "dead"),
                "metrics_port": port, "trigger_interval": "5 seconds"},
        "routes": [{"topic": s.topic, "table": name} for name, s in sources.items()],
        "tables": [
            {"name": "accounts", "key": ["id"], "base_path": str(root / "accounts")},
            {"name": "orders", "key": ["id"], "base_path": str(root / "orders"), "type": "MERGE_ON_READ",
             "compaction": {"mode": "inline", "strategy": "NUM_COMMITS", "max_delta_commits": 3}},
        ],
    }
    config_file = root / "job.yaml"
    root.mkdir(parents=True, exist_ok=True)
    config_file.write_text(yaml.safe_dump(config))
    stop = threading.Event()
    producer = threading.Thread(target=_produce, args=(kafka, topics, 1000, 20.0, stop), daemon=True)
    producer.start()
    log = root / "job.log"
    with log.open("wb") as out:
        job = subprocess.Popen([sys.executable, "-m", "hudi_cdc.cli.console", "run", "--config", str(config_file)],
                               stdout=out, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    series: list[tuple[float, Sample]] = []
    try:
        deadline = time.time() + seconds
        while time.time() < deadline and job.poll() is None:
            with contextlib.suppress(urllib.error.URLError, ConnectionError):
                series.append((time.time(), scrape(f"http://127.0.0.1:{port}/metrics")))
            time.sleep(3)
    finally:
        stop.set()
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGTERM)
        job.wait(timeout=120)
    return series, log


if __name__ == "__main__":
    main()
