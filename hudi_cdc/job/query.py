"""The running job as the caller holds it: Spark's StreamingQuery plus the work between batches."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from hudi_cdc.commit.metrics import BatchMetrics
from hudi_cdc.spark.session import activated

__all__ = ["JobQuery", "RunSummary"]

log = logging.getLogger(__name__)


@dataclass
class RunSummary:
    """What a run did: its batches' metrics, in order, and the tables still parked when it ended."""

    batches: list[BatchMetrics] = field(default_factory=list)
    parked: dict[str, str] = field(default_factory=dict)
    """table -> why it is parked (its records wait in Kafka; `hudi-cdc retry-table` or the next run)."""

    @property
    def read(self) -> int:
        """Kafka records read by every batch."""
        return sum(batch.read for batch in self.batches)


class JobQuery(StreamingQuery):
    """The job's streaming query: Spark's `StreamingQuery` (`stop`, `lastProgress`, `status`,
    `awaitTermination`...), which also does the job's work between batches and raises its errors.

    While the query runs, a daemon thread calls `between_batches` every `interval` seconds (the
    metastore syncs that lag, parked tables that are due) and `wrap_up` once it ended. A batch
    that stopped the job surfaces from `awaitTermination` as hudi_cdc's own error (what to do),
    not as Spark's StreamingQueryException.
    """

    def __init__(
        self,
        query: StreamingQuery,
        *,
        spark: SparkSession,
        interval: int,
        between_batches: Callable[[], None],
        failure: Callable[[StreamingQueryException], BaseException],
        wrap_up: Callable[[bool], dict[str, str]],
        summary: RunSummary | None = None,
    ) -> None:
        super().__init__(query._jsq)
        self.summary = summary if summary is not None else RunSummary()
        """The batches so far (the job's listener adds each) and, once the query ended, the tables still parked."""
        self.session = spark
        """The session the job's queries run in: a copy of the caller's with the job's settings, or
        the caller's own when it has them (`for_job`)."""
        self._interval = interval
        self._between_batches = between_batches
        self._failure = failure
        self._wrap_up = wrap_up
        self._error: BaseException | None = None
        self._tender = threading.Thread(target=self._tend, name=f"hudi-cdc-{self.name}", daemon=True)
        self._tender.start()

    @property
    def last_batch(self) -> BatchMetrics | None:
        """The metrics of the newest batch, or None before the first one."""
        return self.summary.batches[-1] if self.summary.batches else None

    def awaitTermination(self, timeout: int | None = None) -> bool | None:
        """Wait until the query ends (or `timeout` seconds), as Spark's; a job stopped by an error raises it.

        Raises:
            CdcError: what stopped the job (a table's failure, Kafka away, records Kafka deleted...).
            StreamingQueryException: any other failure of the query.
        """
        try:
            ended = super().awaitTermination(timeout)
        except StreamingQueryException as exc:
            self._tender.join()
            error = self._error or self._failure(exc)
            if error is exc:
                raise
            # ours keeps its own cause (e.g. Hudi's exception); Spark's text only wraps it
            raise error from error.__cause__ or exc
        if ended is False:
            return ended
        self._tender.join()
        if self._error is not None:
            raise self._error
        return ended

    def stop(self) -> None:
        """Stop the query, then finish the work after it (the last metastore sync, the metrics' last counts)."""
        super().stop()
        if threading.current_thread() is not self._tender:
            self._tender.join()

    def _tend(self) -> None:
        with activated(self.session):  # the JVM's active session is per thread
            failed = False
            try:
                while not StreamingQuery.awaitTermination(self, self._interval):
                    self._between_batches()
            except StreamingQueryException:
                failed = True
            except Exception as exc:  # work between batches failed: the job stops, awaitTermination says why
                log.error("job %s: stopping: %s", self.name, exc)
                self._error = exc
                failed = True
                self.stop()
            try:
                self.summary.parked = self._wrap_up(failed)
            except Exception as exc:
                if self._error is None:
                    self._error = exc
