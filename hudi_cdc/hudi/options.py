"""Every `hoodie.*` key hudi_cdc sets, named once, and the table config -> Hudi write options.

Why these values (see README "Why a fold, not a Hudi payload"): the fold already produced each
key's complete final row, so the table keeps the latest commit's row (COMMIT_TIME_ORDERING) and
needs no pre-combining. Readers that merge log files themselves (Trino, hudi-rs) then agree.
"""

from __future__ import annotations

from hudi_cdc.config import TableConfig
from hudi_cdc.hudi.compaction import COMPACTION_KEYS, compaction_options

TABLE_NAME = "hoodie.table.name"
TABLE_TYPE = "hoodie.datasource.write.table.type"
OPERATION = "hoodie.datasource.write.operation"
OPERATION_UPSERT = "upsert"
MERGE_INTO_PREPPED = "_hoodie.spark.sql.merge.into.prepped"
"""Hudi's switch for rows that carry their meta columns: each is tagged with its own (see `hudi.prepped`)."""
OPERATION_INSERT = "insert"
OPERATION_BULK_INSERT = "bulk_insert"
BULK_INSERT_SORT_MODE = "hoodie.bulkinsert.sort.mode"
RECORD_KEY = "hoodie.datasource.write.recordkey.field"
PARTITION_PATH = "hoodie.datasource.write.partitionpath.field"
KEY_GENERATOR = "hoodie.datasource.write.keygenerator.class"
HIVE_STYLE_PARTITIONING = "hoodie.datasource.write.hive_style_partitioning"
MERGE_MODE = "hoodie.write.record.merge.mode"
MERGE_MODE_DEFAULT = "COMMIT_TIME_ORDERING"
COMBINE_BEFORE_UPSERT = "hoodie.combine.before.upsert"
INDEX_TYPE = "hoodie.index.type"
SIMPLE_INDEX_UPDATE_PARTITION_PATH = "hoodie.simple.index.update.partition.path"
RECORD_INDEX = "hoodie.metadata.global.record.level.index.enable"
"""Keep the global record-level index in the metadata table (a write option, and a read option
that lets data skipping use it)."""
RECORD_INDEX_UPDATE_PARTITION_PATH = "hoodie.record.index.update.partition.path"
BUCKET_ENGINE = "hoodie.index.bucket.engine"
BUCKET_COUNT = "hoodie.bucket.index.num.buckets"
BUCKET_HASH_FIELD = "hoodie.bucket.index.hash.field"
BUCKET_QUERY_PRUNING = "hoodie.bucket.index.query.pruning"
"""A read option: with the bucket options, data skipping reads only the buckets of a key filter."""
COLUMN_STATS_INDEX = "hoodie.metadata.index.column.stats.enable"
"""Off as a read option for key lookups (see `hudi.table.read_keys`)."""
COMPRESSION_CODEC = "hoodie.parquet.compression.codec"
COMPRESSION_CODEC_DEFAULT = "snappy"  # cheaper CPU than zstd on small, frequent commits
NULL_FOR_MISSING_COLUMNS = "hoodie.write.set.null.for.missing.columns"
CLEANER_COMMITS_RETAINED = "hoodie.clean.commits.retained"
CLEANER_COMMITS_RETAINED_DEFAULT = "10"
CLEAN_MAX_COMMITS = "hoodie.clean.trigger.max.commits"
CLEAN_MAX_COMMITS_DEFAULT = "10"
"""Commits between two cleans (Hudi's default: 1, a clean after every commit). A clean costs a
plan, its execution and a metadata-table commit of its own, about the same whatever it deletes:
warm batches into 5 tables cost 0.79x the CPU once cleaning ran every 10 commits instead of
every commit (BENCHMARKS.md, twelfth round). Trade-off: the file versions of up to 20 commits
stay on disk instead of 10. A table's `hoodie_options` may set it back to 1."""
RENAMED_KEYS = {"hoodie.clean.max.commits": CLEAN_MAX_COMMITS}
"""Keys hudi_cdc sets, by the older names Hudi still accepts (with a deprecation warning). Hudi
reads the current name first, so a table's `hoodie_options` value under the old name would lose
to hudi_cdc's default under the new one: it is passed under the new name."""
KEEP_MIN_COMMITS = "hoodie.keep.min.commits"
KEEP_MIN_COMMITS_DEFAULT = "40"
KEEP_MAX_COMMITS = "hoodie.keep.max.commits"
KEEP_MAX_COMMITS_DEFAULT = "50"
WRITE_TABLE_VERSION = "hoodie.write.table.version"
"""6 makes Hudi 1.2 write (and keep) a table that Hudi 0.14/0.15 readers read; 9 is its default."""
DATA_SKIPPING = "hoodie.enable.data.skipping"
"""A read option: off for the stored-row read (see `hudi.table.read_table`)."""
COMMIT_METADATA_PREFIX = "hoodie.datasource.write.commitmeta.key.prefix"
COMMIT_METADATA_PREFIX_DEFAULT = "_cdc_"
PAYLOAD_CLASS = "hoodie.datasource.write.payload.class"
ORDERING_FIELDS = "hoodie.datasource.write.precombine.field"
MERGE_STRATEGY = "hoodie.write.record.merge.strategy.id"
MERGER_CLASSES = ("hoodie.write.record.merge.custom.implementation.classes", "hoodie.datasource.write.record.merger.impls")
"""Hudi's record mergers (the current name and the older one Hudi still reads). Hudi's Avro
merger is what the fold's rows are written with; Spark's own (`OverwriteWithLatestSparkRecordMerger`)
fails every prepped upsert of Hudi 1.2.0 (ArrayIndexOutOfBoundsException in its merge handle),
needs Parquet log blocks on merge-on-read tables, and saved no CPU (BENCHMARKS.md, twenty-first
round), so a table may not choose one."""
HEARTBEAT_INTERVAL_MS = "hoodie.client.heartbeat.interval_in_ms"
HEARTBEAT_INTERVAL_MS_DEFAULT = 60_000
HEARTBEAT_TOLERABLE_MISSES = "hoodie.client.heartbeat.tolerable.misses"
HEARTBEAT_TOLERABLE_MISSES_DEFAULT = 2
PARALLELISM_KEYS = (
    "hoodie.upsert.shuffle.parallelism",
    "hoodie.insert.shuffle.parallelism",
    "hoodie.delete.shuffle.parallelism",
    "hoodie.finalize.write.parallelism",
    "hoodie.bulkinsert.shuffle.parallelism",
)

