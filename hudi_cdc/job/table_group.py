"""Small tables of one batch folded as one: one fold, one checkpoint and one counting job for all.

Why: a small table's fixed work in a batch is mostly the driver planning its fold, its checkpoint
and its counting job, each a Spark job of its own with Catalyst's analysis, code generation and
scheduling (docs/performance-journal.md, rounds 23, 37 and 39). Tables made from one template
share their columns and settings, so their events and stored rows can be folded as one table
whose key leads with the table's name; each table then commits its own rows, filtered from the
shared fold, in a Hudi commit of its own. Measured on the package's fold: 0.50x the CPU of
folding and counting 11 such tables one by one (`devkit.bench.union_fold`); in the job, 0.86x
the CPU of a batch of 6 tables applied one at a time; three at a time over 200 tables, 0.91x
the run's CPU with batches as short and a p95 as fresh, so it is on by default (`job.fold_together`).
The batch's candidates are cut into a part per table thread (`parts`), each prepared, folded and
committed on its thread: one shared fold for the whole batch made every thread wait at it
(docs/performance-journal.md, rounds 40 and 41).

Only tables whose fold would be the same apart from their names are grouped (`group_key`): equal
settings, columns after the schema check and stored columns; each table small enough to fold in
one task; a table that holds rows (a first load takes its own cheaper fold) and has no truncate
recorded. Each keeps its own counts, watermark and commit metadata. A table whose batch holds a
truncate it applies is folded again on its own (`job.table_batch.complete` without a fold), as
is every table of a group whose fold fails: a record that breaks a Spark job is then found by the
table's own failure isolation, and no table waits on another's trouble.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from hudi_cdc.commit.offsets import TRUNCATE_KEY
from hudi_cdc.config.models import TableConfig
from hudi_cdc.events import KAFKA_TOPIC
from hudi_cdc.fold.merge import key_state, write_kind
from hudi_cdc.fold.stored_state import conform_events, index_lookup_column, touched_rows
from hudi_cdc.fold.tally import DecodedTally, TableRecords, tally_tables
from hudi_cdc.job.sizing import tasks_for
from hudi_cdc.job.table_batch import Folded, Prepared, fold_table, truncation_of, without_truncates
from hudi_cdc.kafka.routing import TABLE_COLUMN
from hudi_cdc.spark.lineage import checkpointed, release

log = logging.getLogger(__name__)

GROUP_TABLE = "_cdc_group_table"
"""The shared fold's column naming each row's table: the first column of its key."""

_IDENTITY = {"name", "base_path", "hive"}
"""A table's settings that name it rather than shape its fold."""

MAX_TABLES = 32
"""Tables of a batch prepared to be folded together, at most. Their decoded batches are held
until the shared fold is done (a table on its own path holds only its own while it runs), and a
shared fold plans a union of every one, whose analysis grows with it: the bound keeps it near
the sizes measured (docs/performance-journal.md, rounds 39 and 40)."""
MAX_RECORDS = 50_000
"""Records of a batch prepared to be folded together, at most: what their decoded batches may
hold in the executors' memory at once (a backlog after a pause gives many tables many records)."""


def candidates(
    tables: Sequence[TableConfig], received: Mapping[str | None, TableRecords], *, parked: Collection[str]
) -> list[TableConfig]:
    """Of `tables` (in the batch's order), those prepared to be folded together: records in this
    batch, not parked, each small enough for one task, within MAX_TABLES and MAX_RECORDS."""
    chosen: list[TableConfig] = []
    records = 0
    for table in tables:
        batch = received.get(table.name)
        if batch is None or table.name in parked or tasks_for(batch.read) > 1:
            continue
        if len(chosen) == MAX_TABLES or records + batch.read > MAX_RECORDS:
            break
        chosen.append(table)
        records += batch.read
    return chosen


