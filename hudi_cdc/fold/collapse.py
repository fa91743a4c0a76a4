"""Fold each key's events, in event order, onto its stored state (semantics §3).

The fold runs as Spark aggregations on the executors: the batch's events and the stored rows
of the keys they touch are unioned as "writes", grouped by key, and every column takes the
value of its newest write unless a newer delete cleared it. Because each column is
last-writer-wins by ORDER and deletes are ordered too, the result is independent of arrival
order and of how events are cut into batches.

State of a key, as stored in the table (merge.py writes it back):
- `_cdc_order` R: the newest order applied to the row;
- `_cdc_column_orders`: only the columns whose last write is not R, plus `__delete__` (the
  last delete) while the row is live; a column's order is `column_orders[c]` else R;
- `_cdc_deleted` (soft-delete tables): the row is a tombstone and its delete order is R.
A column is live iff its order is newer than the key's last delete.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from pyspark.sql.window import Window

from hudi_cdc.events import (
    COLUMN_ORDERS,
    DELETE_ORDER_KEY,
    DELETED,
    KAFKA_OFFSET,
    KAFKA_PARTITION,
    KAFKA_TOPIC,
    OP,
    ORDER,
    PRESENT,
    SOURCE,
    TS_MS,
    Op,
    Outcome,
)
from hudi_cdc.spark.plan_cache import PlanCache, with_levels

# Columns of FoldResult.rows that merge.py reads (never stored).
EXISTS = "__exists"
HAD_ROW = "__had_row"
CHANGED = "__changed"

# Working column names (never stored).
_DEL = "__del"
_IS_STORED = "__is_stored"
_FINAL_DEL = "__final_del"
_EXISTS = EXISTS
_FINAL_ORDERS = "__final_orders"
_STORED_ORDERS = "__stored_orders"
_STORED_DEL = "__stored_del"
_STORED_R = "__stored_r"
_HAD_ROW = HAD_ROW
_STORED_SIG = "__stored_sig"
_FINAL_R = "__final_r"
_NEVER = ""  # order of a column never written: sorts before every real order


def _ord(column: str) -> str:
    return f"__ord__{column}"


def _final_ord(index: int) -> str:
    """The final order of the table's `index`-th column (by position: names may need quoting)."""
    return f"__final_ord{index}"


@dataclass(frozen=True)
class Truncation:
    """The newest applied truncate of the batch: a delete at `order` of every key (semantics §3)."""

    order: str
    ts_ms: int | None
    source: str | None


@dataclass(frozen=True)
class FoldResult:
    """Folded rows (one per touched key) and how to judge each event against them."""

    rows: DataFrame
    """Key + table columns + _cdc_* state + __exists + __had_row + __changed + __final_* + __stored_* + carried."""
    events: DataFrame
    columns: list[str]
    key: list[str]
    floor: str = ""
    """The remembered truncate order: events at or before it are late."""
    one_task: bool = False
    """Judge the events in one task, with no shuffle (as `fold`'s `one_task`)."""

    def outcomes_for(self, rows: DataFrame) -> DataFrame:
        """Outcomes judged against `rows` (pass a persisted copy of `rows` to avoid refolding)."""
        if self.one_task:
            # a merge join of two single partitions needs no shuffle; a broadcast would cost a job
            return _outcomes(self.events.coalesce(1), rows.coalesce(1).hint("merge"), self.columns, self.key, self.floor)
        return _outcomes(self.events, rows, self.columns, self.key, self.floor)


def _stored_as_writes(columns: list[str], soft: bool) -> list[Column]:
    """Turn stored rows into one pseudo-event each, carrying every column's own order."""
    r = F.col(ORDER)
    orders = F.coalesce(F.col(COLUMN_ORDERS), F.create_map().cast("map<string,string>"))
    deleted = F.col(DELETED) if soft else F.lit(False)
    delete_order = F.when(deleted, r).otherwise(F.coalesce(orders[DELETE_ORDER_KEY], F.lit(_NEVER)))
    selected: list[Column] = [F.col(c) for c in columns]
    selected += [F.coalesce(orders[c], r).alias(_ord(c)) for c in columns]
    selected += [
        delete_order.alias(_DEL),
        r.alias(ORDER),
        F.col(OP),
        F.col(TS_MS),
        F.col(SOURCE),
        F.lit(True).alias(_IS_STORED),
    ]
    return selected


