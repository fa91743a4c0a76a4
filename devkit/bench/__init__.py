"""`make bench`: hudi_cdc against a plain Hudi upsert job and a Parquet append floor.

`python -m devkit.bench --help` lists the flags; docs/performance.md shows the current results,
docs/performance-journal.md every round.

- `workloads`: the source table, its Debezium records and the cases
- `jobs`: the three jobs as Spark code; `child`: one measured process running a job or the check
- `measure`: CPU and peak RSS of a process tree, percentiles
- `run`: topics, loads, the children of each case; `report`, `plots`: text, JSON and PNGs
- `profile`: where a hudi_cdc batch spends its time, from a Spark event log
"""

from devkit.bench.workloads import SOURCE, events

__all__ = ["SOURCE", "events"]