def parts(tables: Sequence[TableConfig], concurrency: int) -> list[list[TableConfig]]:
    """`tables` (`candidates`, in order) cut into at most `concurrency` runs of two or more, as even
    as they come; each run is prepared, folded and committed on a table thread of its own.

    Why parts: one shared fold between every table's preparing and its commit is a barrier, and
    the table threads wait at it for the slowest; a part per thread keeps them overlapping
    (docs/performance-journal.md, rounds 40 and 41)."""
    count = max(1, min(concurrency, len(tables) // 2))
    size, extra = divmod(len(tables), count)
    cut: list[list[TableConfig]] = []
    start = 0
    for i in range(count):
        end = start + size + (1 if i < extra else 0)
        cut.append(list(tables[start:end]))
        start = end
    return cut


def group_key(prepared: Prepared) -> str | None:
    """What a table's fold must share with others' to be folded with them, or None: it folds alone."""
    p = prepared
    if p.stored is None or not p.one_task or TRUNCATE_KEY in p.committed or GROUP_TABLE in p.schema.fieldNames():
        return None
    if index_lookup_column(p.table, p.schema) is not None:
        return None  # its stored rows are read by key from the index, not whole
    settings = p.table.model_dump(mode="json", exclude=_IDENTITY)
    return json.dumps([settings, p.schema.jsonValue(), p.stored.schema.jsonValue()], sort_keys=True)


def groups_of(prepared: Sequence[Prepared]) -> list[list[Prepared]]:
    """`prepared` tables that fold alike, in groups of two or more (in `prepared`'s order)."""
    by_key: dict[str, list[Prepared]] = {}
    for p in prepared:
        key = group_key(p)
        if key is not None:
            by_key.setdefault(key, []).append(p)
    return [group for group in by_key.values() if len(group) > 1]


@dataclass(frozen=True)
class GroupFold:
    """The shared fold of a group of tables and each table's counts; `release` when every table committed."""

    rows: DataFrame
    """Every table's folded rows, with GROUP_TABLE (a checkpoint)."""
    counted: dict[str, DecodedTally]

    def folded_for(self, prepared: Prepared) -> Folded | None:
        """`prepared`'s table's part of the fold, or None: its batch truncates the table, and it
        folds on its own (the shared fold assumed no truncate)."""
        table = prepared.table
        counted = self.counted[table.name]
        truncation, ignored = truncation_of(counted, table)
        if truncation is not None:
            log.info("table %s: its batch truncates the table; folded on its own", table.name)
            return None
        prepared.metrics.truncate_ignored = ignored
        rows = self.rows.filter(F.col(GROUP_TABLE) == table.name).drop(GROUP_TABLE)
        return Folded(rows=rows, held=None, counted=counted, truncation=None, remembered=None)

    def release(self) -> None:
        release(self.rows)


def fold_together(group: Sequence[Prepared]) -> GroupFold:
    """Fold and count the batches of `group` (`groups_of`) as one table keyed by (table, key)."""
    first = group[0]
    table, schema = first.table, first.schema
    union_schema = StructType([StructField(GROUP_TABLE, StringType()), *schema.fields])
    union_table = table.model_copy(update={"key": [GROUP_TABLE, *table.key]})
    events = reduce(DataFrame.unionByName, [_named(without_truncates(p.decoded.events), p) for p in group])
    stored = reduce(DataFrame.unionByName, [_named(p.stored, p) for p in group if p.stored is not None])
    conformed = conform_events(events, union_schema)
    touched = touched_rows(stored, conformed, union_schema, union_table, every_row=False, one_task=True)
    result = fold_table(conformed, touched, union_schema, union_table, truncation=None, remembered=None, one_task=True)
    rows = checkpointed(result.rows)
    try:
        counted = tally_tables(
            {p.table.name: p.decoded for p in group},
            watermarks={p.table.name: p.previous.watermark_ts_ms for p in group},
            labels=_labels(result.outcomes_for(rows), rows, group),
            one_task=True,
        )
    except BaseException:
        release(rows)
        raise
    return GroupFold(rows=rows, counted=counted)


def _labels(outcomes: DataFrame, rows: DataFrame, group: Sequence[Prepared]) -> DataFrame:
    """Per table (TABLE_COLUMN), a `label` row per event outcome and per folded row's write kind
    and key state, as `job.table_batch` labels one table's."""
    table = group[0].table
    # an event's table from its topic: a topic routes to one table
    of_topic = F.create_map(*[F.lit(x) for p in group for topic in p.received.kafka.first for x in (topic, p.table.name)])
    by_outcome = outcomes.select(of_topic[F.col(KAFKA_TOPIC)].alias(TABLE_COLUMN), F.col("outcome").alias("label"))
    writes = rows.select(
        F.col(GROUP_TABLE).alias(TABLE_COLUMN), F.explode(F.array(write_kind(table), key_state(table))).alias("label")
    )
    return by_outcome.unionByName(writes.filter(F.col("label").isNotNull()))


def _named(frame: DataFrame, prepared: Prepared) -> DataFrame:
    """`frame` with GROUP_TABLE, its table's name, in front."""
    return frame.select(F.lit(prepared.table.name).alias(GROUP_TABLE), "*")