def _events_as_writes(columns: list[str]) -> list[Column]:
    """Each event writes the columns it carries (c/r/u) or clears older ones (d)."""
    writes = F.col(OP).isin(Op.CREATE.value, Op.READ.value, Op.UPDATE.value)
    selected: list[Column] = [F.col(c) for c in columns]
    selected += [
        F.when(writes & F.array_contains(F.col(PRESENT), c), F.col(ORDER)).alias(_ord(c)) for c in columns
    ]
    selected += [
        F.when(F.col(OP) == Op.DELETE.value, F.col(ORDER)).otherwise(F.lit(_NEVER)).alias(_DEL),
        F.col(ORDER),
        F.col(OP),
        F.col(TS_MS),
        F.col(SOURCE),
        F.lit(False).alias(_IS_STORED),
    ]
    return selected


def _signature(delete_order: Column, column_orders: list[Column]) -> Column:
    """A string equal for two states iff their delete order and every column order are equal."""
    return F.concat_ws("|", delete_order, *column_orders)


def _orders_map(columns: list[str], order_of: dict[str, Column]) -> Column:
    """map column -> order, built in a fixed column order so equal states compare equal."""
    return F.map_from_arrays(F.array(*[F.lit(c) for c in columns]), F.array(*[order_of[c] for c in columns]))


def _newest_writes(columns: list[str], key: list[str], carried: tuple[str, ...]) -> list[Column]:
    """Per key: the newest delete, each column's newest write (order, value), the last event, stored state."""
    aggs: list[Column] = [
        # columns only stored rows have (events' are NULL), and a key has at most one stored row
        *[F.max(c).alias(c) for c in carried],
        F.max(_DEL).alias(_DEL),
        # the newest write of each column: struct ordering compares the order first
        *[
            F.max(F.when(F.col(_ord(c)).isNotNull(), F.struct(F.col(_ord(c)).alias("o"), F.col(c).alias("v"))))
            .alias(f"__w__{c}")
            for c in columns
            if c not in key
        ],
        *[F.max(F.col(_ord(c))).alias(f"__w__{c}") for c in key],
        F.max(F.struct(ORDER, OP, TS_MS, SOURCE)).alias("__last"),
        F.max(F.col(_IS_STORED).cast("int")).cast("boolean").alias(_HAD_ROW),
        F.max(F.when(F.col(_IS_STORED), _signature(F.col(_DEL), [F.col(_ord(c)) for c in columns]))).alias(
            _STORED_SIG
        ),
        # the stored state itself (a key has at most one stored row), so that judging the events
        # later needs no second read of the stored rows
        F.max(F.when(F.col(_IS_STORED), F.array(*[F.col(_ord(c)) for c in columns]))).alias(_STORED_ORDERS),
        F.max(F.when(F.col(_IS_STORED), F.col(_DEL))).alias(_STORED_DEL),
        F.max(F.when(F.col(_IS_STORED), F.col(ORDER))).alias(_STORED_R),
    ]
    return aggs


