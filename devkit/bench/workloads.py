"""The benchmark's source table, its Debezium records and the workloads (cases) built from them.

Every record is a MySQL-style Debezium JSON change with the schema envelope (what the
JsonConverter writes by default). Positions only grow: the snapshot reads of a table's load
come first (file 000001, pos 1..N), its changes after (file 000002, pos above any load), so
ordering by `source.pos` alone (the plain job) and by hudi_cdc's (file, pos, row) agree.
Balances are never negative, so a plain job can decode Debezium's base64 decimal with `conv`.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from decimal import Decimal
from itertools import chain
from typing import Literal

from devkit.debezium import Column, DebeziumTable, KafkaRecord

TableType = Literal["COPY_ON_WRITE", "MERGE_ON_READ"]

KEY = "id"
PARTITION_COLUMN = "region"
REGIONS = tuple(f"r{i}" for i in range(8))
DATA_COLUMNS = ("id", "owner", "email", "balance", "updated_at", PARTITION_COLUMN)
"""The source columns: what the honesty check compares (hudi_cdc adds `_cdc_*`, the plain job `_pos`)."""

COLUMNS = [
    Column("id", "int64", optional=False),
    Column("owner", "string"),
    Column("email", "string"),
    Column("balance", "decimal", scale=2, precision=12),
    Column("updated_at", "micro_timestamp"),
    Column(PARTITION_COLUMN, "string"),
]
SOURCE = DebeziumTable(server="bench", database="shop", table="accounts", key=[KEY], columns=COLUMNS)
"""The table of `events()` (the decode benchmark `make bench-avro` uses it)."""

T0 = dt.datetime(2026, 11, 1)
"""`updated_at` of key 0 as loaded (key k: T0 + k seconds)."""
T0_MS = 1_790_000_000_000
"""`source.ts_ms` of the snapshot read of key 0 (key k: T0_MS + k)."""
_CHANGE_POS = 100_000_000
"""First binlog position of changes: above every load position (loads are at most 10M rows)."""
_SEED = 20261124


def source(topic_part: str) -> DebeziumTable:
    """The bench table as captured into the topic `bench.<topic_part>.accounts`."""
    return DebeziumTable(server="bench", database=topic_part, table="accounts", key=[KEY], columns=COLUMNS)


def row(key: int, version: int) -> dict[str, object]:
    """The source row of `key` after its `version`-th change (0: as loaded)."""
    return {
        "id": key,
        "owner": f"owner-{key}",
        "email": f"user{key}.v{version}@example.com",
        "balance": Decimal((key * 7919 + version * 31) % 10_000_000) / 100,
        "updated_at": T0 + dt.timedelta(seconds=key + version),
        PARTITION_COLUMN: REGIONS[key % len(REGIONS)],  # never changes: a key stays in its partition
    }


Change = tuple[str, int, int]
"""One source change: op (r, u or d), key, version (the key's row after it is `row(key, version)`;
the version of a change is its place in the stream + 1, which also gives its binlog position)."""


def snapshot_changes(rows: int) -> Iterator[Change]:
    """`rows` snapshot reads (op r), keys 0..rows-1, each at version 0."""
    for key in range(rows):
        yield "r", key, 0


def update_changes(changes: int, keys: int, *, lowest: int = 0) -> Iterator[Change]:
    """`changes` updates (op u), each of a key drawn uniformly from lowest..keys-1."""
    rng = random.Random(_SEED)
    for i in range(changes):
        yield "u", rng.randrange(lowest, keys), i + 1


def delete_keys(changes: int, rows: int) -> list[int]:
    """The keys `mixed_changes` deletes: every tenth change, distinct keys."""
    return random.Random(_SEED + 1).sample(range(rows), min(rows, changes // 10))


def mixed_changes(changes: int, rows: int) -> Iterator[Change]:
    """`changes` changes over 0..rows-1: every tenth a delete, the rest updates of keys that are
    never deleted (Debezium sends no update of a deleted row)."""
    rng = random.Random(_SEED)
    doomed = delete_keys(changes, rows)
    gone = set(doomed)
    for i in range(changes):
        if i % 10 == 9 and i // 10 < len(doomed):
            yield "d", doomed[i // 10], i + 1
            continue
        key = rng.randrange(rows)
        while key in gone:
            key = rng.randrange(rows)
        yield "u", key, i + 1


def load_topic(rows: int) -> str:
    """The topic of the snapshot reads a loaded table of `rows` rows is loaded from."""
    return source(f"rows_{rows}").topic


def records(table: DebeziumTable, changes: Iterable[Change]) -> Iterator[KafkaRecord]:
    """The Debezium records of `changes`, in order; a delete is followed by its tombstone.

    Snapshot reads are at file 000001, pos 1 + key; changes at file 000002, pos above any load.
    """
    for op, key, version in changes:
        image = row(key, version)
        if op == "r":
            yield table.change("r", after=image, file="mysql-bin.000001", pos=1 + key, ts_ms=T0_MS + key)
            continue
        i = version - 1
        pos, ts_ms = _CHANGE_POS + i, T0_MS + 10**9 + i
        if op == "d":
            yield table.change("d", before=image, file="mysql-bin.000002", pos=pos, ts_ms=ts_ms)
            yield table.tombstone({KEY: key})
        else:
            yield table.change(op, after=image, file="mysql-bin.000002", pos=pos, ts_ms=ts_ms)


def final_versions(changes: Iterable[Change]) -> dict[int, int | None]:
    """The reference fold: the version each touched key ends at, None when deleted.

    The stream's positions grow with its order, so the last change of a key is its newest.
    """
    final: dict[int, int | None] = {}
    for op, key, version in changes:
        final[key] = None if op == "d" else version
    return final


@dataclass(frozen=True)
class Load:
    """The table a case starts from: `rows` snapshot reads, written by each job before the timed run."""

    rows: int
    type: TableType
    partitioned: bool

    @property
    def name(self) -> str:
        layout = "by-region" if self.partitioned else "flat"
        return f"{self.rows}-{'cow' if self.type == 'COPY_ON_WRITE' else 'mor'}-{layout}"


@dataclass(frozen=True)
class Case:
    """One comparison: a topic, a table layout, and the table it starts from (None: empty)."""

    name: str
    workload: str
    title: str
    """What a reader of the result table sees, e.g. `20k updates over 100k rows, COW`."""
    type: TableType
    partitioned: bool
    changes: Callable[[], Iterator[Change]]
    """The source changes of the timed run (a fresh iterator on each call)."""
    events: int
    """How many Kafka records `records()` yields (tombstones included)."""
    expected_rows: int
    """Rows the table holds after the timed run."""
    start: Load | None
    table_rows: int
    """Rows in the table before the run (0 for a snapshot)."""
    tables: int = 1
    """Tables of the case, each with its own topic holding the same changes (`tables` workload)."""
    table_concurrency: int = 1
    """hudi_cdc's `job.table_concurrency`."""
    topic_base: str = ""
    """The topics' name part; cases that differ only in how the job runs share their topics."""
    separate: bool = False
    """Each job runs once per table, one run after another, each in its own process (the
    `tables` workload's baseline: N sequential runs instead of one job with N tables)."""

    @property
    def topic_part(self) -> str:
        return self.topic_base or self.name.replace("-", "_")

    def _parts(self) -> list[str]:
        if self.tables == 1:
            return [self.topic_part]
        return [f"{self.topic_part}_t{i}" for i in range(self.tables)]

    @property
    def topics(self) -> list[str]:
        """One topic per table: `bench.<part>.accounts`, or `bench.<part>_t<i>.accounts` for several."""
        return [source(part).topic for part in self._parts()]

    def streams(self) -> dict[str, Callable[[], Iterator[KafkaRecord]]]:
        """Each topic and a fresh iterator of its records."""
        return {
            source(part).topic: (lambda part=part: records(source(part), self.changes()))  # type: ignore[misc]
            for part in self._parts()
        }


