"""`make bench-database`: one continuous job serving a whole database of tables made from one template.

    python -m devkit.bench.database                          # 200 tables, 1 event/s, Zipf 1.0, 600 s
    python -m devkit.bench.database --tables 50 --rate 0.5   # how many tables one job serves
    python -m devkit.bench.database --start-tables 1000      # also the start with 1,000 topics
    python -m devkit.bench.database --smoke                  # tiny: checks the bench works

What it does, on a local Kafka, for each job of `--jobs` (hudi_cdc with one template; the plain
Hudi upsert job of `make bench` with a table per topic, writing only the tables a batch holds),
each on topics of its own with the same records:
1. Loads `--rows` snapshot rows into each of `--tables` topics (`bench.db_<i>.accounts`) and
   starts the job continuously (trigger every `--trigger`). hudi_cdc makes every table from its
   template, taking the key from the Kafka key. Waits until every snapshot is applied: warm-up,
   measured apart (CPU and wall time to make the tables) but not part of the freshness.
2. A trickle for `--seconds`: `--rate` updates per second over all tables, each update's table
   drawn with a Zipf skew (`--skew`: the table of rank r gets weight 1/r^skew; at 1.0 and 200
   tables the 10 hottest get half the updates and most tables a few in 10 minutes).
3. Waits for the backlog, then reports produced-to-visible latency (the table's Hudi commit, as
   in `devkit.bench.freshness`) p50/p95/max over every record and per table, the CPU of each
   batch and per touched table (a table with records in the batch), and whether the job keeps up.
4. hudi_cdc only: restarts the job on the tables it made and measures the start: launch to the
   query running, and launch to a record sent before the restart being visible.
5. With `--start-tables N`: hudi_cdc on N new, empty topics its template matches: launch to the
   query running; then one record into one of them: produced to visible (its table made).

Writes build/bench/database-<time>.json and prints the report.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from devkit import build_dir
from devkit.bench.freshness import (
    JOBS,
    ContinuousJob,
    Sent,
    TimedProducer,
    capacity,
    keeps_up,
    last_offsets,
    latencies,
    paced,
    parse_job_arguments,
    summarize,
)
from devkit.bench.jobs import JobSpec
from devkit.bench.measure import percentile
from devkit.bench.run import BenchError
from devkit.bench.workloads import records, snapshot_changes, source
from devkit.debezium import KafkaRecord
from devkit.services import run_dir
from devkit.services.kafka import LocalKafka
from hudi_cdc.config.durations import parse_duration

GOAL_P95_S = 60.0
"""The goal of the whole-database workload: p95 produced-to-visible over every table's records."""
SMOKE = {"tables": 6, "rows": 20, "rate": 2.0, "seconds": 30, "start_tables": 20}
PREFIX = "db"
"""Topic part of the database's tables: `bench.db_<i>.accounts`, table `db_<i>`."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m devkit.bench.database", description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=200, help="tables of the database (a topic each)")
    parser.add_argument("--rows", type=int, default=50, help="snapshot rows per table, loaded before the trickle")
    parser.add_argument("--rate", type=float, default=1.0, help="updates per second, all tables together")
    parser.add_argument("--skew", type=float, default=1.0, help="Zipf exponent of the tables' share of the updates")
    parser.add_argument("--seconds", type=float, default=600, help="how long the trickle lasts")
    parser.add_argument("--job-setting", action="append", default=[], metavar="KEY=VALUE",
                        help="a `job:` setting of hudi_cdc's job (e.g. fold_together=false)")
    parser.add_argument("--start-tables", type=int, default=0, help="also measure the start with this many new topics")
    return parse_job_arguments(parser, argv, trigger="10 seconds", drain_timeout=1800, smoke=SMOKE)


def zipf_weights(tables: int, skew: float) -> list[float]:
    """Each table's share of the updates: rank r (1-based) weighs 1/r^skew, normalized to 1."""
    weights = [1 / (rank**skew) for rank in range(1, tables + 1)]
    total = sum(weights)
    return [w / total for w in weights]


def trickle(topics: list[str], rows: int, count: int, skew: float) -> list[tuple[str, KafkaRecord]]:
    """`count` updates, each of a random key of a table drawn by `zipf_weights`; each topic's
    versions (so its binlog positions) grow from 1."""
    rng = random.Random(20261204)
    drawn = rng.choices(range(len(topics)), weights=zipf_weights(len(topics), skew), k=count)
    versions: dict[int, int] = defaultdict(int)
    out: list[tuple[str, KafkaRecord]] = []
    for table in drawn:
        versions[table] += 1
        change = ("u", rng.randrange(rows), versions[table])
        out.append((topics[table], next(records(source(_part(topics[table])), [change]))))
    return out


