"""A table's configuration -> its Hudi write, index and read options."""

from __future__ import annotations

from hudi_cdc.config.models import TableConfig
from hudi_cdc.hoodie_keys import (
    BUCKET_COUNT,
    BUCKET_ENGINE,
    BUCKET_HASH_FIELD,
    BUCKET_QUERY_PRUNING,
    BULK_INSERT_SORT_MODE,
    CLEAN_MAX_COMMITS,
    CLEAN_MAX_COMMITS_DEFAULT,
    CLEANER_COMMITS_RETAINED,
    CLEANER_COMMITS_RETAINED_DEFAULT,
    COLUMN_STATS_INDEX,
    COMBINE_BEFORE_UPSERT,
    COMMIT_METADATA_PREFIX,
    COMMIT_METADATA_PREFIX_DEFAULT,
    COMPRESSION_CODEC,
    COMPRESSION_CODEC_DEFAULT,
    DATA_SKIPPING,
    HEARTBEAT_INTERVAL_MS,
    HEARTBEAT_INTERVAL_MS_DEFAULT,
    HEARTBEAT_TOLERABLE_MISSES,
    HEARTBEAT_TOLERABLE_MISSES_DEFAULT,
    HIVE_STYLE_PARTITIONING,
    INDEX_TYPE,
    KEEP_MAX_COMMITS,
    KEEP_MAX_COMMITS_DEFAULT,
    KEEP_MIN_COMMITS,
    KEEP_MIN_COMMITS_DEFAULT,
    KEY_GENERATOR,
    MERGE_INTO_PREPPED,
    MERGE_MODE,
    MERGE_MODE_DEFAULT,
    METADATA_TABLE,
    NULL_FOR_MISSING_COLUMNS,
    OPERATION,
    OPERATION_UPSERT,
    PARALLELISM_KEYS,
    PARTITION_PATH,
    RECORD_INDEX,
    RECORD_INDEX_UPDATE_PARTITION_PATH,
    RECORD_KEY,
    RENAMED_KEYS,
    SIMPLE_INDEX_UPDATE_PARTITION_PATH,
    TABLE_NAME,
    TABLE_TYPE,
    WRITE_TABLE_VERSION,
)
from hudi_cdc.hudi.compaction import compaction_options

_KEYGEN = "org.apache.hudi.keygen."

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

    A key lives in one place: a global index moves a row whose partition column changed (semantics §4).
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
    bucket index: see `job.preflight.index_problems`.
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


def metadata_table_kept(table: TableConfig, *, has_one: bool) -> bool:
    """Whether the table's commits keep Hudi's metadata table, when `hoodie_options` does not say.

    Kept where it pays: `index: record_level` keeps its index there; a partitioned table's readers
    and simple index find its files there instead of listing every partition folder (many calls on
    an object store); and a table that already has one keeps it (Hudi would delete it otherwise).
    Left out for a new unpartitioned table with the simple or bucket index: its files are one
    folder's listing, and the metadata table's own delta commit, compactions and timeline cost
    every commit about a quarter of a small table's batch (docs/performance-journal.md, round 26).
    """
    return has_one or table.index == "record_level" or bool(table.partition_by)


def write_options(
    table: TableConfig,
    *,
    operation: str = OPERATION_UPSERT,
    parallelism: int = 2,
    prepped: bool = False,
    has_metadata_table: bool = False,
) -> dict[str, str]:
    """Hudi datasource options for writing folded rows into `table` (`operation`: see `writer.operation`).

    `parallelism`: tasks of Hudi's shuffles and of the file writes; the job passes Spark's default
    parallelism (the executors' cores), so a cluster writes with all of them. `prepped`: the rows
    carry their stored locations (`hudi.prepped`), so Hudi looks no key up. `has_metadata_table`:
    the table has a metadata table already (`metadata_table_kept`).
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
        METADATA_TABLE: str(metadata_table_kept(table, has_one=has_metadata_table)).lower(),
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
