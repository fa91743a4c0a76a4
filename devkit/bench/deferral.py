"""A model, not a run: what deferring a table's commit would save the database bench's trickle.

    python -m devkit.bench.deferral                                   # 200 tables, 1 update/s, Zipf 1.0, 15 s batches
    python -m devkit.bench.deferral --batch-seconds 20 --intervals 0,30,60

The idea it weighs (docs/performance-journal.md, rounds 22 and 37): a table whose last commit is
younger than an interval leaves its records in Kafka and commits them later, so a busy table
commits once per interval instead of once per batch. Whether that pays depends on how many of a
batch's tables committed recently, which only the traffic's skew decides. The model draws the
same Zipf shares as `devkit.bench.database` (`zipf_weights`), cuts a batch every
`--batch-seconds`, and commits a table at a cut when it holds records and its interval has
passed. A record's wait is taken from its arrival to the middle of the batch after its table's
commit cut: a batch applies its tables oldest first, so on average one commits half way through.
No Spark, no Kafka; it runs in a second.
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass

from devkit.bench.database import zipf_weights
from devkit.bench.measure import percentile


@dataclass(frozen=True)
class Deferred:
    """What one interval gives over the modelled run."""

    interval: float
    touched_per_batch: float
    """Tables with records at a cut, on average."""
    commits_per_batch: float
    p50_wait: float
    p95_wait: float

    @property
    def commits_per_touched(self) -> float:
        return self.commits_per_batch / self.touched_per_batch if self.touched_per_batch else 0.0


def model(*, tables: int, rate: float, skew: float, batch_seconds: float, interval: float, batches: int,
          seed: int = 20261206) -> Deferred:  # fmt: skip
    """Cut `batches` batches of a `rate`-per-second trickle over `tables` tables; commit a table at
    a cut when it holds records and at least `interval` seconds passed since its last commit."""
    rng = random.Random(seed)
    weights = zipf_weights(tables, skew)
    per_batch = round(rate * batch_seconds)
    pending: dict[int, list[float]] = {}
    last_commit: dict[int, float] = {}
    waits: list[float] = []
    touched = commits = 0
    for n in range(1, batches + 1):
        cut = n * batch_seconds
        for table in rng.choices(range(tables), weights=weights, k=per_batch):
            pending.setdefault(table, []).append(cut - rng.uniform(0, batch_seconds))
        touched += len(pending)
        for table in [t for t in pending if cut - last_commit.get(t, float("-inf")) >= interval]:
            commits += 1
            last_commit[table] = cut
            waits += [cut + batch_seconds / 2 - arrived for arrived in pending.pop(table)]
    return Deferred(
        interval=interval,
        touched_per_batch=touched / batches,
        commits_per_batch=commits / batches,
        p50_wait=percentile(waits, 50),
        p95_wait=percentile(waits, 95),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devkit.bench.deferral", description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--rate", type=float, default=1.0, help="updates per second over all tables")
    parser.add_argument("--skew", type=float, default=1.0, help="Zipf exponent of the tables' share of the updates")
    parser.add_argument("--batch-seconds", type=float, default=15.0, help="time from one batch's cut to the next")
    parser.add_argument("--intervals", default="0,30,45,60", help="commit intervals to model, seconds (0: every batch)")
    parser.add_argument("--batches", type=int, default=2_000)
    args = parser.parse_args(argv)
    print(f"{args.tables} tables, {args.rate:g} updates/s (Zipf {args.skew:g}), a batch every {args.batch_seconds:g} s, "
          f"{args.batches} batches modelled")  # fmt: skip
    print("interval s  tables with records a batch  commits a batch  commits per such table  wait p50 s  wait p95 s")
    for interval in (float(i) for i in args.intervals.split(",")):
        d = model(tables=args.tables, rate=args.rate, skew=args.skew, batch_seconds=args.batch_seconds,
                  interval=interval, batches=args.batches)  # fmt: skip
        print(f"{d.interval:10g}  {d.touched_per_batch:27.1f}  {d.commits_per_batch:15.1f}  "
              f"{d.commits_per_touched:22.2f}  {d.p50_wait:10.1f}  {d.p95_wait:10.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
