"""The benchmark's pure parts: process-tree CPU accounting, percentiles, the report and JSON shape.

No timing is asserted: the CPU test only checks that a grandchild's work is counted at all.
"""

from __future__ import annotations

import json
import math
import os
import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest

from devkit.bench.measure import percentile, run_measured
from devkit.bench.report import (
    CaseResult,
    JobResult,
    check_line,
    goals,
    markdown_goals,
    markdown_jobs,
    markdown_ratios,
    text_report,
)
from devkit.bench.run import BenchError, Run, Settings, root_cause
from devkit.bench.workloads import (
    WORKLOADS,
    Sizes,
    cases,
    delete_keys,
    final_versions,
    human,
    mixed_changes,
    records,
    snapshot_changes,
    source,
    update_changes,
)

BURN = textwrap.dedent(
    """
    import subprocess, sys, time
    def burn(seconds):
        end = time.process_time() + seconds
        while time.process_time() < end:
            pass
    if sys.argv[1] == "parent":
        child = subprocess.Popen([sys.executable, __file__, "child"])
        burn(0.3)
        child.wait()
    else:
        burn(0.6)
    """
)


def test_tree_cpu_counts_a_grandchild_that_exited(tmp_path: Path) -> None:
    script = tmp_path / "burn.py"
    script.write_text(BURN)
    usage = run_measured([sys.executable, str(script), "parent"], cwd=tmp_path, env=os.environ,
                         log_path=tmp_path / "log", interval=0.05)  # fmt: skip
    assert usage.exit_code == 0
    # the child's 0.6 s reached the parent's rusage when it was reaped; the parent burned 0.3 s itself
    assert usage.cpu_s >= 0.85
    assert usage.peak_rss_mb > 0


