"""A pure-Python reference of semantics §3: a fold over events, one key at a time.

It knows nothing of Spark, Kafka or Hudi, so that the real pipeline can be compared with it
row for row. Keep it obviously correct rather than fast.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

NEVER = ""


@dataclass(frozen=True)
class Event:
    """One decoded change: op in c/r/u/d/t, an ORDER string and the PRESENT columns' values."""

    key: tuple[Any, ...]
    op: str
    order: str
    image: dict[str, Any] = field(default_factory=dict)


@dataclass
class KeyState:
    values: dict[str, Any] = field(default_factory=dict)
    orders: dict[str, str] = field(default_factory=dict)
    delete_order: str = NEVER
    last_op: str = ""
    last_order: str = NEVER
    newest_writes: dict[str, tuple[str, Any]] = field(default_factory=dict)
    """column -> (order, value) of its newest write, deletes ignored (partition columns read it)."""

    def live(self, column: str) -> bool:
        return self.orders.get(column, NEVER) > self.delete_order

    def exists(self) -> bool:
        return any(self.live(c) for c in self.orders)


class ReferenceTable:
    """The state a table must hold after a sequence of events (any order, any batching)."""

    def __init__(
        self, columns: list[str], key: list[str], *, soft_deletes: bool, partition_by: tuple[str, ...] = ()
    ) -> None:
        self.columns = columns
        self.partition_by = partition_by
        self.key = key
        self.soft_deletes = soft_deletes
        self.keys: dict[tuple[Any, ...], KeyState] = {}
        # a truncate deletes every key of the table, including keys first seen later in the batch
        self.truncate_order = NEVER
        self.truncate_last = False
        # the newest truncate of earlier batches, remembered by the table (semantics §3): a key first
        # seen after it starts out deleted at its order
        self.remembered_truncate = NEVER

    def apply(self, event: Event) -> None:
        if event.op == "t":
            self.truncate_order = max(self.truncate_order, event.order)
            return
        state = self.keys.get(event.key)
        if state is None:
            state = self.keys[event.key] = KeyState()
            if self.remembered_truncate != NEVER:
                state.delete_order = state.last_order = self.remembered_truncate
                state.last_op = "t"
        if event.op == "d":
            self._delete(state, event)
            return
        for column, value in event.image.items():
            if event.order > state.newest_writes.get(column, (NEVER, None))[0]:
                state.newest_writes[column] = (event.order, value)
            if event.order > state.orders.get(column, NEVER) and event.order > state.delete_order:
                state.values[column] = value
                state.orders[column] = event.order
        for column, value in zip(self.key, event.key, strict=True):
            if event.order > state.orders.get(column, NEVER) and event.order > state.delete_order:
                state.values[column] = value
                state.orders[column] = event.order
        self._note_last(state, event)

    def _delete(self, state: KeyState, event: Event) -> None:
        if event.order > state.delete_order:
            state.delete_order = event.order
        self._note_last(state, event)

    @staticmethod
    def _note_last(state: KeyState, event: Event) -> None:
        if event.order > state.last_order:
            state.last_order = event.order
            state.last_op = event.op

    def apply_all(self, events: Iterable[Event]) -> None:
        for event in events:
            self.apply(event)

    def end_batch(self) -> None:
        """What a commit does: the batch's truncate becomes a delete of the keys that exist and is
        remembered; a hard-delete table drops deleted keys with their orders (semantics §3 limit)."""
        if self.truncate_order != NEVER:
            for state in self.keys.values():
                if self.truncate_order > state.delete_order:
                    state.delete_order = self.truncate_order
                if self.truncate_order > state.last_order:
                    state.last_order = self.truncate_order
                    state.last_op = "t"
            self.remembered_truncate = max(self.remembered_truncate, self.truncate_order)
            self.truncate_order = NEVER
        if not self.soft_deletes:
            self.keys = {k: s for k, s in self.keys.items() if s.exists()}

    def rows(self) -> dict[tuple[Any, ...], dict[str, Any]]:
        """key -> row (every column; NULL where not live), plus `_cdc_deleted` and `_cdc_op`."""
        self.end_batch()
        result: dict[tuple[Any, ...], dict[str, Any]] = {}
        for key, state in self.keys.items():
            exists = state.exists()
            if not exists and not self.soft_deletes:
                continue
            # partition columns keep their last value on a deleted row (it stays where it lived)
            row = {
                c: (
                    state.values.get(c)
                    if state.live(c)
                    else state.newest_writes.get(c, (NEVER, None))[1] if c in self.partition_by else None
                )
                for c in self.columns
            }
            row.update(dict(zip(self.key, key, strict=True)))
            row["_cdc_deleted"] = not exists
            row["_cdc_op"] = state.last_op
            row["_cdc_order"] = max(state.last_order, state.delete_order)
            result[key] = row
        return result