def expected_touched(weights: Sequence[float], events: float) -> float:
    """How many tables `events` updates drawn with `weights` touch, on average."""
    return sum(1 - (1 - w) ** events for w in weights)


def _part(topic: str) -> str:
    return topic.split(".")[1]


def _topics(prefix: str, count: int) -> list[str]:
    width = len(str(max(count - 1, 1)))
    return [source(f"{prefix}_{i:0{width}d}").topic for i in range(count)]


def _load(kafka: LocalKafka, topics: list[str], rows: int) -> None:
    """Each topic's snapshot rows, through one producer (hundreds of topics)."""
    producer = TimedProducer(kafka.bootstrap_servers)
    for topic in topics:
        for record in records(source(_part(topic)), snapshot_changes(rows)):
            producer.send(topic, record)
    producer.flush()


def _spec(job: str, kafka: LocalKafka, topics: list[str], root: Path, args: argparse.Namespace, prefix: str) -> JobSpec:
    return JobSpec(job=job, bootstrap=kafka.bootstrap_servers, topics=topics, batch=10_000_000,
                   table_path=str(root / "tables"), type="COPY_ON_WRITE", partitioned=False,
                   work_dir=str(root / "work"), table_concurrency=args.table_concurrency,
                   job_settings=dict(setting.split("=", 1) for setting in args.job_setting),
                   trigger_interval=args.trigger, template=rf"{prefix}_[0-9]+" if job == "hudi_cdc" else None)  # fmt: skip


def per_batch(batches: Sequence[dict[str, Any]], commits: dict[tuple[int, str], float], before_cpu: float) -> list[dict[str, float]]:
    """Each batch's CPU s (since the previous batch's end, so the idle time between is in it) and touched tables."""
    touched: dict[int, int] = defaultdict(int)
    for batch_id, _topic in commits:
        touched[batch_id] += 1
    out, cpu = [], before_cpu
    for batch in batches:
        out.append({"batch_id": batch["batch_id"], "cpu_s": batch["cpu_s"] - cpu, "touched": touched[int(batch["batch_id"])],
                    "seconds": batch["seconds"], "rows": batch["rows"]})  # fmt: skip
        cpu = batch["cpu_s"]
    return out