def test_tree_cpu_reports_the_exit_code(tmp_path: Path) -> None:
    usage = run_measured([sys.executable, "-c", "raise SystemExit(3)"], cwd=tmp_path, env=os.environ,
                         log_path=tmp_path / "log")  # fmt: skip
    assert usage.exit_code == 3


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        pytest.param([5.0], 50, 5.0, id="one-value"),
        pytest.param([1.0, 2.0, 3.0, 4.0], 50, 2.5, id="median-between-ranks"),
        pytest.param([4.0, 1.0, 3.0, 2.0], 50, 2.5, id="unsorted-input"),
        pytest.param(list(map(float, range(1, 21))), 95, 19.05, id="p95-of-20"),
        pytest.param([1.0, 9.0], 100, 9.0, id="max"),
        pytest.param([1.0, 9.0], 0, 1.0, id="min"),
    ],
)
def test_percentile(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_percentile_of_nothing_is_nan() -> None:
    assert math.isnan(percentile([], 50))


def _job(name: str, cpu: float, *, batches: int = 2, rss: float = 1000.0) -> JobResult:
    return JobResult(job=name, events=1000, batches=batches, wall_s=cpu / 2, cpu_s=cpu, startup_cpu_s=9.0,
                     process_wall_s=cpu, process_cpu_s=cpu + 9, peak_rss_mb=rss, spark_jobs=10 * batches,
                     batch_s=[1.0, 3.0], batch_cpu_s=[20.0, 5.0, 7.0])  # fmt: skip


def _case(name: str, workload: str, rows: int, cdc: float, plain: float, floor: float) -> CaseResult:
    jobs = {"hudi_cdc": _job("hudi_cdc", cdc, rss=1500), "plain": _job("plain", plain), "floor": _job("floor", floor)}
    check = {"equal": True, "hudi_cdc_rows": rows, "plain_rows": rows, "expected_rows": rows,
             "only_in_hudi_cdc": 0, "only_in_plain": 0, "touched_keys": 800, "source_rows_missing": 0,
             "rows_not_in_source": 0, "untouched_rows_changed": 0, "matches_source": True, "events": 1000,
             "consumed": {"hudi_cdc": 1000, "plain": 1000, "floor": 1000}, "passed": True}  # fmt: skip
    return CaseResult(name=name, workload=workload, title=f"{name} title", table_type="COPY_ON_WRITE",
                      partitioned=False, table_rows=rows, events=1000, jobs=jobs, check=check)  # fmt: skip


def test_ratios_and_derived_numbers() -> None:
    case = _case("uniform-cow", "uniform", 20_000, cdc=60, plain=30, floor=15)
    assert case.ratios()["cpu_vs_plain"] == pytest.approx(2.0)
    assert case.ratios()["cpu_vs_floor"] == pytest.approx(4.0)
    assert case.ratios()["rss_vs_plain"] == pytest.approx(1.5)
    job = case.jobs["hudi_cdc"]
    assert job.cpu_ms_per_event == pytest.approx(60.0)
    assert job.jobs_per_batch == pytest.approx(10.0)
    assert job.first_batch_cpu_s == 20.0
    assert job.later_batch_cpu_s == pytest.approx(6.0)


def test_goals_cover_every_case_snapshots_and_scale_pairs() -> None:
    results = [
        _case("snapshot-cow", "snapshot", 20_000, cdc=40, plain=80, floor=30),
        _case("scale-20k", "scale", 20_000, cdc=50, plain=40, floor=20),
        _case("scale-100k", "scale", 100_000, cdc=100, plain=60, floor=20),
    ]
    found = {(g.goal, g.case): g for g in goals(results)}
    assert found[("CPU ≤ 0.67x plain upsert", "snapshot-cow")].met
    assert not found[("CPU ≤ 0.67x plain upsert", "scale-20k")].met
    assert found[("snapshot CPU ≤ 2x Parquet floor", "snapshot-cow")].value == pytest.approx(40 / 30)
    scale = found[("CPU(larger table) ≤ 1.5x CPU(smaller), same changes", "scale-100k / scale-20k")]
    assert scale.value == pytest.approx(2.0)
    assert not scale.met
    assert "| scale-100k / scale-20k | 2.00x | 1.5x | no |" in markdown_goals(goals(results))


def test_report_text_and_json_shape() -> None:
    case = _case("hot-cow", "hot", 20_000, cdc=60, plain=30, floor=15)
    text = text_report([case])
    assert "== hot-cow: hot-cow title" in text
    assert "hudi_cdc/plain: CPU 2.00x" in text
    assert "PASSED: tables equal (hudi_cdc 20000 rows" in text
    assert "records consumed all 1000" in text
    assert "| hot-cow title | 60.0 | 30.0 | 15.0 | 2.00x |" in markdown_ratios([case])
    assert "| hot-cow | hudi_cdc | 60.0 | 30.0 | 33 | 60.00 | 2 | 10.0 | 1,500 | 2.0 | 2.9 |" in markdown_jobs([case])
    document = json.loads(json.dumps(case.as_json()))
    assert set(document) >= {"name", "workload", "title", "table_rows", "events", "jobs", "ratios", "check"}
    assert set(document["jobs"]) == {"hudi_cdc", "plain", "floor"}
    job = document["jobs"]["hudi_cdc"]
    for key in ("wall_s", "cpu_s", "events_per_s", "cpu_ms_per_event", "jobs_per_batch", "peak_rss_mb",
                "batch_p50_s", "batch_p95_s", "batch_s", "startup_cpu_s"):  # fmt: skip
        assert key in job
    assert document["ratios"]["cpu_vs_plain"] == 2.0


def test_cases_of_every_workload() -> None:
    sizes = Sizes(rows=100, changes=40, small_changes=10, hot_keys=5, scale_rows=(100, 1000), tables=4,
                  table_concurrency=3)  # fmt: skip
    found = {c.name: c for c in cases(list(WORKLOADS), sizes)}
    assert list(found) == ["snapshot-cow", "snapshot-mor", "uniform-cow", "uniform-mor", "hot-cow", "small-cow",
                           "deletes-cow", "partitioned-cow", "scale-100", "scale-1k", "tables-separate",
                           "tables-sequential", "tables-concurrent"]  # fmt: skip
    assert found["snapshot-cow"].start is None
    assert found["uniform-mor"].start is not None and found["uniform-mor"].start.type == "MERGE_ON_READ"
    assert found["deletes-cow"].expected_rows == 96
    assert found["deletes-cow"].events == 44  # 4 deletes, each with its tombstone
    for case in found.values():
        streams = case.streams()
        assert list(streams) == case.topics and len(streams) == case.tables
        assert sum(1 for stream in streams.values() for _ in stream()) == case.events, case.name


def test_scale_cases_load_tables_of_the_chosen_type() -> None:
    sizes = Sizes(rows=100, changes=40, small_changes=10, hot_keys=5, scale_rows=(100, 1000), scale_type="MERGE_ON_READ")
    found = cases(["scale"], sizes)
    assert [c.name for c in found] == ["scale-mor-100", "scale-mor-1k"]
    assert all(c.type == "MERGE_ON_READ" and c.start is not None and c.start.type == "MERGE_ON_READ" for c in found)
    assert found[1].title == "40 updates into 1k rows, MOR"


def test_newest_key_scale_cases_update_only_the_newest_keys_of_each_table() -> None:
    sizes = Sizes(rows=100, changes=40, small_changes=10, hot_keys=5, scale_rows=(100, 1000), scale_keys="newest")
    small, large = cases(["scale"], sizes)
    assert (small.name, large.name) == ("scale-newest-100", "scale-newest-1k")
    assert large.title == "40 updates of the newest 5 into 1k rows, COW"
    assert {key for _, key, _ in small.changes()} == set(range(95, 100))
    assert {key for _, key, _ in large.changes()} == set(range(995, 1000))
    assert [op for op, _, _ in large.changes()] == ["u"] * 40


def test_the_tables_cases_share_their_topics_and_split_the_sizes() -> None:
    sizes = Sizes(rows=100, changes=40, small_changes=10, hot_keys=5, scale_rows=(), tables=4, table_concurrency=3)
    separate, sequential, concurrent = cases(["tables"], sizes)
    assert separate.topics == sequential.topics == concurrent.topics and len(set(sequential.topics)) == 4
    assert (sequential.table_concurrency, concurrent.table_concurrency) == (1, 3)
    assert separate.separate and not sequential.separate and not concurrent.separate
    assert sequential.expected_rows == 25 and sequential.events == 4 * (25 + 10)
    assert sequential.start is None


def test_the_tables_goal_compares_wall_time_with_one_at_a_time() -> None:
    one, four = (replace(_case(name, "tables", 100, cdc=cpu, plain=30, floor=15), tables=4, table_concurrency=n)
                 for name, cpu, n in (("tables-sequential", 80, 1), ("tables-concurrent", 60, 4)))  # fmt: skip
    (goal,) = [g for g in goals([one, four]) if "at a time" in g.goal]
    assert goal.case == "tables-concurrent / tables-sequential"
    assert goal.value == pytest.approx(60 / 80) and not goal.met


def test_separate_runs_add_up_and_the_tables_goal_compares_one_job_with_them() -> None:
    runs = [_job("hudi_cdc", 30.0, rss=900.0), _job("hudi_cdc", 20.0, rss=1200.0)]
    together = JobResult.sequence(runs)
    assert (together.cpu_s, together.events, together.spark_jobs, together.batches) == (50.0, 2000, 40, 4)
    assert together.process_cpu_s == sum(r.process_cpu_s for r in runs) and together.peak_rss_mb == 1200.0
    assert together.batch_cpu_s == runs[0].batch_cpu_s + runs[1].batch_cpu_s
    separate = replace(_case("tables-separate", "tables", 100, cdc=0, plain=30, floor=15), tables=2, separate=True)
    separate.jobs["hudi_cdc"] = together
    one_job = replace(_case("tables-sequential", "tables", 100, cdc=40, plain=30, floor=15), tables=2)
    (goal,) = [g for g in goals([separate, one_job]) if "in one job" in g.goal]
    assert goal.case == "tables-sequential / separate"
    assert goal.value == pytest.approx(one_job.jobs["hudi_cdc"].process_cpu_s / together.process_cpu_s)
    assert not [g for g in goals([separate, one_job]) if "at a time" in g.goal]  # the separate runs are no in-job case


def test_deletes_never_touch_a_deleted_key_again() -> None:
    stream = list(records(source("t"), mixed_changes(200, 50)))
    seen_delete: set[bytes] = set()
    for i, (key, value) in enumerate(stream):
        assert key is not None
        if value is None:  # a tombstone follows its delete
            assert stream[i - 1][0] == key and key in seen_delete
            continue
        op = json.loads(value)["payload"]["op"]
        assert key not in seen_delete
        if op == "d":
            seen_delete.add(key)
    assert {json.loads(key)["payload"]["id"] for key in seen_delete} == set(delete_keys(200, 50))


def test_reference_fold_keeps_the_last_version_and_forgets_deleted_keys() -> None:
    changes = [("r", 1, 0), ("r", 2, 0), ("u", 1, 3), ("u", 2, 4), ("u", 1, 5), ("d", 2, 6)]
    assert final_versions(changes) == {1: 5, 2: None}
    assert final_versions(snapshot_changes(3)) == {0: 0, 1: 0, 2: 0}
    deletes = final_versions(mixed_changes(200, 50))
    assert {k for k, v in deletes.items() if v is None} == set(delete_keys(200, 50))


def test_records_carry_the_version_and_growing_positions() -> None:
    stream = list(records(source("t"), update_changes(30, 10)))
    payloads = [json.loads(value)["payload"] for _, value in stream if value is not None]
    versions = [int(p["after"]["email"].split(".v")[1].split("@")[0]) for p in payloads]
    assert versions == list(range(1, 31))
    positions = [p["source"]["pos"] for p in payloads]
    assert positions == sorted(positions) and len(set(positions)) == 30


def test_check_line_names_what_failed() -> None:
    check = {"equal": True, "hudi_cdc_rows": 10, "plain_rows": 10, "expected_rows": 10, "only_in_hudi_cdc": 0,
             "only_in_plain": 0, "touched_keys": 4, "source_rows_missing": 1, "rows_not_in_source": 1,
             "untouched_rows_changed": 0, "matches_source": False, "events": 5,
             "consumed": {"hudi_cdc": 5, "plain": 4, "floor": 5}, "passed": False}  # fmt: skip
    line = check_line(check)
    assert line.startswith("FAILED: tables equal")
    assert "4 touched keys NOT matched (missing 1, not in source 1" in line
    assert "records consumed SHORT: plain 4" in line


def test_unknown_workload_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="valid: snapshot, uniform"):
        cases(["nope"], Sizes(rows=1, changes=1, small_changes=1, hot_keys=1, scale_rows=()))


