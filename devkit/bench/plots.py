"""PNG plots of a benchmark run: throughput bars, batch latency CDFs, CPU cost vs table size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devkit.bench.report import JOBS, CaseResult

COLORS = {"hudi_cdc": "tab:blue", "plain": "tab:orange", "floor": "tab:gray"}
LABELS = {"hudi_cdc": "hudi_cdc", "plain": "plain Hudi upsert", "floor": "Parquet append floor"}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_all(cases: list[CaseResult], prefix: Path, subtitle: str) -> list[Path]:
    """Write `<prefix>-throughput.png`, `-latency.png` and (with scale cases) `-scale.png`; their paths."""
    written = [_throughput(cases, prefix.with_name(prefix.name + "-throughput.png"), subtitle),
               _latency(cases, prefix.with_name(prefix.name + "-latency.png"), subtitle)]  # fmt: skip
    scale = [c for c in cases if c.workload == "scale"]
    if scale:
        written.append(_scale(scale, prefix.with_name(prefix.name + "-scale.png"), subtitle))
    return written


def _throughput(cases: list[CaseResult], out: Path, subtitle: str) -> Path:
    plt = _pyplot()
    fig, (rate_ax, cpu_ax) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    width = 0.27
    for i, job in enumerate(JOBS):
        xs = [k + (i - 1) * width for k in range(len(cases))]
        rates = [c.jobs[job].events_per_s if job in c.jobs else 0 for c in cases]
        cost = [c.jobs[job].cpu_ms_per_event if job in c.jobs else 0 for c in cases]
        rate_ax.bar(xs, rates, width, color=COLORS[job], label=LABELS[job])
        cpu_ax.bar(xs, cost, width, color=COLORS[job], label=LABELS[job])
    rate_ax.set_ylabel("events / s (wall)")
    cpu_ax.set_ylabel("CPU ms / event")
    cpu_ax.set_xticks(range(len(cases)), [c.name for c in cases], rotation=20, ha="right")
    for ax in (rate_ax, cpu_ax):
        ax.grid(axis="y", alpha=0.3)
    rate_ax.legend(fontsize=8)
    fig.suptitle(f"Throughput and CPU cost per event ({subtitle})", fontsize=10)
    return _save(fig, out)


def _latency(cases: list[CaseResult], out: Path, subtitle: str) -> Path:
    plt = _pyplot()
    columns = min(4, len(cases))
    rows = -(-len(cases) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(max(6.5, 3.2 * columns), 2.8 * rows + 0.6), squeeze=False)
    for ax, case in zip(axes.flat, cases, strict=False):
        for job in JOBS:
            if job not in case.jobs or not case.jobs[job].batch_s:
                continue
            seconds = sorted(case.jobs[job].batch_s)
            fractions = [(i + 1) / len(seconds) for i in range(len(seconds))]
            # start at (first, 0) so a single batch still shows as a step
            ax.step([seconds[0], *seconds], [0.0, *fractions], where="post", color=COLORS[job], label=LABELS[job],
                    marker="o", markersize=3)  # fmt: skip
        ax.set_title(case.name, fontsize=9)
        ax.set_xlabel("batch seconds", fontsize=8)
        ax.set_ylim(0, 1.02)
        ax.set_xlim(left=0)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(cases):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"Batch latency CDF ({subtitle})", fontsize=10)
    return _save(fig, out)


def _scale(cases: list[CaseResult], out: Path, subtitle: str) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ordered = sorted(cases, key=lambda c: c.table_rows)
    for job in JOBS:
        points = [(c.table_rows, c.jobs[job].cpu_s) for c in ordered if job in c.jobs]
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", color=COLORS[job], label=LABELS[job])
    ax.set_xscale("log")
    ax.set_xlabel("table rows before the changes")
    ax.set_ylabel("CPU s (process tree, start-up excluded)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"Same {ordered[0].events:,} changes into larger tables ({subtitle})", fontsize=9)
    return _save(fig, out)


def _save(fig: Any, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    _pyplot().close(fig)
    return out