def fit(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares intercept and slope of y over x (a batch's CPU over its touched tables)."""
    n = len(points)
    if n < 2:
        return (float("nan"), float("nan"))
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return (float("nan"), float("nan"))
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return (my - slope * mx, slope)


def per_table(sent: Sequence[Sent], found: Sequence[float | None]) -> dict[str, dict[str, float]]:
    """Each table's records and its p50/p95/max latency."""
    by_topic: dict[str, list[float]] = defaultdict(list)
    for record, latency in zip(sent, found, strict=True):
        if latency is not None:
            by_topic[record.topic].append(latency)
    return {_part(topic): {"records": len(v), "p50_s": percentile(v, 50), "p95_s": percentile(v, 95), "max_s": max(v)}
            for topic, v in sorted(by_topic.items())}  # fmt: skip


def measure_job(kafka: LocalKafka, job: str, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Load, trickle, drain and restart one job on its own topics; what it measured."""
    began = time.monotonic()
    prefix = f"{PREFIX}{JOBS.index(job)}"
    topics = _topics(prefix, args.tables)
    kafka.create_topics(topics)
    _load(kafka, topics, args.rows)
    count = max(1, int(args.rate * args.seconds))
    updates = trickle(topics, args.rows, count, args.skew)
    spec = _spec(job, kafka, topics, root / job, args, prefix)
    running = ContinuousJob(spec, root / job / "run")
    if not running.wait_applied({(t, 0): args.rows - 1 for t in topics}, timeout=7200):
        raise BenchError(f"{job}: the snapshots were not applied within 7200 s; log {running.log_path}")
    warm = running.batches()
    warm_s = time.monotonic() - began
    print(f"  {job}: {args.tables} tables made and loaded in {len(warm)} batch(es), {warm_s:.0f} s, "
          f"{warm[-1]['cpu_s']:.0f} CPU s; trickling {count} updates", flush=True)  # fmt: skip
    producer = TimedProducer(kafka.bootstrap_servers)
    paced(producer, updates, args.rate)
    sent = producer.flush()
    del producer
    drained = running.wait_applied(last_offsets(sent), timeout=args.drain_timeout)
    sustained = [b for b in running.batches() if b["batch_id"] > warm[-1]["batch_id"]]
    commits = running.commits()
    found = summarize(sent, sustained, commits)
    tables = per_table(sent, latencies(sent, sustained, commits))
    batches = per_batch(sustained, commits, warm[-1]["cpu_s"])
    cpu_s = sum(b["cpu_s"] for b in batches)
    touched = sum(b["touched"] for b in batches)
    intercept, slope = fit([(b["touched"], b["cpu_s"]) for b in batches])
    can = capacity(found.produced, cpu_s, os.cpu_count() or 1)
    kept_up = keeps_up(found, rate=args.rate, capacity_events_per_s=can, batches=len(sustained))
    restart = _restart(kafka, running, spec, topics[0], args) if job == "hudi_cdc" else None
    if restart is None:
        running.stop()
    weights = zipf_weights(args.tables, args.skew)
    interval = sum(b["seconds"] for b in batches) / len(batches) if batches else float("nan")
    result = {
        "job": job, "warm_up_s": warm_s, "warm_up_cpu_s": warm[-1]["cpu_s"], "warm_up_batches": len(warm),
        "freshness": asdict(found) | {"latency_steady": found.latency_steady},
        "worst_table_p95_s": max((t["p95_s"] for t in tables.values()), default=float("nan")),
        "tables_p95_over_goal": sum(t["p95_s"] > GOAL_P95_S for t in tables.values()),
        "tables_with_records": len(tables),
        "keeps_up": kept_up, "drained": drained, "meets_goal": kept_up and found.p95_s <= GOAL_P95_S,
        "batches": len(batches), "cpu_s": cpu_s, "touched": touched,
        "cpu_per_batch_s": cpu_s / len(batches) if batches else None,
        "cpu_per_touched_table_s": cpu_s / touched if touched else None,
        "fit_cpu_per_batch_s": intercept, "fit_cpu_per_touched_table_s": slope,
        "touched_per_batch_median": percentile([b["touched"] for b in batches], 50),
        "expected_touched_per_trigger": expected_touched(weights, args.rate * _seconds(args.trigger)),
        "batch_seconds_mean": interval,
        "peak_rss_mb": max((b["rss_mb"] for b in sustained), default=None),
        "per_batch": batches, "per_table": tables, "restart": restart,
    }  # fmt: skip
    print(text(result, args), flush=True)
    return result


def _seconds(trigger: str) -> float:
    return parse_duration(trigger).total_seconds()


def _restart(kafka: LocalKafka, running: ContinuousJob, spec: JobSpec, topic: str, args: argparse.Namespace) -> dict[str, float]:
    """Stop the job, send one record, start it again on the tables it made: how long the start takes."""
    running.stop()
    producer = TimedProducer(kafka.bootstrap_servers)
    producer.send(topic, next(records(source(_part(topic)), [("u", 0, 10**9)])))
    (probe,) = producer.flush()
    del producer
    again = ContinuousJob(spec, Path(spec.work_dir).parent / "restart")
    started = again.wait_started(timeout=1800)
    if not again.wait_applied({(probe.topic, probe.partition): probe.offset}, timeout=1800):
        raise BenchError(f"the restarted job did not apply a record within 1800 s; log {again.log_path}")
    (visible,) = latencies([Sent(probe.topic, probe.partition, probe.offset, again.launched_at)], again.batches(), again.commits())
    again.stop()
    return {"tables": args.tables, "query_started_s": started["at"] - again.launched_at, "query_started_cpu_s": started["cpu_s"],
            "first_record_visible_s": visible if visible is not None else float("nan")}  # fmt: skip


def measure_start(kafka: LocalKafka, tables: int, args: argparse.Namespace, root: Path) -> dict[str, float]:
    """hudi_cdc started on `tables` empty topics its template matches: how long until the query
    runs; then one record into one of them: how long until its table is made and committed."""
    topics = _topics("start", tables)
    kafka.create_topics(topics)
    spec = _spec("hudi_cdc", kafka, topics, root, args, "start")
    running = ContinuousJob(spec, root / "run")
    started = running.wait_started(timeout=1800)
    producer = TimedProducer(kafka.bootstrap_servers)
    producer.send(topics[-1], next(records(source(_part(topics[-1])), snapshot_changes(1))))
    (record,) = producer.flush()
    del producer
    if not running.wait_applied({(record.topic, record.partition): record.offset}, timeout=1800):
        raise BenchError(f"a record into one of {tables} topics was not applied within 1800 s; log {running.log_path}")
    (visible,) = latencies([record], running.batches(), running.commits())
    running.stop()
    result = {"topics": tables, "query_started_s": started["at"] - running.launched_at,
              "query_started_cpu_s": started["cpu_s"], "first_record_visible_s": visible if visible is not None else float("nan")}  # fmt: skip
    print(f"  start with {tables} topics the template matches: query running after {result['query_started_s']:.1f} s "
          f"({result['query_started_cpu_s']:.1f} CPU s); a record then sent into one visible after "
          f"{result['first_record_visible_s']:.1f} s (its table made)", flush=True)  # fmt: skip
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    root = run_dir("bench-database") / "data"
    shutil.rmtree(root, ignore_errors=True)
    began, load_before = time.monotonic(), os.getloadavg()
    print(f"database: {args.tables} tables from one template, {args.rows} rows each, {args.rate:g} updates/s "
          f"(Zipf {args.skew:g}) for {args.seconds:g} s, trigger {args.trigger}; jobs {', '.join(args.jobs)}; "
          f"load average {load_before}", flush=True)  # fmt: skip
    with LocalKafka(directory=run_dir("bench-database") / "kafka") as kafka:
        results = [measure_job(kafka, job, args, root) for job in args.jobs]
        start = measure_start(kafka, args.start_tables, args, root / "start") if args.start_tables else None
    by_job = {r["job"]: r for r in results}
    if set(by_job) == set(JOBS):
        ours, plain = by_job["hudi_cdc"], by_job["plain"]
        print(f"\nhudi_cdc / plain: CPU s of the trickle {ours['cpu_s'] / max(plain['cpu_s'], 1e-9):.2f}x, "
              f"per touched table {ours['cpu_per_touched_table_s'] / max(plain['cpu_per_touched_table_s'] or 1e-9, 1e-9):.2f}x, "
              f"p95 {ours['freshness']['p95_s'] / plain['freshness']['p95_s']:.2f}x")  # fmt: skip
    document = {
        "started": stamp, "command": " ".join(["python", "-m", "devkit.bench.database", *(argv or sys.argv[1:])]),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "jobs": results, "start": start, "seconds": time.monotonic() - began,
    }  # fmt: skip
    out = args.out or build_dir() / "bench"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"database-{stamp}.json"
    path.write_text(json.dumps(document, indent=2))
    print(f"\n{time.monotonic() - began:.0f} s in all; wrote {path}")
    return 0


def text(result: dict[str, Any], args: argparse.Namespace) -> str:
    """One job's result as a reader wants it."""
    f = result["freshness"]
    restart = result["restart"]
    lines = [
        f"{result['job']}: {args.tables} tables, {args.rate:g} updates/s (Zipf {args.skew:g}) for {args.seconds:g} s, "
        f"trigger {args.trigger}",
        f"  warm-up (make and load every table): {result['warm_up_s']:.0f} s, {result['warm_up_cpu_s']:.0f} CPU s, "
        f"{result['warm_up_batches']} batch(es)",
        f"  produced {f['produced']:,}, visible {f['visible']:,}" + ("" if result["drained"] else " (NOT drained)"),
        f"  produced -> visible: p50 {f['p50_s']:.1f} s, p95 {f['p95_s']:.1f} s, max {f['max_s']:.1f} s; "
        f"worst table's p95 {result['worst_table_p95_s']:.1f} s; {result['tables_p95_over_goal']} of "
        f"{result['tables_with_records']} tables with records over {GOAL_P95_S:g} s",
        f"  p95 first third {f['p95_first_third_s']:.1f} s, last third {f['p95_last_third_s']:.1f} s: "
        + ("keeps up" if result["keeps_up"] else "FALLS BEHIND"),
        f"  {result['batches']} batches (mean {result['batch_seconds_mean']:.1f} s), {result['cpu_s']:.0f} CPU s: "
        f"{result['cpu_per_batch_s'] or 0:.1f} per batch, {result['cpu_per_touched_table_s'] or 0:.2f} per touched table "
        f"({result['touched']} touched, median {result['touched_per_batch_median']:.0f} a batch; "
        f"{result['expected_touched_per_trigger']:.1f} expected per trigger interval)",
        f"  fit: batch CPU s = {result['fit_cpu_per_batch_s']:.2f} + {result['fit_cpu_per_touched_table_s']:.2f} x touched tables; "
        f"peak RSS {result['peak_rss_mb'] or 0:.0f} MB",
        f"  goal p95 <= {GOAL_P95_S:g} s and keeping up: {'met' if result['meets_goal'] else 'MISSED'}",
    ]
    if restart:
        lines.append(f"  restart on {restart['tables']} made tables: query running after {restart['query_started_s']:.1f} s "
                     f"({restart['query_started_cpu_s']:.1f} CPU s), a record sent before it visible after "
                     f"{restart['first_record_visible_s']:.1f} s")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