@pytest.mark.parametrize(("n", "text"), [(20_000, "20k"), (1_000_000, "1M"), (2_500, "2.5k"), (999, "999")])
def test_human_sizes(n: int, text: str) -> None:
    assert human(n) == text


def test_a_restart_is_reported_in_text_and_json() -> None:
    case = _case("scale-1m", "scale", 1_000_000, cdc=60, plain=30, floor=15)
    case.jobs["plain"].restarts.append("plain-run exited 1: HoodieException: metadata table")
    text = text_report([case])
    assert "plain: restarted once: plain-run exited 1: HoodieException: metadata table" in text
    assert json.loads(json.dumps(case.as_json()))["jobs"]["plain"]["restarts"] == ["plain-run exited 1: HoodieException: metadata table"]
    assert "restarted" not in text_report([_case("scale-1m", "scale", 1_000_000, cdc=60, plain=30, floor=15)])


def test_root_cause_is_the_innermost_java_cause() -> None:
    log = "ERROR x\nCaused by: org.a.HoodieException: outer\n\tat a.b\nCaused by: java.lang.AIOOBE: Index 9\n\tat c.d\n"
    assert root_cause(log) == "java.lang.AIOOBE: Index 9"
    assert root_cause("just this\n") == "just this"


def test_a_failed_plain_run_is_kept_aside_and_started_once_more(tmp_path: Path) -> None:
    attempts: list[str] = []

    class Failing(Run):
        def child(self, spec: dict[str, Any], directory: Path, *, event_log: bool = False) -> Any:
            directory.mkdir(parents=True, exist_ok=True)
            attempts.append(spec["attempt"])
            (directory / "child.log").write_text(f"attempt {len(attempts)}\nCaused by: java.lang.AIOOBE: Index 9\n")
            if len(attempts) == 1:
                raise BenchError(f"{directory.name} exited 1; log {directory / 'child.log'}:\ntail")
            return {"job": "plain"}, "usage"

    run = Failing(kafka=None, settings=Settings(batch=1, load_batch=1, root=tmp_path))  # type: ignore[arg-type]
    child, usage, restarts = run.restarting({"attempt": "plain"}, tmp_path / "plain-run", event_log=False)
    assert (child, cast(object, usage), attempts) == ({"job": "plain"}, "usage", ["plain", "plain"])
    kept = tmp_path / "plain-run-failed" / "child.log"
    assert kept.read_text().startswith("attempt 1")  # the failed run's log, moved aside before the restart
    assert restarts == [f"plain-run exited 1: java.lang.AIOOBE: Index 9 (log {kept})"]
    assert run.once({"attempt": "again"}, tmp_path / "other", event_log=False)[2] == []


