"""Drive a benchmark run: topics on a local Kafka, then per case the three jobs and the check.

Every job and every check is its own process with its own local[2] Spark (`devkit.bench.child`),
run one after another while the parent samples the process tree (`measure.run_measured`).
A case that starts from a loaded table gets a copy of a table loaded once per (rows, table
type, partitioning) by hudi_cdc and by the plain job: the tables of a snapshot case of that
size and type when the run has one, else an untimed load in batches of `--load-batch` (its
costs are kept under `loads` in the JSON), or, with `--load-by generate`, one bulk insert of
generated rows (`generated`), which builds 10M rows in minutes. The floor always appends to an empty folder
(appending to Parquet does not read what is there).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from confluent_kafka import Producer

from devkit import CHECKOUT
from devkit.bench import profile
from devkit.bench.child import EXIT_DIFFERENT
from devkit.bench.jobs import JobSpec
from devkit.bench.measure import TreeUsage, run_measured
from devkit.bench.report import JOBS, CaseResult, JobResult
from devkit.bench.workloads import Case, Load, final_versions, load_topic, records, snapshot_changes, source
from devkit.debezium import KafkaRecord
from devkit.services.kafka import LocalKafka
from hudi_cdc.config.models import IndexKind

PROFILED = ("hudi_cdc", "plain")
"""The jobs `--profile` writes Spark event logs for."""


class BenchError(RuntimeError):
    """A child failed or the honesty check found different tables; the message says which and where."""


@dataclass(frozen=True)
class Settings:
    """What the command line chose besides the cases."""

    batch: int
    load_batch: int
    root: Path
    """Tables, checkpoints, specs and child logs of this run."""
    profile: bool = False
    """Write Spark event logs of the hudi_cdc and plain jobs and summarize them (`devkit.bench.profile`)."""
    spark_conf: dict[str, str] = field(default_factory=dict)
    """Extra Spark settings of every job's session (never of the check)."""
    index: IndexKind = "simple"
    """The tables' `index` (hudi_cdc's setting; the plain job gets the same Hudi index options)."""
    buckets: int = 8
    """The tables' `buckets` with `index: bucket`."""
    prepped_writes: bool = True
    """The tables' `prepped_writes` (hudi_cdc's setting only)."""
    hoodie_options: dict[str, str] = field(default_factory=dict)
    """The tables' `hoodie_options` (file sizing...); the plain job writes with them too."""
    min_partitions: int | None = None
    """`kafka.min_partitions` of every job and load (the topics have one partition)."""
    job_settings: dict[str, str] = field(default_factory=dict)
    """More `job:` settings of the hudi_cdc job (`newer_by_rank=true`)."""
    load_by: Literal["kafka", "generate"] = "kafka"
    """How a case's starting table is loaded: by each job from a topic of snapshot reads, or by
    one bulk insert of generated rows (`devkit.bench.generated`; no load topic is produced)."""


