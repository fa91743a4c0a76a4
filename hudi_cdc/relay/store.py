"""The snapshot ledger on the warehouse's file system (local, HDFS, S3), through Hadoop FS.

Each write creates the next numbered file (`ledger-000007.json`) with an exclusive create and
never rewrites one: of two commands that write at once exactly one succeeds (the other gets
`LedgerConflict`), and a reader that meets a ledger still being written reads it again. The files before the
newest stay as the relay's history.
"""

from __future__ import annotations

import logging
import re

from pyspark.sql import SparkSession

from hudi_cdc.config.models import Config
from hudi_cdc.errors import ConfigError, LedgerConflict
from hudi_cdc.relay.ledger import Ledger
from hudi_cdc.spark import fs

log = logging.getLogger(__name__)

_FILE = re.compile(r"^ledger-(\d{6,})\.json$")
LEDGER_SUBDIR = "_hudi_cdc/snapshots"


def common_parent(paths: list[str]) -> str | None:
    """The deepest folder holding every path (URIs alike), or None when they share only the root/scheme."""
    parents = [p.rstrip("/").rsplit("/", 1)[0].split("/") for p in paths]
    shared: list[str] = []
    for parts in zip(*parents, strict=False):
        if len(set(parts)) != 1:
            break
        shared.append(parts[0])
    folder = "/".join(shared)
    # "", "/" or "s3a://bucket"-less prefixes ("s3a:", "s3a:/") hold nothing we may write next to
    return folder if folder.strip("/") and not folder.rstrip("/").endswith(":") else None


def ledger_folder(config: Config, *, source: str = "the configuration") -> str:
    """Where the connector's ledger lives: `connector.ledger_dir/<name>`, else beside the tables."""
    if config.connector is None:
        raise ConfigError(source, ["connector: the `hudi-cdc snapshot` commands need a `connector` section"])
    root = config.connector.ledger_dir
    if root is None:
        parent = common_parent([t.base_path for t in config.tables])
        if parent is None:
            raise ConfigError(
                source, ["connector.ledger_dir: the tables share no parent folder; name the ledger's folder"]
            )
        root = f"{parent}/{LEDGER_SUBDIR}"
    return f"{root.rstrip('/')}/{config.connector.name}"


def load(spark: SparkSession, folder: str) -> tuple[Ledger | None, int]:
    """The newest ledger in `folder` and its number; (None, 0) before the first `snapshot start`."""
    numbers = [int(m.group(1)) for name in fs.names(spark, folder) if (m := _FILE.match(name))]
    if not numbers:
        return None, 0
    newest = max(numbers)
    # a ledger just created by a concurrent `save` may still be empty on HDFS or a local disk
    ledger = fs.read_settled(spark, (_path(folder, newest),), Ledger.model_validate_json)
    if ledger is None:  # pragma: no cover - listed a moment ago; only a concurrent delete gets here
        raise LedgerConflict(_path(folder, newest))
    return ledger, newest


def save(spark: SparkSession, folder: str, ledger: Ledger, *, after: int) -> int:
    """Write `ledger` as the version after `after` (the one it was derived from); return its number."""
    number = after + 1
    path = _path(folder, number)
    if not fs.create_text(spark, path, ledger.model_dump_json(indent=2) + "\n"):
        raise LedgerConflict(path)
    log.info("snapshot ledger of %s saved: %s", ledger.connector, path)
    return number


def _path(folder: str, number: int) -> str:
    return f"{folder}/ledger-{number:06d}.json"
