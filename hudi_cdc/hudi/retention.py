"""Archival that never archives what Trino's Hudi connector reads: keep a table's `archive_after_hours` of timeline active.

Why (apache/hudi#13994, measured with Trino 476 = Hudi 1.0.2 inside): the connector builds a
`CompletionTimeQueryViewV2` on every query. It loads every archived-timeline (LSM) file whose
instant range reaches past `min(now - 72 h, first active instant)`, and the completion time of
every log file whose delta commit is older than that cursor, through a Parquet reader Trino
does not provide: the query fails with "TrinoHudiFileReaderFactory does not support Parquet
file reader". So a table stays readable as long as
  1. every archived instant is older than 72 h (then no archived file is in range), and
  2. no log file on disk belongs to an archived delta commit.

Hudi 1.2's archiver is bounded by `hoodie.keep.min/max.commits` (a count) and by pending
instants, metadata-table compaction and the compaction trigger, **not** by what the cleaner
retains, and it has no time-based bound. A fixed count only postpones the failure (40-50
commits = 40-50 minutes at one commit per minute). hudi_cdc therefore sets the count before
each commit: keep.min = every completed commit of the last `archive_after_hours` (100 by
default, ARCHIVE_AFTER_HOURS; plus every commit since the oldest uncompacted delta commit of a
MOR table) + a margin. Archival still runs, but only ever archives instants older than that.

Cost: the active timeline holds `archive_after_hours` of instants (at one commit per minute,
~6,000 commits + a clean per 10, three files each, in `.hoodie/timeline/`), and every commit
lists and loads it several times (docs/performance.md, "A long timeline"). So a commit is told to
skip Hudi's archiver while nothing is over keep.max, and its cleaner while no clean can be due
(`archival_options`, `cleaning_options`): each would list the whole folder again only to find
that out. A table with `archive_after_hours: null` keeps Hudi's own count-based bound instead
(keep.min/max 40/50 from the write options). Cleaning keeps 10 commits, every 10 commits.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Protocol

from pyspark.sql import SparkSession

from hudi_cdc.config.models import ARCHIVE_AFTER_HOURS
from hudi_cdc.hoodie_keys import (
    ASYNC_CLEAN,
    AUTO_ARCHIVE,
    AUTO_CLEAN,
    CLEAN_MAX_COMMITS,
    CLEAN_MAX_COMMITS_DEFAULT,
    KEEP_MAX_COMMITS,
    KEEP_MAX_COMMITS_DEFAULT,
    KEEP_MIN_COMMITS,
    KEEP_MIN_COMMITS_DEFAULT,
)
from hudi_cdc.hudi.table import meta_client
from hudi_cdc.spark import fs

# Trino's window is 72 h in *its* JVM's time zone; instants are written in the writer's
# (ARCHIVE_AFTER_HOURS, a table's default `archive_after_hours`, covers any pair of time zones).
TRINO_ARCHIVE_WINDOW_HOURS = 72
KEEP_MARGIN = 10
"""Commits kept beyond the window: the commit being made, an inline compaction, a clean."""
KEEP_SPREAD = 10
"""keep.max - keep.min: how many commits accumulate before the archiver runs again."""
COMMITS_ADDED = 2
"""Completed commits one write may add before its archiver and cleaner run: its own and an inline compaction."""
_INSTANT_FORMAT = "%Y%m%d%H%M%S%f"


def instant_at(moment: dt.datetime) -> str:
    """A Hudi instant time (yyyyMMddHHmmssSSS) for a naive local-time datetime."""
    return moment.strftime(_INSTANT_FORMAT)[:17]


class ActiveCommits(Protocol):
    """Completed commits (commit, deltacommit, replacecommit) of the active timeline."""

    @property
    def oldest_uncompacted(self) -> str | None:
        """MOR: the first delta commit after the last completed compaction (its log files are live)."""

    def count_since(self, instant: str) -> int:
        """How many completed commits are at or after `instant`."""

    def count(self) -> int:
        """How many completed commits there are."""


class JvmTimeline:
    """ActiveCommits answered by the active timeline a meta client holds (Hudi's
    HoodieTableMetaClient, which lists the timeline for its first reader): a few JVM calls,
    however long the timeline. Also where the table stands against the cleaner's trigger."""

    def __init__(self, client: Any) -> None:
        active = client.getActiveTimeline()
        self._active = active
        self._completed = active.getCommitsTimeline().filterCompletedInstants()
        self.oldest_uncompacted: str | None = None
        if str(client.getTableType().name()) == "MERGE_ON_READ":
            compaction = active.getCommitTimeline().filterCompletedInstants().lastInstant()
            deltas = active.getDeltaCommitTimeline().filterCompletedInstants()
            if compaction.isPresent():
                deltas = deltas.findInstantsAfter(str(compaction.get().requestedTime()))
            first = deltas.firstInstant()
            self.oldest_uncompacted = str(first.get().requestedTime()) if first.isPresent() else None

    def count_since(self, instant: str) -> int:
        return int(self._completed.findInstantsAfterOrEquals(instant).countInstants())

    def count(self) -> int:
        return int(self._completed.countInstants())

    def clean_state(self) -> CleanState:
        """Completed commits since the newest completed clean, and whether a clean is unfinished."""
        cleans = self._active.getCleanerTimeline()
        last = cleans.filterCompletedInstants().lastInstant()
        since = self._completed
        if last.isPresent():
            since = since.findInstantsAfter(str(last.get().requestedTime()))
        pending = int(cleans.filterInflightsAndRequested().countInstants()) > 0
        return CleanState(since_last_clean=int(since.countInstants()), pending=pending)