@dataclass
class Run:
    """The state of one benchmark invocation."""

    kafka: LocalKafka
    settings: Settings
    loads: dict[Load, Path] = field(default_factory=dict)
    load_costs: list[dict[str, Any]] = field(default_factory=list)
    loadavg: list[tuple[str, tuple[float, float, float]]] = field(default_factory=list)

    def run_case(self, case: Case) -> CaseResult:
        case_dir = self.settings.root / case.name
        shutil.rmtree(case_dir, ignore_errors=True)
        case_dir.mkdir(parents=True)
        if case.start is not None:
            loaded = self.load(case.start)
            for job in ("hudi_cdc", "plain"):
                shutil.copytree(loaded / job, case_dir / job)
        jobs: dict[str, JobResult] = {}
        profiles: dict[str, Any] = {}
        specs: dict[str, JobSpec] = {}
        for job in JOBS:
            specs[job] = self._job_spec(job, case.topics, case_dir, case.type, case.partitioned, self.settings.batch,
                                        table_concurrency=case.table_concurrency)  # fmt: skip
            if case.separate:
                if job == "floor":
                    continue  # the goal compares hudi_cdc's runs; the plain job's are the check's other table
                jobs[job] = self._run_separately(specs[job], case_dir / f"{job}-run")
                _progress(case.name, jobs[job])
                continue
            profiled = self.settings.profile and job in PROFILED
            run = self.restarting if job == "plain" else self.once
            child, usage, restarts = run(self._request(specs[job]), case_dir / f"{job}-run", event_log=profiled)
            jobs[job] = JobResult.of(child, usage)
            jobs[job].restarts.extend(restarts)
            _progress(case.name, jobs[job])
            if profiled:
                found = profile.read(case_dir / f"{job}-run" / "eventlog")
                print(profile.text(found, f"{case.name} {job}"), flush=True)
                profiles[job] = profile.as_json(found)
                if "jvm_thread_cpu_s" in child:
                    print(profile.threads_text(child["jvm_thread_cpu_s"]), flush=True)
                    profiles[job]["jvm_thread_cpu_s"] = child["jvm_thread_cpu_s"]
                    profiles[job]["codegen_compilations"] = child["codegen_compilations"]
                    profiles[job]["codegen_compile_ms"] = child["codegen_compile_ms"]
                    print(f"-- generated classes compiled by the end of each batch: {child['codegen_compilations']}, "
                          f"compile ms so far: {[round(ms) for ms in child['codegen_compile_ms']]}")  # fmt: skip
                if "steps" in child:
                    print(profile.steps_text(child["steps"], child["profiled_batches"]), flush=True)
                    profiles[job]["steps"] = child["steps"]
            if jobs[job].events != case.events:
                print(f"  WARNING: {job} consumed {jobs[job].events} records, the topic holds {case.events}")
        check = self.verify(case_dir, case, specs["hudi_cdc"], specs["plain"])
        check["events"] = case.events
        check["consumed"] = {name: done.events for name, done in jobs.items()}
        check["passed"] = bool(
            check["equal"] and check["matches_source"] and all(n == case.events for n in check["consumed"].values())
        )
        result = CaseResult(
            name=case.name, workload=case.workload, title=case.title, table_type=case.type,
            partitioned=case.partitioned, table_rows=case.table_rows, events=case.events, jobs=jobs, check=check,
            profiles=profiles, tables=case.tables, table_concurrency=case.table_concurrency, separate=case.separate,
        )  # fmt: skip
        if case.workload == "snapshot":
            self.loads.setdefault(Load(case.expected_rows, case.type, case.partitioned), case_dir)
        return result

    def _run_separately(self, spec: JobSpec, directory: Path) -> JobResult:
        """`spec`'s job run once per table, one run after another, each writing the table `spec`
        would write (so the check reads them where it expects them)."""
        runs = []
        for i, (topic, table) in enumerate(spec.tables()):
            alone = replace(spec, topics=[topic], table_path=table.base_path, work_dir=f"{spec.work_dir}-{i}")
            runs.append(JobResult.of(*self.child(self._request(alone), directory / str(i))))
        return JobResult.sequence(runs)

    def once(self, request: dict[str, Any], directory: Path, *, event_log: bool) -> tuple[dict[str, Any], TreeUsage, list[str]]:
        """One child process on `request` (see `child`); a failure stops the run."""
        return *self.child(request, directory, event_log=event_log), []

    def restarting(
        self, request: dict[str, Any], directory: Path, *, event_log: bool
    ) -> tuple[dict[str, Any], TreeUsage, list[str]]:
        """The plain job run as a supervisor runs a streaming job: when its process fails, it is
        started once more and resumes from its checkpoint (Hudi rolls the failed commit back).
        Also returns why it was restarted, if it was.

        Why: Hudi 1.2.0 failed every plain upsert into the 1M-row table in the process that had
        just compacted the metadata table (ArrayIndexOutOfBoundsException writing column stats);
        a new process wrote the same batch. The numbers are the second process's: the failed
        attempt's CPU is named in `restarts`, not counted, which favours the plain job. Batches
        the failed process had committed are not in `events`, so the check then fails on the
        consumed count rather than passing a short run.
        """
        try:
            return self.once(request, directory, event_log=event_log)
        except BenchError as failed:
            exited = str(failed).split("; log ", 1)[0]
        # the failed run's folder is kept beside the new one, so the note names the log where it now is
        kept = shutil.move(directory, directory.with_name(directory.name + "-failed"))
        why = f"{exited}: {root_cause((Path(kept) / 'child.log').read_text(errors='replace'))} (log {kept}/child.log)"
        print(f"  {why}; restarting it once", flush=True)
        child, usage = self.child(request, directory, event_log=event_log)
        return child, usage, [why]

    def load(self, load: Load) -> Path:
        """The folder holding `load`'s hudi_cdc and plain tables, loading them first if needed."""
        if load in self.loads:
            return self.loads[load]
        load_dir = self.settings.root / "loads" / load.name
        shutil.rmtree(load_dir, ignore_errors=True)
        load_dir.mkdir(parents=True)
        topic = load_topic(load.rows)
        for job in ("hudi_cdc", "plain"):
            spec = self._job_spec(job, [topic], load_dir, load.type, load.partitioned, self.settings.load_batch)
            if self.settings.load_by == "generate":
                request = {"kind": "generate", "job": asdict(spec), "rows": load.rows, "spark_conf": self.settings.spark_conf}
                _, usage = self.child(request, load_dir / f"{job}-run")
                print(f"  load {load.name} {job}: {load.rows:,} generated rows, one bulk insert, {usage.wall_s:.1f} s "
                      f"wall, {usage.cpu_s:.1f} CPU s (untimed)")  # fmt: skip
                self.load_costs.append({"load": load.name, "job": job, "generated_rows": load.rows,
                                        "wall_s": round(usage.wall_s, 1), "cpu_s": round(usage.cpu_s, 1)})  # fmt: skip
                continue
            child, usage = self.child(self._request(spec), load_dir / f"{job}-run")
            cost = JobResult.of(child, usage)
            print(f"  load {load.name} {job}: {cost.events} events, {cost.wall_s:.1f} s wall, {cost.cpu_s:.1f} CPU s (untimed)")
            self.load_costs.append({"load": load.name, **cost.as_json()})
        self.loads[load] = load_dir
        return load_dir

    def _job_spec(self, job: str, topics: list[str], directory: Path, type_: Any, partitioned: bool, batch: int,
                  *, table_concurrency: int = 1) -> JobSpec:  # fmt: skip
        return JobSpec(
            job=job, bootstrap=self.kafka.bootstrap_servers, topics=topics, batch=batch,
            table_path=str(directory / job), type=type_, partitioned=partitioned, work_dir=str(directory / f"work-{job}"),
            table_concurrency=table_concurrency, index=self.settings.index, hoodie_options=self.settings.hoodie_options,
            buckets=self.settings.buckets, prepped_writes=self.settings.prepped_writes,
            min_partitions=self.settings.min_partitions,
            job_settings=self.settings.job_settings if job == "hudi_cdc" else {},
        )  # fmt: skip

    def _request(self, spec: JobSpec) -> dict[str, Any]:
        """What a child is asked to run: the job, with this run's Spark settings."""
        return {"kind": "job", "job": asdict(spec), "spark_conf": self.settings.spark_conf}

    def child(self, spec: dict[str, Any], directory: Path, *, event_log: bool = False) -> tuple[dict[str, Any], TreeUsage]:
        """Run one child process on `spec`; what it reported and what its process tree used."""
        directory.mkdir(parents=True, exist_ok=True)
        if event_log:
            spec = spec | {"event_log": str(directory / "eventlog")}
        spec_path, result_path, log_path = directory / "spec.json", directory / "result.json", directory / "child.log"
        spec_path.write_text(json.dumps(spec, indent=2))
        result_path.unlink(missing_ok=True)
        usage = run_measured(
            [sys.executable, "-m", "devkit.bench.child", str(spec_path), str(result_path)],
            cwd=CHECKOUT, env=child_env(), log_path=log_path,
        )  # fmt: skip
        self.loadavg.append((str(directory.relative_to(self.settings.root)), os.getloadavg()))
        if usage.exit_code not in (0, EXIT_DIFFERENT) or not result_path.exists():
            tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-40:])
            raise BenchError(f"{directory.name} exited {usage.exit_code}; log {log_path}:\n{tail}")
        return json.loads(result_path.read_text()), usage

    def verify(self, case_dir: Path, case: Case, cdc: JobSpec, plain: JobSpec) -> dict[str, Any]:
        """The honesty check (see `child.verify`): both Hudi tables hold the same source rows, and
        the keys the case touched hold what the source holds (the reference fold of its changes)."""
        directory = case_dir / "verify"
        directory.mkdir(parents=True, exist_ok=True)
        touched = directory / "touched.json"
        touched.write_text(json.dumps(sorted(final_versions(case.changes()).items())))
        pairs = [{"hudi_cdc": ours.base_path, "plain": theirs.base_path}
                 for (_, ours), (_, theirs) in zip(cdc.tables(), plain.tables(), strict=True)]  # fmt: skip
        spec = {"kind": "verify", "pairs": pairs, "expected_rows": case.expected_rows, "touched": str(touched)}
        check, _ = self.child(spec, directory)
        return check


