"""Where a job's batches spend their time, from the Spark event log its child wrote (`--profile`).

Per Spark job: its label (the job description Hudi sets, else the call site), its wall time
and its stages' executor run and CPU time; per batch (`streaming.sql.batchId`): the jobs' wall
against the batch's span. The time a batch spends outside any Spark job is driver work
(planning, py4j calls, Hudi's timeline and commit file handling).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BATCH_ID = "streaming.sql.batchId"


@dataclass
class SparkJob:
    """One Spark job of the event log."""

    job_id: int
    label: str
    batch: str | None
    submitted_ms: int
    stage_ids: list[int]
    completed_ms: int | None = None
    run_ms: float = 0.0
    """Executor run time of its stages' tasks."""
    cpu_ms: float = 0.0
    """Executor CPU time of its stages' tasks."""
    tasks: int = 0

    @property
    def wall_ms(self) -> int:
        return (self.completed_ms or self.submitted_ms) - self.submitted_ms


@dataclass
class Profile:
    """The jobs of one application, and their sums by label and by batch."""

    jobs: list[SparkJob] = field(default_factory=list)

    def by_label(self) -> list[dict[str, Any]]:
        """Jobs grouped by label, largest wall first."""
        groups: dict[str, list[SparkJob]] = defaultdict(list)
        for job in self.jobs:
            groups[job.label].append(job)
        rows = [_sums(jobs) | {"label": label} for label, jobs in groups.items()]
        return sorted(rows, key=lambda r: -float(r["wall_s"]))

    def by_batch(self) -> list[dict[str, Any]]:
        """Per batch: its jobs, their summed wall, and the span from the first job's start to the last one's end."""
        batches: dict[str, list[SparkJob]] = defaultdict(list)
        for job in self.jobs:
            if job.batch is not None:
                batches[job.batch].append(job)
        rows = []
        for batch, jobs in sorted(batches.items(), key=lambda kv: int(kv[0])):
            span = max(j.completed_ms or j.submitted_ms for j in jobs) - min(j.submitted_ms for j in jobs)
            rows.append({"batch": int(batch), "jobs": len(jobs), "span_s": span / 1000,
                         "jobs_wall_s": sum(j.wall_ms for j in jobs) / 1000,
                         "executor_cpu_s": sum(j.cpu_ms for j in jobs) / 1000})  # fmt: skip
        return rows


def _sums(jobs: list[SparkJob]) -> dict[str, Any]:
    return {
        "jobs": len(jobs),
        "wall_s": sum(j.wall_ms for j in jobs) / 1000,
        "executor_run_s": sum(j.run_ms for j in jobs) / 1000,
        "executor_cpu_s": sum(j.cpu_ms for j in jobs) / 1000,
        "tasks": sum(j.tasks for j in jobs),
    }


def read(event_log_dir: Path) -> Profile:
    """The jobs of the (single) application logged in `event_log_dir`."""
    files = sorted(p for p in event_log_dir.iterdir() if p.is_file() and not p.name.endswith(".inprogress"))
    if not files:
        raise FileNotFoundError(f"no finished Spark event log in {event_log_dir}")
    jobs: dict[int, SparkJob] = {}
    stage_job: dict[int, int] = {}
    with files[-1].open() as log:
        for line in log:
            event = json.loads(line)
            kind = event.get("Event")
            if kind == "SparkListenerJobStart":
                props = event.get("Properties") or {}
                job = SparkJob(job_id=event["Job ID"], label=_label(props, event.get("Stage Infos") or []), batch=props.get(BATCH_ID),
                               submitted_ms=event["Submission Time"], stage_ids=list(event.get("Stage IDs", [])))  # fmt: skip
                jobs[job.job_id] = job
                stage_job.update({stage: job.job_id for stage in job.stage_ids})
            elif kind == "SparkListenerJobEnd" and event["Job ID"] in jobs:
                jobs[event["Job ID"]].completed_ms = event["Completion Time"]
            elif kind == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                owner = jobs.get(stage_job.get(info["Stage ID"], -1))
                if owner is None:
                    continue
                metrics = {a.get("Name"): a.get("Value") for a in info.get("Accumulables", [])}
                owner.run_ms += float(metrics.get("internal.metrics.executorRunTime") or 0)
                owner.cpu_ms += float(metrics.get("internal.metrics.executorCpuTime") or 0) / 1e6
                owner.tasks += int(info.get("Number of Tasks", 0))
    return Profile(jobs=sorted(jobs.values(), key=lambda j: j.job_id))


def _label(props: dict[str, str], stages: list[dict[str, Any]]) -> str:
    """What Hudi says the job does (its job description), else where it was called from.

    Structured Streaming describes every job of a batch as `<name> id = .. runId = .. batch = N`,
    which says nothing: such jobs are labelled by their call site. A job with neither (one started
    by a thread that never set them) is labelled `?` and its last stage's name, which names the RDD
    operation that ends the job.
    """
    description = props.get("spark.job.description") or ""
    if not description or "runId = " in description:
        description = props.get("callSite.short") or ""
    if not description:
        last = max(stages, key=lambda stage: stage.get("Stage ID", -1), default={})
        description = f"? {last.get('Stage Name', '')}".rstrip()
    return " ".join(description.split())[:90]


