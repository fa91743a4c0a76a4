"""Materialize an intermediate result and cut its plan, and free it again.

Why: every DataFrame call (select, join, unionByName) and every action analyses and optimizes
the whole logical plan below it, on the driver. A batch's decode is one wide projection of
hundreds of expressions and the fold builds on it, so each later step re-planned all of it.
A checkpointed result is a one-node plan over blocks the executors already hold: what follows
plans against that. Measured on warm batches of 1k changes into a 10k-row table: 0.64x the CPU
and 10.7 -> 5.9 s of wall time per batch (docs/performance-journal.md, round 3).

The checkpoint is lazy: the first Spark job that reads it computes it and keeps its blocks, and
later jobs read the blocks. An eager one would compute it in a job of its own, which costs a
whole job's planning and scheduling per checkpoint (two per table and batch).

A local checkpoint lives in the executors' block managers (memory, spilling to disk). Spark
frees it only when the JVM's garbage collector notices the DataFrame is gone (by default at
most every 30 minutes), so the pipeline frees each one when its batch is done (`release`).
An executor lost mid-batch takes its blocks with it and fails the batch's next Spark job, before
Hudi commits; the table's batch is then split and run again from its Kafka records
(job.isolation.apply_isolating), so nothing is lost or applied twice.
"""

from __future__ import annotations

import logging

from pyspark.sql import DataFrame

log = logging.getLogger(__name__)


def checkpointed(df: DataFrame) -> DataFrame:
    """`df` under a one-node plan, computed by the first job that reads it and held by the executors."""
    return df.localCheckpoint(eager=False)


def release(df: DataFrame) -> None:
    """Free the executors' blocks of a `checkpointed` DataFrame; it cannot be used afterwards."""
    try:
        # the checkpoint's plan is a LogicalRDD over the checkpointed RDD
        df._jdf.queryExecution().analyzed().rdd().unpersist(False)
    except Exception as exc:  # an internal API: if it changes, Spark's cleaner still frees the blocks later
        log.debug("could not free a checkpoint now (%s); Spark's cleaner will", exc)