def root_cause(log: str) -> str:
    """The last `Caused by:` line of a child's log (the innermost Java cause), else its last line."""
    causes = [line.removeprefix("Caused by: ") for line in log.splitlines() if line.startswith("Caused by: ")]
    lines = log.strip().splitlines()
    return (causes[-1] if causes else lines[-1] if lines else "no log")[:300]


def child_env() -> dict[str, str]:
    """The environment of a child: this checkout first on the path, the same build folder and Java."""
    from devkit import build_dir

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(CHECKOUT), *filter(None, [env.get("PYTHONPATH")])])
    env["HUDI_CDC_BUILD"] = str(build_dir())
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    return env


def produce(bootstrap: str, topic: str, records: Iterable[KafkaRecord]) -> int:
    """Send `records` to `topic` in order, waiting when the producer's queue is full; the count."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True})
    failures: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    count = 0
    for key, value in records:
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.5)
        producer.poll(0)
        count += 1
    if producer.flush(120) or failures:
        raise BenchError(f"producing to {topic} failed: {failures[:3]}")
    return count


def prepare_topics(kafka: LocalKafka, cases: list[Case], settings: Settings) -> None:
    """Create and fill the topic of every case and of every load no snapshot case provides."""
    provided = {Load(c.expected_rows, c.type, c.partitioned) for c in cases if c.workload == "snapshot"}
    load_rows = sorted({c.start.rows for c in cases if c.start is not None and c.start not in provided})
    if settings.load_by == "generate":
        load_rows = []  # built without Kafka
    topics: dict[str, Iterable[KafkaRecord]] = {}
    for rows in load_rows:
        topics[load_topic(rows)] = records(source(f"rows_{rows}"), snapshot_changes(rows))
    for case in cases:
        topics.update({topic: stream() for topic, stream in case.streams().items()})
    kafka.create_topics(list(topics))
    for topic, stream in topics.items():
        began = time.monotonic()
        count = produce(kafka.bootstrap_servers, topic, stream)
        print(f"  produced {count:,} records to {topic} in {time.monotonic() - began:.0f} s")


def _progress(case: str, job: JobResult) -> None:
    print(
        f"  {case} {job.job}: {job.events} events in {job.batches} batches, {job.wall_s:.1f} s wall, "
        f"{job.cpu_s:.1f} CPU s (+{job.startup_cpu_s:.1f} start-up), peak RSS {job.peak_rss_mb:.0f} MB, "
        f"{job.spark_jobs} Spark jobs",
        flush=True,
    )
