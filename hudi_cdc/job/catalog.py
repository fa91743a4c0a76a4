"""The tables a job's templates make: each made when its topic's first records arrive, listed beside the checkpoint.

A table a template makes is a table like a declared one from then on (routes, preflight checks,
metastore sync, metrics). What the catalog adds is how it comes to exist while the job runs:
its name comes from the template, its key from the configuration, else from the Hudi table
already there, else from one Kafka key of the batch (`decode.key_fields`), and the checks the
job runs at start for declared tables run for it before its first write. The list of made tables
(`<checkpoint_dir>_tables.json`) lets a restart, `status` and the other commands know them
without reading Kafka; it is a record, not the truth: a lost file is rebuilt as records arrive.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import asdict, dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_cdc.avro.registry import fetcher_for
from hudi_cdc.config import locations
from hudi_cdc.config.models import Config, TableConfig
from hudi_cdc.decode.key_fields import KeyUnknown, key_fields
from hudi_cdc.hudi.table import created_with
from hudi_cdc.job.preflight import table_problems
from hudi_cdc.kafka.routing import TABLE_COLUMN
from hudi_cdc.spark import fs

log = logging.getLogger(__name__)


def catalog_path(checkpoint_dir: str) -> str:
    """Where a job lists the tables its templates made (beside its checkpoint)."""
    return checkpoint_dir.rstrip("/") + "_tables.json"


@dataclass(frozen=True)
class MadeTable:
    """What the job recorded of a table a template made: enough to make it again."""

    name: str
    topic: str
    key: list[str]


class Unmade(Exception):
    """A table the templates name that cannot be made now; its records are dead-lettered with this reason."""


class TableCatalog:
    """The declared tables and those the templates made; `config` is the whole set, as a Config."""

    def __init__(self, spark: SparkSession, config: Config) -> None:
        self.spark = spark
        self.declared = config
        self._lock = threading.Lock()
        self._made: dict[str, MadeTable] = {}
        self._tables: dict[str, TableConfig] = {}
        for made in read_made(spark, config):
            table = _remade(config, made)
            if table is None:
                log.warning(
                    "table %s (topic %s): no template makes it any more; its table is left as it is",
                    made.name,
                    made.topic,
                )
                continue
            self._made[made.name], self._tables[made.name] = made, table
        self.config = config.with_tables(list(self._tables.values()))
        self._unsaved = False

    def save(self) -> None:
        """List the made tables beside the checkpoint, if `make` added any since the last save.

        Once per batch, not per table: a first batch of a 200-table database writes one file, not 200.
        """
        with self._lock:
            if not self._unsaved:
                return
            text = json.dumps([asdict(m) for m in sorted(self._made.values(), key=lambda m: m.name)], indent=1)
            self._unsaved = False
        fs.replace_text(self.spark, catalog_path(self.declared.job.checkpoint_dir), text + "\n")

    def make(self, name: str, topics: list[str], routed: DataFrame) -> TableConfig:
        """Table `name` of `topics` (their records tagged `name` in `routed`), made and checked; Unmade if it cannot be."""
        topic = sorted(topics)[0]
        claims = [c for c in self.declared.template_claims(topic) if c[1] == name]
        if len(claims) != 1:
            raise Unmade(f"no single template makes table {name!r} of topic {topic!r}")
        template, _, groups = claims[0]
        stand_in = template.table(name, groups=groups, sample_key=True)
        key = (
            template.declared_key(name)
            or _stored_key(self.spark, stand_in.base_path)
            or _sampled_key(routed, name, stand_in, self.declared)
        )
        try:
            table = template.table(name, key=key, groups=groups)
        except ValueError as exc:
            raise Unmade(f"template {template.pattern!r} cannot make table {name!r}: {exc}") from None
        problems = locations.layout_problems(
            base_paths=[(t.name, t.base_path) for t in [*self.config.tables, table]],
            checkpoint_dir=self.declared.job.checkpoint_dir,
            dead_letter_path=self.declared.job.dead_letter_path,
        )
        problems += locations.base_path_problems([(name, table.base_path)], fs.HadoopFiles(self.spark))
        problems += table_problems(self.spark, [table])
        if problems:
            raise Unmade("; ".join(problems))
        with self._lock:
            self._made[name] = MadeTable(name=name, topic=topic, key=list(key))
            self._tables[name] = table
            self.config = self.declared.with_tables(list(self._tables.values()))
            self._unsaved = True
        log.info("table %s made from topic %s by template %r: key %s, %s, %s",
                 name, topic, template.pattern, key, table.type, table.base_path)  # fmt: skip
        return table


def read_made(spark: SparkSession, config: Config) -> list[MadeTable]:
    """The tables the job's templates made, as its last run listed them ([] when none or unreadable)."""
    if not config.templates:
        return []
    path = catalog_path(config.job.checkpoint_dir)
    try:
        made = fs.read_replaced_json(spark, path) or []
        return [MadeTable(name=m["name"], topic=m["topic"], key=list(m["key"])) for m in made]
    except (ValueError, KeyError, TypeError) as exc:
        log.warning(
            "%s is unreadable (%s): the made tables are found again as their records arrive", path, exc
        )
        return []


def with_made_tables(spark: SparkSession, config: Config) -> Config:
    """`config` with the tables its templates made (for commands other than `run`)."""
    made = [t for t in (_remade(config, m) for m in read_made(spark, config)) if t is not None]
    return config.with_tables(made)


def _remade(config: Config, made: MadeTable) -> TableConfig | None:
    claims = [c for c in config.template_claims(made.topic) if c[1] == made.name]
    if len(claims) != 1 or any(t.name == made.name for t in config.tables):
        return None
    template, _, groups = claims[0]
    try:
        return template.table(made.name, key=template.declared_key(made.name) or made.key, groups=groups)
    except ValueError as exc:
        log.warning(
            "table %s: the template no longer makes a valid table (%s); left as it is", made.name, exc
        )
        return None


def _stored_key(spark: SparkSession, base_path: str) -> list[str] | None:
    created = created_with(spark, base_path)
    return list(created.key) if created is not None and created.key else None


def _sampled_key(routed: DataFrame, name: str, table: TableConfig, config: Config) -> list[str]:
    """The key of table `name` from one Kafka key of its records in this batch (one small job, once per table)."""
    rows = (
        routed.filter((F.col(TABLE_COLUMN) == name) & F.col("key").isNotNull())
        .select("key")
        .limit(1)
        .collect()
    )
    fetcher = fetcher_for(config.schema_registry) if config.schema_registry is not None else None
    try:
        return key_fields(bytes(rows[0]["key"]) if rows else None, table, fetcher)
    except KeyUnknown as exc:
        raise Unmade(
            f"table {name!r} has no `key` in its template and {exc}; declare it in the template's "
            f"`key` or `overrides.{name}.key`, then replay the dead letters"
        ) from None
