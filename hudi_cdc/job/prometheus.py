"""BatchMetrics -> Prometheus counters and gauges per table, served over HTTP, written as a textfile or pushed.

Fed by `stream.run`'s `on_batch` listener, never by the pipeline: a continuous job serves
them on `job.metrics_port`; any run writes them to `job.metrics_textfile` (node_exporter's
textfile collector) and pushes them to `job.metrics_pushgateway` after each batch and when it
ends. Counters count what this process saw since it started.

Every hudi_cdc series names its job in a `pipeline` label, not `job`: Prometheus sets `job` on
every target it scrapes, and renames a `job` label the target already carries to `exported_job`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import pyspark
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
    push_to_gateway,
    start_http_server,
    write_to_textfile,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from hudi_cdc.commit.metrics import OUTCOMES, BatchMetrics
from hudi_cdc.config.models import Config
from hudi_cdc.kafka.lag import Positions, lag
from hudi_cdc.version import __version__

log = logging.getLogger(__name__)

_BATCH_BUCKETS = (1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800)

PUSH_JOB = "hudi_cdc"
"""The Pushgateway's `job` of every hudi_cdc push; the `pipeline` label (job.name) is the rest of the grouping key."""


EndOffsets = Callable[[Positions], Positions]
"""topic partitions -> Kafka's high watermark of each (hudi_cdc.kafka.lag.Watermarks.ends)."""
PendingCompactions = Callable[[str], int]
"""table name -> compactions scheduled and not yet run."""
SyncedAt = Callable[[], Mapping[str, float | None]]
"""table name -> when its last metastore sync succeeded (Unix time; None: not yet in this process)."""
Consumed = Callable[[int], Positions | None]
"""batch id -> the offset after the last one the batch consumed, per topic partition (Spark's offset log)."""


