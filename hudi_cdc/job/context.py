"""What every step of one batch may know, and the one door to the dead-letter store during a batch."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from pyspark.sql import DataFrame

from hudi_cdc.config.models import Config
from hudi_cdc.dead_letters import store as dead_letter_store
from hudi_cdc.job.catalog import TableCatalog
from hudi_cdc.job.parking import ParkingLot


@dataclass(frozen=True)
class BatchContext:
    """What every step of one batch may need to know."""

    config: Config
    """The declared tables and those the templates had made when the batch started."""
    batch_id: int
    catalog: TableCatalog | None = None
    """Makes the tables templates name for the first time; None: no table is made (records of
    such tables are dead-lettered)."""
    parking: ParkingLot | None = None
    """Where a table that fails as a table is parked; None: its failure stops the job."""


_DEAD_LETTER_WRITES = threading.Lock()
"""Concurrent tables append to one dead-letter folder; Spark's file commit is not safe for two at once."""


def dead_letter(rejects: DataFrame, ctx: BatchContext) -> None:
    """Append `rejects` (dead-letter rows) to the job's store, one table at a time."""
    with _DEAD_LETTER_WRITES:
        dead_letter_store.store(
            rejects, path=ctx.config.job.dead_letter_path, job=ctx.config.job.name, batch_id=ctx.batch_id
        )
