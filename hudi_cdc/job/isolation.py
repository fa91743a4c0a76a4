"""Failure isolation around one table's batch: which failures stop the table, which records to set aside.

A table's batch (`apply`, the steps in `job/table_batch.py`) can fail three ways, each handled here:
a killed run's Hudi heartbeat still fresh (wait and try again), a failure of the table, its storage
or Kafka (raise TableFailure: every part would fail alike), or a record that breaks a Spark job
(split the batch until it stands alone and dead-letter it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from hudi_cdc.commit.metrics import TableMetrics
from hudi_cdc.config.models import TableConfig
from hudi_cdc.dead_letters.store import raw_as_rejects
from hudi_cdc.errors import CdcError, TableFailure
from hudi_cdc.fold.tally import TableRecords, survey_table
from hudi_cdc.hudi.table_options import heartbeat_expiry_seconds
from hudi_cdc.job.context import BatchContext, dead_letter
from hudi_cdc.job.failures import KAFKA_FAULT, environment_fault, held_by_a_fresh_heartbeat
from hudi_cdc.spark.session import error_summary

log = logging.getLogger(__name__)

TableApply = Callable[[DataFrame, TableRecords, TableConfig, BatchContext], TableMetrics]
"""One table's batch applied: its records, what the survey found of them, the table, the batch."""

MAX_ISOLATED_RECORDS = 20
"""Records a table may lose to failure isolation in one batch before the job stops instead."""
HEARTBEAT_WAIT_MARGIN_SECONDS = 30.0
"""How long past the heartbeat's expiry (`table_options.heartbeat_expiry_seconds`: 120 s by Hudi's
defaults) a table's batch keeps waiting for a killed predecessor's pending instant before it stops."""
HEARTBEAT_POLL_SECONDS = 15.0
"""How often a batch refused for a fresh heartbeat is tried again."""


def apply_isolating(
    apply: TableApply, records: DataFrame, received: TableRecords, table: TableConfig, ctx: BatchContext
) -> TableMetrics:
    """Apply one table's records; a failure tied to some records never stops the table.

    A record can break a Spark job in ways decoding did not foresee (an expression that throws on
    one value). Retrying the batch would fail forever (a poison pill), so the records are split
    in halves until each failing record stands alone; those are dead-lettered with the error
    (`error_class` BatchFailure) and the rest is committed. Transient and configuration errors
    are raised, and so is the original error once more than MAX_ISOLATED_RECORDS records fail
    alone: that is no longer a bad record but a broken job, and Kafka keeps the batch. A failure
    of the table, its storage or Kafka (failures.py) is raised as TableFailure before any split:
    every part would fail alike.
    """
    try:
        return apply_waiting(apply, records, received, table, ctx)
    except CdcError:
        raise  # configuration or an unavailable service: not the fault of a record
    except Exception as first:
        _raise_if_environment_fault(first, received, table, ctx)
        log.warning(
            "table %s: batch %d failed (%s); splitting it to isolate the records that fail",
            table.name,
            ctx.batch_id,
            error_summary(first),
        )
        return _isolate(apply, records.persist(), table, ctx, first)


def apply_waiting(
    apply: TableApply, records: DataFrame, received: TableRecords, table: TableConfig, ctx: BatchContext
) -> TableMetrics:
    """`apply`, tried again while Hudi waits for a killed run's heartbeat to expire
    (`failures.held_by_a_fresh_heartbeat`): at most the table's heartbeat expiry plus
    HEARTBEAT_WAIT_MARGIN_SECONDS from the first try, the tries' own time included; past that,
    another writer really runs."""
    deadline = time.monotonic() + heartbeat_expiry_seconds(table) + HEARTBEAT_WAIT_MARGIN_SECONDS
    while True:
        try:
            return apply(records, received, table, ctx)
        except CdcError:
            raise
        except Exception as exc:
            if time.monotonic() >= deadline or not held_by_a_fresh_heartbeat(exc):
                raise
            log.warning(
                "table %s: batch %d: Hudi waits for the heartbeat of a pending instant of an earlier run "
                "(killed moments ago?) to expire; trying again in %.0f s",
                table.name, ctx.batch_id, HEARTBEAT_POLL_SECONDS,
            )  # fmt: skip
            time.sleep(HEARTBEAT_POLL_SECONDS)


def _isolate(apply: TableApply, records: DataFrame, table: TableConfig, ctx: BatchContext, first: Exception) -> TableMetrics:
    """Split `records` in halves until each failing record stands alone; dead-letter those, apply the rest."""
    metrics = TableMetrics(table=table.name)
    pending = [records]
    try:
        while pending:
            part = pending.pop()
            if part.isEmpty():
                continue
            received = survey_table(part, table.name)
            n = received.read
            try:
                metrics.absorb(apply(part, received, table, ctx))
                continue
            except CdcError:
                raise
            except Exception as exc:
                _raise_if_environment_fault(exc, received, table, ctx)
                if n > 1:
                    pending.extend(reversed(_halves(part)))
                    continue
                if metrics.isolated >= MAX_ISOLATED_RECORDS:
                    raise first from exc
                dead_letter(
                    raw_as_rejects(
                        part,
                        table=table.name,
                        error_class="BatchFailure",
                        message=f"this record alone fails the batch: {error_summary(exc)}; "
                        "it was isolated so the rest of the batch could be committed",
                    ),
                    ctx,
                )
                metrics.absorb(
                    TableMetrics(table=table.name, read=1, dead_letter=1, isolated=1,
                                 dead_letters_by_class={"BatchFailure": 1})
                )  # fmt: skip
    finally:
        records.unpersist()
    log.warning(
        "table %s: batch %d: %d record(s) isolated to the dead-letter store",
        table.name,
        ctx.batch_id,
        metrics.isolated,
    )
    return metrics


def _raise_if_environment_fault(exc: Exception, received: TableRecords, table: TableConfig, ctx: BatchContext) -> None:
    """Raise TableFailure when `exc` is a failure of the table, its storage or Kafka, not a record's."""
    reason = environment_fault(exc)
    if reason is None:
        return
    failure = TableFailure(
        table.name,
        batch_id=ctx.batch_id,
        positions=received.kafka.describe(),
        reason=reason,
        error=error_summary(exc),
        kafka=reason.startswith(KAFKA_FAULT),
    )
    log.error("%s", failure.cause)
    raise failure from exc


def _halves(part: DataFrame) -> list[DataFrame]:
    """Split records in two by Kafka position: by (topic, partition) when several, else by offset."""
    bounds = (
        part.groupBy("topic", "partition")
        .agg(F.min("offset").alias("lo"), F.max("offset").alias("hi"))
        .collect()
    )
    bounds.sort(key=lambda b: (b["topic"], b["partition"]))
    if len(bounds) > 1:
        first = bounds[: len(bounds) // 2]
        in_first = F.lit(False)
        for b in first:
            in_first = in_first | ((F.col("topic") == b["topic"]) & (F.col("partition") == b["partition"]))
        return [part.filter(in_first), part.filter(~in_first)]
    middle = (int(bounds[0]["lo"]) + int(bounds[0]["hi"])) // 2
    return [part.filter(F.col("offset") <= middle), part.filter(F.col("offset") > middle)]