def _final_rows(
    columns: list[str],
    key: list[str],
    truncation: Truncation | None,
    soft_deletes: bool,
    sticky: frozenset[str],
    carried: tuple[str, ...],
) -> tuple[list[list[Column]], list[Column]]:
    """Each key's final row and state from its newest writes: live columns, `_cdc_*`, changed or not.

    Returns levels of columns to add to the newest writes (the final delete and each column's
    final order, then whether the row exists and its order R: each is read many times below)
    and the projection over them.
    """
    trunc_order = F.lit(truncation.order if truncation else _NEVER)
    final_del = F.greatest(F.col(_DEL), trunc_order)
    level = [final_del.alias(_FINAL_DEL)] + [
        F.coalesce(F.col(f"__w__{c}") if c in key else F.col(f"__w__{c}.o"), F.lit(_NEVER)).alias(_final_ord(i))
        for i, c in enumerate(columns)
    ]
    order_of: dict[str, Column] = {c: F.col(_final_ord(i)) for i, c in enumerate(columns)}
    live = {c: order_of[c] > F.col(_FINAL_DEL) for c in columns}
    exists = F.lit(False)
    for c in columns:
        exists = exists | live[c]
    exists_now = F.col(_EXISTS)
    newest_write = F.greatest(*[order_of[c] for c in columns]) if len(columns) > 1 else order_of[columns[0]]
    second_level = [exists.alias(_EXISTS), F.greatest(F.col(_FINAL_DEL), newest_write).alias(_FINAL_R)]
    r = F.col(_FINAL_R)
    truncated_last = F.lit(truncation is not None) & (r == trunc_order) & (F.col(f"__last.{ORDER}") < r)

    # partition columns are where the row lives: a delete does not clear them, so a soft-deleted
    # row stays in its partition instead of moving to a NULL one
    values = [
        F.col(c)
        if c in key
        else (F.col(f"__w__{c}.v") if c in sticky else F.when(live[c], F.col(f"__w__{c}.v"))).alias(c)
        for c in columns
    ]
    final_sig = _signature(F.col(_FINAL_DEL), [order_of[c] for c in columns])
    # a key whose stored state the batch does not change is not rewritten (late events, replays)
    changed = F.when(F.col(_HAD_ROW), F.col(_STORED_SIG) != final_sig).otherwise(exists_now | F.lit(soft_deletes))
    exceptions = F.map_filter(_orders_map(columns, order_of), lambda _k, v: v != r)
    delete_entry = F.when(
        (F.col(_FINAL_DEL) != _NEVER) & exists_now,
        F.create_map(F.lit(DELETE_ORDER_KEY), F.col(_FINAL_DEL)),
    ).otherwise(F.create_map().cast("map<string,string>"))
    final = [
        *values,
        F.when(truncated_last, F.lit(Op.TRUNCATE.value)).otherwise(F.col(f"__last.{OP}")).alias(OP),
        r.alias(ORDER),
        F.when(truncated_last, F.lit(truncation.ts_ms if truncation else None).cast("long"))
        .otherwise(F.col(f"__last.{TS_MS}"))
        .alias(TS_MS),
        F.when(truncated_last, F.lit(truncation.source if truncation else None).cast("string"))
        .otherwise(F.col(f"__last.{SOURCE}"))
        .alias(SOURCE),
        F.map_concat(exceptions, delete_entry).alias(COLUMN_ORDERS),
        F.col(_EXISTS),
        F.col(_HAD_ROW),
        changed.alias(CHANGED),
        F.col(_FINAL_DEL),
        _orders_map(columns, order_of).alias(_FINAL_ORDERS),
        F.col(_STORED_ORDERS),
        F.col(_STORED_DEL),
        F.col(_STORED_R),
        *[F.col(c) for c in carried],
    ]
    return [level, second_level], final


@dataclass(frozen=True)
class _FoldPlan:
    """The fold's expressions for one table shape (built once, see `plan_cache`)."""

    event_writes: tuple[Column, ...]
    stored_writes: tuple[Column, ...]
    newest_writes: tuple[Column, ...]
    """Aggregations per key."""
    final_levels: tuple[tuple[Column, ...], ...]
    final_rows: tuple[Column, ...]


_FOLDS: PlanCache[_FoldPlan] = PlanCache()


def _fold_plan(
    columns: list[str],
    key: list[str],
    soft_deletes: bool,
    newest: Truncation | None,
    sticky: frozenset[str],
    carried: tuple[str, ...],
) -> _FoldPlan:
    levels, final = _final_rows(columns, key, newest, soft_deletes, sticky, carried)
    return _FoldPlan(
        event_writes=tuple(_events_as_writes(columns)),
        stored_writes=(*_stored_as_writes(columns, soft_deletes), *[F.col(c) for c in carried]),
        newest_writes=tuple(_newest_writes(columns, key, carried)),
        final_levels=tuple(tuple(level) for level in levels),
        final_rows=tuple(final),
    )


