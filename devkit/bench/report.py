"""Results of a benchmark run: per job and case, the ratios against the issue's goals, text and JSON.

Costs are those of the job itself: the process tree's CPU seconds after the local Spark had
started (the start-up, about the same for every job, is kept apart as `startup_cpu_s`), and
the wall time from the query's start to its end. Peak RSS is the whole process tree's.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from devkit.bench.measure import TreeUsage, percentile

JOBS = ("hudi_cdc", "plain", "floor")
GOAL_CPU_VS_PLAIN = 0.67
GOAL_SNAPSHOT_VS_FLOOR = 2.0
GOAL_SCALE = 1.5
GOAL_RSS_VS_PLAIN = 1.3
GOAL_TABLES_CONCURRENT = 0.5


@dataclass
class JobResult:
    """One job's run on one case."""

    job: str
    events: int
    batches: int
    wall_s: float
    """From the query's start to its end."""
    cpu_s: float
    """Process tree CPU seconds, Spark's start-up excluded."""
    startup_cpu_s: float
    process_wall_s: float
    process_cpu_s: float
    peak_rss_mb: float
    spark_jobs: int
    batch_s: list[float] = field(default_factory=list)
    """Each batch's duration (`triggerExecution` of its progress report)."""
    batch_cpu_s: list[float] = field(default_factory=list)
    """CPU seconds between the ends of successive batches (the first from the query's start)."""
    restarts: list[str] = field(default_factory=list)
    """Why the job's process failed before the run that these numbers measure (`Run.restarting`)."""

    @property
    def events_per_s(self) -> float:
        return self.events / self.wall_s if self.wall_s else math.nan

    @property
    def cpu_ms_per_event(self) -> float:
        return 1000 * self.cpu_s / self.events if self.events else math.nan

    @property
    def jobs_per_batch(self) -> float:
        return self.spark_jobs / self.batches if self.batches else math.nan

    @property
    def batch_p50_s(self) -> float:
        return percentile(self.batch_s, 50)

    @property
    def batch_p95_s(self) -> float:
        return percentile(self.batch_s, 95)

    @property
    def first_batch_cpu_s(self) -> float:
        """CPU of the first batch: it pays the JVM's warm-up (class loading, JIT) besides its own work."""
        return self.batch_cpu_s[0] if self.batch_cpu_s else math.nan

    @property
    def later_batch_cpu_s(self) -> float:
        """Median CPU of the batches after the first (a warm job's cost per batch); NaN with one batch."""
        return percentile(self.batch_cpu_s[1:], 50)

    @classmethod
    def of(cls, child: dict[str, Any], usage: TreeUsage) -> JobResult:
        """Combine what the child reported with what the parent measured of its process tree."""
        return cls(
            job=child["job"],
            events=int(child["events"]),
            batches=int(child["batches"]),
            wall_s=float(child["stream_wall_s"]),
            cpu_s=usage.cpu_s - float(child["startup_cpu_s"]),
            startup_cpu_s=float(child["startup_cpu_s"]),
            process_wall_s=usage.wall_s,
            process_cpu_s=usage.cpu_s,
            peak_rss_mb=usage.peak_rss_mb,
            spark_jobs=int(child["spark_jobs"]),
            batch_s=[float(s) for s in child["batch_s"]],
            batch_cpu_s=[float(s) for s in child.get("batch_cpu_s", [])],
        )

    @classmethod
    def sequence(cls, runs: list[JobResult]) -> JobResult:
        """Runs made one after another (one per table) as one: times, CPU, events and jobs add up,
        peak RSS is the largest of them."""
        return cls(
            job=runs[0].job,
            events=sum(r.events for r in runs),
            batches=sum(r.batches for r in runs),
            wall_s=sum(r.wall_s for r in runs),
            cpu_s=sum(r.cpu_s for r in runs),
            startup_cpu_s=sum(r.startup_cpu_s for r in runs),
            process_wall_s=sum(r.process_wall_s for r in runs),
            process_cpu_s=sum(r.process_cpu_s for r in runs),
            peak_rss_mb=max(r.peak_rss_mb for r in runs),
            spark_jobs=sum(r.spark_jobs for r in runs),
            batch_s=[s for r in runs for s in r.batch_s],
            batch_cpu_s=[s for r in runs for s in r.batch_cpu_s],
            restarts=[e for r in runs for e in r.restarts],
        )

    def as_json(self) -> dict[str, Any]:
        derived = {
            name: _finite(getattr(self, name))
            for name in ("events_per_s", "cpu_ms_per_event", "jobs_per_batch", "batch_p50_s", "batch_p95_s",
                         "first_batch_cpu_s", "later_batch_cpu_s")
        }
        return asdict(self) | derived