_KEYGEN = "org.apache.hudi.keygen."

OWNED = frozenset(
    {
        TABLE_NAME, TABLE_TYPE, OPERATION, RECORD_KEY, PARTITION_PATH, KEY_GENERATOR,
        HIVE_STYLE_PARTITIONING, MERGE_MODE, COMBINE_BEFORE_UPSERT, INDEX_TYPE,
        SIMPLE_INDEX_UPDATE_PARTITION_PATH, RECORD_INDEX, RECORD_INDEX_UPDATE_PARTITION_PATH, NULL_FOR_MISSING_COLUMNS, KEEP_MIN_COMMITS, KEEP_MAX_COMMITS,
        BUCKET_ENGINE, BUCKET_COUNT, BUCKET_HASH_FIELD,
        COMMIT_METADATA_PREFIX, PAYLOAD_CLASS, ORDERING_FIELDS, MERGE_STRATEGY, *MERGER_CLASSES, WRITE_TABLE_VERSION,
        *COMPACTION_KEYS,
    }
)  # fmt: skip
"""Keys a table's `hoodie_options` may not set: the fold's semantics, retention and compaction depend on them."""


def key_generator(table: TableConfig) -> str:
    """The key generator matching the table's key and partition columns."""
    if not table.partition_by:
        return _KEYGEN + ("NonpartitionedKeyGenerator" if len(table.key) == 1 else "ComplexKeyGenerator")
    if len(table.key) == 1 and len(table.partition_by) == 1:
        return _KEYGEN + "SimpleKeyGenerator"
    return _KEYGEN + "ComplexKeyGenerator"


def trailing_columns(table: TableConfig) -> tuple[str, ...]:
    """Columns written after every other one in the data files: a version-6 MOR table's partition columns.

    Why: Hudi 0.14's realtime reader (PrestoDB's `_rt`, Hive connector and Hudi connector alike)
    reads the base file of a file slice with log files through Avro in the *file's* column order
    whenever a timestamp column is selected, and hands that row to a deserializer that expects the
    metastore's order, where partition columns are not data columns. A partition column in the
    middle of the file shifts every later column (measured: a ClassCastException, or silently
    wrong values when the types happen to match). Last in the file, it is a trailing extra field.
    """
    if table.table_version == 6 and table.type == "MERGE_ON_READ":
        return tuple(table.partition_by)
    return ()


def index_options(table: TableConfig) -> dict[str, str]:
    """The index Hudi tags a batch's rows with (`TableConfig.index`).

    A key lives in one place: a global index moves a row whose partition column changed (spec §4).
    """
    if table.index == "record_level":
        # global by construction; without the metadata-table switch the index type alone is refused
        return {INDEX_TYPE: "GLOBAL_RECORD_LEVEL_INDEX", RECORD_INDEX: "true", RECORD_INDEX_UPDATE_PARTITION_PATH: "true"}
    if table.index == "bucket":
        # partition columns are key columns (TableConfig refuses others): a row never changes partition.
        # Hudi checks the hash field against the record key option wherever the bucket settings go
        # (writer, reader, the compaction procedure), and fails without it: both travel together.
        key = ",".join(table.key)
        return {INDEX_TYPE: "BUCKET", BUCKET_ENGINE: "SIMPLE", BUCKET_COUNT: str(table.buckets), BUCKET_HASH_FIELD: key, RECORD_KEY: key}
    return {INDEX_TYPE: "GLOBAL_SIMPLE" if table.partition_by else "SIMPLE", SIMPLE_INDEX_UPDATE_PARTITION_PATH: "true"}


