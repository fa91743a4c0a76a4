"""The job YAML's `connector:` section: the Debezium connector the snapshot relay deploys.

Frozen pydantic like the rest of the configuration (config.py includes it as `Config.connector`).
Secrets in `config` come from the environment through `${VAR}` (config_env.py); they are kept
out of `repr` and of every message.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hudi_cdc.config.tls import TlsFiles

# Keys the relay sets itself for every step (which tables, which snapshot mode, which schema
# history topic); a value in the YAML would be silently replaced, so it is refused instead.
RELAY_OWNED_KEYS = (
    "snapshot.mode",
    "table.include.list",
    "snapshot.include.collection.list",
    "database.include.list",
)
REQUIRED_KEYS = (
    "connector.class",
    "database.hostname",
    "database.port",
    "database.user",
    "database.password",
    "topic.prefix",
    "schema.history.internal.kafka.topic",
)
_SOURCE_TABLE = re.compile(r"^[A-Za-z0-9_$]+\.[A-Za-z0-9_$]+$")
_CONNECTOR_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class ConnectorSection(BaseModel):
    """A Debezium MySQL/MariaDB connector on a Kafka Connect cluster, for `hudi-cdc snapshot`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    connect_url: str
    """Kafka Connect REST URL, e.g. `http://connect:8083` (or https://)."""
    username: str | None = None
    """HTTP basic auth user of the Connect REST API (with `password`), usually `${VAR}`."""
    password: str | None = Field(default=None, repr=False)
    """HTTP basic auth password; put a `${VAR}` reference here, never the secret itself."""
    tls: TlsFiles | None = None
    """For an https `connect_url`: the CA that signed the workers' certificate (`ca_file`) and the
    client certificate (`cert_file`, `key_file`) for workers that ask for one; None: the system's CAs."""
    name: str
    """Connector name of the incremental (binlog) capture; snapshot runs are `<name>-snapshot-<n>`."""
    tables: list[str] = Field(min_length=1)
    """Source tables as `database.table`; topics are `<topic.prefix>.<database>.<table>`."""
    config: dict[str, str] = Field(repr=False)
    """The Debezium connector configuration (credentials via `${VAR}`), without the keys the relay sets."""
    ledger_dir: str | None = None
    """Folder of the snapshot ledger (local, hdfs://, s3a://); default `<tables' common parent>/_hudi_cdc/snapshots`."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _CONNECTOR_NAME.match(value):
            raise ValueError(f"{value!r} is not a connector name (letters, digits, `_`, `.`, `-`)")
        return value

    @field_validator("tables")
    @classmethod
    def _tables(cls, value: list[str]) -> list[str]:
        bad = [t for t in value if not _SOURCE_TABLE.match(t)]
        if bad:
            raise ValueError(f"source tables must be `database.table`, got {bad}")
        if len(set(value)) != len(value):
            raise ValueError(f"source tables repeat: {sorted({t for t in value if value.count(t) > 1})}")
        return value

    @field_validator("config")
    @classmethod
    def _config(cls, value: dict[str, str]) -> dict[str, str]:
        owned = [k for k in RELAY_OWNED_KEYS if k in value]
        if owned:
            raise ValueError(f"{owned} are set by `hudi-cdc snapshot` for each step; remove them from `config`")
        missing = [k for k in REQUIRED_KEYS if not value.get(k)]
        if missing:
            raise ValueError(f"missing Debezium settings {missing}")
        return value

    @property
    def topic_prefix(self) -> str:
        return self.config["topic.prefix"]

    def topic(self, source_table: str) -> str:
        """The Kafka topic Debezium writes `database.table` to."""
        return f"{self.topic_prefix}.{source_table}"
