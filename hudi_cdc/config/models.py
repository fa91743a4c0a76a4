"""Job configuration: frozen pydantic models, loaded once from YAML at the edge.

Inner code receives these models, never dicts. A bad file fails at start with the
file, the field and what is allowed (`ConfigError`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hudi_cdc.config import locations, route_regex
from hudi_cdc.config.connector import ConnectorSection
from hudi_cdc.config.durations import Duration
from hudi_cdc.config.env import substitute
from hudi_cdc.config.sql_types import type_problem
from hudi_cdc.config.tls import TlsFiles
from hudi_cdc.config.yaml_file import read_yaml
from hudi_cdc.errors import ConfigError
from hudi_cdc.events import DEFAULT_PLACEHOLDER, column_names_problem, placeholder_bytes
from hudi_cdc.hoodie_keys import OWNED

TableType = Literal["COPY_ON_WRITE", "MERGE_ON_READ"]
ImageMode = Literal["full", "patch", "flattened"]
DeleteMode = Literal["hard", "soft"]
TruncateMode = Literal["apply", "ignore"]
SchemaPolicy = Literal["safe", "allow_incompatible"]
TriggerStrategy = Literal["NUM_COMMITS", "TIME_ELAPSED", "NUM_OR_TIME", "NUM_AND_TIME"]
CompactionMode = Literal["inline", "schedule_only", "off"]
WireFormat = Literal["json", "avro", "auto"]
TableVersion = Literal[6, 9]
IndexKind = Literal["simple", "record_level", "bucket"]

# Kafka client keys whose values are secrets: never logged, never shown in repr.
_SECRET_KEY = re.compile(r"(password|secret|jaas|token|key\.pem|keystore\.key|credentials)", re.I)
ARCHIVE_AFTER_HOURS = 100
"""A table's default `archive_after_hours`: Trino's 72 h window plus any pair of time zones (at most
26 h apart), with 2 h to spare (see `hudi_cdc.hudi.retention`)."""
# Names we can safely use as Hive / Spark identifiers.
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KafkaSource(_Frozen):
    """Where the Debezium topics live."""

    bootstrap_servers: str
    """Comma-separated host:port list."""
    properties: dict[str, str] = Field(default_factory=dict, repr=False)
    """Extra Kafka client settings passed through as-is (security.protocol, sasl.*, ssl.*); the job
    reads `read_committed` unless `isolation.level` is set here. Values of secret-looking keys are
    never logged."""
    starting_offsets: Literal["earliest", "latest"] | dict[str, dict[str, int]] = "earliest"
    """Where a job with no checkpoint starts reading: `earliest`, `latest`, or per topic and
    partition the first offset to read (`{shop.inventory.orders: {"0": 1200, "1": -2}}`; -2 is
    the partition's earliest, -1 its latest). Spark then needs every partition of every topic the
    routes and templates match when the job starts; topics created later start at their earliest."""
    starting_timestamp: datetime | None = None
    """A job with no checkpoint starts each partition at its first record stamped at or after this
    time (ISO 8601, e.g. `2026-12-01T08:00:00Z`; Kafka's record timestamps), instead of
    `starting_offsets`; a partition with no such record starts at its end."""
    max_offsets_per_trigger: int | None = Field(default=None, gt=0)
    """Upper bound of records per micro-batch (None: everything available)."""
    min_partitions: int | None = Field(default=None, gt=0)
    """Spark tasks that read and decode a batch, at least (Spark's `minPartitions`): a larger
    topic-partition's range is split among several tasks. None: one task per topic-partition,
    so a single-partition topic (Debezium's usual layout) is decoded by one core."""
    fail_on_data_loss: bool = True
    """Stop when Kafka deleted records the checkpoint still needs (retention shorter than downtime)."""
    connect_timeout: Duration = timedelta(seconds=30)
    """How long `run` waits for the brokers to answer at start before it stops with an error."""

    @field_validator("starting_offsets", mode="before")
    @classmethod
    def _partitions_as_text(cls, value: Any) -> Any:
        # YAML reads `{orders: {0: 1200}}` with an int partition; Spark's JSON names it as text
        if isinstance(value, Mapping):
            return {t: ({str(p): o for p, o in parts.items()} if isinstance(parts, Mapping) else parts) for t, parts in value.items()}
        return value

    @field_validator("starting_offsets")
    @classmethod
    def _offsets(cls, value: str | dict[str, dict[str, int]]) -> str | dict[str, dict[str, int]]:
        if isinstance(value, dict):
            bad = [f"{topic}[{p}]: {o}" for topic, parts in value.items() for p, o in parts.items() if not p.isdigit() or o < -2]
            if bad or not value or not all(value.values()):
                raise ValueError(f"offsets by topic and partition number (>= 0; -2 earliest, -1 latest); wrong: {bad or value}")
        return value

    @field_validator("starting_timestamp")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("give the time zone (e.g. `2026-12-01T08:00:00Z`): Kafka's timestamps are UTC instants")
        return value

    def redacted_properties(self) -> dict[str, str]:
        """The pass-through properties with secret values masked, for logs and `status`."""
        return {k: ("***" if _SECRET_KEY.search(k) else v) for k, v in self.properties.items()}


class SchemaRegistry(_Frozen):
    """A Confluent-compatible schema registry, for tables whose records are Avro."""

    url: str
    """Base URL of the Confluent-compatible API, e.g. `http://registry:8080/apis/ccompat/v7` for Apicurio."""
    apicurio_url: str | None = None
    """Base URL of Apicurio's own v2 API (`http://registry:8080/apis/registry/v2`), which resolves
    the global and content ids Apicurio's serializer writes in Kafka headers. Default: derived
    from `url` when it is Apicurio's `/apis/ccompat/vN`."""
    username: str | None = None
    """HTTP basic auth user (with `password`), usually `${VAR}`."""
    password: str | None = Field(default=None, repr=False)
    """HTTP basic auth password; put a `${VAR}` reference here, never the secret itself."""
    tls: TlsFiles | None = None
    """For an https `url`: the CA that signed the registry's certificate (`ca_file`, a private CA) and
    the client certificate (`cert_file`, `key_file`) a registry asking for one gets; None: the
    system's trusted CAs, no client certificate."""
    request_timeout: Duration = timedelta(seconds=10)
    """How long one request may take."""
    retry_budget: Duration = timedelta(seconds=60)
    """How long a schema fetch is retried (with backoff) before the job stops without committing."""

    @field_validator("url", "apicurio_url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value

    @property
    def native_url(self) -> str | None:
        """`apicurio_url`, else the v2 API beside `url`'s Apicurio ccompat API; None when neither."""
        if self.apicurio_url is not None:
            return self.apicurio_url.rstrip("/")
        match = re.fullmatch(r"(.*)/apis/ccompat/v[0-9]+/?", self.url)
        return f"{match.group(1)}/apis/registry/v2" if match else None


class HiveSync(_Frozen):
    """Hive Metastore registration of one table."""

    enabled: bool = True
    """Register this table in the Hive Metastore after its commits (when `job.metastore_uris` is set); false skips it."""
    database: str = "default"
    """The metastore database (a Hive identifier)."""
    table: str | None = None
    """Defaults to the table's name. MOR tables appear as <table>_ro and <table>_rt."""

    @field_validator("database", "table")
    @classmethod
    def _identifier(cls, value: str | None) -> str | None:
        if value is not None and not IDENTIFIER.match(value):
            raise ValueError(f"{value!r} is not a Hive identifier (letters, digits, _; not starting with a digit)")
        return value


class Compaction(_Frozen):
    """When merge-on-read tables compact their log files (Hudi HUDI-1381 trigger strategies)."""

    mode: CompactionMode = "inline"
    """inline: schedule and run after a commit; schedule_only: `hudi-cdc compact` runs it; off."""
    strategy: TriggerStrategy = "NUM_OR_TIME"
    """When a compaction is due: after `max_delta_commits` delta commits (NUM_COMMITS), after
    `max_delta_seconds` (TIME_ELAPSED), after either (NUM_OR_TIME) or after both (NUM_AND_TIME)."""
    max_delta_commits: int = Field(default=10, gt=0)
    """Delta commits since the last compaction that make one due (NUM_* strategies)."""
    max_delta_seconds: int = Field(default=1800, gt=0)
    """Seconds since the last compaction that make one due (*_TIME and TIME_ELAPSED strategies)."""


class TableConfig(_Frozen):
    """One Hudi table fed by one or more Debezium topics."""

    name: str
    """Table name (also the Hudi table name and the default Hive table name)."""
    key: list[str] = Field(min_length=1)
    """Record key columns, from the Kafka key or, when the key is absent, from the row."""
    base_path: str
    """Table location: a local path, file:/, s3a:// or hdfs:// URI."""
    type: TableType = "COPY_ON_WRITE"
    """COPY_ON_WRITE rewrites the files a commit touches; MERGE_ON_READ appends log files that a
    compaction merges later (`compaction`). Fixed when the table is created (Hudi keeps it in
    `hoodie.properties`): the job refuses to start when it differs from the table's."""
    partition_by: list[str] = Field(default_factory=list)
    """Partition columns. A key lives in one partition: a changed value moves the row (a global
    index). Fixed when the table is created, like `key` and `type`."""
    ordering: str = "source"
    """How a key's events are ordered. `source`: by the connector's position (binlog file and
    position, else PostgreSQL's lsn, else `source.ts_ms`/`ts_ms`, then the Kafka position; an
    empty binlog file name with position 0 counts as no position). `kafka`: by Kafka partition
    and offset alone, for producers that write no position at all (Flink SQL's `debezium-json`);
    exact only when each key's changes sit in one partition in event order, as keyed Debezium
    topics hold them. Otherwise the name of a numeric, timestamp or date column. Choose it when
    the table is created: orders of different kinds do not compare."""
    mode: ImageMode = "full"
    """full: Debezium row images; patch: messages carry only the changed fields; flattened:
    Debezium's ExtractNewRecordState rows (the row at the top level, `__deleted` from
    `delete.tombstone.handling.mode=rewrite`, `__op`, `__ts_ms` and `__source_*` from `add.fields`).
    A flattened table never stores a column named `__deleted`: the SMT's delete mark has that name
    whatever the prefix."""
    flattened_prefix: str = Field(default="__", min_length=1)
    """mode flattened: what the SMT puts before the fields it adds (its `add.fields.prefix`).
    Fields whose names start with it are metadata, never columns (nor is `__deleted`, which the
    SMT names so whatever this prefix)."""
    flattened_header_prefix: str = Field(default="__", min_length=1)
    """mode flattened: what the SMT puts before the Kafka headers it adds (its `add.headers.prefix`).
    Metadata missing from a row's fields is read from those headers (`__op`, `__source_pos`...)."""
    format: WireFormat = "json"
    """How values are encoded: json (JsonConverter); avro (Confluent wire format: byte 0, a 4-byte
    schema id, the Avro body; or the body alone with Apicurio's id headers; needs `schema_registry`);
    auto (per record: Avro when an Apicurio id header names it or the first byte is 0, which JSON
    text never starts with, else JSON)."""
    key_format: WireFormat | None = None
    """How Kafka keys are encoded; None: as `format`."""
    patch_field: str = "data"
    """In patch mode, the JSON field that holds the changed columns."""
    deletes: DeleteMode = "hard"
    """hard: a deleted row is removed; soft: it stays with `_cdc_deleted = true` and its data
    columns NULL, and its delete order stays with it (semantics §3)."""
    truncate: TruncateMode = "apply"
    """apply: a truncate deletes every row written before it; ignore: truncates are logged and
    counted as `truncate_ignored`, and change nothing."""
    unavailable_value_placeholder: str = DEFAULT_PLACEHOLDER
    """The PostgreSQL connector's `unavailable.value.placeholder` (a text, or `hex:` and octets):
    an unchanged TOASTed column arrives as this value, shaped like the column's type
    (`decode.toast.toast_values`), and keeps its stored value."""
    columns: dict[str, str | dict[str, Any]] = Field(default_factory=dict)
    """Column -> Spark SQL type, or the column's Kafka Connect schema (a mapping such as
    `{type: bytes, name: org.apache.kafka.connect.data.Decimal, parameters: {scale: "2"}}`) for
    values in Debezium's encodings (base64 decimals, epoch days/ms/µs). Required when the topic
    carries no schema (schemas.enable=false)."""
    hive: HiveSync = Field(default_factory=HiveSync)
    """How the table is registered in the Hive Metastore."""
    compaction: Compaction = Field(default_factory=Compaction)
    """When a merge-on-read table compacts its log files (ignored for copy-on-write)."""
    schema_policy: SchemaPolicy = "safe"
    """safe: a source schema change other than a new column, a dropped column or a widening stops
    the table (its records go to the dead-letter store as SchemaChangeError); allow_incompatible:
    such changes are written (semantics §7)."""
    hoodie_options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    """Extra Hudi write options (file sizing, parallelism, metadata table, ...), applied after
    hudi_cdc's own. Keys hudi_cdc sets for correctness (record key, merge mode, index, retention,
    compaction: see `hoodie_keys.OWNED`) are refused; set compaction through `compaction`."""
    index: IndexKind = "simple"
    """How a batch finds where its keys are stored. `simple`: Hudi's (GLOBAL_)SIMPLE index; Hudi's
    tagging and the stored-row read both read every data file, so a batch costs more as the
    table grows. `record_level`: Hudi's global record-level index in the metadata table; Hudi
    tags by key lookups, and the stored-row read reads only the files holding the batch's keys
    (see `stored_state.index_lookup_column` for the keys it applies to). Each commit also
    updates the index; switching an existing table builds it from every file once. `bucket`:
    Hudi's bucket index: a key's file group is a hash of the key (`buckets` per partition), so
    Hudi's tagging reads no file, and the stored-row read reads only the buckets of the batch's
    keys (same keys as `record_level`). It finds a key within its partition only, so a
    partitioned table may use it only when its partition columns are key columns (a row then
    never moves). The index and `buckets` are fixed when the table is created."""
    buckets: int = Field(default=8, gt=0)
    """File groups per partition of `index: bucket` (Hudi's `hoodie.bucket.index.num.buckets`).
    Every commit rewrites (copy-on-write) or appends to (merge-on-read) each bucket it touches;
    a bucket is one file group whatever its size, so choose about the table's size divided by
    the file size you want (Hudi's own target is 120 MB). Fixed when the table is created: Hudi keeps writing with another count,
    and a key then lives in two file groups (measured), so the job refuses to start."""
    prepped_writes: bool = True
    """Whether an upsert hands Hudi each stored row's location (`hudi.prepped`), so that Hudi skips
    its own index lookup. Applies to tables without `partition_by` that use `index: simple` or
    `record_level`; elsewhere it has no effect. It costs reading and carrying Hudi's meta columns
    of the stored rows: measured, it saves 9-10% CPU on a 1M-row table and 6-13% on 500k rows,
    breaks even near 200k and costs 2-9% on tables of 20k-100k rows (docs/performance-journal.md,
    rounds 15 and 16). Never changes what
    the table holds, so it may be switched at any batch."""
    archive_after_hours: int | None = Field(default=ARCHIVE_AFTER_HOURS, ge=1)
    """Hours a commit stays in the table's active timeline before Hudi's archiver may move it to
    the archived (LSM) timeline. 100 (the default) keeps the table readable by Trino 476 (Hudi
    1.0.x inside), whose every query of a table fails once an instant of its last 72 hours is
    archived (72 h plus any difference of time zones; docs/querying.md); Trino's Hudi plugin still
    has no reader for the archived timeline's files in 483. The cost grows with the commit rate:
    every commit of the table lists and loads its active timeline, and on a local file system a
    batch measured 1.85x its CPU at 2,000 commits kept against 100 (about 1.2 ms more per commit
    kept; 6 ms where the table keeps a metadata table; a 30 s trigger keeps about 12,000), where on
    HDFS it measured 0.66x at 1,000 (docs/performance.md, "A long timeline"). `null`: Hudi's own
    bound (the active timeline keeps 40 to 50 commits), for a table no Trino reads: Spark, and
    PrestoDB on version-6 tables, read an archived timeline."""
    table_version: TableVersion = 9
    """Hudi table version to write, fixed when the table is created. 9: Hudi 1.x (read by Spark,
    hudi-rs and Trino 476, whose `_rt` is not a snapshot). 6: the format Hudi 0.14/0.15 readers
    understand, so PrestoDB 0.287 answers `_rt` with the merged snapshot; gives up what Hudi 1.x
    adds (LSM timeline, secondary and expression indexes, partial updates, non-blocking
    concurrency control). A merge-on-read table at 6 writes its partition columns last in the
    data files (see `hudi.table_options.trailing_columns`), and a new source column stops it
    (SchemaChangeError) unless `schema_policy: allow_incompatible`: Presto cannot read `_rt`
    after a column is added (see `schema_check.diff`)."""

    @property
    def may_be_avro(self) -> bool:
        """The table's values or keys may be Avro (`format` or `key_format` not json)."""
        return self.format != "json" or (self.key_format or self.format) != "json"

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not IDENTIFIER.match(value):
            raise ValueError(f"{value!r} is not a valid table name (letters, digits, _)")
        return value

    @field_validator("unavailable_value_placeholder")
    @classmethod
    def _placeholder(cls, value: str) -> str:
        placeholder_bytes(value)  # raises on a bad `hex:` value or an empty one
        return value

    @field_validator("hoodie_options")
    @classmethod
    def _hoodie_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        foreign = sorted(k for k in value if not k.startswith("hoodie."))
        if foreign:
            raise ValueError(f"{foreign} are not Hudi options (keys start with `hoodie.`)")
        owned = sorted(k for k in value if k in OWNED)
        if owned:
            raise ValueError(f"{owned} are set by hudi_cdc for correctness and cannot be overridden")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> TableConfig:
        names_problem = column_names_problem(self.columns)
        if names_problem:
            raise ValueError(f"`columns`: {names_problem}")
        types = [f"{name}: {p}" for name, ddl in self.columns.items() if isinstance(ddl, str) and (p := type_problem(ddl))]
        if types:
            raise ValueError("`columns`: " + "; ".join(types))
        if self.columns:
            missing = [k for k in [*self.key, *self.partition_by] if k not in self.columns]
            if missing:
                raise ValueError(f"key/partition columns {missing} are not among `columns` {list(self.columns)}")
        if self.mode == "patch" and not self.columns:
            raise ValueError("patch tables need `columns` (patch messages carry no schema)")
        if self.mode == "patch" and self.format != "json":
            raise ValueError("patch tables read JSON only (`format: json`)")
        if self.index == "record_level" and str(self.hoodie_options.get("hoodie.metadata.enable", True)).lower() == "false":
            raise ValueError("`index: record_level` keeps its index in Hudi's metadata table: "
                             "remove `hoodie.metadata.enable: false` from `hoodie_options`")
        if self.index == "bucket" and not set(self.partition_by) <= set(self.key):
            raise ValueError("`index: bucket` finds a key within its partition only, so a row whose "
                             f"partition columns {self.partition_by} change would be kept twice: use it "
                             "unpartitioned or partitioned by key columns, or use `index: record_level`")
        if "buckets" in self.model_fields_set and self.index != "bucket":
            raise ValueError("`buckets` applies to `index: bucket` only")
        if self.mode == "patch" and self.ordering == "source":
            raise ValueError("patch tables need `ordering`: the message field that orders them, e.g. `ts`")
        return self

    @property
    def hive_table(self) -> str:
        return self.hive.table or self.name


class Route(_Frozen):
    """Topic (exact name or regex) -> table name."""

    topic: str | None = None
    """An exact topic name (give either `topic` or `pattern`)."""
    pattern: str | None = None
    """A regex matched against the whole topic name, e.g. `shop\\.inventory\\.orders_\\d+`."""
    table: str
    """The name of the table (in `tables`) the topic feeds."""

    @model_validator(mode="after")
    def _one_of(self) -> Route:
        if (self.topic is None) == (self.pattern is None):
            raise ValueError("a route names exactly one of `topic` or `pattern`")
        if self.pattern is not None:
            problems = route_regex.problems(self.pattern)
            if problems:
                raise ValueError("; ".join(problems))
        return self

    def matches(self, topic: str) -> bool:
        """Whether this route maps `topic` (its exact name, or its pattern matching the whole name)."""
        if self.topic is not None:
            return self.topic == topic
        return self.pattern is not None and route_regex.compiled(self.pattern).fullmatch(topic) is not None


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_DERIVED = ("name", "key", "base_path")
"""TableConfig fields a template derives for each table (never in its `settings`)."""


class TableTemplate(_Frozen):
    """Many tables from one rule: every topic `pattern` matches feeds a table of its own, named from the match."""

    pattern: str
    """A regex matched against the whole topic name, with named groups in Java's spelling, e.g.
    `shop\\.inventory\\.(?<table>[a-z_]+)`. A topic an explicit `routes` entry takes is not the
    template's; a topic two templates match is dead-lettered as ambiguous."""
    name: str = "{table}"
    """The table's name, with `{group}` placeholders for the pattern's named groups; it must come
    out a valid table name (letters, digits, _), else the topic's records are dead-lettered."""
    base_path: str
    """The table's location, with `{name}` (the derived table name) and `{group}` placeholders,
    e.g. `s3a://lake/inventory/{name}`."""
    key: list[str] | None = Field(default=None, min_length=1)
    """Record key columns of every table; None: each table's key is the fields of its topic's
    Kafka key (Debezium keys a record by the table's primary key), read from the first record
    (JSON, with or without a schema, or Confluent-framed Avro) or, after a restart, from the
    table's `hoodie.properties`."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """Every other table setting (`type`, `deletes`, `compaction`, `index`, `hive.database`...),
    as in `tables`, shared by the template's tables."""
    overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Derived table name -> settings that replace the template's for that table (`key`,
    `hive.table` and `base_path` included)."""

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str) -> str:
        problems = route_regex.problems(value)
        if problems:
            raise ValueError("; ".join(problems))
        return value

    @model_validator(mode="after")
    def _consistent(self) -> TableTemplate:
        groups = set(route_regex.compiled(self.pattern).groupindex)
        for field, allowed in (("name", groups), ("base_path", groups | {"name"})):
            unknown = sorted(set(_PLACEHOLDER.findall(getattr(self, field))) - allowed)
            if unknown:
                raise ValueError(
                    f"`{field}` uses {unknown}, which the pattern does not define "
                    f"(its named groups: {sorted(groups)}"
                    + (", and {name}" if field == "base_path" else "")
                    + ")"
                )
        if "{" not in self.base_path:
            raise ValueError(
                "`base_path` has no placeholder: every table of the template would share one folder; use {name}"
            )
        derived = sorted(set(_DERIVED) & set(self.settings))
        if derived:
            raise ValueError(
                f"`settings` may not set {derived}: the template derives them (`name`, `key`, `base_path` of the template)"
            )
        if "table" in (self.settings.get("hive") or {}):
            raise ValueError(
                "`settings.hive.table` would give every table one metastore name; set it in `overrides`"
            )
        self.sample()  # the settings must make a valid table
        for name, override in self.overrides.items():
            if "name" in override:
                raise ValueError(f"`overrides.{name}` may not rename the table")
            self.table(name, sample_key=True)
        return self

    def match(self, topic: str) -> dict[str, str] | None:
        """The named groups of `topic` when the pattern matches all of it, else None."""
        found = route_regex.compiled(self.pattern).fullmatch(topic)
        return None if found is None else {k: v or "" for k, v in found.groupdict().items()}

    def derive_name(self, groups: dict[str, str]) -> str:
        """The table name the template gives a topic with these named groups."""
        return self.name.format_map(groups)

    def declared_key(self, name: str) -> list[str] | None:
        """The key the configuration gives table `name` (its override, else the template's), or None."""
        key = self.overrides.get(name, {}).get("key", self.key)
        return list(key) if key is not None else None

    def table(
        self,
        name: str,
        *,
        key: list[str] | None = None,
        groups: dict[str, str] | None = None,
        sample_key: bool = False,
    ) -> TableConfig:
        """Table `name` of this template, with `key` (else the declared one); ValueError if the settings do not make one.

        `sample_key`: when no key is known, a stand-in checks the other settings (at `validate`).
        """
        override = dict(self.overrides.get(name, {}))
        key = key or self.declared_key(name)
        if key is None and sample_key:
            columns = override.get("columns", self.settings.get("columns")) or {"id": "bigint"}
            key = [next(iter(columns))]
        base_path = override.pop("base_path", None) or self.base_path.format_map(
            {**(groups or {}), "name": name}
        )
        settings = {**self.settings, **{k: v for k, v in override.items() if k != "key"}}
        try:
            return TableConfig.model_validate({**settings, "name": name, "key": key, "base_path": base_path})
        except ValidationError as exc:
            raise ValueError("; ".join(_format_problem(dict(e)) for e in exc.errors())) from None

    def sample(self) -> TableConfig:
        """A table of this template with stand-in name and key: its settings, checked."""
        return self.table("template_sample", sample_key=True)


def _hadoop_text(value: Any) -> Any:
    """A YAML scalar as Hadoop's text (`true`, not Python's `True`); anything else as is, for the model to refuse."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value) if isinstance(value, int | float) else value


class JobConfig(_Frozen):
    """The ingestion job as a whole."""

    name: str = "hudi-cdc"
    """The job's name: its streaming query's and Spark application's, the `pipeline` label of its metrics,
    and the job recorded in its commit metadata and dead letters."""
    checkpoint_dir: str
    """Structured Streaming checkpoint; one per job, so a rerun continues where it stopped. Not inside
    any table's `base_path`."""
    dead_letter_path: str
    """Parquet folder (not a Hudi table) of the records the job rejects, partitioned by table; not
    inside any table's `base_path`."""
    trigger_interval: Duration = timedelta(seconds=30)
    """How often a continuous run starts a micro-batch, e.g. `30 seconds`, `5 minutes`."""
    dead_letter_retention: Duration | None = None
    """Dead letters older than this are deleted by `hudi-cdc dead-letters purge` and at job start; None keeps them."""
    metastore_uris: str | None = None
    """thrift://host:port of the Hive Metastore; None disables Hive sync for every table."""
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    """A continuous run serves Prometheus metrics on http://<driver>:<port>/metrics; None: off."""
    metrics_textfile: str | None = None
    """Local file the metrics are written to after every batch (node_exporter textfile collector, `*.prom`)."""
    metrics_pushgateway: str | None = Field(default=None, min_length=1)
    """Prometheus Pushgateway (`http://host:9091`) the metrics are pushed to after every batch and when
    the run ends, also with an error, as the group `job="hudi_cdc"`, `pipeline=<name>`; for scheduled
    (`--once`) runs whose driver may land on any node. None: no push."""
    on_table_failure: Literal["park", "stop"] = "park"
    """What a failure of one table's storage or Hudi table does (`TableFailure`; Kafka's failures
    always stop the job). park: the table is set aside and the others go on; it catches up from
    Kafka, in order, when a retry succeeds (docs/operations.md, parked tables); a `--once` run
    then exits 1 naming it. stop: the job stops and Kafka keeps the batch."""
    table_concurrency: int = Field(default=1, ge=1, le=64)
    """Tables of one batch processed at once, each in its own driver thread of the same Spark application; 1: one after another. Either way a batch takes its tables oldest record first."""
    fold_together: bool = True
    """Fold a batch's small tables that fold alike (one template's tables: equal settings and
    columns) as one, each still committed on its own, a part per table thread; false: every table
    folds on its own. 0.86x the CPU one table at a time (6 tables), 0.91x three at a time over 200
    tables with a p95 as fresh (docs/performance.md)."""
    newer_by_rank: bool = True
    """Fold a large unpartitioned merge-on-read table's batch whose events are all full images newer
    than anything the table holds (its newest commit records the newest order it took) by each
    key's newest event, without reading the table's stored rows. With the simple index each row's
    file comes from the keys of the table's base files (no log file merged) and the upsert stays
    prepped; with the record-level index Hudi's index finds them. The same rows as the general
    fold. On by default: over 20 batches of 20k updates into a 1M-row table it cost 1.13x and
    1.23x the plain job's CPU against 1.59x and 1.48x with the stored rows read
    (docs/performance-journal.md, round 47)."""
    hadoop_conf: dict[str, str] = Field(default_factory=dict, repr=False)  # holds credentials
    """Hadoop settings for the job's storage (`fs.s3a.endpoint`, `fs.s3a.path.style.access`...), set on
    the session's Hadoop configuration before anything is read or written; they win over
    spark-submit's `--conf spark.hadoop.*`. Use `${VAR}` for credentials."""

    @field_validator("hadoop_conf", mode="before")
    @classmethod
    def _hadoop_values_as_text(cls, value: Any) -> Any:
        # Hadoop reads every setting as text; YAML gives `true` and `3` as bool and int
        if not isinstance(value, Mapping):
            return value
        return {key: _hadoop_text(v) for key, v in value.items()}

    @field_validator("hadoop_conf")
    @classmethod
    def _hadoop_keys_only(cls, value: dict[str, str]) -> dict[str, str]:
        # Set on the Hadoop configuration, a `spark.` key would be a Hadoop key of that very name,
        # which no file system reads: the setting would be lost without a word.
        for key in value:
            if key.startswith("spark.hadoop."):
                raise ValueError(f"{key!r}: write the Hadoop key itself, {key.removeprefix('spark.hadoop.')!r}")
            if key.startswith("spark."):
                raise ValueError(f"{key!r} is a Spark setting, not Hadoop's: give it to spark-submit (--conf)")
        return value


class Config(_Frozen):
    """The whole configuration file."""

    kafka: KafkaSource
    """Where the Debezium topics are read from."""
    job: JobConfig
    """The job's own folders, trigger, metastore and metrics."""
    tables: list[TableConfig] = Field(default_factory=list)
    """The Hudi tables the job writes, each with its own settings (with `routes`)."""
    templates: list[TableTemplate] = Field(default_factory=list)
    """Rules that make a table of every topic they match, including topics created while the job
    runs; the tables they made are listed in `<checkpoint_dir>_tables.json`."""
    routes: list[Route] = Field(default_factory=list)
    """Which topics feed which table in `tables`; needed when `tables` is not empty (the first route that matches a topic wins)."""
    connector: ConnectorSection | None = None
    """The Debezium connector `hudi-cdc snapshot` deploys (the snapshot relay); None: not used."""
    schema_registry: SchemaRegistry | None = None
    """Where Avro writer schemas come from; required when a table's `format`/`key_format` is avro or auto."""

    @model_validator(mode="after")
    def _routes_name_tables(self) -> Config:
        if not self.tables and not self.templates:
            raise ValueError("no `tables` and no `templates`: declare at least one table or template")
        names = [t.name for t in self.tables]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"table names must be unique, repeated: {dupes}")
        unknown = [r.table for r in self.routes if r.table not in names]
        if unknown:
            raise ValueError(f"routes name unknown tables {unknown}; declared tables: {names}")
        if self.tables and not self.routes:
            raise ValueError("no `routes`: map at least one topic or pattern to a table")
        claimed = [
            (r.topic, t.pattern)
            for r in self.routes
            for t in self.templates
            if r.topic and t.match(r.topic) is not None
        ]
        if claimed:
            raise ValueError(
                "; ".join(
                    f"topic {topic!r} is claimed by a route and by the template {pattern!r}: "
                    "narrow the template's pattern or remove the route"
                    for topic, pattern in claimed
                )
            )
        if self.connector is not None:
            unrouted = [t for t in self.connector.tables if self.table_of_topic(self.connector.topic(t)) is None]
            if unrouted:
                topics = [self.connector.topic(t) for t in unrouted]
                raise ValueError(
                    f"connector.tables {unrouted}: no route or template takes their topics {topics}"
                )
        samples = [*self.tables, *(t.sample() for t in self.templates)]
        avro = [t.name for t in samples if t.may_be_avro]
        if avro and self.schema_registry is None:
            raise ValueError(f"tables {avro} read Avro (`format`/`key_format`) but no `schema_registry` is configured")
        return self

    def table_of_topic(self, topic: str) -> str | None:
        """The table `topic` feeds: the first matching route's, else the one template that matches derives; or None."""
        for r in self.routes:
            if r.matches(topic):
                return r.table
        claims = self.template_claims(topic)
        return claims[0][1] if len(claims) == 1 and IDENTIFIER.match(claims[0][1]) else None

    def template_claims(self, topic: str) -> list[tuple[TableTemplate, str, dict[str, str]]]:
        """Every template matching `topic`, with the table name it derives and the named groups (one: the topic's template)."""
        claims = []
        for template in self.templates:
            groups = template.match(topic)
            if groups is not None:
                claims.append((template, template.derive_name(groups), groups))
        return claims

    def topic_problems(self, topic: str) -> list[str]:
        """Why `topic` has no single table: claimed by a route and a template, by two templates, or
        given a name that is not a table name ([]: it has one table, or none claims it)."""
        claims = self.template_claims(topic)
        routed = any(r.matches(topic) for r in self.routes)
        patterns = [template.pattern for template, _, _ in claims]
        if routed and claims:
            return [
                f"topic {topic!r} is claimed by a route and by the template(s) {patterns}: narrow the template or remove the route"
            ]
        if len(claims) > 1:
            return [f"topic {topic!r} is matched by the templates {patterns}; narrow their patterns"]
        bad = [name for _, name, _ in claims if not IDENTIFIER.match(name)]
        return (
            [f"topic {topic!r}: the template makes the name {bad[0]!r}, not a valid table name"]
            if bad
            else []
        )

    def table(self, name: str) -> TableConfig:
        return next(t for t in self.tables if t.name == name)

    def with_tables(self, made: list[TableConfig]) -> Config:
        """This configuration with `made` (tables its templates made) beside the declared tables."""
        return self.model_copy(update={"tables": [*self.tables, *made]})

    @property
    def reads_headers(self) -> bool:
        """Does a table need the Kafka records' headers? Flattened tables read the SMT's
        `add.headers`, Avro tables the schema ids Apicurio's serializer puts there; the job reads
        headers only when one of them is configured."""
        return any(
            t.mode == "flattened" or t.may_be_avro
            for t in [*self.tables, *(t.sample() for t in self.templates)]
        )

    def topic_pattern(self) -> str:
        """One regex covering every route and template, for Kafka's `subscribePattern`."""
        parts = [re.escape(r.topic) if r.topic else f"(?:{r.pattern})" for r in self.routes]
        parts += [f"(?:{route_regex.without_names(t.pattern)})" for t in self.templates]
        return "|".join(f"^(?:{p})$" for p in parts)


def _format_problem(error: dict[str, Any]) -> str:
    location = ".".join(str(part) for part in error["loc"]) or "<root>"
    return f"{location}: {error['msg'].removeprefix('Value error, ')}"


def _base_paths(config: Config) -> list[tuple[str, str]]:
    return [(t.name, t.base_path) for t in config.tables]


def parse_config(data: Any, *, source: str = "<config>") -> Config:
    """Validate a loaded YAML document; raise ConfigError naming `source` and each bad field.

    Checks the document alone (types, routes, folder layout), never the file system.
    """
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, [_format_problem(dict(e)) for e in exc.errors()]) from None
    problems = locations.layout_problems(
        base_paths=_base_paths(config),
        checkpoint_dir=config.job.checkpoint_dir,
        dead_letter_path=config.job.dead_letter_path,
    )
    if problems:
        raise ConfigError(source, problems)
    return config


def check_base_paths(config: Config, fs: locations.FileSystemView, *, source: str, local_only: bool) -> None:
    """Refuse base paths that exist but are not Hudi tables (local ones only, or every one)."""
    paths = _base_paths(config)
    if local_only:
        paths = [(name, path) for name, path in paths if locations.is_local(path)]
    problems = locations.base_path_problems(paths, fs)
    if problems:
        raise ConfigError(source, problems)


def load_config(source: str | os.PathLike[str] | Mapping[str, Any], *, environ: Mapping[str, str] | None = None) -> Config:
    """Load and validate a YAML configuration file, or a mapping holding what such a file holds;
    `${VAR}` and `${VAR:-default}` come from the environment.

    The file is parsed first and references are replaced in string values afterwards, so a
    value can never change the YAML structure; an unset variable is an error naming it, and
    no substituted value ever appears in an error message (secrets come from variables).
    Local base paths are checked on disk; remote ones at run start (`stream.run`). Errors
    name the file, or "the configuration" for a mapping.
    """
    if isinstance(source, Mapping):
        where, data = "the configuration", _plain(source)
    else:
        path = Path(source)
        where = str(path)
        try:
            data = read_yaml(path.read_text())
        except FileNotFoundError:
            raise ConfigError(where, ["file not found"]) from None
        except yaml.YAMLError as exc:
            raise ConfigError(where, [f"not valid YAML: {exc}"]) from None
    data, found = substitute(data, os.environ if environ is None else environ)
    if found.problems:
        raise ConfigError(where, found.problems)
    try:
        config = parse_config(data, source=where)
        check_base_paths(config, locations.LocalFiles(), source=where, local_only=True)
    except ConfigError as exc:
        raise ConfigError(where, [found.mask(p) for p in exc.problems]) from None
    return config


def _plain(node: Any) -> Any:
    """`node` as the dicts and lists a YAML file parses to (any Mapping, lists and tuples), copied."""
    if isinstance(node, Mapping):
        return {key: _plain(value) for key, value in node.items()}
    if isinstance(node, list | tuple):
        return [_plain(value) for value in node]
    return node