@dataclass
class CaseResult:
    """The three jobs on one case, and the honesty check of the two Hudi tables."""

    name: str
    workload: str
    title: str
    table_type: str
    partitioned: bool
    table_rows: int
    events: int
    jobs: dict[str, JobResult]
    check: dict[str, Any]
    profiles: dict[str, Any] = field(default_factory=dict)
    """Per job, where its time went (`devkit.bench.profile`), when run with `--profile`."""
    tables: int = 1
    table_concurrency: int = 1
    """hudi_cdc's `job.table_concurrency` in this case."""
    separate: bool = False
    """Each job ran once per table, one run after another (`Case.separate`)."""

    def ratio(self, metric: str, job: str, base: str) -> float:
        """`metric` of `job` over that of `base` (NaN when either is missing or zero)."""
        if job not in self.jobs or base not in self.jobs:
            return math.nan
        top, bottom = getattr(self.jobs[job], metric), getattr(self.jobs[base], metric)
        return float(top / bottom) if bottom else math.nan

    def ratios(self) -> dict[str, float]:
        return {
            "cpu_vs_plain": self.ratio("cpu_s", "hudi_cdc", "plain"),
            "wall_vs_plain": self.ratio("wall_s", "hudi_cdc", "plain"),
            "rss_vs_plain": self.ratio("peak_rss_mb", "hudi_cdc", "plain"),
            "cpu_vs_floor": self.ratio("cpu_s", "hudi_cdc", "floor"),
            "wall_vs_floor": self.ratio("wall_s", "hudi_cdc", "floor"),
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "workload": self.workload, "title": self.title, "table_type": self.table_type,
            "partitioned": self.partitioned, "table_rows": self.table_rows, "events": self.events,
            "jobs": {name: job.as_json() for name, job in self.jobs.items()},
            "ratios": {k: _finite(v) for k, v in self.ratios().items()}, "check": self.check,
            "profiles": self.profiles, "tables": self.tables, "table_concurrency": self.table_concurrency,
            "separate": self.separate,
        }  # fmt: skip


@dataclass(frozen=True)
class Goal:
    """One of the performance goals (docs/performance.md), checked on one case or pair of cases."""

    goal: str
    case: str
    value: float
    limit: float

    @property
    def met(self) -> bool:
        return self.value <= self.limit


