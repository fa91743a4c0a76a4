"""keep.min/max commits so the archiver only archives instants older than ARCHIVE_AFTER_HOURS."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hudi_cdc.config.models import ARCHIVE_AFTER_HOURS
from hudi_cdc.hoodie_keys import (
    AUTO_ARCHIVE,
    AUTO_CLEAN,
    CLEAN_MAX_COMMITS,
    KEEP_MAX_COMMITS,
    KEEP_MIN_COMMITS,
)
from hudi_cdc.hudi.retention import (
    COMMITS_ADDED,
    KEEP_MARGIN,
    KEEP_SPREAD,
    CleanState,
    archival_options,
    cleaning_options,
    instant_at,
    keep_commits,
    trino_archive_check,
)
from tests.support.timelines import InstantList

NOW = dt.datetime(2026, 11, 23, 12, 0, 0)


def _every_minute(hours: float) -> tuple[str, ...]:
    return tuple(instant_at(NOW - dt.timedelta(minutes=m)) for m in range(int(hours * 60), 0, -1))


def test_instant_format_is_hudis() -> None:
    assert instant_at(dt.datetime(2026, 1, 2, 3, 4, 5, 678000)) == "20260102030405678"


def test_young_or_slow_table_keeps_the_old_defaults() -> None:
    assert keep_commits(InstantList(_every_minute(0.5), None), NOW) == (40, 50)


def test_one_commit_a_minute_keeps_every_commit_of_the_window() -> None:
    commits = InstantList(_every_minute(ARCHIVE_AFTER_HOURS + 5), None)
    keep_min, keep_max = keep_commits(commits, NOW)
    in_window = ARCHIVE_AFTER_HOURS * 60
    assert keep_min == in_window + KEEP_MARGIN and keep_max == keep_min + KEEP_SPREAD
    # what the archiver leaves (the newest keep_min) reaches back past the window
    assert commits.instants[-keep_min] < instant_at(NOW - dt.timedelta(hours=ARCHIVE_AFTER_HOURS))


def test_mor_keeps_every_commit_since_its_oldest_uncompacted_delta_commit() -> None:
    instants = _every_minute(ARCHIVE_AFTER_HOURS + 50)
    oldest_live_log = instants[10]  # compaction off for days: those log files are still read
    keep_min, _ = keep_commits(InstantList(instants, oldest_live_log), NOW)
    assert keep_min == len(instants) - 10 + KEEP_MARGIN


def test_the_archiver_is_off_while_every_commit_is_inside_the_window() -> None:
    """A young table (and any table within its window's first hours): nothing is over keep.max,
    so the commit is told not to run the archiver, which would list the whole timeline to find that out."""
    for hours in (0.5, ARCHIVE_AFTER_HOURS - 1):
        options = archival_options(_NO_SPARK, "/nowhere", ARCHIVE_AFTER_HOURS, now=NOW, commits=InstantList(_every_minute(hours), None))
        assert options[AUTO_ARCHIVE] == "false", hours


def test_the_archiver_runs_once_old_commits_pass_keep_max() -> None:
    """Past the window, the commits older than it pile up until the archiver is due (more than
    keep.max once this commit and an inline compaction are made), then it runs (Hudi's default)."""
    in_window = ARCHIVE_AFTER_HOURS * 60
    instants = _every_minute(ARCHIVE_AFTER_HOURS)[-in_window:]
    runs = []
    for older in range(0, 2 * (KEEP_MARGIN + KEEP_SPREAD)):
        commits = InstantList(tuple(instant_at(NOW - dt.timedelta(hours=200, minutes=m)) for m in range(older)) + instants, None)
        options = archival_options(_NO_SPARK, "/nowhere", ARCHIVE_AFTER_HOURS, now=NOW, commits=commits)
        assert int(options[KEEP_MAX_COMMITS]) == in_window + KEEP_MARGIN + KEEP_SPREAD
        runs.append(AUTO_ARCHIVE not in options)
    # off while older + in_window + COMMITS_ADDED <= keep.max, on from the first commit past it
    due = KEEP_MARGIN + KEEP_SPREAD - COMMITS_ADDED + 1
    assert runs == [False] * due + [True] * (len(runs) - due)


def test_past_the_window_the_archiver_runs_in_about_two_commits_of_eleven() -> None:
    """A table committing once a minute for hours past its window: each commit gets the options,
    Hudi's rule archives down to keep.min when the commits number more than keep.max. What the
    docs say of the steady state: the archiver runs in 2 commits of every 11 and archives in one."""
    hours, now = 2, NOW
    commits = [instant_at(now - dt.timedelta(minutes=m)) for m in range(hours * 60 + 30, 0, -1)]
    runs = archivals = 0
    for _ in range(220):
        now += dt.timedelta(minutes=1)
        options = archival_options(_NO_SPARK, "/nowhere", hours, now=now, commits=InstantList(tuple(commits), None))
        commits.append(instant_at(now))
        if AUTO_ARCHIVE in options:
            continue
        runs += 1
        if len(commits) > int(options[KEEP_MAX_COMMITS]):  # Hudi's archiver, after the commit
            archivals += 1
            cutoff = instant_at(now - dt.timedelta(hours=hours))
            in_window = [c for c in commits if c >= cutoff]
            commits = commits[-int(options[KEEP_MIN_COMMITS]) :]
            assert [c for c in commits if c >= cutoff] == in_window, "an archival reached into the window"
    assert (runs, archivals) == (39, 20)


def test_the_cleaner_runs_only_in_the_commits_where_a_clean_may_be_due() -> None:
    """Every 10 commits (the project's trigger): off while this commit and an inline compaction
    cannot reach it, Hudi's own check from there on."""
    options = {CLEAN_MAX_COMMITS: "10"}
    decided = [cleaning_options(CleanState(since_last_clean=n, pending=False), options) for n in range(12)]
    assert decided == [{AUTO_CLEAN: "false"}] * (10 - COMMITS_ADDED) + [{}] * (2 + COMMITS_ADDED)
    # a table's own trigger counts
    assert cleaning_options(CleanState(since_last_clean=3, pending=False), {CLEAN_MAX_COMMITS: "1"}) == {}


@pytest.mark.parametrize(
    "options",
    [{"hoodie.clean.async.enabled": "true"}, {"hoodie.clean.async": "TRUE"}, {AUTO_CLEAN: "false"}, {AUTO_CLEAN: "true"}],
)
def test_the_cleaner_is_left_to_hudi_for_an_unfinished_clean_or_a_tables_own_choice(options: dict[str, str]) -> None:
    assert cleaning_options(CleanState(since_last_clean=0, pending=True), {}) == {}
    assert cleaning_options(CleanState(since_last_clean=0, pending=False), options) == {}


@pytest.mark.parametrize(
    ("window", "newest_archived_hours_ago", "expected"),
    [(100, None, "ok"), (100, 500, "ok"), (100, 80, "warn"), (100, 10, "FAILS"), (None, 80, "ok"), (None, 10, "FAILS")],
)
def test_the_archive_check_reads_the_timeline_history_files(
    spark: SparkSession, tmp_path: Path, window: int | None, newest_archived_hours_ago: int | None, expected: str
) -> None:
    """`status`'s Trino check on hand-made LSM history files (`<min>_<max>_<level>.parquet`):
    older than the table's window is ok, inside it a warning (a table without one has nothing to
    warn of), inside Trino's 72 h window every query fails."""
    now = dt.datetime(2026, 12, 4, 12, 0, 0)
    history = tmp_path / ".hoodie" / "timeline" / "history"
    history.mkdir(parents=True)
    (history / "not-a-history-file.txt").write_text("")  # ignored: not an LSM file name
    if newest_archived_hours_ago is not None:
        oldest = instant_at(now - dt.timedelta(hours=900))
        for level, hours in enumerate((700, newest_archived_hours_ago)):
            (history / f"{oldest}_{instant_at(now - dt.timedelta(hours=hours))}_{level}.parquet").write_bytes(b"")
    found = trino_archive_check(spark, str(tmp_path), window, now=now)
    assert found["trino_readable"] == expected
    assert found["archived_files"] == (0 if newest_archived_hours_ago is None else 2)
    if newest_archived_hours_ago is not None:
        assert found["newest_archived"] == instant_at(now - dt.timedelta(hours=newest_archived_hours_ago))


def test_a_table_without_an_archive_window_keeps_hudis_count_and_reads_no_timeline() -> None:
    """`archive_after_hours: null`: the write options' 40/50, also for `hudi-cdc compact` (whose
    options hold no keep counts otherwise); the timeline, read through this Spark session, is never asked."""
    assert archival_options(_NO_SPARK, "/nowhere", None) == {KEEP_MIN_COMMITS: "40", KEEP_MAX_COMMITS: "50"}


class _NoSpark:
    def __getattr__(self, name: str) -> None:
        raise AssertionError(f"the timeline was read (SparkSession.{name})")


_NO_SPARK: Any = _NoSpark()
