"""Dead-lettered records run through the pipeline again (`hudi-cdc dead-letters replay`)."""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import SparkSession

from hudi_cdc.commit.metrics import BatchMetrics
from hudi_cdc.config.models import Config
from hudi_cdc.dead_letters.ops import Selection, select
from hudi_cdc.job.pipeline import BatchContext, run_batch
from hudi_cdc.kafka.headers import KAFKA_HEADERS, with_headers


def replay_dead_letters(
    spark: SparkSession,
    config: Config,
    *,
    tables: list[str],
    error_class: str | None = "SchemaChangeError",
    since: datetime | None = None,
    until: datetime | None = None,
) -> BatchMetrics:
    """Run dead-lettered records of `tables` through the pipeline again (e.g. after a schema fix).

    `error_class` None replays every class. Replaying is safe to repeat: the fold judges each
    event by its order, so events already applied count as duplicates and change nothing;
    a record that fails again is not stored twice (`dead_letter.store`).
    """
    selection = Selection(
        tables=tuple(tables), error_classes=(error_class,) if error_class else (), since=since, until=until
    )
    letters = select(spark, config.job.dead_letter_path, selection)
    if letters is None:
        return BatchMetrics(batch_id=-1)
    raw = with_headers(letters).select("key", "value", "topic", "partition", "offset", KAFKA_HEADERS)
    raw = raw.dropDuplicates(["topic", "partition", "offset"])
    # batch id -1 marks a replay in the commit metadata and the logs
    metrics = run_batch(raw, BatchContext(config=config, batch_id=-1))
    metrics.log()
    return metrics
