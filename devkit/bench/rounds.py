"""What the offline cost benches (decode_cost, envelope_cost, envelope_split, table_reads) share: their
command line, a local Spark, and ways run alternately after warm-up rounds, so that the JIT and
code generation are paid before timing and the machine's drift hits every way alike."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import TypeVar

from pyspark.sql import SparkSession

from hudi_cdc.spark.session import get_or_create_session

WARM_UP = 2
"""Untimed rounds of each way before the timed ones."""

T = TypeVar("T")


def arguments(prog: str, doc: str, *, events: int, what: str) -> argparse.ArgumentParser:
    """`--events` (default `events`, `what` they are) and `--rounds`; the caller may add more."""
    parser = argparse.ArgumentParser(prog=f"python -m {prog}", description=doc.splitlines()[0])
    parser.add_argument("--events", type=int, default=events, help=f"{what} per round")
    parser.add_argument("--rounds", type=int, default=3, help=f"timed rounds of each, after {WARM_UP} warm-up rounds")
    return parser


def local_spark(app: str) -> SparkSession:
    """A local[2] Spark for a bench that needs no Kafka and no Hudi table."""
    spark = get_or_create_session(app_name=app, extra_conf={"spark.master": "local[2]"})
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def alternately(ways: Iterable[str], rounds: int, run: Callable[[str, int | None], T]) -> dict[str, list[T]]:
    """`run(way, timed_round)` for every way, round after round (`timed_round` None while warming
    up); the results of the timed rounds, per way."""
    names = list(ways)
    results: dict[str, list[T]] = {name: [] for name in names}
    for round_ in range(WARM_UP + rounds):
        timed = round_ - WARM_UP if round_ >= WARM_UP else None
        for name in names:
            result = run(name, timed)
            if timed is not None:
                results[name].append(result)
    return results
