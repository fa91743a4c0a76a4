"""`make bench`: hudi_cdc, a plain Hudi upsert job and a Parquet append floor on identical topics.

    python -m devkit.bench                       # the default cases, about 15 minutes on 2 cores
    python -m devkit.bench --smoke               # tiny sizes, one case: checks the bench works
    python -m devkit.bench --workloads uniform,scale --rows 100000 --changes 20000 --batch 5000
    python -m devkit.bench --workloads scale --scale-rows 1000000,10000000   # cost vs table size
    python -m devkit.bench --workloads tables --tables 10 --table-concurrency 4   # tables one at a time vs concurrently

Prints a table per case, writes build/bench/result-<time>.json, a text copy of the report and
PNG plots next to it. Exits 1 when a case fails the honesty check: the two Hudi tables differ
from each other or from the source's rows, or a job did not consume every record of its topic.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from devkit import build_dir
from devkit.bench.plots import plot_all
from devkit.bench.report import (
    CaseResult,
    check_line,
    goals,
    markdown_goals,
    markdown_jobs,
    markdown_ratios,
    text_report,
)
from devkit.bench.run import BenchError, Run, Settings, prepare_topics
from devkit.bench.workloads import WORKLOADS, Sizes, cases, human
from devkit.services import run_dir
from devkit.services.kafka import LocalKafka

DEFAULT_WORKLOADS = ("snapshot-cow", "small", "scale")
"""18 minutes measured on 2 shared cores (load average 2-23), the 100k-row load included (at the
default sizes scale-20k is the uniform COW case); `--workloads all` runs every case."""
SMOKE = {"workloads": "small", "rows": 2_000, "changes": 1_000, "small_changes": 500, "batch": 500, "scale_rows": "2000"}


def _int_list(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m devkit.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS),
                        help=f"comma-separated workloads ({', '.join(WORKLOADS)}), single cases (uniform-mor) or `all`")  # fmt: skip
    parser.add_argument("--rows", type=int, default=20_000, help="table size of snapshot/uniform/hot/small/deletes/partitioned")
    parser.add_argument("--changes", type=int, default=10_000, help="changes of uniform/hot/deletes/partitioned/scale")
    parser.add_argument("--small-changes", type=int, default=2_000, help="changes of the `small` workload")
    parser.add_argument("--hot-keys", type=int, default=1_000, help="keys the `hot` workload updates")
    parser.add_argument("--scale-rows", default="20000,100000", help="table sizes of `scale`, e.g. 1000000,10000000")
    parser.add_argument("--scale-type", choices=("cow", "mor"), default="cow", help="table type of `scale`")
    parser.add_argument("--scale-keys", choices=("uniform", "newest"), default="uniform",
                        help="keys `scale` updates: any, or the newest --hot-keys keys of each table")  # fmt: skip
    parser.add_argument("--tables", type=int, default=5, help="tables of the `tables` workload (rows and changes split among them)")
    parser.add_argument("--table-concurrency", type=int, default=5,
                        help="hudi_cdc's job.table_concurrency in the `tables` workload's concurrent case")  # fmt: skip
    parser.add_argument("--batch", type=int, default=5_000, help="maxOffsetsPerTrigger of every job")
    parser.add_argument("--load-batch", type=int, default=50_000,
                        help="maxOffsetsPerTrigger of the untimed loads of tables no snapshot case provides")  # fmt: skip
    parser.add_argument("--load-by", choices=("kafka", "generate"), default="kafka",
                        help="how update cases' starting tables are loaded: by each job from a topic of snapshot reads "
                             "in batches of --load-batch, or by one bulk insert of generated rows (10M rows in minutes)")
    parser.add_argument("--smoke", action="store_true", help=f"tiny sizes and one case ({SMOKE})")
    parser.add_argument("--profile", action="store_true", help="keep Spark event logs of the hudi_cdc jobs, print where time goes")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for every job's session (repeatable), e.g. to compare JIT settings")  # fmt: skip
    parser.add_argument("--hoodie-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a Hudi write option of every table (repeatable; the plain job writes with it too), "
                             "e.g. hoodie.parquet.max.file.size=8388608")  # fmt: skip
    parser.add_argument("--index", choices=("simple", "record_level", "bucket"), default="simple",
                        help="the tables' `index` (the plain job writes with the same Hudi index)")  # fmt: skip
    parser.add_argument("--buckets", type=int, default=8, help="the tables' `buckets` with --index bucket")
    parser.add_argument("--prepped", choices=("on", "off"), default="on",
                        help="the tables' `prepped_writes` (hudi_cdc only: the plain job never writes prepped)")  # fmt: skip
    parser.add_argument("--min-partitions", type=int, default=None,
                        help="`kafka.min_partitions` of every job and load: Spark tasks reading a batch of the "
                             "one-partition topics (default: one)")  # fmt: skip
    parser.add_argument("--job-setting", action="append", default=[], metavar="KEY=VALUE",
                        help="a `job:` setting of the hudi_cdc job (repeatable), e.g. newer_by_rank=true")  # fmt: skip
    parser.add_argument("--out", type=Path, default=None, help="where results go (default build/bench)")
    args = parser.parse_args(argv)
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    if args.workloads == "all":
        args.workloads = ",".join(WORKLOADS)
    return args


def _settings(texts: list[str], flag: str) -> dict[str, str]:
    """`KEY=VALUE` flags as a dict."""
    found = {}
    for text in texts:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise SystemExit(f"{flag} takes KEY=VALUE, not {text!r}")
        found[key] = value
    return found


def machine() -> dict[str, Any]:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())  # fmt: skip
    return {
        "cores": os.cpu_count(), "cpu": model, "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(), "platform": platform.platform(),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = Sizes(rows=args.rows, changes=args.changes, small_changes=args.small_changes,
                  hot_keys=args.hot_keys, scale_rows=_int_list(args.scale_rows), tables=args.tables,
                  table_concurrency=args.table_concurrency,
                  scale_type="MERGE_ON_READ" if args.scale_type == "mor" else "COPY_ON_WRITE",
                  scale_keys=args.scale_keys)  # fmt: skip
    selected = cases([w for w in args.workloads.split(",") if w], sizes)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out_dir = args.out or build_dir() / "bench"
    root = run_dir("bench") / "data"
    shutil.rmtree(root, ignore_errors=True)
    settings = Settings(batch=args.batch, load_batch=args.load_batch, root=root, profile=args.profile,
                        spark_conf=_settings(args.spark_conf, "--spark-conf"), index=args.index,
                        buckets=args.buckets, prepped_writes=args.prepped == "on", hoodie_options=_settings(args.hoodie_option, "--hoodie-option"),
                        min_partitions=args.min_partitions, load_by=args.load_by,
                        job_settings=_settings(args.job_setting, "--job-setting"))  # fmt: skip
    began, load_before = time.monotonic(), os.getloadavg()
    print(f"{len(selected)} case(s): {', '.join(c.name for c in selected)}; batch {args.batch}; load average {load_before}")
    results: list[CaseResult] = []
    failure: str | None = None
    with LocalKafka(directory=run_dir("bench") / "kafka") as kafka:
        run = Run(kafka=kafka, settings=settings)
        prepare_topics(kafka, selected, settings)
        try:
            for case in selected:
                print(f"\n{case.name}: {case.title}", flush=True)
                result = run.run_case(case)
                results.append(result)
                if not result.check.get("passed"):
                    failure = f"{case.name}: {check_line(result.check)}"
                    print(f"\n!!! HONESTY CHECK FAILED: {failure}\n", flush=True)
                    break
                print(f"  check: {check_line(result.check)}", flush=True)
        except BenchError as exc:
            failure = str(exc)
    report = text_report(results)
    found = goals(results)
    summary = f"{markdown_ratios(results)}\n\n{markdown_jobs(results)}\n\n{markdown_goals(found)}"
    load_after = os.getloadavg()
    subtitle = f"batch {human(args.batch)}, local[2], {stamp}"
    print(report, "\n", summary, sep="\n")
    print(f"\nload average before {load_before}, after {load_after}; {time.monotonic() - began:.0f} s in all")
    out_dir.mkdir(parents=True, exist_ok=True)
    prefix = out_dir / f"result-{stamp}"
    document = {
        "started": stamp, "command": " ".join([Path(sys.executable).name, "-m", "devkit.bench", *(argv or sys.argv[1:])]),
        "machine": machine(), "settings": {**vars(args), "out": str(out_dir)},
        "load_average": {"before": load_before, "after": load_after, "per_child": run.loadavg},
        "seconds": round(time.monotonic() - began, 1), "cases": [r.as_json() for r in results],
        "goals": [{"goal": g.goal, "case": g.case, "value": round(g.value, 4), "limit": g.limit, "met": g.met} for g in found],
        "loads": run.load_costs, "failure": failure,
    }  # fmt: skip
    prefix.with_suffix(".json").write_text(json.dumps(document, indent=2, default=str))
    prefix.with_suffix(".txt").write_text(f"{report}\n\n{summary}\n")
    written = plot_all(results, prefix, subtitle) if results else []
    print(f"wrote {prefix.with_suffix('.json')}, {prefix.with_suffix('.txt')}" + "".join(f", {p}" for p in written))
    if failure:
        print(f"\nFAILED: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