def human(n: int) -> str:
    """20000 -> 20k, 1000000 -> 1M."""
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size and n % (size // 10) == 0:
            text = f"{n / size:.1f}".removesuffix(".0")
            return f"{text}{unit}"
    return str(n)


WORKLOADS = ("snapshot", "uniform", "hot", "small", "deletes", "partitioned", "scale", "tables")


@dataclass(frozen=True)
class Sizes:
    """The sizes a run uses (flags of `python -m devkit.bench`)."""

    rows: int
    changes: int
    small_changes: int
    hot_keys: int
    scale_rows: tuple[int, ...]
    tables: int = 5
    """Tables of the `tables` workload; `rows` and `changes` are split among them."""
    table_concurrency: int = 5
    """hudi_cdc's `job.table_concurrency` in the `tables` workload's concurrent case."""
    scale_type: TableType = "COPY_ON_WRITE"
    """Table type of the `scale` workload: copy-on-write rewrites every file a batch touches,
    merge-on-read appends to their logs."""
    scale_keys: Literal["uniform", "newest"] = "uniform"
    """Keys the `scale` workload updates: any key, or only the newest `hot_keys` keys of the
    table (an OLTP table's recent orders), which sit in the files written last."""


def cases(selection: list[str], sizes: Sizes) -> list[Case]:
    """The cases of the selected workloads (`uniform`) or single cases (`uniform-cow`), in run order."""
    every = [case for workload in WORKLOADS for case in _cases_of(workload, sizes, sizes.rows, sizes.changes)]
    known = set(WORKLOADS) | {case.name for case in every}
    unknown = sorted(set(selection) - known)
    if unknown:
        names = ", ".join(case.name for case in every)
        raise ValueError(f"unknown workload(s) {', '.join(unknown)}; valid: {', '.join(WORKLOADS)}, or a case: {names}")
    return [case for case in every if case.workload in selection or case.name in selection]


def _cases_of(workload: str, sizes: Sizes, n: int, m: int) -> list[Case]:
    cow: TableType = "COPY_ON_WRITE"
    mor: TableType = "MERGE_ON_READ"

    def case(name: str, title: str, type_: TableType, changes: Callable[[], Iterator[Change]],
             events: int, *, rows: int = n, expected: int | None = None, partitioned: bool = False,
             loaded: bool = True) -> Case:  # fmt: skip
        return Case(
            name=name, workload=workload, title=title, type=type_, partitioned=partitioned,
            changes=changes, events=events,
            expected_rows=rows if expected is None else expected,
            start=Load(rows, type_, partitioned) if loaded else None, table_rows=rows if loaded else 0,
        )  # fmt: skip

    if workload == "snapshot":
        return [
            case(f"snapshot-{kind}", f"{human(n)}-row snapshot, {kind.upper()}", type_,
                 lambda: snapshot_changes(n), n, loaded=False)
            for kind, type_ in (("cow", cow), ("mor", mor))
        ]  # fmt: skip
    if workload == "uniform":
        return [
            case(f"uniform-{kind}", f"{human(m)} updates over {human(n)} rows, {kind.upper()}", type_,
                 lambda: update_changes(m, n), m)
            for kind, type_ in (("cow", cow), ("mor", mor))
        ]  # fmt: skip
    if workload == "hot":
        hot = min(sizes.hot_keys, n)
        return [case("hot-cow", f"{human(m)} updates on {human(hot)} hot keys of {human(n)}, COW", cow,
                     lambda: update_changes(m, hot), m)]  # fmt: skip
    if workload == "small":
        k = sizes.small_changes
        return [case("small-cow", f"{human(k)} updates into {human(n)} rows, COW", cow,
                     lambda: update_changes(k, n), k)]  # fmt: skip
    if workload == "deletes":
        deletes = len(delete_keys(m, n))
        return [case("deletes-cow", f"{human(m)} changes, {human(deletes)} deletes + tombstones, {human(n)} rows, COW",
                     cow, lambda: mixed_changes(m, n), m + deletes, expected=n - deletes)]  # fmt: skip
    if workload == "partitioned":
        return [case("partitioned-cow", f"{human(m)} updates over {human(n)} rows in {len(REGIONS)} partitions, COW",
                     cow, lambda: update_changes(m, n), m, partitioned=True)]  # fmt: skip
    if workload == "tables":
        t = sizes.tables
        per_rows, per_changes = n // t, m // t
        return [
            replace(
                case(f"tables-{how}", f"{t} tables, each a {human(per_rows)}-row snapshot + {human(per_changes)} "
                     f"updates, COW, {title}", cow,
                     lambda: chain(snapshot_changes(per_rows), update_changes(per_changes, per_rows)),
                     t * (per_rows + per_changes), rows=per_rows, loaded=False),
                tables=t, table_concurrency=concurrency, topic_base="tables", separate=separate,
            )
            for how, title, concurrency, separate in (
                ("separate", "a run per table, one run after another", 1, True),
                ("sequential", "one job, one table at a time", 1, False),
                ("concurrent", f"one job, {sizes.table_concurrency} tables at a time", sizes.table_concurrency, False),
            )
        ]  # fmt: skip
    # scale: the same number of changes into ever larger tables
    kind = ("" if sizes.scale_type == cow else "mor-") + ("" if sizes.scale_keys == "uniform" else "newest-")
    newest = sizes.scale_keys == "newest"
    which = f" of the newest {human(sizes.hot_keys)}" if newest else ""

    def lowest(rows: int) -> int:
        return max(0, rows - sizes.hot_keys) if newest else 0

    return [
        case(f"scale-{kind}{human(rows).lower()}", f"{human(m)} updates{which} into {human(rows)} rows, "
             f"{'COW' if sizes.scale_type == cow else 'MOR'}", sizes.scale_type,
             lambda rows=rows: update_changes(m, rows, lowest=lowest(rows)), m, rows=rows)  # type: ignore[misc]
        for rows in sizes.scale_rows
    ]


def events(count: int, keys: int) -> list[KafkaRecord]:
    """Creates of `keys` rows, then updates spread over them (the decode benchmark's stream)."""
    records = []
    for i in range(count):
        key = i % keys
        records.append(SOURCE.change("c" if i < keys else "u", after=row(key, i), pos=1000 + i))
    return records