def goals(cases: list[CaseResult]) -> list[Goal]:
    """Every goal the run's cases can tell: CPU and memory vs plain, snapshot vs floor, cost vs table size."""
    out: list[Goal] = []
    for case in cases:
        out.append(Goal("CPU ≤ 0.67x plain upsert", case.name, case.ratio("cpu_s", "hudi_cdc", "plain"), GOAL_CPU_VS_PLAIN))
        out.append(Goal("peak RSS ≤ 1.3x plain upsert", case.name, case.ratio("peak_rss_mb", "hudi_cdc", "plain"),
                        GOAL_RSS_VS_PLAIN))  # fmt: skip
        if case.workload == "snapshot":
            out.append(Goal("snapshot CPU ≤ 2x Parquet floor", case.name, case.ratio("cpu_s", "hudi_cdc", "floor"),
                            GOAL_SNAPSHOT_VS_FLOOR))  # fmt: skip
    scale = sorted((c for c in cases if c.workload == "scale" and "hudi_cdc" in c.jobs), key=lambda c: c.table_rows)
    for small, large in itertools.pairwise(scale):
        value = large.jobs["hudi_cdc"].cpu_s / small.jobs["hudi_cdc"].cpu_s
        out.append(Goal("CPU(larger table) ≤ 1.5x CPU(smaller), same changes", f"{large.name} / {small.name}", value, GOAL_SCALE))
    many = [c for c in cases if c.workload == "tables" and "hudi_cdc" in c.jobs]
    separate = next((c.jobs["hudi_cdc"] for c in many if c.separate), None)
    by_concurrency = {c.table_concurrency: c for c in many if not c.separate}
    if separate is not None:
        # what the runs cost as a whole, each run's Spark start-up included: N runs pay it N times
        for one_job in by_concurrency.values():
            value = one_job.jobs["hudi_cdc"].process_cpu_s / separate.process_cpu_s
            out.append(Goal(f"{one_job.tables} tables in one job ≤ 0.5x as many runs, CPU", f"{one_job.name} / separate",
                            value, GOAL_TABLES_CONCURRENT))  # fmt: skip
    if 1 in by_concurrency and len(by_concurrency) > 1:
        one = by_concurrency.pop(1)
        for concurrent in by_concurrency.values():
            value = concurrent.jobs["hudi_cdc"].wall_s / one.jobs["hudi_cdc"].wall_s
            out.append(Goal(f"{concurrent.tables} tables, wall {concurrent.table_concurrency} at a time ≤ 0.5x one at a time",
                            f"{concurrent.name} / {one.name}", value, GOAL_TABLES_CONCURRENT))  # fmt: skip
    return out


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def _fmt(value: float, digits: int = 1) -> str:
    return "-" if math.isnan(value) else f"{value:,.{digits}f}"


def text_report(cases: list[CaseResult]) -> str:
    """A fixed-width table per case: the three jobs, their ratios and the honesty check."""
    header = (f"{'job':<9} {'events':>8} {'batches':>7} {'wall s':>7} {'CPU s':>7} {'start CPU':>9} {'ev/s':>7} "
              f"{'CPU ms/ev':>9} {'jobs/batch':>10} {'RSS MB':>7} {'p50 s':>6} {'p95 s':>6} {'CPU 1st b':>9} {'CPU b>1':>7}")  # fmt: skip
    lines: list[str] = []
    for case in cases:
        lines += ["", f"== {case.name}: {case.title}", header]
        for job in case.jobs.values():
            lines.append(
                f"{job.job:<9} {job.events:>8} {job.batches:>7} {_fmt(job.wall_s):>7} {_fmt(job.cpu_s):>7} "
                f"{_fmt(job.startup_cpu_s):>9} {_fmt(job.events_per_s, 0):>7} {_fmt(job.cpu_ms_per_event, 2):>9} "
                f"{_fmt(job.jobs_per_batch):>10} {_fmt(job.peak_rss_mb, 0):>7} {_fmt(job.batch_p50_s):>6} "
                f"{_fmt(job.batch_p95_s):>6} {_fmt(job.first_batch_cpu_s):>9} {_fmt(job.later_batch_cpu_s):>7}"
            )
        r = case.ratios()
        lines.append(
            f"hudi_cdc/plain: CPU {_fmt(r['cpu_vs_plain'], 2)}x  wall {_fmt(r['wall_vs_plain'], 2)}x  "
            f"RSS {_fmt(r['rss_vs_plain'], 2)}x   hudi_cdc/floor: CPU {_fmt(r['cpu_vs_floor'], 2)}x  "
            f"wall {_fmt(r['wall_vs_floor'], 2)}x"
        )
        lines += [f"{job.job}: restarted once: {why}" for job in case.jobs.values() for why in job.restarts]
        lines.append(f"check: {check_line(case.check)}")
    return "\n".join(lines)