def active_commits(spark: SparkSession, base_path: str) -> ActiveCommits:
    """The table's active timeline, read through a meta client of its own."""
    return JvmTimeline(meta_client(spark, base_path))


@dataclass(frozen=True)
class CleanState:
    """Where a table stands against Hudi's cleaning trigger (a clean every N commits)."""

    since_last_clean: int
    """Completed commits after the newest completed clean (every completed commit if none)."""
    pending: bool
    """A clean was planned and not finished (a crash): the next cleaner run completes it."""


def cleaning_options(state: CleanState, options: dict[str, str]) -> dict[str, str]:
    """The cleaner off for a commit after which no clean is due; {} to leave it to Hudi.

    Why: Hudi cleans when `hoodie.clean.trigger.max.commits` commits were made since the last
    clean (10 by default here), but before it counts them every commit builds a table and lists
    the whole timeline folder again (`BaseHoodieWriteClient.autoCleanOnCommit`). So 9 commits in
    10 list it for nothing, a listing that grows with the instants the archive window keeps.
    Left to Hudi: an unfinished clean, which it completes; a table whose `hoodie_options` clean
    asynchronously or turn cleaning off; the last commits before a clean is due. Hudi counts from
    the commit the last clean was planned after, which is the one just before it here (the
    cleaner runs inline), so the counts agree; one that errs only defers a clean to a later commit.
    """
    if state.pending or any(options.get(key, "false").lower() == "true" for key in ASYNC_CLEAN):
        return {}
    if AUTO_CLEAN in options:
        return {}  # the table's own choice
    if state.since_last_clean + COMMITS_ADDED < int(options.get(CLEAN_MAX_COMMITS, CLEAN_MAX_COMMITS_DEFAULT)):
        return {AUTO_CLEAN: "false"}
    return {}


def keep_commits(
    commits: ActiveCommits, now: dt.datetime, hours: int = ARCHIVE_AFTER_HOURS
) -> tuple[int, int]:
    """(keep.min, keep.max) so that the archiver leaves every commit newer than `hours` (and live logs) active."""
    cutoff = instant_at(now - dt.timedelta(hours=hours))
    if commits.oldest_uncompacted is not None:
        cutoff = min(cutoff, commits.oldest_uncompacted)
    recent = commits.count_since(cutoff)
    keep_min = max(int(KEEP_MIN_COMMITS_DEFAULT), recent + KEEP_MARGIN)
    keep_max = max(int(KEEP_MAX_COMMITS_DEFAULT), keep_min + KEEP_SPREAD)
    return keep_min, keep_max


