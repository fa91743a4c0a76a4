"""The job killed with SIGKILL at the moments that matter loses, duplicates and miscounts nothing.

A stream of creates, updates, deletes and tombstones for a copy-on-write and a merge-on-read
table (inline compaction every two delta commits, updates in log files) is in Kafka. The job runs
as users run it (`hudi-cdc run`, its own process and JVM), a few records per batch, and is killed
with SIGKILL the moment the tables' timelines (read from their files) show each of these, and
the timelines then prove the kill landed there:
  - a data commit inflight (the batch has begun writing and has not committed),
  - between the two tables' commits of one batch (the COW table committed, the MOR table not yet),
  - a compaction of the MOR table inflight.
A final scheduled run finishes the stream. Then each table must equal the reference fold of
what Kafka holds (read by Spark and by hudi-rs), the counts committed with the data must add up
to exactly the records Kafka holds, and the merge-on-read table must have compacted.

`make test` kills once, at one of the moments drawn from the seed (each run of `hudi-cdc` to a
moment costs about a minute and a half on 2 cores); the `deep` case (a CI slice) kills at each
moment, and `make test-deep` (HYPOTHESIS_PROFILE=deep) three times at each on a longer stream.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from devkit.services.kafka import LocalKafka
from hudi_cdc.hudi.status import table_status
from tests.support.harness import Job
from tests.support.random_streams import check_landed_exactly, produce_streams
from tests.support.timelines import DATA_ACTIONS, Timeline, read_timeline

pytestmark = pytest.mark.integration

DEEP = os.environ.get("HYPOTHESIS_PROFILE") == "deep"
ROUNDS = 3 if DEEP else 1
CHANGES = 500 if DEEP else 200
KILL_WAIT_SECONDS = 300
"""How long a run may take to reach a moment before the test fails (the JVM starts, a batch plans)."""
TRIES = 3
"""Runs per moment: a kill that lands a few milliseconds late (the instant completed meanwhile) is tried again."""


Moment = Callable[[Timeline, Timeline, Timeline, Timeline], str | None]
"""(cow and mor timelines at the run's start, cow and mor now) -> what the kill is to prove, or None."""


def _data_commit_inflight(cow0: Timeline, mor0: Timeline, cow: Timeline, mor: Timeline) -> str | None:
    for name, before, now in (("cow", cow0, cow), ("mor", mor0, mor)):
        new = now.pending_of(DATA_ACTIONS) - before.pending_of(DATA_ACTIONS)
        if new:
            return f"{name} {min(new)}"
    return None


def _between_the_tables(cow0: Timeline, mor0: Timeline, cow: Timeline, mor: Timeline) -> str | None:
    """The COW table completed a data commit in this run and the MOR table none since it."""
    new = set(cow.completed_of(DATA_ACTIONS)) - set(cow0.completed_of(DATA_ACTIONS))
    if not new:
        return None
    cow_done = cow.completed_of(DATA_ACTIONS)[max(new)]
    mor_done = max(mor.completed_of(frozenset({"deltacommit"})).values(), default="")
    return f"cow {max(new)}" if mor_done < cow_done else None


def _compaction_inflight(cow0: Timeline, mor0: Timeline, cow: Timeline, mor: Timeline) -> str | None:
    new = mor.pending_of(frozenset({"compaction"})) - mor0.pending_of(frozenset({"compaction"}))
    return f"mor {min(new)}" if new else None


def _still_there(moment: Moment, seen: str, cow: Timeline, mor: Timeline) -> bool:
    """After the kill: is the state the kill was meant to land in still what the timelines show?"""
    table, instant = seen.split()
    if moment is _between_the_tables:
        cow_done = cow.completed[instant][0]
        return max(mor.completed_of(frozenset({"deltacommit"})).values(), default="") < cow_done
    return instant in (cow if table == "cow" else mor).pending


def _run_and_kill_at(job: Job, config: Path, moment: Moment, log: Path) -> str:
    """Start `hudi-cdc run` in its own process group; SIGKILL the group at `moment`, and return
    what the timelines show it was killed in (tried again when the state moved on before the kill)."""
    for _ in range(TRIES):
        cow0, mor0 = read_timeline(Path(job.path("cow"))), read_timeline(Path(job.path("mor")))
        with log.open("ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "hudi_cdc", "--log-level", "WARNING", "run", "--config", str(config)],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            seen = None
            deadline = time.monotonic() + KILL_WAIT_SECONDS
            while seen is None and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
                seen = moment(cow0, mor0, read_timeline(Path(job.path("cow"))), read_timeline(Path(job.path("mor"))))
            stopped_by_itself = process.poll() is not None
            if not stopped_by_itself:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        assert not stopped_by_itself, f"the job stopped on its own (exit {process.returncode}); see {log}"
        assert seen is not None, f"the job never reached {moment.__name__} in {KILL_WAIT_SECONDS} s; see {log}"
        if _still_there(moment, seen, read_timeline(Path(job.path("cow"))), read_timeline(Path(job.path("mor")))):
            return seen
    raise AssertionError(f"{TRIES} kills at {moment.__name__} all landed after the state had moved on; see {log}")


@pytest.mark.parametrize(
    "every", [pytest.param(False, id="one-moment"), pytest.param(True, id="every-moment", marks=pytest.mark.deep)]
)
def test_sigkill_at_the_moments_that_matter_loses_duplicates_and_miscounts_nothing(
    spark: SparkSession, kafka: LocalKafka, tmp_path: Path, every: bool
) -> None:
    seed = random.randrange(10**6)
    rng = random.Random(seed)
    tables: list[dict[str, Any]] = [
        {"name": "cow", "key": ["id"]},
        {"name": "mor", "key": ["id"], "type": "MERGE_ON_READ",
         "compaction": {"mode": "inline", "strategy": "NUM_COMMITS", "max_delta_commits": 2},
         # Hudi merges updates of a file group smaller than this into a new base file instead of
         # a log file (a small table would never have anything to compact)
         "hoodie_options": {"hoodie.parquet.small.file.limit": 0}},
    ]  # fmt: skip
    job = Job(spark, kafka, tmp_path, tables)
    # 25 keys, a delete in ten changes: compaction of the MOR table has updates and deletes to merge
    produced, expected = produce_streams(job, rng, CHANGES, keys=25, delete_rate=0.1, min_live=5)

    config = job.config_file(job={"trigger_interval": "1 second"}, kafka={"max_offsets_per_trigger": 20})
    log = tmp_path / "job.log"
    every_moment = [_data_commit_inflight, _between_the_tables, _compaction_inflight]
    moments = every_moment if every or DEEP else [rng.choice(every_moment)]
    killed = [(moment.__name__, _run_and_kill_at(job, config, moment, log)) for _ in range(ROUNDS) for moment in moments]
    # every kill left its instant unfinished: the next run (or the final one) recovered it
    assert len(killed) == len(moments) * ROUNDS, killed
    job.run(kafka={"max_offsets_per_trigger": 60})  # the scheduled run that finishes the stream, in this process

    context = f"seed {seed}, killed {killed}, job log {log}"
    assert table_status(spark, job.config.table("mor")).last_compaction, f"no compaction ran ({context})"
    check_landed_exactly(spark, job, produced, expected, context)