BUCKET_LAYOUT = "bucket"


def index_layout(table: TableConfig) -> str:
    """The index as it shapes the table's files: `bucket:<buckets>`, or the index's name.

    Kept in every commit's metadata (`offsets.INDEX_KEY`), because Hudi keeps no record of a
    bucket index: see `stream.index_problems`.
    """
    return f"{BUCKET_LAYOUT}:{table.buckets}" if table.index == BUCKET_LAYOUT else table.index


def key_lookup_options(table: TableConfig) -> dict[str, str]:
    """Read options that let a key filter read only the files holding the keys (`hudi.table.read_keys`).

    Data skipping on, through the table's own index; the column-stats index off: its lookup is
    what deadlocked concurrent tables (see `hudi.table.read_table`), and a key filter needs none.
    """
    options = {DATA_SKIPPING: "true", COLUMN_STATS_INDEX: "false"}
    if table.index == "record_level":
        return options | {RECORD_INDEX: "true"}
    if table.index == "bucket":
        # the reader knows a bucket table only from these: Hudi keeps none of them in the table
        return options | index_options(table) | {BUCKET_QUERY_PRUNING: "true"}
    return options


def write_options(
    table: TableConfig, *, operation: str = OPERATION_UPSERT, parallelism: int = 2, prepped: bool = False
) -> dict[str, str]:
    """Hudi datasource options for writing folded rows into `table` (`operation`: see `writer.operation`).

    `parallelism`: tasks of Hudi's shuffles and of the file writes; the job passes Spark's default
    parallelism (the executors' cores), so a cluster writes with all of them. `prepped`: the rows
    carry their stored locations (`hudi.prepped`), so Hudi looks no key up.
    """
    options = {
        TABLE_NAME: table.name,
        TABLE_TYPE: table.type,
        OPERATION: operation,
        RECORD_KEY: ",".join(table.key),
        PARTITION_PATH: ",".join(table.partition_by),
        KEY_GENERATOR: key_generator(table),
        HIVE_STYLE_PARTITIONING: "true",
        MERGE_MODE: MERGE_MODE_DEFAULT,
        # keys are unique after the fold: skip Hudi's pre-combine shuffle
        COMBINE_BEFORE_UPSERT: "false",
        **index_options(table),
        COMPRESSION_CODEC: COMPRESSION_CODEC_DEFAULT,
        # a bulk insert keeps the fold's partitioning (coalesced to `parallelism`): no sort
        BULK_INSERT_SORT_MODE: "NONE",
        NULL_FOR_MISSING_COLUMNS: "true",
        CLEANER_COMMITS_RETAINED: CLEANER_COMMITS_RETAINED_DEFAULT,
        CLEAN_MAX_COMMITS: CLEAN_MAX_COMMITS_DEFAULT,
        # archival kept well above cleaning: engines that cannot read an archived timeline keep working
        KEEP_MIN_COMMITS: KEEP_MIN_COMMITS_DEFAULT,
        KEEP_MAX_COMMITS: KEEP_MAX_COMMITS_DEFAULT,
        COMMIT_METADATA_PREFIX: COMMIT_METADATA_PREFIX_DEFAULT,
        WRITE_TABLE_VERSION: str(table.table_version),
    }
    options.update({key: str(parallelism) for key in PARALLELISM_KEYS})
    if prepped:
        options[MERGE_INTO_PREPPED] = "true"
        # Hudi would take the rows' meta columns for new columns and refuse them; the rows carry
        # every column of the table anyway (the fold conforms them to it)
        options[NULL_FOR_MISSING_COLUMNS] = "false"
    if table.type == "MERGE_ON_READ":
        options.update(compaction_options(table.compaction))
    options.update({RENAMED_KEYS.get(key, key): _option_value(value) for key, value in table.hoodie_options.items()})
    return options


def _option_value(value: str | int | float | bool) -> str:
    """A YAML scalar as Hudi reads it (`true`, not Python's `True`)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def heartbeat_expiry_seconds(table: TableConfig) -> float:
    """How long Hudi trusts a writer's heartbeat after its last beat: interval x tolerable misses.

    A pending instant of a writer killed more recently than that is still taken as a live
    concurrent writer's (`failures.held_by_a_fresh_heartbeat`).
    """
    options = table.hoodie_options
    interval_ms = float(options.get(HEARTBEAT_INTERVAL_MS, HEARTBEAT_INTERVAL_MS_DEFAULT))
    misses = float(options.get(HEARTBEAT_TOLERABLE_MISSES, HEARTBEAT_TOLERABLE_MISSES_DEFAULT))
    return interval_ms * misses / 1000