class JobMetrics:
    """The job's Prometheus metrics, in a registry of their own.

    `end_offsets` and `pending_compactions`, when given, are asked after each batch for the
    Kafka lag and the merge-on-read compaction backlog; `synced_at` after each batch and before
    each publish for the metastore syncs. The registry also holds the driver process's own
    metrics (`process_*`, `python_info`).
    """

    def __init__(
        self,
        config: Config,
        *,
        end_offsets: EndOffsets | None = None,
        pending_compactions: PendingCompactions | None = None,
        synced_at: SyncedAt | None = None,
    ) -> None:
        self.pipeline = config.job.name
        self.config = config
        self.end_offsets = end_offsets
        self.pending_compactions = pending_compactions
        self.synced_at = synced_at
        self.mor_tables: list[str] = []
        self.applied: dict[str, dict[str, dict[str, int]]] = {}
        self.tables: list[str] = []
        self.registry = CollectorRegistry()
        # the driver's CPU, memory and file descriptors (Linux /proc), and the Python it runs on
        self.registry.register(_WithPipeline(ProcessCollector(registry=None), self.pipeline))
        self.registry.register(_WithPipeline(PlatformCollector(registry=None), self.pipeline))
        labels = ["pipeline", "table"]
        self.records = Counter(
            "hudi_cdc_records", "Kafka records consumed, by table and outcome.", [*labels, "outcome"], registry=self.registry
        )
        self.read = Counter("hudi_cdc_records_read", "Kafka records consumed, by table.", labels, registry=self.registry)
        self.rows = Counter(
            "hudi_cdc_rows_written", "Rows upserted or deleted in the table.", [*labels, "kind"], registry=self.registry
        )
        self.stopped = Counter(
            "hudi_cdc_table_stopped_batches",
            "Batches in which the table stopped (its records went to the dead-letter store).",
            labels,
            registry=self.registry,
        )
        self.unrouted = Counter(
            "hudi_cdc_unrouted_records", "Records on topics no route maps (dead-lettered).", ["pipeline"], registry=self.registry
        )
        self.batch_seconds = Histogram(
            "hudi_cdc_batch_seconds", "Wall time of a micro-batch.", ["pipeline"], buckets=_BATCH_BUCKETS, registry=self.registry
        )
        self.last_batch = Gauge(
            "hudi_cdc_last_batch_timestamp_seconds", "When the last batch finished (Unix time).", ["pipeline"], registry=self.registry
        )
        self.last_commit = Gauge(
            "hudi_cdc_last_commit_timestamp_seconds",
            "When the job last committed to the table (Unix time, this process).",
            labels,
            registry=self.registry,
        )
        self.hive_synced = Gauge(
            "hudi_cdc_hive_last_sync_timestamp_seconds",
            "When the table's last metastore sync succeeded (Unix time, this process; every run syncs each table at start).",
            labels,
            registry=self.registry,
        )
        self.hive_sync_lagging = Gauge(
            "hudi_cdc_hive_sync_lagging",
            "1 while the table's newest commit is not registered in the metastore.",
            labels,
            registry=self.registry,
        )
        self.watermark = Gauge(
            "hudi_cdc_watermark_timestamp_seconds",
            "Source time (Unix) through which the table is complete; its age is time() minus this.",
            labels,
            registry=self.registry,
        )
        self.behind_watermark = Counter(
            "hudi_cdc_records_behind_watermark",
            "Change events older than the watermark the table had already committed.",
            labels,
            registry=self.registry,
        )
        self.lost = Counter(
            "hudi_cdc_records_lost",
            "Records skipped unread with kafka.fail_on_data_loss false (deleted, or a recreated topic's first).",
            labels,
            registry=self.registry,
        )
        self.dead_letters = Counter(
            "hudi_cdc_dead_letters",
            "Records sent to the dead-letter store, by table and error class.",
            [*labels, "error_class"],
            registry=self.registry,
        )
        self.commit_seconds = Histogram(
            "hudi_cdc_commit_seconds",
            "Wall time of a table's Hudi write and commit.",
            labels,
            buckets=_BATCH_BUCKETS,
            registry=self.registry,
        )
        self.lag = Gauge(
            "hudi_cdc_kafka_lag_records",
            "Records in the table's topic partitions after the last one it applied (after the last batch).",
            labels,
            registry=self.registry,
        )
        self.build_info = Gauge(
            "hudi_cdc_build_info",
            "Always 1; the labels say which hudi_cdc and PySpark the job runs.",
            ["pipeline", "version", "pyspark"],
            registry=self.registry,
        )
        self.build_info.labels(self.pipeline, __version__, pyspark.__version__).set(1)
        self.parked = Gauge(
            "hudi_cdc_table_parked",
            "1 while the table is parked after a failure of its own (the other tables go on; `status` says why).",
            labels,
            registry=self.registry,
        )
        self.parked_records = Gauge(
            "hudi_cdc_table_parked_records",
            "Records of a parked table set aside since it was parked (read again when it catches up).",
            labels,
            registry=self.registry,
        )
        self.compactions_pending = Gauge(
            "hudi_cdc_pending_compactions",
            "Merge-on-read compactions scheduled and not yet run.",
            labels,
            registry=self.registry,
        )
        self.track(config)
        self.unrouted.labels(self.pipeline)

    def track(self, config: Config) -> None:
        """Follow `config`'s tables (a template makes new ones while the job runs): each visible from then on, with zero counts."""
        self.config = config
        self.mor_tables = [t.name for t in config.tables if t.type == "MERGE_ON_READ"]
        new = [t.name for t in config.tables if t.name not in self.tables]
        self.tables = [t.name for t in config.tables]
        for table in new:
            for outcome in OUTCOMES:
                self.records.labels(self.pipeline, table, outcome)
            self.read.labels(self.pipeline, table)
            self.behind_watermark.labels(self.pipeline, table)
            self.lost.labels(self.pipeline, table)
            self.hive_sync_lagging.labels(self.pipeline, table).set(0)
            self.parked.labels(self.pipeline, table).set(0)

    def observe(self, batch: BatchMetrics, *, now: float | None = None, consumed: Positions | None = None) -> None:
        """Fold one batch's counts in.

        `consumed`: the offset after the last one the batch consumed, per topic partition (Spark's
        offset log, `offset_log.planned_end`). Without it, a table's Kafka position is the last
        record it applied, and a topic written in transactions would show its last commit
        marker as a lag of 1 per partition.
        """
        now = time.time() if now is None else now
        for t in batch.tables:
            for outcome in OUTCOMES:
                self.records.labels(self.pipeline, t.table, outcome).inc(getattr(t, outcome))
            self.read.labels(self.pipeline, t.table).inc(t.read)
            self.rows.labels(self.pipeline, t.table, "upserted").inc(t.upserted_rows)
            self.rows.labels(self.pipeline, t.table, "deleted").inc(t.deleted_rows)
            if t.error:
                self.stopped.labels(self.pipeline, t.table).inc()
            if t.commit_time:
                self.last_commit.labels(self.pipeline, t.table).set(t.committed_at or now)
            if t.watermark_ts_ms is not None:
                self.watermark.labels(self.pipeline, t.table).set(t.watermark_ts_ms / 1000)
            self.behind_watermark.labels(self.pipeline, t.table).inc(t.behind_watermark)
            self.lost.labels(self.pipeline, t.table).inc(t.lost)
            for error_class, count in t.dead_letters_by_class.items():
                self.dead_letters.labels(self.pipeline, t.table, error_class).inc(count)
            if t.commit_seconds is not None:
                self.commit_seconds.labels(self.pipeline, t.table).observe(t.commit_seconds)
        self.unrouted.labels(self.pipeline).inc(batch.unrouted)
        self.batch_seconds.labels(self.pipeline).observe(batch.seconds)
        self.last_batch.labels(self.pipeline).set(now)
        for table in self.tables:
            self.hive_sync_lagging.labels(self.pipeline, table).set(1 if table in batch.hive_sync_lagging else 0)
            self.parked.labels(self.pipeline, table).set(1 if table in batch.parked else 0)
            self.parked_records.labels(self.pipeline, table).set(batch.parked.get(table, 0))
        for t in batch.tables:
            self._applied(t.table, t.applied_through)
        for topic, partitions in (consumed or {}).items():
            fed = self.config.table_of_topic(topic)
            if fed in self.tables and fed not in batch.parked:  # a parked table applied none of them
                self._applied(fed, {topic: {partition: end - 1 for partition, end in partitions.items()}})
        if self.end_offsets is not None:
            every = {topic: dict(p) for offsets in self.applied.values() for topic, p in offsets.items()}
            end = self.end_offsets(every)
            for table, offsets in self.applied.items():
                self.lag.labels(self.pipeline, table).set(lag(offsets, end))
        if self.pending_compactions is not None:
            for table in self.mor_tables:
                self.compactions_pending.labels(self.pipeline, table).set(self.pending_compactions(table))
        self._synced()

    def _synced(self) -> None:
        """Set each table's last metastore sync (a table not synced yet in this process has no sample)."""
        if self.synced_at is None:
            return
        for table, at in self.synced_at().items():
            if at is not None and table in self.tables:
                self.hive_synced.labels(self.pipeline, table).set(at)

    def _applied(self, table: str, through: Positions) -> None:
        """Remember `through` as the table's applied position where it is further on."""
        if not through:
            return  # nothing applied (a parked table): no lag to claim from it
        applied = self.applied.setdefault(table, {})
        for topic, partitions in through.items():
            for partition, offset in partitions.items():
                applied.setdefault(topic, {})[partition] = max(offset, applied.get(topic, {}).get(partition, offset))

    def render(self) -> str:
        """The Prometheus text exposition format."""
        return generate_latest(self.registry).decode("utf-8")

    def write_textfile(self, path: str) -> None:
        """Write atomically (temporary file, then rename) for node_exporter's textfile collector."""
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_to_textfile(path, self.registry)

    def serve(self, port: int) -> None:
        """Serve /metrics on `port` from a daemon thread until the process ends."""
        start_http_server(port, registry=self.registry)

    def push(self, gateway: str) -> None:
        """Replace this job's group on the Pushgateway at `gateway` with the registry.

        The group is `job="hudi_cdc"` and `pipeline=<job.name>`: each run of a scheduled job
        replaces what its previous run pushed, and two jobs never overwrite each other.
        """
        push_to_gateway(gateway, job=PUSH_JOB, registry=self.registry, grouping_key={"pipeline": self.pipeline}, timeout=10)

    def publish(self) -> None:
        """Write `job.metrics_textfile` and push to `job.metrics_pushgateway`, each when configured.

        A Pushgateway that cannot be reached is logged (WARNING) and never fails the run: the
        data is committed whatever its metrics do, and the next push sends the counts again.
        """
        self._synced()
        job = self.config.job
        if job.metrics_textfile is not None:
            self.write_textfile(job.metrics_textfile)
        if job.metrics_pushgateway is not None:
            try:
                self.push(job.metrics_pushgateway)
            except OSError as exc:  # urllib's URLError and HTTPError are OSErrors
                log.warning("job %s: metrics not pushed to %s: %s", self.pipeline, job.metrics_pushgateway, exc)


class _WithPipeline(Collector):
    """`collector`'s metrics with the job's `pipeline` label, so a board or rule selects them like the job's own."""

    def __init__(self, collector: Collector, pipeline: str) -> None:
        self.collector = collector
        self.pipeline = pipeline

    def collect(self) -> Iterable[Metric]:
        for family in self.collector.collect():
            labelled = Metric(family.name, family.documentation, family.type, family.unit)
            for sample in family.samples:
                labelled.add_sample(sample.name, {**sample.labels, "pipeline": self.pipeline}, sample.value, sample.timestamp)
            yield labelled


class RunListener:
    """A run's metrics: each batch folded in and published (the call), a last publish when the run ends (`close`)."""

    def __init__(self, metrics: JobMetrics, *, config: Callable[[], Config], consumed: Consumed) -> None:
        self.metrics = metrics
        self.config = config
        """The job's configuration now (with the tables templates made while it runs)."""
        self.consumed = consumed

    def __call__(self, batch: BatchMetrics) -> None:
        self.metrics.track(self.config())
        self.metrics.observe(batch, consumed=self.consumed(batch.batch_id))
        self.metrics.publish()

    def close(self) -> None:
        """Publish once more: a run that ends with an error, or without a batch, still reports."""
        self.metrics.publish()