def fold(
    *,
    events: DataFrame,
    stored: DataFrame,
    schema: StructType,
    key: list[str],
    soft_deletes: bool,
    truncation: Truncation | None,
    remembered: Truncation | None = None,
    sticky: frozenset[str] = frozenset(),
    carried: tuple[str, ...] = (),
    one_task: bool = False,
) -> FoldResult:
    """Fold `events` (no truncates) onto `stored` (the table's rows for the touched keys).

    Args:
        events: decoded events of one table (events.py contract), truncates removed.
        stored: current table rows of every key the fold must consider, with `_cdc_*` columns.
        schema: the table's data columns (key columns included), in table order.
        key: record key columns.
        soft_deletes: whether the table keeps deleted rows with `_cdc_deleted = true`.
        truncation: the newest applied truncate of the batch, if any (`stored` then holds every row).
        remembered: the table's newest truncate of earlier batches: events older than it are late
            for every key, including keys the table has never seen (semantics §3).
        sticky: columns a delete does not clear (the partition columns).
        carried: columns of `stored` each key's folded row keeps as they are (NULL for a key with
            no stored row), such as the stored row's location in the table (`hudi.prepped`).
        one_task: fold (and later judge the events) in one task, with no shuffle: for a batch
            and a table small enough (`job.sizing.in_one_task`). The same rows either way.
    """
    columns = [f.name for f in schema.fields]
    # the newest truncate known, this batch's or a remembered one: a delete of every key at its order
    newest = max((t for t in (truncation, remembered) if t is not None), key=lambda t: t.order, default=None)
    shape = (tuple(columns), tuple(key), soft_deletes, newest, tuple(sorted(sticky)), carried)
    plan = _FOLDS.get(shape, lambda: _fold_plan(columns, key, soft_deletes, newest, sticky, carried))
    # events have no carried columns: NULL there
    writes = events.select(*plan.event_writes).unionByName(
        stored.select(*plan.stored_writes), allowMissingColumns=bool(carried)
    )
    if one_task:
        writes = writes.coalesce(1)  # one partition satisfies the grouping: Spark plans no shuffle
    grouped = writes.groupBy(*key).agg(*plan.newest_writes)
    rows = with_levels(grouped, plan.final_levels).select(*plan.final_rows)
    return FoldResult(
        rows=rows,
        events=events,
        columns=columns,
        key=key,
        floor=remembered.order if remembered else _NEVER,
        one_task=one_task,
    )


def keeps_a_stored_value(columns: list[str], values: Collection[str]) -> Column:
    """True for a folded row (`FoldResult.rows`) that is written with something of its stored row
    beyond the orders: the stored value of one of `values` (a live column whose newest write is the
    stored row's own: no event of the batch wrote it at a newer order), or the stored row's last
    event (`_cdc_op`, `_cdc_ts_ms`, `_cdc_source`: no event of the batch is newer than the row).

    A fold of stored rows read without those (`stored_state.touched_rows(..., values=False)`) is
    right for every row where this is false; a row where it is true needs the fold again with them.
    A replayed event at a column's or the row's stored order counts as keeping it (it would write
    the same value).
    """
    final, stored = F.col(_FINAL_ORDERS), F.col(_STORED_ORDERS)
    # the row's order is its newest event's unless a truncate is newer (the fold then writes the
    # truncate's op, ts_ms and source): at or below the stored order, the last event is the row's
    kept = F.col(ORDER) <= F.col(_STORED_R)
    for index, column in enumerate(columns):
        if column in values:
            kept = kept | ((final[column] == stored[index]) & (final[column] > F.col(_FINAL_DEL)))
    return F.col(CHANGED) & F.col(_HAD_ROW) & F.coalesce(kept, F.lit(False))


