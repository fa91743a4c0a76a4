"""`make bench`, `make bench-freshness` and `make bench-database` end to end at their smoke sizes: the jobs run and
consume every record, and `make bench` passes its honesty check. No timing is asserted; what
fails here is a bench that no longer runs (as when the job moved to its own copy of the session
and the bench could not find its query).

Deep: about 160 s, 190 s and (the database bench) a few minutes on 2 cores.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from devkit import CHECKOUT

pytestmark = [pytest.mark.integration, pytest.mark.deep]


def _smoke_run(module: str, out: Path, result: str) -> Path:
    """`python -m <module> --smoke --out <out>` from the checkout; the one result file matching `result`."""
    ran = subprocess.run(
        [sys.executable, "-m", module, "--smoke", "--out", str(out)], cwd=CHECKOUT, capture_output=True, text=True, timeout=900
    )
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
