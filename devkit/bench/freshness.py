"""`make bench-freshness`: produced-to-visible latency of hudi_cdc at a sustained rate.

    python -m devkit.bench.freshness                          # 5 tables, 2,000 events/s for 60 s
    python -m devkit.bench.freshness --rate 200 --seconds 120 # a rate this machine keeps up with?
    python -m devkit.bench.freshness --smoke                  # tiny: checks the bench works

What it does, on a local Kafka, for hudi_cdc and then for the plain Hudi upsert job (the
baseline of `make bench`, `devkit.bench.jobs`), each on topics of its own with the same records:
1. Loads `--rows` snapshot rows into each of `--tables` topics and starts the job continuously
   (trigger every `--trigger`, no batch size limit) in its own process (`devkit.bench.child`,
   kind `continuous`). Waits until the snapshot is applied: warm-up, not measured.
2. Produces `--rate` updates per second, spread over the topics, for `--seconds` (records are
   built beforehand, so the producer only sends). Every record's Kafka timestamp is its
   produce time.
3. Waits until every record is applied (or `--drain-timeout`), then sends `--probes` single
   records into the idle job, one at a time: the smallest batch latency.

A record is *visible* when the Hudi commit of its table, in the batch that read it, completed:
from that moment a query engine that reads the Hudi timeline at query time, as Trino's and
Presto's Hudi connectors do, sees it (the tables are unpartitioned, so no metastore sync is
waited for). Each job reports its commits as they complete (hudi_cdc: `TableMetrics.committed_at`;
the plain job: when its table's `save` returned). Latency = visible - produced. The report also
gives the latency at the end of the batch (Spark's progress report, after every table's commit):
with the tables of a batch written one after another, the first table's rows are visible a few
seconds before the batch ends. The job keeps up when every record was applied and the latency
of the last third of the records is no more than 1.5x that of the first third (a backlog that
grows shows as growing latency). A phase of fewer than 8 batches must also pass the capacity
estimate (`keeps_up`); `--seconds 180` gives the trend enough batches. Prints the numbers and writes build/bench/freshness-<time>.json.
"""

from __future__ import annotations

import argparse
import bisect
import datetime as dt
import json
import os
import random
import shutil
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from devkit import CHECKOUT, build_dir
from devkit.bench.jobs import JobSpec
from devkit.bench.measure import TreeUsage, percentile, run_measured
from devkit.bench.run import BenchError, child_env, produce
from devkit.bench.workloads import records, snapshot_changes, source
from devkit.debezium import KafkaRecord
from devkit.services import run_dir
from devkit.services.kafka import LocalKafka

GOAL_P95_S = 30.0
"""The freshness goal (docs/performance.md): p95 produced-to-visible at 2,000 events/s into 5 tables."""
KEEPS_UP_GROWTH = 1.5
"""Latency of the last third of the records over the first third above which the job falls behind."""
TREND_BATCHES = 8
"""Sustained batches from which the latency trend alone shows whether the job keeps up (see `keeps_up`)."""
SMOKE = {"tables": 2, "rows": 500, "rate": 50, "seconds": 20, "probes": 1}
JOBS = ("hudi_cdc", "plain")
"""The jobs measured, one after the other: hudi_cdc and the plain Hudi upsert job (`devkit.bench.jobs`)."""


@dataclass(frozen=True)
class Sent:
    """One produced record: where it landed and when it was produced (epoch s)."""

    topic: str
    partition: int
    offset: int
    at: float


@dataclass(frozen=True)
class Freshness:
    """What the sustained phase measured."""

    produced: int
    visible: int
    """Records some batch applied (the rest were never applied within the drain timeout)."""
    rate: float
    """Events per second the producer actually sent."""
    p50_s: float
    p95_s: float
    p99_s: float
    max_s: float
    p95_first_third_s: float
    p95_last_third_s: float
    drain_s: float | None
    """From the last record produced until it was visible (None: not within the timeout)."""

    @property
    def latency_steady(self) -> bool:
        """Every record was applied and latency did not grow over the phase (see KEEPS_UP_GROWTH)."""
        return self.visible == self.produced and self.p95_last_third_s <= KEEPS_UP_GROWTH * self.p95_first_third_s


def capacity(events: int, cpu_s: float, cores: int) -> float:
    """Events per second the job could apply with every core busy, at the CPU per event it spent.

    Why beside the latency trend: a phase of a minute holds only a few big batches, too few for
    a backlog to show as growing latency, while a job that needs more CPU per second than the
    machine has must fall behind in the end.
    """
    return events / cpu_s * cores if cpu_s > 0 else float("inf")