def check_line(check: dict[str, Any]) -> str:
    """The honesty check in one line (`child.verify`, plus the records each job consumed)."""
    if not check:
        return "not run"
    verdict = "PASSED" if check.get("passed") else "FAILED"
    consumed = check.get("consumed", {})
    short = [f"{job} {n}" for job, n in consumed.items() if n != check.get("events")]
    return (
        f"{verdict}: tables {'equal' if check.get('equal') else 'DIFFERENT'} (hudi_cdc {check['hudi_cdc_rows']} rows, "
        f"plain {check['plain_rows']}, expected {check['expected_rows']}; only in hudi_cdc {check['only_in_hudi_cdc']}, "
        f"only in plain {check['only_in_plain']}); source rows of {check.get('touched_keys', '?')} touched keys "
        f"{'matched' if check.get('matches_source') else 'NOT matched'} (missing {check.get('source_rows_missing', '?')}, "
        f"not in source {check.get('rows_not_in_source', '?')}, untouched changed {check.get('untouched_rows_changed', '?')}); "
        f"records consumed {'all ' + str(check.get('events')) if not short else 'SHORT: ' + ', '.join(short)}"
    )


def markdown_ratios(cases: list[CaseResult]) -> str:
    """The ratio table docs/performance-journal.md shows for each run: CPU seconds and ratios per case."""
    lines = [
        "| case | hudi_cdc CPU s | plain CPU s | floor CPU s | hudi_cdc / plain CPU | hudi_cdc / plain wall "
        "| hudi_cdc / floor CPU | hudi_cdc / plain RSS | jobs per batch (hudi_cdc / plain) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for case in cases:
        r = case.ratios()
        jobs = case.jobs

        def cpu(name: str, jobs: dict[str, JobResult] = jobs) -> str:
            return _fmt(jobs[name].cpu_s) if name in jobs else "-"

        per_batch = "/".join(_fmt(jobs[n].jobs_per_batch) if n in jobs else "-" for n in ("hudi_cdc", "plain"))
        lines.append(
            f"| {case.title} | {cpu('hudi_cdc')} | {cpu('plain')} | {cpu('floor')} | {_fmt(r['cpu_vs_plain'], 2)}x "
            f"| {_fmt(r['wall_vs_plain'], 2)}x | {_fmt(r['cpu_vs_floor'], 2)}x | {_fmt(r['rss_vs_plain'], 2)}x "
            f"| {per_batch} |"
        )
    return "\n".join(lines)


def markdown_goals(found: list[Goal]) -> str:
    lines = ["| goal | case | measured | limit | met |", "|---|---|---|---|---|"]
    for g in found:
        lines.append(f"| {g.goal} | {g.case} | {_fmt(g.value, 2)}x | {g.limit}x | {'yes' if g.met else 'no'} |")
    return "\n".join(lines)


def markdown_jobs(cases: list[CaseResult]) -> str:
    """Per case and job: CPU, wall, events/s, Spark jobs per batch, peak RSS, batch latency p50/p95."""
    lines = [
        "| case | job | CPU s | wall s | events/s | CPU ms/event | batches | Spark jobs/batch | peak RSS MB "
        "| batch p50 s | batch p95 s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case in cases:
        for job in case.jobs.values():
            lines.append(
                f"| {case.name} | {job.job} | {_fmt(job.cpu_s)} | {_fmt(job.wall_s)} | {_fmt(job.events_per_s, 0)} "
                f"| {_fmt(job.cpu_ms_per_event, 2)} | {job.batches} | {_fmt(job.jobs_per_batch)} "
                f"| {_fmt(job.peak_rss_mb, 0)} | {_fmt(job.batch_p50_s)} | {_fmt(job.batch_p95_s)} |"
            )
    return "\n".join(lines)
