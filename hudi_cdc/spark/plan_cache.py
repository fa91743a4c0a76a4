"""Spark column expressions built once and reused by every later batch of the same shape.

Why: building a batch's expressions is thousands of py4j round trips on the driver (every
`F.col`, `F.when`, `F.from_json` is one or more), and they depend only on the table's config
and the batch's schemas, which rarely change between batches. Measured on the decode of a
Debezium table: about 2,700 py4j calls per table and batch (docs/performance-journal.md, round 6).

A Column is an unresolved expression, by name, in Spark's JVM: it holds no reference to a
DataFrame, so one Column can be used in the plans of many batches. It does belong to one JVM,
so entries are keyed by the Py4J gateway too: a Python process that starts a new JVM builds anew.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from pyspark import SparkContext
from pyspark.sql import Column, DataFrame

T = TypeVar("T")

DEFAULT_ENTRIES = 512
"""Shapes kept per cache. A table has one shape at a time (a schema change or a truncate adds
one), and a job visits every table's shape in each batch: with more tables than entries the
least recently used would be evicted every time and every batch would build anew. An entry is
a few hundred expression objects in the driver's JVM."""


class PlanCache(Generic[T]):
    """A bounded, thread-safe map from a batch's shape to the expressions built for it (least recently used goes first)."""

    def __init__(self, entries: int = DEFAULT_ENTRIES) -> None:
        self._entries = entries
        self._built: OrderedDict[tuple[object, Hashable], T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, shape: Hashable, build: Callable[[], T]) -> T:
        """The expressions for `shape` in the running JVM, built by `build` the first time."""
        key = (_gateway(), shape)
        with self._lock:
            if key in self._built:
                self._built.move_to_end(key)
                return self._built[key]
        # built outside the lock: two tables' threads may build at once (the same shape twice is harmless)
        value = build()
        with self._lock:
            self._built[key] = value
            while len(self._built) > self._entries:
                self._built.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._built)


def with_levels(df: DataFrame, levels: Sequence[Sequence[Column]]) -> DataFrame:
    """`df` with each level's columns added, a level at a time (a level reads the ones before it).

    A value many later expressions read goes in a level of its own, so Spark analyses and
    evaluates it once instead of once per use.
    """
    for level in levels:
        df = df.select("*", *level)
    return df


def _gateway() -> object:
    """The Py4J gateway of the running SparkContext: Columns are references into its JVM."""
    return SparkContext._gateway
