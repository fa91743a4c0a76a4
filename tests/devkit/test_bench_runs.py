"""`make bench`, `make bench-freshness`, `make bench-database` and `make bench-timeline` end to end
at their smoke sizes: the jobs run and consume every record, and `make bench` passes its honesty check. No timing is asserted; what
fails here is a bench that no longer runs (as when the job moved to its own copy of the session
and the bench could not find its query).

Deep: about 160 s, 190 s, (the database bench) a few minutes and (the timeline bench) about 90 s a case on 2 cores.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from devkit import CHECKOUT, RUN_ENV

pytestmark = [pytest.mark.integration, pytest.mark.deep]


def _smoke_run(module: str, out: Path, result: str, *args: str) -> Path:
    """`python -m <module> --smoke --out <out> <args>` from the checkout; the one result file matching `result`."""
    ran = subprocess.run(
        [sys.executable, "-m", module, "--smoke", "--out", str(out), *args], cwd=CHECKOUT, capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-4000:]
    (path,) = out.glob(result)
    return path


def test_the_bench_smoke_run_measures_every_job_and_passes_its_check(tmp_path: Path) -> None:
    (case,) = json.loads(_smoke_run("devkit.bench", tmp_path, "result-*.json").read_text())["cases"]
    assert case["check"]["passed"], case["check"]
    assert {name: job["events"] for name, job in case["jobs"].items()} == dict.fromkeys(("hudi_cdc", "plain", "floor"), case["events"])
    assert all(job["batches"] >= 1 and job["cpu_s"] > 0 for job in case["jobs"].values()), case["jobs"]


def test_the_freshness_bench_smoke_run_sees_every_record_of_both_jobs(tmp_path: Path) -> None:
    result = _smoke_run("devkit.bench.freshness", tmp_path, "freshness-*.json")
    jobs = {job["job"]: job for job in json.loads(result.read_text())["jobs"]}
    assert set(jobs) == {"hudi_cdc", "plain"}, jobs
    for name, job in jobs.items():
        produced, visible = job["freshness"]["produced"], job["freshness"]["visible"]
        assert produced > 0 and visible == produced and job["drained"], f"{name}: {job['freshness']}"
        assert job["sustained_batches"] >= 1 and len(job["probes_s"]) >= 1, job


def test_the_database_bench_smoke_run_sees_every_record_restarts_and_starts_on_many_topics(tmp_path: Path) -> None:
    document = json.loads(_smoke_run("devkit.bench.database", tmp_path, "database-*.json").read_text())
    jobs = {job["job"]: job for job in document["jobs"]}
    assert set(jobs) == {"hudi_cdc", "plain"}, jobs
    for name, job in jobs.items():
        produced, visible = job["freshness"]["produced"], job["freshness"]["visible"]
        assert produced > 0 and visible == produced and job["drained"], f"{name}: {job['freshness']}"
        assert job["touched"] >= job["tables_with_records"] >= 1 and job["cpu_s"] > 0, job
    restart = jobs["hudi_cdc"]["restart"]
    assert 0 < restart["query_started_s"] < restart["first_record_visible_s"], restart
    start = document["start"]
    assert start["topics"] == 20 and start["query_started_s"] > 0, start
    assert math.isfinite(start["first_record_visible_s"]), start


def test_the_timeline_bench_smoke_run_grows_the_timeline_and_commits_every_batch_under_both_policies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the default window every commit made stays active; with `archive_after_hours: null`
    Hudi's archiver keeps 40 to 50 of the 60 (so the setting reaches Hudi)."""
    # its own run folder: the bench keeps its table in `<run>/bench-timeline`, which in the
    # checkout's `build/run` holds a developer's grown table (hours of commits)
    monkeypatch.setenv(RUN_ENV, str(tmp_path / "run"))
    runs = json.loads(_smoke_run("devkit.bench.timeline", tmp_path, "timeline-*.json").read_text())["runs"]
    assert [run["archive_after_hours"] for run in runs] == [100, None], runs
    for run in runs:
        first, second = run["lengths"]
        assert (first["made"], second["made"]) == (10, 60), (first, second)
        # the second growth starts after the first length's fresh JVM committed its warm-up batch
        # and its two measured batches
        assert second["grown"] == 60 - 10 - 1 - 2, second
        assert first["commits"] == 10, first
        if run["archive_after_hours"] is None:
            assert 40 <= second["commits"] <= 50, second
        else:
            assert second["commits"] == 60, second
        for length in (first, second):
            assert length["instants"] >= length["commits"] and length["timeline_files"] >= 3 * length["commits"], length
            assert len(length["batch_cpu_s"]) == 2 and min(length["batch_cpu_s"]) > 0, length
            # measured in a JVM of its own, whose threads worked in the measured batches
            assert sum(length["jvm_thread_cpu_s"].values()) > 0, length
    # the table left is the last policy's (no window): growing it on as a windowed table is refused
    resumed = subprocess.run([sys.executable, "-m", "devkit.bench.timeline", "--resume", "--instants", "70",
                              "--archive-after-hours", "100", "--out", str(tmp_path)],
                             cwd=CHECKOUT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert resumed.returncode != 0 and "holds a table made with" in resumed.stderr, resumed.stderr[-2000:]


def test_the_timeline_bench_measures_a_table_on_hdfs_and_the_name_nodes_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--storage hdfs`: the table lives on the bench's own HDFS, and the HDFS process's CPU in the
    measured batches is reported apart from the batch's (on a cluster the name node is elsewhere)."""
    monkeypatch.setenv(RUN_ENV, str(tmp_path / "run"))
    result = _smoke_run("devkit.bench.timeline", tmp_path, "timeline-*.json", "--storage", "hdfs", "--archive-after-hours", "100")
    (run,) = json.loads(result.read_text())["runs"]
    assert run["tables"].startswith("hdfs://127.0.0.1:"), run["tables"]
    assert [length["made"] for length in run["lengths"]] == [10, 60], run
    for length in run["lengths"]:
        assert length["commits"] == length["made"] and len(length["batch_cpu_s"]) == 2, length
        # the name node answered the measured batches' listings and writes
        assert length["storage_cpu_s"] > 0, length
    # nothing of the table was written to the local run folder, and no note that a later `--resume` could grow it
    assert not list((tmp_path / "run").rglob("hoodie.properties")), list((tmp_path / "run").rglob("hoodie.properties"))
    assert not list((tmp_path / "run").rglob("made-by.json"))