def text(profile: Profile, title: str, top: int = 15) -> str:
    """The largest job labels and the per-batch split between Spark jobs and the driver."""
    lines = [f"-- {title}: where the time goes ({len(profile.jobs)} Spark jobs)",
             f"{'label':<92} {'jobs':>5} {'wall s':>7} {'exec run s':>10} {'exec CPU s':>10} {'tasks':>6}"]  # fmt: skip
    for row in profile.by_label()[:top]:
        lines.append(f"{row['label']:<92} {row['jobs']:>5} {row['wall_s']:>7.1f} {row['executor_run_s']:>10.1f} "
                     f"{row['executor_cpu_s']:>10.1f} {row['tasks']:>6}")  # fmt: skip
    for row in profile.by_batch():
        lines.append(f"batch {row['batch']}: {row['jobs']} jobs, span {row['span_s']:.1f} s, in jobs "
                     f"{row['jobs_wall_s']:.1f} s, executor CPU {row['executor_cpu_s']:.1f} s")  # fmt: skip
    return "\n".join(lines)


def as_json(profile: Profile) -> dict[str, Any]:
    return {"by_label": profile.by_label(), "by_batch": profile.by_batch()}


# -- inside the profiled child: label Spark jobs by their Python caller, time the pipeline's steps

_ACTIONS = {
    "DataFrame": ("count", "collect", "first", "take", "head", "toPandas", "isEmpty", "toLocalIterator"),
    "DataFrameWriter": ("save", "parquet", "saveAsTable"),
}
_OWN_CODE = ("/hudi_cdc/", "/devkit/bench/jobs.py")


def _caller() -> str:
    """`file:line function` of the nearest frame in hudi_cdc/ (or the bench's jobs), else `?`."""
    import inspect

    frame = inspect.currentframe()
    while frame is not None:
        path = frame.f_code.co_filename
        if any(part in path for part in _OWN_CODE):
            short = path[path.rfind("/hudi_cdc/") + 1 :] if "/hudi_cdc/" in path else Path(path).name
            return f"{short}:{frame.f_lineno} {frame.f_code.co_name}"
        frame = frame.f_back
    return "?"


def label_actions(spark: Any) -> None:
    """Make every DataFrame action describe its jobs as `<action> at <hudi_cdc caller>` (Hudi's own
    jobs keep the description Hudi gives them). PySpark's call site names py4j for code that runs in
    foreachBatch, which says nothing."""
    from pyspark.sql import DataFrame, DataFrameWriter

    context = spark.sparkContext
    for owner in (DataFrame, DataFrameWriter):
        for name in _ACTIONS[owner.__name__]:
            original = getattr(owner, name)

            def labelled(self: Any, *args: Any, __original: Any = original, __name: str = name, **kwargs: Any) -> Any:
                previous = context.getLocalProperty("spark.job.description")
                context.setJobDescription(f"{__name} at {_caller()}")
                try:
                    return __original(self, *args, **kwargs)
                finally:
                    context.setJobDescription(previous)

            setattr(owner, name, labelled)


class StepTimer:
    """cProfile around each of hudi_cdc's batches (they run in py4j callback threads, which a profiler
    enabled in the main thread does not see); `steps()` is the cumulative time of hudi_cdc's functions."""

    def __init__(self) -> None:
        import cProfile

        self.profiler = cProfile.Profile()
        self.batches = 0

    def install(self) -> None:
        from hudi_cdc.job import stream
        run_batch = getattr(stream, "run_batch")  # noqa: B009  (not a public name of stream)

        def profiled(*args: Any, **kwargs: Any) -> Any:
            self.batches += 1
            self.profiler.enable()
            try:
                return run_batch(*args, **kwargs)
            finally:
                self.profiler.disable()

        setattr(stream, "run_batch", profiled)  # noqa: B010

    def steps(self, top: int = 30) -> list[dict[str, Any]]:
        """hudi_cdc's functions, and the PySpark DataFrame calls they made, by cumulative seconds
        (time spent waiting for the JVM included: Spark jobs, and the driver's query planning)."""
        import pstats

        stats = pstats.Stats(self.profiler)
        rows = []
        for (path, line, function), (_, calls, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
            for marker in ("/hudi_cdc/", "/pyspark/sql/"):
                if marker in path and not (marker == "/pyspark/sql/" and function.startswith(("_", "wrap"))):
                    short = path[path.rfind(marker) + 1 :]
                    rows.append({"function": f"{short}:{line} {function}", "calls": calls, "cumulative_s": round(cumulative, 2)})
        rows.sort(key=lambda r: -r["cumulative_s"])
        return rows[:top]


def steps_text(steps: list[dict[str, Any]], batches: int) -> str:
    lines = [f"-- hudi_cdc's functions and the PySpark calls of the batch, by cumulative wall seconds over {batches} "
             "batch(es) (waits for the JVM included)"]  # fmt: skip
    lines += [f"{s['cumulative_s']:>8.1f} s {s['calls']:>6} calls  {s['function']}" for s in steps]
    return "\n".join(lines)


def threads_text(threads: dict[str, float], top: int = 12, *, span: str = "start-up included") -> str:
    """The JVM's CPU by thread kind: executor tasks vs the driver's planning vs JIT and GC; `span`
    says what time the figures cover."""
    total = sum(threads.values())
    lines = [f"-- JVM CPU by thread kind: {total:.1f} s in all ({span})"]
    lines += [f"{seconds:>8.1f} s  {kind}" for kind, seconds in list(threads.items())[:top]]
    return "\n".join(lines)
