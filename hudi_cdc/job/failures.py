"""Is a failed table write the fault of some records, or of what the job runs on?

Failure isolation (`job.isolation.apply_isolating`) splits a failing batch in halves to find
the records that break it, and dead-letters them. That is right only when some records do.
When the table's metadata table is corrupt, a Hudi table service fails mid-commit, the storage
refuses or Kafka cannot serve the batch again (a lost executor's cached records are read anew),
every part fails the same way, and splitting would dead-letter good records (a corrupt metadata
table dead-lettered every record of a batch before this check). Such a failure must stop the
table instead, with Kafka keeping the batch. It is recognised here from the Java exceptions
Hudi, Hadoop and the Kafka client raise for it.

A record can still break a write in the code named here (say, a value that breaks a
column-stats computation); the job then stops on it instead of isolating it. Stopping keeps
every record and says why; isolating a failure of the environment would take good records out
of the table. When in doubt, stop.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any

from hudi_cdc.spark.session import java_chain

TABLE_EXCEPTIONS = frozenset(
    "org.apache.hudi.exception." + name
    for name in (
        "HoodieMetadataException",  # the metadata table cannot be read or written
        "HoodieCompactionException",
        "HoodieCompactException",
        "HoodieLogCompactException",
        "HoodieClusteringException",
        "HoodieRollbackException",
        "HoodieRestoreException",
        "HoodieCommitException",  # completing the instant on the timeline failed
        "HoodieLockException",
        "HoodieWriteConflictException",
        "HoodieHeartbeatException",
        "HoodieUpgradeDowngradeException",
        "CorruptedLogFileException",
        "HoodieCorruptedDataException",
        "InvalidTableException",
        "TableNotFoundException",
        "HoodieRemoteException",  # the embedded timeline server
        # an operation the table cannot do: compacting a copy-on-write table whose settings say
        # merge-on-read (measured: each split part committed, then failed the compaction again)
        "HoodieNotSupportedException",
    )
)
"""Hudi exceptions (and their subclasses) that speak of the table, never of one record."""

STORAGE_ROOTS = frozenset({"java.io.IOException"})
"""A root cause of these classes (or subclasses: FileNotFoundException, ConnectException,
AccessDeniedException, S3A's AWSClientIOException...) is the storage failing."""

TABLE_PACKAGES = (
    "org.apache.hudi.metadata.",
    "org.apache.hudi.table.action.compact.",
    "org.apache.hudi.table.action.clean.",
    "org.apache.hudi.table.action.cluster.",
    "org.apache.hudi.table.action.rollback.",
    "org.apache.hudi.client.timeline.",
)
"""Hudi code that maintains the table (metadata table, table services, archival). A root cause
thrown there, seen from its innermost Hudi frame, is the table's: e.g. Hudi 1.2.0's
ArrayIndexOutOfBoundsException in HoodieMetadataPayload when the metadata table compacts in
the middle of a commit (docs/performance-journal.md, round 9)."""

TABLE_CONFIG_CHECK = "org.apache.hudi.HoodieWriterUtils"
"""Where Hudi compares a write's options with the table's `hoodie.properties` and refuses a
conflict (a changed key, partition columns or type): the settings are at fault, never a record."""

KAFKA_PACKAGE = "org.apache.kafka."
"""The Kafka client's exceptions (TimeoutException, a broker gone...): Kafka failed, no record did."""

KAFKA_RETRIABLE = "org.apache.kafka.common.errors.RetriableException"
"""The Kafka client's errors that a retry may clear (TimeoutException, DisconnectException...)."""

HUDI_PACKAGE = "org.apache.hudi."
SHADED_PACKAGES = ("org.apache.hudi.org.", "org.apache.hudi.com.", "org.apache.hudi.javax.")
"""Libraries the Hudi bundle relocates under its own package (HBase's HFile reader, Jackson...)."""


KAFKA_FAULT = "Kafka failed"
"""How `environment_fault` begins the reason when Kafka, not the table, failed."""


def environment_fault(exc: BaseException) -> str | None:
    """Why `exc` is a failure of the table, its storage or Kafka, not a record's; None when records may be at fault."""
    try:
        chain = [(throwable, _class_lineage(throwable)) for throwable in java_chain(exc)]
        for throwable, lineage in chain:
            if TABLE_EXCEPTIONS & set(lineage):
                return f"Hudi failed on the table itself ({lineage[0]})"
            if lineage[0].startswith(KAFKA_PACKAGE):
                return f"{KAFKA_FAULT} ({lineage[0]}: {throwable.getMessage()})"
        if not chain:
            return None
        root, lineage = chain[-1]
        if STORAGE_ROOTS & set(lineage):
            return f"the storage failed ({lineage[0]}: {root.getMessage()})"
        frame = _innermost_hudi_frame(root)
        if frame is not None and frame.startswith(TABLE_CONFIG_CHECK):
            first_line = str(root.getMessage() or "").partition("\n")[0]  # an empty message too
            return f"Hudi refused the table's settings ({first_line})"
        if frame is not None and frame.startswith(TABLE_PACKAGES):
            return f"Hudi failed maintaining the table ({lineage[0]} in {frame})"
    except Exception:  # the JVM is gone: nothing to tell by
        return None
    return None


# Spark 3.5's Kafka source says, with `failOnDataLoss` true, what it could not read:
# (its message, the group holding the topic-partitions, what it means)
_DATA_LOSS = (
    # records the checkpoint needs were deleted (retention, `kafka-delete-records`)
    (re.compile(r"Cannot fetch offset (\d+) \(GroupId: [^,]*, TopicPartition: ([^)\s]+)\)"), 1,
     "{1}: the records from offset {0} on are no longer in Kafka (deleted by retention, or by hand)"),
    # partitions in the checkpoint that the subscription no longer holds
    (re.compile(r"Set\(([^)]*)\) are gone"), 0,
     "{0}: in the checkpoint, but no longer read (a route was removed, or the topic was deleted)"),
    # a topic deleted and created again
    (re.compile(r"Partition (\S+)'s offset was changed from (\d+) to (\d+)"), 0,
     "{0}: Kafka's offsets went back from {1} to {2} (the topic was deleted and created again)"),
    # a partition found after its first records were deleted
    (re.compile(r"Added partition (\S+) starts from (\d+) instead of 0"), 0,
     "{0}: a new partition whose records before offset {1} are no longer in Kafka"),
)  # fmt: skip


@dataclass(frozen=True)
class DataLoss:
    """What Spark's Kafka source could not read: one line for people, and the topics it names."""

    findings: list[str]
    topics: list[str]


def kafka_data_loss(*errors: BaseException | None) -> DataLoss | None:
    """What Spark's Kafka source could not read, when `errors` (an error and what it was raised
    from) are its data-loss stop (`failOnDataLoss`); None for any other error. Read from Spark's
    messages, its only account of it (topic-partitions and offsets)."""
    text = ""
    for error in (e for e in errors if e is not None):
        text += "\n" + str(error)
        with contextlib.suppress(Exception):  # the JVM is gone: the Python text still holds Spark's message
            text += "\n" + "\n".join(str(t.getMessage() or "") for t in java_chain(error))
    if "some data may have been" not in text.lower() and "OffsetOutOfRangeException" not in text:
        return None
    findings: set[str] = set()
    topics: set[str] = set()
    for pattern, partitions_group, template in _DATA_LOSS:
        for match in pattern.finditer(text):
            findings.add(template.format(*match.groups()))
            partitions = match.group(partitions_group + 1).split(",")
            topics.update(p.strip().rsplit("-", 1)[0] for p in partitions if "-" in p)
    fallback = "Spark's Kafka source reports data loss: " + text.strip().partition("\n")[0][:300]
    return DataLoss(findings=sorted(findings) or [fallback], topics=sorted(topics))


def kafka_fault(exc: BaseException) -> str | None:
    """The Kafka client's retriable exception in `exc`'s Java chain (`Class: message`): the brokers
    did not answer (a timeout, a lost connection). None otherwise, e.g. for a bad client setting.

    What stops a streaming query whose brokers stopped answering: Spark's Kafka source gives up
    fetching offsets after its retries (`fetchOffset.numRetries`, 3 by default, each waiting the
    admin client's `default.api.timeout.ms`, 60 s by default).
    """
    try:
        for throwable in java_chain(exc):
            if KAFKA_RETRIABLE in _class_lineage(throwable):
                return f"{throwable.getClass().getName()}: {throwable.getMessage()}"
    except Exception:  # the JVM is gone: nothing to tell by
        return None
    return None


LOCK_EXCEPTION = "org.apache.hudi.exception.HoodieLockException"


def held_by_a_fresh_heartbeat(exc: BaseException) -> bool:
    """Did Hudi refuse to run a pending instant because its writer's heartbeat is still fresh?

    A writer killed moments ago (kill -9, a lost driver) leaves its pending compaction or commit
    with a heartbeat that Hudi trusts until it expires (by default 2 missed beats of 60 s). A job
    restarted within that time is refused ("Cannot execute instant ... due to heartbeat by
    concurrent writer/job") although nothing else writes: it should wait, not stop.
    """
    try:
        return any(
            LOCK_EXCEPTION in _class_lineage(throwable) and "heartbeat" in str(throwable.getMessage() or "").lower()
            for throwable in java_chain(exc)
        )
    except Exception:  # the JVM is gone
        return False


def _class_lineage(throwable: Any) -> list[str]:
    """The throwable's class name, then its superclasses' names."""
    names: list[str] = []
    cls = throwable.getClass()
    while cls is not None and len(names) < 20:
        names.append(str(cls.getName()))
        cls = cls.getSuperclass()
    return names


def _innermost_hudi_frame(throwable: Any) -> str | None:
    """`Class.method` of the Hudi frame nearest where `throwable` was thrown."""
    for frame in throwable.getStackTrace():
        name = str(frame.getClassName())
        if name.startswith(HUDI_PACKAGE) and not name.startswith(SHADED_PACKAGES):
            return f"{name}.{frame.getMethodName()}"
    return None