def _outcomes(events: DataFrame, rows: DataFrame, columns: list[str], key: list[str], floor: str) -> DataFrame:
    """Judge every event: duplicate, late, deleted, collapsed or applied (semantics §3, §6).

    The state before the batch (`__stored_*`) and after it (`__final_*`) both come from the
    folded rows: every event's key has exactly one.
    """
    final, outcome = _JUDGEMENTS.get((tuple(columns), tuple(key), floor), lambda: _judgement(columns, key, floor))
    return (
        events.join(rows.select(*final), on=key, how="left")
        .select(KAFKA_TOPIC, KAFKA_PARTITION, KAFKA_OFFSET, outcome.alias("outcome"))
    )


_JUDGEMENTS: PlanCache[tuple[tuple[Column, ...], Column]] = PlanCache()


def _judgement(columns: list[str], key: list[str], floor: str) -> tuple[tuple[Column, ...], Column]:
    """(the folded rows' state columns an event is judged by, the outcome over them)."""
    stored_orders = F.map_from_arrays(F.array(*[F.lit(c) for c in columns]), F.col(_STORED_ORDERS))
    final = (
        *[F.col(k) for k in key], F.col(_FINAL_ORDERS), F.col(_FINAL_DEL), stored_orders.alias(_STORED_ORDERS),
        F.col(_STORED_DEL), F.col(_STORED_R),
    )  # fmt: skip
    o = F.col(ORDER)
    present = F.col(PRESENT)
    # a remembered truncate is a delete every key has seen, stored or not
    stored_del = F.greatest(F.coalesce(F.col(_STORED_DEL), F.lit(_NEVER)), F.lit(floor))
    has_stored = F.col(_STORED_R).isNotNull()
    # the same event seen twice (in this batch, or already applied before)
    repeat_in_batch = F.row_number().over(Window.partitionBy(*key, ORDER).orderBy(KAFKA_OFFSET)) > 1
    seen_before = has_stored & (
        (o == F.col(_STORED_R))
        | (o == stored_del)
        | F.exists(present, lambda c: F.col(_STORED_ORDERS)[c] == o)
    )
    is_delete = F.col(OP) == Op.DELETE.value
    # nothing it touches is older than it, judged against the state before this batch
    late_write = (o <= stored_del) | (has_stored & F.forall(present, lambda c: F.col(_STORED_ORDERS)[c] > o))
    late_delete = (o <= stored_del) | (
        has_stored & F.forall(F.map_values(F.col(_STORED_ORDERS)), lambda v: v > o)
    )
    wins = F.exists(present, lambda c: F.col(_FINAL_ORDERS)[c] == o) & (o > F.col(_FINAL_DEL))
    outcome = (
        F.when(repeat_in_batch | seen_before, F.lit(Outcome.DUPLICATE.value))
        .when(is_delete & late_delete, F.lit(Outcome.LATE.value))
        .when(is_delete, F.lit(Outcome.DELETED.value))
        .when(late_write, F.lit(Outcome.LATE.value))
        .when(wins, F.lit(Outcome.APPLIED.value))
        .otherwise(F.lit(Outcome.COLLAPSED.value))
    )
    return final, outcome


# Working columns of the first-load fold (never stored).
_RANK = "__rank"
_OUTCOME = "__outcome"