def test_hoodie_options_reach_both_hudi_jobs_write_options() -> None:
    from devkit.bench.__main__ import _settings
    from devkit.bench.jobs import JobSpec, plain_options
    from hudi_cdc.hudi.table_options import write_options

    options = _settings(["hoodie.parquet.max.file.size=8388608", "hoodie.parquet.small.file.limit=4194304"], "--hoodie-option")
    spec = JobSpec(job="plain", bootstrap="localhost:9092", topics=["t"], batch=10, table_path="/tmp/t",
                   type="MERGE_ON_READ", partitioned=False, work_dir="/tmp/w", hoodie_options=options)  # fmt: skip
    ((_, table),) = spec.tables()
    for written in (write_options(table), plain_options(table)):
        assert written["hoodie.parquet.max.file.size"] == "8388608"
        assert written["hoodie.parquet.small.file.limit"] == "4194304"
    with pytest.raises(SystemExit, match="--hoodie-option takes KEY=VALUE"):
        _settings(["hoodie.parquet.max.file.size"], "--hoodie-option")


@pytest.mark.parametrize(("flag", "prepped"), [([], True), (["--prepped", "off"], False)])
def test_the_prepped_flag_reaches_the_tables_of_hudi_cdc(flag: list[str], prepped: bool) -> None:
    from devkit.bench.__main__ import parse_args
    from devkit.bench.jobs import JobSpec
    from hudi_cdc.hudi import prepped as prepped_module

    chosen = parse_args(flag).prepped == "on"
    spec = JobSpec(job="hudi_cdc", bootstrap="localhost:9092", topics=["t"], batch=10, table_path="/tmp/t",
                   type="COPY_ON_WRITE", partitioned=False, work_dir="/tmp/w", prepped_writes=chosen)  # fmt: skip
    ((_, table),) = spec.tables()
    assert prepped_module.applies(table) is prepped