def keeps_up(found: Freshness, *, rate: float, capacity_events_per_s: float, batches: int) -> bool:
    """Whether the job applied the records as fast as they came.

    Every record must be applied with a latency that did not grow (`latency_steady`). A phase of
    at least TREND_BATCHES batches is long enough for a backlog to show in that trend. A shorter
    one must also pass `capacity`, which is pessimistic: the CPU per event it uses includes the
    fixed cost of every batch, and a job that falls behind reads bigger batches, so pays that
    fixed cost over more events (docs/performance-journal.md, round 8).
    """
    if not found.latency_steady:
        return False
    return batches >= TREND_BATCHES or rate <= capacity_events_per_s


Commits = dict[tuple[int, str], float]
"""(batch id, topic) -> when the batch's Hudi commit of the topic's table completed (epoch s)."""


def visible_at(
    batches: Sequence[dict[str, Any]], commits: Commits | None = None
) -> dict[tuple[str, int], tuple[list[int], list[float]]]:
    """Per topic partition: the newest applied offset after each batch, and when it became visible:
    when the batch's commit of the topic's table completed (`commits`), else when the batch ended.

    Offsets only grow from batch to batch (a table stopped by an error applies nothing and is
    left out), so a record's batch is the first whose offset reaches the record's.
    """
    commits = commits or {}
    found: dict[tuple[str, int], tuple[list[int], list[float]]] = {}
    for batch in batches:
        for table in batch["tables"].values():
            if table.get("error"):
                continue
            for topic, partitions in table["applied_through"].items():
                for partition, offset in partitions.items():
                    offsets, times = found.setdefault((topic, int(partition)), ([], []))
                    if not offsets or offset > offsets[-1]:
                        offsets.append(int(offset))
                        times.append(commits.get((int(batch["batch_id"]), topic), float(batch["at"])))
    return found


def latencies(
    sent: Sequence[Sent], batches: Sequence[dict[str, Any]], commits: Commits | None = None
) -> list[float | None]:
    """Each sent record's produced-to-visible seconds, in `sent` order; None when never applied."""
    applied = visible_at(batches, commits)
    out: list[float | None] = []
    for record in sent:
        offsets, times = applied.get((record.topic, record.partition), ([], []))
        i = bisect.bisect_left(offsets, record.offset)
        out.append(times[i] - record.at if i < len(offsets) else None)
    return out