@dataclass(frozen=True)
class FirstLoad:
    """The fold of a table's first batch when every event writes every column and none deletes.

    Semantics §3 then reduces to "the newest event of a key is its row": no stored row to read,
    no per-column order to compute (every column's order is the row's), and an event's outcome
    follows from its rank among its key's events, so no join of the events with the folded rows
    either. `judged` holds every event once, ranked; pass a checkpointed copy of it to
    `rows_of` and `outcomes_of`, which both read it.
    """

    judged: DataFrame
    """The events (without PRESENT), each with its rank in its key's order and its outcome."""
    columns: list[str]
    carried: dict[str, str]
    """Columns the general fold's rows carry from stored rows (name -> Spark type): NULL here."""

    def rows_of(self, judged: DataFrame) -> DataFrame:
        """The folded rows, with the columns of `FoldResult.rows`: each key's newest event.

        Each column also has the general fold's nullability, because the rows' schema is what a
        table's first commit stores: the row order is required there (`greatest` with the
        never-written order), and `__had_row` and `__changed` are optional.
        """
        newest = F.coalesce(F.col(ORDER), F.lit(_NEVER))
        return judged.filter(F.col(_RANK) == 1).select(
            *[F.col(c) for c in self.columns],
            F.col(OP),
            newest.alias(ORDER),
            F.col(TS_MS),
            F.col(SOURCE),
            # every column's order is the row's and nothing was deleted: no exception to keep
            F.create_map().cast("map<string,string>").alias(COLUMN_ORDERS),
            F.lit(True).alias(_EXISTS),
            _optional(F.lit(False)).alias(_HAD_ROW),
            _optional(F.lit(True)).alias(CHANGED),
            F.lit(_NEVER).alias(_FINAL_DEL),
            _orders_map(self.columns, {c: newest for c in self.columns}).alias(_FINAL_ORDERS),
            F.lit(None).cast("array<string>").alias(_STORED_ORDERS),
            F.lit(None).cast("string").alias(_STORED_DEL),
            F.lit(None).cast("string").alias(_STORED_R),
            *[F.lit(None).cast(dtype).alias(name) for name, dtype in self.carried.items()],
        )

    def outcomes_of(self, judged: DataFrame) -> DataFrame:
        """Every event's outcome: topic, partition, offset, outcome (as `FoldResult.outcomes_for`)."""
        return judged.select(KAFKA_TOPIC, KAFKA_PARTITION, KAFKA_OFFSET, F.col(_OUTCOME).alias("outcome"))


def _optional(value: Column) -> Column:
    """`value`, typed as nullable: a CASE without ELSE may be NULL as far as the analyzer knows."""
    return F.when(F.lit(True), value)


def writes_every_column(columns: list[str]) -> Column:
    """True for an event that `first_load` may fold: a c, r or u whose PRESENT holds every one of `columns`."""
    full_image = F.size(F.array_except(F.array(*[F.lit(c) for c in columns]), F.col(PRESENT))) == 0
    return F.col(OP).isin(Op.CREATE.value, Op.READ.value, Op.UPDATE.value) & full_image


def first_load(
    *, events: DataFrame, schema: StructType, key: list[str], carried: dict[str, str] | None = None,
    one_task: bool = False,
) -> FirstLoad:  # fmt: skip
    """Fold `events` into a table that holds no row and no remembered truncate, when every event
    `writes_every_column` (the caller checks; a batch with any other event needs `fold`).

    The same rows and outcomes as `fold`: of a key's events, the newest order wins the whole row;
    one at the same order and a later offset than another is a duplicate, as in `_judgement`; every
    other older event is collapsed. Nothing can be late: there is no stored state to be older than.
    `one_task`: rank in one task, with no shuffle (as `fold`'s).
    """
    columns = [f.name for f in schema.fields]
    if one_task:
        events = events.coalesce(1)
    # the newest order first; of equal orders, the earliest offset (the one `_judgement` keeps)
    by_key = Window.partitionBy(*key).orderBy(F.col(ORDER).desc(), F.col(KAFKA_OFFSET).asc())
    ranked = events.drop(PRESENT).select(
        "*", F.row_number().over(by_key).alias(_RANK), F.lag(ORDER).over(by_key).alias("__previous")
    )
    outcome = (
        F.when(F.col("__previous") == F.col(ORDER), F.lit(Outcome.DUPLICATE.value))
        .when(F.col(_RANK) == 1, F.lit(Outcome.APPLIED.value))
        .otherwise(F.lit(Outcome.COLLAPSED.value))
    )
    judged = ranked.select(*[c for c in ranked.columns if c != "__previous"], outcome.alias(_OUTCOME))
    return FirstLoad(judged=judged, columns=columns, carried=dict(carried or {}))