@pytest.mark.parametrize(("flag", "expected"), [([], None), (["--min-partitions", "2"], 2)])
def test_the_min_partitions_flag_reaches_every_jobs_kafka_source(flag: list[str], expected: int | None) -> None:
    from devkit.bench.__main__ import parse_args
    from devkit.bench.jobs import JobSpec, hudi_cdc_config

    chosen = parse_args(flag).min_partitions
    for job in ("hudi_cdc", "plain", "floor"):  # the plain and floor jobs read through hudi_cdc's source too
        spec = JobSpec(job=job, bootstrap="localhost:9092", topics=["t"], batch=10, table_path="/tmp/t",
                       type="COPY_ON_WRITE", partitioned=False, work_dir="/tmp/w", min_partitions=chosen)  # fmt: skip
        assert hudi_cdc_config(spec).kafka.min_partitions == expected


def test_frame_shares_count_a_frame_once_per_sample_wherever_it_is_on_the_stack() -> None:
    from devkit.bench.decode_cost import frame_shares

    printed = """jdk.ExecutionSample {
  startTime = 10:00:00.000
  stackTrace = [
    com.fasterxml.jackson.core.JsonGenerator._copyCurrentContents() line: 10
    org.apache.spark.sql.catalyst.expressions.JsonTuple.eval(InternalRow) line: 20
    org.apache.spark.sql.catalyst.expressions.JsonTuple.eval(InternalRow) line: 21
  ]
}
jdk.ExecutionSample {
  stackTrace = [
    org.apache.spark.sql.catalyst.expressions.CreateArray.eval(InternalRow) line: 5
  ]
}
"""
    samples, inside = frame_shares(printed)
    assert samples == 2
    assert inside["JsonTuple.eval"] == 1 and inside["CreateArray.eval"] == 1
    assert inside["JsonGenerator._copyCurrentContents"] == 1 and "JsonToStructs.nullSafeEval" not in inside
