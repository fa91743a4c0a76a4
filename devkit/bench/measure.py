"""CPU seconds and peak resident memory of a process tree, and percentiles of batch latencies.

CPU of a tree = user + system time of every process in it, including processes that already
exited: a process that was waited for (reaped) adds its times to its parent's
`children_user/children_system`, and the root's own rusage from `wait4` holds everything it
and its reaped descendants used. A process that exits without being reaped by a member of
the tree (an orphan) is only counted up to the last sample; the benchmark's children reap
Spark's JVM explicitly (`child.stop_spark`) so this does not happen to them.

Peak RSS of a tree = the largest sum of the resident sets of its live processes at one
sample (shared pages are counted once per process, so this is an upper bound).
"""

from __future__ import annotations

import math
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil


def tree_cpu_seconds(root: psutil.Process) -> float:
    """CPU seconds (user + system) used so far by `root`, its live descendants and everything they reaped."""
    total = 0.0
    for process in [root, *_descendants(root)]:
        try:
            t = process.cpu_times()
        except psutil.Error:  # exited between listing and reading: its reaper has it
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def tree_rss_bytes(root: psutil.Process) -> int:
    """Resident set size of `root` and its live descendants, summed."""
    total = 0
    for process in [root, *_descendants(root)]:
        try:
            total += process.memory_info().rss
        except psutil.Error:
            continue
    return total


def _descendants(root: psutil.Process) -> list[psutil.Process]:
    try:
        return root.children(recursive=True)
    except psutil.Error:
        return []


@dataclass(frozen=True)
class TreeUsage:
    """What one child process tree used, from start to exit."""

    exit_code: int
    wall_s: float
    cpu_s: float
    """User + system seconds of the tree (the larger of the final rusage and the last sample)."""
    peak_rss_mb: float
    samples: int


def run_measured(
    command: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    log_path: Path,
    interval: float = 0.25,
    timeout: float | None = None,
) -> TreeUsage:
    """Run `command` to its exit (stdout and stderr to `log_path`), sampling its tree's CPU and RSS."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    with log_path.open("wb") as out:
        popen = subprocess.Popen(list(command), cwd=cwd, env=dict(env), stdout=out, stderr=subprocess.STDOUT)
    root = psutil.Process(popen.pid)
    sampled_cpu, peak_rss, samples = 0.0, 0, 0
    while True:
        pid, status, rusage = os.wait4(popen.pid, os.WNOHANG)
        if pid:
            break
        sampled_cpu = max(sampled_cpu, tree_cpu_seconds(root))
        peak_rss = max(peak_rss, tree_rss_bytes(root))
        samples += 1
        if timeout is not None and time.monotonic() - began > timeout:
            popen.kill()
        time.sleep(interval)
    popen.returncode = os.waitstatus_to_exitcode(status)
    return TreeUsage(
        exit_code=popen.returncode,
        wall_s=time.monotonic() - began,
        cpu_s=max(rusage.ru_utime + rusage.ru_stime, sampled_cpu),
        peak_rss_mb=peak_rss / 2**20,
        samples=samples,
    )


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear between closest ranks (numpy's default); NaN when empty."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is not within 0..100")
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
