"""Every `hoodie.*` key hudi_cdc sets, named once: names only, so that any layer may import them.

A table's configuration becomes these options in `hudi/table_options.py`.

Why these values (docs/architecture.md, "Why a fold in Spark, not a Hudi payload"): the fold already produced each
key's complete final row, so the table keeps the latest commit's row (COMMIT_TIME_ORDERING) and
needs no pre-combining. Readers that merge log files themselves (Trino, hudi-rs) then agree.
"""

from __future__ import annotations

from hudi_cdc.events import CDC_PREFIX

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
METADATA_TABLE = "hoodie.metadata.enable"
"""Whether commits keep Hudi's metadata table (`hudi.table_options.metadata_table_kept`)."""
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
every commit (docs/performance-journal.md, round 12). Trade-off: the file versions of up to 20 commits
stay on disk instead of 10. A table's `hoodie_options` may set it back to 1."""
AUTO_CLEAN = "hoodie.clean.automatic"
"""Whether a commit runs Hudi's cleaner. Off for a commit after which no clean is due
(`hudi.retention.cleaning_options`): the cleaner would only list the timeline to find that out."""
ASYNC_CLEAN = ("hoodie.clean.async.enabled", "hoodie.clean.async")
"""Hudi's switch for a cleaner running beside the writer (the current name and the older one)."""
RENAMED_KEYS = {"hoodie.clean.max.commits": CLEAN_MAX_COMMITS}
"""Keys hudi_cdc sets, by the older names Hudi still accepts (with a deprecation warning). Hudi
reads the current name first, so a table's `hoodie_options` value under the old name would lose
to hudi_cdc's default under the new one: it is passed under the new name."""
KEEP_MIN_COMMITS = "hoodie.keep.min.commits"
KEEP_MIN_COMMITS_DEFAULT = "40"
KEEP_MAX_COMMITS = "hoodie.keep.max.commits"
KEEP_MAX_COMMITS_DEFAULT = "50"
AUTO_ARCHIVE = "hoodie.archive.automatic"
"""Whether a commit runs Hudi's archiver. Off for a commit after which nothing is over the bound
(`hudi.retention.archival_options`): the archiver would only list the timeline to find that out."""
WRITE_TABLE_VERSION = "hoodie.write.table.version"
"""6 makes Hudi 1.2 write (and keep) a table that Hudi 0.14/0.15 readers read; 9 is its default."""
DATA_SKIPPING = "hoodie.enable.data.skipping"
"""A read option: off for the stored-row read (see `hudi.table.read_table`)."""
QUERY_TYPE = "hoodie.datasource.query.type"
QUERY_READ_OPTIMIZED = "read_optimized"
"""A read of the latest base files alone, no log file merged (`hudi.table.read_base_locations`)."""
COMMIT_METADATA_PREFIX = "hoodie.datasource.write.commitmeta.key.prefix"
COMMIT_METADATA_PREFIX_DEFAULT = CDC_PREFIX
"""hudi_cdc's keys in a commit's extra metadata share its columns' prefix."""
PAYLOAD_CLASS = "hoodie.datasource.write.payload.class"
ORDERING_FIELDS = "hoodie.datasource.write.precombine.field"
MERGE_STRATEGY = "hoodie.write.record.merge.strategy.id"
MERGER_CLASSES = ("hoodie.write.record.merge.custom.implementation.classes", "hoodie.datasource.write.record.merger.impls")
"""Hudi's record mergers (the current name and the older one Hudi still reads). Hudi's Avro
merger is what the fold's rows are written with; Spark's own (`OverwriteWithLatestSparkRecordMerger`)
fails every prepped upsert of Hudi 1.2.0 (ArrayIndexOutOfBoundsException in its merge handle),
needs Parquet log blocks on merge-on-read tables, and saved no CPU (docs/performance-journal.md,
round 21), so a table may not choose one."""
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

# Compaction of merge-on-read tables (`hudi/compaction.py` sets them from `Compaction`)
INLINE = "hoodie.compact.inline"
SCHEDULE_INLINE = "hoodie.compact.schedule.inline"
TRIGGER_STRATEGY = "hoodie.compact.inline.trigger.strategy"
MAX_DELTA_COMMITS = "hoodie.compact.inline.max.delta.commits"
MAX_DELTA_SECONDS = "hoodie.compact.inline.max.delta.seconds"
ASYNC_COMPACTION = "hoodie.datasource.compaction.async.enable"
COMPACTION_KEYS = (INLINE, SCHEDULE_INLINE, TRIGGER_STRATEGY, MAX_DELTA_COMMITS, MAX_DELTA_SECONDS, ASYNC_COMPACTION)

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
