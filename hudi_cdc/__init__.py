"""hudi_cdc: land Debezium change streams from Kafka in Apache Hudi tables, row for row.

The public Python API is `hudi_cdc.api`, re-exported here (docs/api.md)::

    from hudi_cdc import get_or_create_session, load_config, start

Importing the package imports neither Spark nor the job: each name is imported on first use,
so the CLI and `import hudi_cdc.errors` stay as light as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hudi_cdc.version import __version__

if TYPE_CHECKING:
    from hudi_cdc.api import (
        BACKFILL_BATCH,
        KAFKA_COLUMNS,
        BatchListener,
        BatchMetrics,
        CdcError,
        Config,
        ConfigError,
        JobQuery,
        RunSummary,
        SessionSettingsError,
        TableMetrics,
        TablesParked,
        TableStatus,
        apply_batch,
        get_or_create_session,
        load_config,
        run_once,
        start,
        status,
    )

__all__ = [
    "BACKFILL_BATCH",
    "KAFKA_COLUMNS",
    "BatchListener",
    "BatchMetrics",
    "CdcError",
    "Config",
    "ConfigError",
    "JobQuery",
    "RunSummary",
    "SessionSettingsError",
    "TableMetrics",
    "TableStatus",
    "TablesParked",
    "__version__",
    "apply_batch",
    "get_or_create_session",
    "load_config",
    "run_once",
    "start",
    "status",
]


def __getattr__(name: str) -> Any:
    """The API's names, imported from `hudi_cdc.api` on first use (PEP 562)."""
    if name in __all__:
        from hudi_cdc import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hudi_cdc' has no attribute {name!r}")
