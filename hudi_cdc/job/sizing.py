"""How many tasks a table's batch runs in: its records' read, and whether all of it fits one task."""

from __future__ import annotations

ROWS_PER_TASK = 10_000
"""Records of a table one task reads before the first shuffle of its batch (see `tasks_for`)."""

ONE_TASK_TABLE_BYTES = 64 * 1024 * 1024
"""The largest stored table (the bytes of the files its read covers) whose batch may run in one task."""


def tasks_for(records: int) -> int:
    """How many tasks read a table's records from the batch: one per ROWS_PER_TASK records.

    Why: the batch has a partition per Kafka topic partition it read, and every table's records
    are filtered from all of them. With 85 tables in a batch, each of a table's jobs ran 85 tasks,
    84 of them empty, and a touched table cost 7.8 CPU s against 4.3 with 12 tables
    (docs/performance-journal.md, round 23). `coalesce` only lowers the count: a table with more
    records than its partitions hold at ROWS_PER_TASK each keeps them, while a small table split
    by `kafka.min_partitions` is read by fewer tasks than that split. The fold orders events by
    their positions, not by partition.
    """
    return max(1, -(-records // ROWS_PER_TASK))


def in_one_task(records: int, stored_bytes: int) -> bool:
    """Whether a table's batch runs its fold and its counts in one task each, with no shuffle:
    its records fit one task (`tasks_for`) and the files of its stored rows (`stored_bytes`, 0 for
    a table not made yet) hold at most ONE_TASK_TABLE_BYTES.

    Why: the fold groups events by key, the counting job joins them with the folded rows and
    groups them again, and each of those is a shuffle that adaptive execution runs as a Spark job
    of its own and re-plans after: a small table's fold and counts were six Spark jobs. A single
    partition already satisfies every grouping and, where Spark can bound both sides' size, every
    join, so with every input coalesced to one partition Spark plans no shuffle: one Spark job,
    and 0.74x the executors' CPU in warm batches of six small tables (docs/performance-journal.md,
    round 37). The stored rows are read inside that one task too, which is why the table must be
    small: a large table's read keeps its parallel tasks.
    """
    return tasks_for(records) == 1 and stored_bytes <= ONE_TASK_TABLE_BYTES
