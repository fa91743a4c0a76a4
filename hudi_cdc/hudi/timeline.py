"""Read a Hudi table's timeline (commits, compactions, commit metadata) through the JVM."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from hudi_cdc.commit.offsets import BATCH_KEY, OFFSETS_KEY
from hudi_cdc.commit.progress import Progress
from hudi_cdc.hudi.retention import JvmTimeline
from hudi_cdc.hudi.table import meta_client, table_exists
from hudi_cdc.spark.session import jvm


@dataclass(frozen=True)
class TimelineSummary:
    """What the timeline says about a table."""

    last_commit: str | None
    last_action: str | None
    last_completed_at: str | None
    applied_through: dict[str, dict[str, int]]
    """topic -> partition -> newest Kafka offset of the last commit (from its metadata)."""
    last_batch_id: int | None
    pending_compactions: list[str]
    last_compaction: str | None
    progress: Progress
    """Committed counts and freshness watermark, as of the newest hudi_cdc commit."""


def latest_job_metadata(spark: SparkSession, base_path: str) -> dict[str, str]:
    """The extra metadata of the newest commit hudi_cdc made (compactions and cleans carry none); {} if none."""
    return _latest_job_metadata(spark, meta_client(spark, base_path))


def _latest_job_metadata(spark: SparkSession, client: Any) -> dict[str, str]:
    # newest first, stopping at the first of ours: a handful of JVM calls, not one per instant
    commits = client.getActiveTimeline().getCommitsTimeline().filterCompletedInstants()
    utils = jvm(spark).org.apache.hudi.common.table.timeline.TimelineUtils
    instants = commits.getReverseOrderedInstants().iterator()
    while instants.hasNext():
        meta = dict(utils.getCommitMetadata(instants.next(), commits).getExtraMetadata())
        if OFFSETS_KEY in meta:
            return {str(k): str(v) for k, v in meta.items()}
    return {}


class TableTimeline:
    """An existing table's timeline for one batch, through one meta client of Hudi's.

    The newest job metadata, the archive bound and the cleaner's trigger come from one listing of
    `.hoodie/timeline/`, the commit made from one more after it. Why: each listing grows with the instants the archive
    window keeps active (`hudi.retention`), and each of these reads used to build a meta client
    and list the folder of its own.
    """

    def __init__(self, spark: SparkSession, base_path: str) -> None:
        self._spark = spark
        self._client = meta_client(spark, base_path)
        self._commits: JvmTimeline | None = None

    def job_metadata(self) -> dict[str, str]:
        """`latest_job_metadata`, from this timeline."""
        return _latest_job_metadata(self._spark, self._client)

    def commits(self) -> JvmTimeline:
        """The completed commits of this timeline (the archive bound, the cleaner's trigger), as
        listed before the batch's commit."""
        if self._commits is None:
            self._commits = JvmTimeline(self._client)
        return self._commits

    def newest_commit(self) -> str | None:
        """The newest completed commit, deltacommit or compaction (`table.latest_commit`'s answer),
        the timeline listed again: after a commit, its instant read back. Readers after it see
        that listing."""
        completed = self._client.reloadActiveTimeline().getCommitsTimeline().filterCompletedInstants()
        instant = completed.lastInstant()
        return str(instant.get().requestedTime()) if instant.isPresent() else None


def pending_compactions(spark: SparkSession, base_path: str) -> int:
    """Compactions scheduled on the table and not yet run (0 for copy-on-write or a missing table)."""
    if not table_exists(spark, base_path):
        return 0
    return int(meta_client(spark, base_path).getActiveTimeline().filterPendingCompactionTimeline().countInstants())


def summary(spark: SparkSession, base_path: str) -> TimelineSummary:
    """Last commit and its Kafka positions, pending and last compaction."""
    client = meta_client(spark, base_path)
    active = client.getActiveTimeline()
    last = active.getCommitsTimeline().filterCompletedInstants().lastInstant()
    last_commit = last_action = completed = None
    if last.isPresent():
        instant = last.get()
        last_commit, last_action = str(instant.requestedTime()), str(instant.getAction())
        completed = str(instant.getCompletionTime())
    ours = _latest_job_metadata(spark, client)
    pending = [str(i.requestedTime()) for i in active.filterPendingCompactionTimeline().getInstants()]
    done = active.getCommitTimeline().filterCompletedInstants().getInstants()
    compactions = [str(i.requestedTime()) for i in done if str(i.getAction()) == "commit"]
    is_mor = str(client.getTableType().name()) == "MERGE_ON_READ"
    return TimelineSummary(
        last_commit=last_commit,
        last_action=last_action,
        last_completed_at=completed,
        applied_through=json.loads(ours.get(OFFSETS_KEY) or "{}"),
        last_batch_id=int(ours[BATCH_KEY]) if BATCH_KEY in ours else None,
        progress=Progress.from_metadata(ours),
        pending_compactions=pending,
        last_compaction=(compactions[-1] if compactions and is_mor else None),
    )