def archival_options(
    spark: SparkSession,
    base_path: str,
    hours: int | None,
    *,
    now: dt.datetime | None = None,
    commits: ActiveCommits | None = None,
) -> dict[str, str]:
    """keep.min/max commits for the next commit on an existing table (see the module doc), and
    the archiver off for a commit after which no commit is over the bound.

    `hours`: the table's `archive_after_hours`; None: no window, Hudi's count alone (the write
    options' 40/50, also for the compaction procedure's write client), and the timeline is not read.
    `commits`: the table's timeline as the caller read it this batch (`hudi.timeline.TableTimeline`);
    None reads it here.

    Why the archiver is turned off: Hudi's archiver archives only while the completed commits
    number more than keep.max, but before it counts them it lists the whole timeline folder again
    (`BaseHoodieWriteClient.autoArchiveOnCommit` reloads it), a listing that grows with every
    commit the window keeps. Within the window's first `hours` nothing is ever over the bound.
    After that, commits age out of the window one by one; an archival leaves `KEEP_MARGIN` of
    them active, and the archiver runs again once they near keep.max (`KEEP_MARGIN` +
    `KEEP_SPREAD` of them): in about 2 commits of every 11, archiving in one. A count that errs
    only defers archival to the next commit.
    """
    if hours is None:
        return {KEEP_MIN_COMMITS: KEEP_MIN_COMMITS_DEFAULT, KEEP_MAX_COMMITS: KEEP_MAX_COMMITS_DEFAULT}
    commits = commits or active_commits(spark, base_path)
    keep_min, keep_max = keep_commits(commits, now or dt.datetime.now(), hours)
    options = {KEEP_MIN_COMMITS: str(keep_min), KEEP_MAX_COMMITS: str(keep_max)}
    if commits.count() + COMMITS_ADDED <= keep_max:
        options[AUTO_ARCHIVE] = "false"
    return options


def _archived_ranges(spark: SparkSession, base_path: str) -> list[tuple[str, str]]:
    """(min, max) instant of each LSM file in `.hoodie/timeline/history` (name `<min>_<max>_<level>.parquet`)."""
    folder = base_path.rstrip("/") + "/.hoodie/timeline/history"
    if not fs.exists(spark, folder):
        return []
    ranges = []
    for path, _ in fs.list_files(spark, folder):
        name = PurePosixPath(path).name
        parts = name.removesuffix(".parquet").split("_")
        if name.endswith(".parquet") and len(parts) == 3:
            ranges.append((parts[0], parts[1]))
    return ranges


def trino_archive_check(
    spark: SparkSession, base_path: str, hours: int | None, *, now: dt.datetime | None = None
) -> dict[str, Any]:
    """Whether Trino 476 (Hudi 1.0.x) can still read the table, judged from the archived timeline.

    `trino_readable` is "ok", "warn" (the newest archived instant is younger than the table's
    window `hours`: a writer outside hudi_cdc, or older settings, archived it; never for a table
    without a window) or "FAILS" (an archived instant is younger than Trino's 72 h window: every
    query fails).
    """
    now = now or dt.datetime.now()
    ranges = _archived_ranges(spark, base_path)
    newest = max((high for _, high in ranges), default=None)
    state = "ok"
    if newest is not None:
        if newest >= instant_at(now - dt.timedelta(hours=TRINO_ARCHIVE_WINDOW_HOURS)):
            state = "FAILS"
        elif hours is not None and newest >= instant_at(now - dt.timedelta(hours=hours)):
            state = "warn"
    return {"archived_files": len(ranges), "newest_archived": newest, "trino_readable": state}