def summarize(sent: Sequence[Sent], batches: Sequence[dict[str, Any]], commits: Commits | None = None) -> Freshness:
    """The sustained phase's latency percentiles, rate and drain time (records in produce order)."""
    if not sent:
        raise ValueError("nothing was produced")
    found = latencies(sent, batches, commits)
    seen = [s for s in found if s is not None]
    third = max(1, len(found) // 3)
    first = [s for s in found[:third] if s is not None]
    last = [s for s in found[-third:] if s is not None]
    span = sent[-1].at - sent[0].at
    return Freshness(
        produced=len(sent),
        visible=len(seen),
        rate=len(sent) / span if span > 0 else float(len(sent)),
        p50_s=percentile(seen, 50),
        p95_s=percentile(seen, 95),
        p99_s=percentile(seen, 99),
        max_s=max(seen, default=float("nan")),
        p95_first_third_s=percentile(first, 95),
        p95_last_third_s=percentile(last, 95),
        drain_s=found[-1],
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m devkit.bench.freshness", description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=5, help="tables (one topic each) the rate is spread over")
    parser.add_argument("--rows", type=int, default=2_000, help="snapshot rows per table, loaded before the timed phase")
    parser.add_argument("--rate", type=float, default=2_000, help="events per second, all tables together")
    parser.add_argument("--seconds", type=float, default=60, help="how long the rate is sustained")
    parser.add_argument("--probes", type=int, default=3, help="single records sent into the idle job afterwards")
    return parse_job_arguments(parser, argv, trigger="5 seconds", drain_timeout=600, smoke=SMOKE)


def parse_job_arguments(
    parser: argparse.ArgumentParser, argv: list[str] | None, *, trigger: str, drain_timeout: float, smoke: dict[str, Any]
) -> argparse.Namespace:
    """Add the arguments every continuous-job bench shares (trigger, concurrency, drain timeout,
    jobs, smoke sizes, output folder) to `parser`, parse `argv`, and apply `--smoke` and `--jobs`."""
    parser.add_argument("--trigger", default=trigger, help="hudi_cdc's job.trigger_interval")
    parser.add_argument("--table-concurrency", type=int, default=1, help="hudi_cdc's job.table_concurrency")
    parser.add_argument("--drain-timeout", type=float, default=drain_timeout, help="seconds to wait for the backlog after producing")
    parser.add_argument("--jobs", default=",".join(JOBS), help=f"comma-separated jobs to measure ({', '.join(JOBS)})")
    parser.add_argument("--smoke", action="store_true", help=f"tiny sizes ({smoke})")
    parser.add_argument("--out", type=Path, default=None, help="where the JSON goes (default build/bench)")
    args = parser.parse_args(argv)
    if args.smoke:
        for key, value in smoke.items():
            setattr(args, key, value)
    args.jobs = [job for job in args.jobs.split(",") if job]
    unknown = set(args.jobs) - set(JOBS)
    if unknown:
        parser.error(f"unknown job(s) {sorted(unknown)}; valid: {', '.join(JOBS)}")
    return args


class ContinuousJob:
    """A job (hudi_cdc or plain) running continuously in a measured child process, and the batches it reported."""

    def __init__(self, spec: JobSpec, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.batches_path, self.stop_path = directory / "batches.jsonl", directory / "stop"
        self.commits_path, self.log_path = directory / "commits.jsonl", directory / "child.log"
        self.started_path = directory / "started.json"
        request = {"kind": "continuous", "job": asdict(spec), "batches": str(self.batches_path),
                   "commits": str(self.commits_path), "stop": str(self.stop_path),
                   "started": str(self.started_path)}  # fmt: skip
        (directory / "spec.json").write_text(json.dumps(request, indent=2))
        self.usage: TreeUsage | None = None
        self.launched_at = time.time()
        command = [sys.executable, "-m", "devkit.bench.child", str(directory / "spec.json"), str(directory / "result.json")]
        self._thread = threading.Thread(target=self._run, args=(command,), name="bench-freshness-job", daemon=True)
        self._thread.start()

    def _run(self, command: list[str]) -> None:
        self.usage = run_measured(command, cwd=CHECKOUT, env=child_env(), log_path=self.log_path)

    def batches(self) -> list[dict[str, Any]]:
        return _json_lines(self.batches_path)

    def commits(self) -> Commits:
        """When each batch's commit of each topic's table completed, as the job reported them."""
        return {(int(line["batch_id"]), line["topic"]): float(line["at"]) for line in _json_lines(self.commits_path)}

    def wait_started(self, timeout: float) -> dict[str, float]:
        """Wait until the job's query started; when (epoch s) and the process tree's CPU s then."""
        deadline = time.monotonic() + timeout
        while not self.started_path.exists():
            if not self._thread.is_alive():
                raise BenchError(f"the job exited {self.usage.exit_code if self.usage else '?'}: {self._tail()}")
            if time.monotonic() > deadline:
                raise BenchError(f"the job's query did not start within {timeout:.0f} s; log {self.log_path}")
            time.sleep(0.1)
        return {k: float(v) for k, v in json.loads(self.started_path.read_text()).items()}

    def wait_applied(self, ends: dict[tuple[str, int], int], timeout: float) -> bool:
        """Wait until every partition's offset in `ends` is applied; False after `timeout` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._thread.is_alive():
                raise BenchError(f"the job exited {self.usage.exit_code if self.usage else '?'}: {self._tail()}")
            applied = visible_at(self.batches())
            if all(applied.get(tp, ([-1], []))[0][-1] >= offset for tp, offset in ends.items()):
                return True
            time.sleep(0.2)
        return False

    def stop(self) -> TreeUsage:
        self.stop_path.touch()
        self._thread.join(timeout=300)
        if self.usage is None:
            raise BenchError(f"the job did not stop within 300 s; log {self.log_path}")
        if self.usage.exit_code != 0:
            raise BenchError(f"the job exited {self.usage.exit_code}: {self._tail()}")
        return self.usage

    def _tail(self) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return f"log {self.log_path}:\n" + "\n".join(text.splitlines()[-40:])


def _json_lines(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSON-lines file the job appends to (none before it wrote any)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class TimedProducer:
    """Sends records and remembers where each landed and when it was produced."""

    def __init__(self, bootstrap: str) -> None:
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
        self.sent: list[Sent] = []
        self.failures: list[str] = []

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failures.append(str(err))
            return
        self.sent.append(Sent(msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1] / 1000))

    def send(self, topic: str, record: KafkaRecord) -> None:
        key, value = record
        while True:
            try:
                self._producer.produce(topic, key=key, value=value, on_delivery=self._delivered)
                break
            except BufferError:
                self._producer.poll(0.05)
        self._producer.poll(0)

    def flush(self) -> list[Sent]:
        if self._producer.flush(120) or self.failures:
            raise BenchError(f"producing failed: {self.failures[:3]}")
        return sorted(self.sent, key=lambda s: s.at)


def sustained_updates(topics: list[str], rows: int, count: int) -> list[tuple[str, KafkaRecord]]:
    """`count` updates of random keys, round robin over the topics, each topic's positions growing."""
    rng = random.Random(20261124)
    per_topic: list[list[tuple[str, int, int]]] = [[] for _ in topics]
    for i in range(count):
        per_topic[i % len(topics)].append(("u", rng.randrange(rows), i // len(topics) + 1))
    built = [list(records(source(_part(t)), changes)) for t, changes in zip(topics, per_topic, strict=True)]
    return [(topics[i % len(topics)], built[i % len(topics)][i // len(topics)]) for i in range(count)]


def _part(topic: str) -> str:
    return topic.split(".")[1]


def paced(producer: TimedProducer, records_: list[tuple[str, KafkaRecord]], rate: float) -> None:
    """Send `records_` at `rate` per second, in ticks of 50 ms, catching up after a slow tick."""
    began = time.monotonic()
    for i, (topic, record) in enumerate(records_):
        due = began + i / rate
        wait = due - time.monotonic()
        if wait > 0.05:
            time.sleep(wait)
        producer.send(topic, record)


def last_offsets(sent: Sequence[Sent]) -> dict[tuple[str, int], int]:
    ends: dict[tuple[str, int], int] = {}
    for s in sent:
        ends[(s.topic, s.partition)] = max(s.offset, ends.get((s.topic, s.partition), -1))
    return ends


def _probe(kafka: LocalKafka, job: ContinuousJob, topic: str, version: int, idle_s: float) -> float:
    """Send one update into the idle job; seconds until it is visible."""
    time.sleep(idle_s)
    producer = TimedProducer(kafka.bootstrap_servers)
    producer.send(topic, next(records(source(_part(topic)), [("u", 0, version)])))
    (sent,) = producer.flush()
    del producer
    if not job.wait_applied({(sent.topic, sent.partition): sent.offset}, timeout=600):
        raise BenchError(f"a single record on {topic} was not applied within 600 s")
    (latency,) = latencies([sent], job.batches(), job.commits())
    assert latency is not None
    return latency


def measure_job(kafka: LocalKafka, job: str, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Load, sustain, drain and probe one job on its own topics; what it measured."""
    began = time.monotonic()
    count = int(args.rate * args.seconds)
    topics = [source(f"fresh_{job}_{i}").topic for i in range(args.tables)]
    kafka.create_topics(topics)
    for topic in topics:
        produce(kafka.bootstrap_servers, topic, records(source(_part(topic)), snapshot_changes(args.rows)))
    updates = sustained_updates(topics, args.rows, count)
    spec = JobSpec(job=job, bootstrap=kafka.bootstrap_servers, topics=topics, batch=10_000_000,
                   table_path=str(root / job / "tables"), type="COPY_ON_WRITE", partitioned=False,
                   work_dir=str(root / job / "work"), table_concurrency=args.table_concurrency,
                   trigger_interval=args.trigger)  # fmt: skip
    running = ContinuousJob(spec, root / job / "run")
    if not running.wait_applied({(t, 0): args.rows - 1 for t in topics}, timeout=1800):
        raise BenchError(f"{job}: the snapshot was not applied within 1800 s; log {running.log_path}")
    warm = running.batches()
    print(f"  {job}: snapshot applied in {len(warm)} batch(es), {time.monotonic() - began:.0f} s; producing", flush=True)
    producer = TimedProducer(kafka.bootstrap_servers)
    paced(producer, updates, args.rate)
    sent = producer.flush()
    del producer  # a librdkafka client outliving the broker logs connection errors until collected
    drained = running.wait_applied(last_offsets(sent), timeout=args.drain_timeout)
    sustained = [b for b in running.batches() if b["batch_id"] > warm[-1]["batch_id"]]
    found = summarize(sent, sustained, running.commits())
    at_batch_end = summarize(sent, sustained)
    probes = [_probe(kafka, running, topics[0], count + i + 1, idle_s=10) for i in range(args.probes)] if drained else []
    usage = running.stop()
    cpu_s = sustained[-1]["cpu_s"] - warm[-1]["cpu_s"] if sustained else 0.0
    can = capacity(found.produced, cpu_s, os.cpu_count() or 1)
    kept_up = keeps_up(found, rate=args.rate, capacity_events_per_s=can, batches=len(sustained))
    result = {
        "job": job,
        "freshness": asdict(found) | {"latency_steady": found.latency_steady},
        "freshness_at_batch_end": asdict(at_batch_end),
        "capacity_events_per_s": can, "keeps_up": kept_up, "meets_goal": kept_up and found.p95_s <= GOAL_P95_S,
        "drained": drained, "probes_s": probes,
        "sustained_batches": len(sustained),
        "batch_s": [b["seconds"] for b in sustained],
        "sustained_cpu_s": cpu_s,
        "peak_rss_mb": max((b["rss_mb"] for b in sustained), default=None),
        "job_cpu_s": usage.cpu_s, "job_wall_s": usage.wall_s, "load_average_after": os.getloadavg(),
    }  # fmt: skip
    print(text(result, args), flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    root = run_dir("bench-freshness") / "data"
    shutil.rmtree(root, ignore_errors=True)
    began, load_before = time.monotonic(), os.getloadavg()
    print(f"freshness: {args.tables} tables, {args.rows:,} rows each, {args.rate:g} events/s for {args.seconds:g} s, "
          f"trigger {args.trigger}; jobs {', '.join(args.jobs)}; load average {load_before}", flush=True)  # fmt: skip
    with LocalKafka(directory=run_dir("bench-freshness") / "kafka") as kafka:
        results = [measure_job(kafka, job, args, root) for job in args.jobs]
    by_job = {r["job"]: r for r in results}
    if set(by_job) == set(JOBS):
        ours, plain = by_job["hudi_cdc"]["freshness"], by_job["plain"]["freshness"]
        cpu = by_job["hudi_cdc"]["sustained_cpu_s"] / max(by_job["plain"]["sustained_cpu_s"], 1e-9)
        print(f"\nhudi_cdc / plain: p95 {ours['p95_s'] / plain['p95_s']:.2f}x, p50 {ours['p50_s'] / plain['p50_s']:.2f}x, "
              f"CPU s of the sustained phase {cpu:.2f}x")  # fmt: skip
    document = {
        "started": stamp, "command": " ".join(["python", "-m", "devkit.bench.freshness", *(argv or sys.argv[1:])]),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "jobs": results, "seconds": time.monotonic() - began,
    }  # fmt: skip
    out = args.out or build_dir() / "bench"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"freshness-{stamp}.json"
    path.write_text(json.dumps(document, indent=2))
    print(f"\n{time.monotonic() - began:.0f} s in all; wrote {path}")
    return 0


def text(result: dict[str, Any], args: argparse.Namespace) -> str:
    """One job's result as a reader wants it: latencies, rate, keeping up, CPU, probes."""
    f, end = result["freshness"], result["freshness_at_batch_end"]
    batch_s = result["batch_s"]
    lines = [
        f"{result['job']}: {args.tables} tables, target {args.rate:g} events/s for {args.seconds:g} s, trigger {args.trigger}",
        f"  produced {f['produced']:,} at {f['rate']:.0f} events/s; visible {f['visible']:,}"
        + ("" if result["drained"] else " (NOT drained within the timeout)"),
        f"  produced -> visible (the table's commit): p50 {f['p50_s']:.1f} s, p95 {f['p95_s']:.1f} s, p99 {f['p99_s']:.1f} s, "
        f"max {f['max_s']:.1f} s",
        f"  produced -> the batch's end: p50 {end['p50_s']:.1f} s, p95 {end['p95_s']:.1f} s",
        f"  p95 first third {f['p95_first_third_s']:.1f} s, last third {f['p95_last_third_s']:.1f} s "
        f"({'steady' if f['latency_steady'] else 'GROWING'}); capacity at {os.cpu_count()} cores and this batch size "
        f"{result['capacity_events_per_s']:.0f} events/s"
        + ("" if result["sustained_batches"] >= TREND_BATCHES else f" (decides: fewer than {TREND_BATCHES} batches)")
        + (": keeps up" if result["keeps_up"] else ": FALLS BEHIND"),
        f"  {result['sustained_batches']} batches, median {percentile(batch_s, 50):.1f} s, max {max(batch_s, default=0):.1f} s; "
        f"{result['sustained_cpu_s']:.0f} CPU s ({f['produced'] / max(result['sustained_cpu_s'], 1e-9):.0f} events per CPU s); "
        f"peak RSS {result['peak_rss_mb'] or 0:.0f} MB",
        f"  one record into the idle job: {', '.join(f'{p:.1f} s' for p in result['probes_s']) or 'not measured'}",
        f"  goal p95 <= {GOAL_P95_S:g} s and keeping up: {'met' if result['meets_goal'] else 'MISSED'}",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
