"""Parked tables: one table whose storage or Hudi table fails stops itself, not the job.

A table whose batch fails as the table's fault (`TableFailure`, not Kafka's; or `KeyColumnsMissing`,
a key its records do not carry) is parked: the other
tables of the batch commit, the stream's Kafka position moves on, and the parked table's records
are left in Kafka. The parking lot remembers, per topic partition, the first offset the table has
not applied and the last one the stream has read since; it is written beside the checkpoint
before the batch returns (before Spark records the batch's offsets), so a restart knows it too.

A parked table catches up by reading that range from Kafka again and applying it as one batch,
before any newer record of the table: its events are applied in the same order as if it had never
stopped, so the fold's rules hold (a hard-delete table forgets a deleted key's order at commit,
so nothing newer may be committed before what is older). It is tried again after a backoff
(FIRST_RETRY, doubling to MAX_RETRY), at every start, and at once after `hudi-cdc retry-table`.
The records must still be in Kafka then: a table parked for longer than the topic's retention
cannot catch up, and says so.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

from pyspark.sql import SparkSession

from hudi_cdc.commit.offsets import KafkaRange
from hudi_cdc.commit.progress import Positions
from hudi_cdc.errors import KeyColumnsMissing, TableFailure, TerminalError
from hudi_cdc.spark import fs

log = logging.getLogger(__name__)

FIRST_RETRY_SECONDS = 30.0
"""How long a newly parked table waits before it is tried again."""
MAX_RETRY_SECONDS = 900.0
"""The longest wait between two tries (the wait doubles from FIRST_RETRY_SECONDS up to this)."""


TableStop = TableFailure | KeyColumnsMissing
"""What parks a table: a failure of its storage or Hudi table, or a key its records do not carry."""


def parked_path(checkpoint_dir: str) -> str:
    """Where a job keeps its parked tables (beside its checkpoint)."""
    return checkpoint_dir.rstrip("/") + "_parked.json"


def retry_request_path(checkpoint_dir: str, table: str) -> str:
    """The file `hudi-cdc retry-table` creates to have a running job try `table` at once."""
    return f"{checkpoint_dir.rstrip('/')}_retry/{table}"


def request_retry(spark: SparkSession, checkpoint_dir: str, table: str) -> None:
    """Ask a running job to try parked `table` at its next trigger (what `hudi-cdc retry-table` does).

    The request appears whole, under its name, in one step: the running job deletes it the moment
    it sees it, and a file created in place would be gone before Hadoop set its permissions (which
    then fails the request with "chmod: cannot access").
    """
    fs.replace_text(spark, retry_request_path(checkpoint_dir, table), "retry\n")


@dataclass
class Parked:
    """One parked table: why, since when, and the Kafka records it has not applied."""

    table: str
    cause: str
    """The failure that parked it (or the last try's), with the batch and positions."""
    since: float
    """Epoch seconds when it was parked."""
    first: Positions
    """topic -> partition -> the first offset the table has not applied."""
    last: Positions
    """topic -> partition -> the last offset of the table's records the stream has read since."""
    attempts: int = 0
    """Tries to catch up that failed."""
    next_try: float = 0.0
    """Epoch seconds from which it is tried again."""
    backlog: int = field(default=0)
    """Records of the table the stream read and set aside while it was parked (this process and before)."""

    @property
    def pending(self) -> KafkaRange:
        """The offsets to read again to catch up."""
        return KafkaRange(first=self.first, last=self.last)


class ParkingLot:
    """The parked tables of one job, kept beside its checkpoint (see the module docstring).

    `serial` is held while a parked table is handled (set aside, or caught up): a batch's thread
    and the idle loop's catch-ups never interleave on one table.
    """

    def __init__(self, spark: SparkSession, checkpoint_dir: str, *, clock: Callable[[], float] = time.time) -> None:
        self.spark = spark
        self.checkpoint_dir = checkpoint_dir
        self.clock = clock
        self.serial = threading.RLock()
        self._tables = {p.table: p for p in read_parked(spark, checkpoint_dir)}
        self._dirty = False
        """Changed since the last `save` (a lot that never changes is never written: no file, no cost)."""
        for parked in self._tables.values():
            parked.next_try = 0.0  # a (re)start tries every parked table first
            log.warning("table %s is parked (%s); it is tried first", parked.table, parked.cause.partition("\n")[0])

    def parked(self) -> list[Parked]:
        with self.serial:
            return [self._tables[name] for name in sorted(self._tables)]

    def get(self, table: str) -> Parked | None:
        with self.serial:
            return self._tables.get(table)

    def park(self, failure: TableStop, kafka: KafkaRange, records: int) -> Parked:
        """Park `failure.table`, whose records `kafka` were not applied."""
        with self.serial:
            now = self.clock()
            self._dirty = True
            parked = Parked(table=failure.table, cause=failure.cause, since=now, first={}, last={})
            self._tables[failure.table] = parked
            self.hold(failure.table, kafka, records)
            parked.next_try = now + FIRST_RETRY_SECONDS
            log.error(
                "%s\ntable %s is parked: the other tables go on, its records wait in Kafka; it is tried again in %.0f s "
                "(now: `hudi-cdc retry-table %s`)",
                failure.cause, failure.table, FIRST_RETRY_SECONDS, failure.table,
            )  # fmt: skip
            return parked

    def hold(self, table: str, kafka: KafkaRange, records: int) -> None:
        """Add a batch's records of parked `table` to what it must read again."""
        with self.serial:
            self._dirty = True
            parked = self._tables[table]
            for topic, partitions in kafka.first.items():
                for partition, offset in partitions.items():
                    parked.first.setdefault(topic, {}).setdefault(partition, offset)
            for topic, partitions in kafka.last.items():
                mine = parked.last.setdefault(topic, {})
                for partition, offset in partitions.items():
                    mine[partition] = max(offset, mine.get(partition, offset))
            parked.backlog += records

    def due(self, table: str) -> bool:
        """Is it time to try `table` again (its backoff passed, or an operator asked)?"""
        with self.serial:
            parked = self._tables.get(table)
            if parked is None:
                return False
            if self._take_request(table):
                log.info("table %s: tried again at once (`hudi-cdc retry-table`)", table)
                return True
            return self.clock() >= parked.next_try

    def _take_request(self, table: str) -> bool:
        """Delete `table`'s `retry-table` request; whether there was one."""
        return fs.delete(self.spark, retry_request_path(self.checkpoint_dir, table))

    def failed_again(self, failure: TableStop) -> None:
        with self.serial:
            self._dirty = True
            parked = self._tables[failure.table]
            parked.attempts += 1
            parked.cause = failure.cause
            wait = min(MAX_RETRY_SECONDS, FIRST_RETRY_SECONDS * 2**parked.attempts)
            parked.next_try = self.clock() + wait
            log.error("%s\ntable %s stays parked (try %d failed); tried again in %.0f s", failure.cause, failure.table, parked.attempts, wait)

    def release(self, table: str) -> None:
        with self.serial:
            self._dirty = True
            parked = self._tables.pop(table)
            # a request that came after the try that caught it up would make its next parking's
            # first try immediate
            self._take_request(table)
            log.info("table %s caught up after %.0f s parked (%d records set aside); it runs with the others again",
                     table, self.clock() - parked.since, parked.backlog)  # fmt: skip
            self.save()

    def save(self) -> None:
        """Write the lot beside the checkpoint (an empty list once nothing is parked).

        Written aside, then moved over the old one: a crash leaves the old file whole (right for
        the batch Spark then replays), or only the new one, whole (read by `read_parked`).
        """
        with self.serial:
            if not self._dirty:
                return
            text = json.dumps([asdict(p) for p in self._tables.values()], indent=1, sort_keys=True)
            path = parked_path(self.checkpoint_dir)
            fs.replace_text(self.spark, path, text + "\n")
            self._dirty = False

    @contextmanager
    def handling(self) -> Iterator[None]:
        """Hold the lot while one parked table is handled (see the class docstring)."""
        with self.serial:
            yield


def read_parked(spark: SparkSession, checkpoint_dir: str) -> list[Parked]:
    """The job's parked tables as it last wrote them ([] when none); a file that cannot be read stops the job."""
    path = parked_path(checkpoint_dir)
    try:
        entries = fs.read_replaced_json(spark, path)
        return [Parked(**entry) for entry in entries or []]
    except Exception as exc:  # torn JSON, or Hadoop's checksum of a torn file
        raise TerminalError(
            f"{path} cannot be read ({exc}). It lists the tables parked after a failure, whose records wait in "
            "Kafka from the offsets it names: do not delete it. Restore it from a backup, or rebuild each parked "
            "table from its topic (a new base_path and checkpoint_dir)."
        ) from None
