"""Spark's offset log in the job's checkpoint: where each batch was planned to start and end.

Spark writes `offsets/<batch id>` before it runs the batch, and the Kafka source's initial
offsets to `sources/0/0` when the checkpoint is new. Both are small files, read on the driver
after a batch: by `kafka_gaps` (what a lenient run went past) and by the Kafka lag metric
(`prometheus`). The planned end counts every offset the batch consumed, transaction markers
and aborted records included, which the records themselves do not show.
"""

from __future__ import annotations

import json

from pyspark.sql import SparkSession

from hudi_cdc.kafka.lag import Positions
from hudi_cdc.spark import fs


def planned_end(spark: SparkSession, checkpoint_dir: str, batch_id: int) -> Positions | None:
    """The offset after the last one batch `batch_id` consumed, per topic partition; None if the log lacks it.

    None without a read for a negative id: the job's own batches outside Spark's log (a parked
    table's catch-up) have no entry.
    """
    if batch_id < 0:
        return None
    return source_offsets(fs.read_text(spark, f"{checkpoint_dir}/offsets/{batch_id}"), line=2)


def planned_range(spark: SparkSession, checkpoint_dir: str, batch_id: int) -> tuple[Positions, Positions] | None:
    """Where batch `batch_id` was planned to start and end (end exclusive); None if the log lacks it.

    A batch starts where the one before it ended; the first batch of a checkpoint where its
    Kafka source's initial offsets say.
    """
    end = planned_end(spark, checkpoint_dir, batch_id)
    if batch_id > 0:
        start = planned_end(spark, checkpoint_dir, batch_id - 1)
    else:
        start = source_offsets(fs.read_text(spark, f"{checkpoint_dir}/sources/0/0"), line=1)
    return None if start is None or end is None else (start, end)


def source_offsets(text: str | None, *, line: int) -> Positions | None:
    """The Kafka source's offsets in a checkpoint file: `v1`, (an offset log's batch metadata), then JSON.

    The initial-offsets file starts with a zero byte, kept by Spark for old readers.
    """
    if text is None:
        return None
    lines = text.lstrip("\x00").splitlines()
    if len(lines) <= line or not lines[line].startswith("{"):
        return None
    parsed = json.loads(lines[line])
    return {topic: {str(p): int(o) for p, o in partitions.items()} for topic, partitions in parsed.items()}
