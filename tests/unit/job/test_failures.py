"""failures.py: which failed writes are the table's, the storage's or Kafka's, not a record's."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import pytest

from hudi_cdc.commit.metrics import TableMetrics
from hudi_cdc.config.models import TableConfig
from hudi_cdc.job import isolation
from hudi_cdc.job.context import BatchContext
from hudi_cdc.job.failures import environment_fault, held_by_a_fresh_heartbeat, kafka_data_loss, kafka_fault

HIERARCHY = {
    "org.apache.hudi.exception.HoodieMetadataException": "org.apache.hudi.exception.HoodieException",
    "org.apache.hudi.exception.HoodieUpsertException": "org.apache.hudi.exception.HoodieException",
    "org.apache.hudi.exception.HoodieLockException": "org.apache.hudi.exception.HoodieException",
    "org.apache.hudi.exception.HoodieException": "java.lang.RuntimeException",
    "org.apache.spark.SparkException": "java.lang.Exception",
    "org.apache.kafka.common.errors.TimeoutException": "org.apache.kafka.common.errors.RetriableException",
    "org.apache.kafka.common.errors.RetriableException": "org.apache.kafka.common.errors.ApiException",
    "org.apache.kafka.common.errors.ApiException": "org.apache.kafka.common.KafkaException",
    "org.apache.kafka.common.config.ConfigException": "org.apache.kafka.common.KafkaException",
    "org.apache.kafka.common.KafkaException": "java.lang.RuntimeException",
    "java.lang.RuntimeException": "java.lang.Exception",
    "java.lang.ArrayIndexOutOfBoundsException": "java.lang.IndexOutOfBoundsException",
    "java.lang.IndexOutOfBoundsException": "java.lang.RuntimeException",
    "java.io.FileNotFoundException": "java.io.IOException",
    "java.io.IOException": "java.lang.Exception",
    "java.lang.Exception": "java.lang.Throwable",
}


@dataclass
class FakeClass:
    """java.lang.Class as py4j shows it: a name and a superclass (methods keep the Java names)."""

    name: str

    def getName(self) -> str:
        return self.name

    def getSuperclass(self) -> FakeClass | None:
        parent = HIERARCHY.get(self.name)
        return FakeClass(parent) if parent else None


@dataclass
class FakeFrame:
    where: str

    def getClassName(self) -> str:
        return self.where.rsplit(".", 1)[0]

    def getMethodName(self) -> str:
        return self.where.rsplit(".", 1)[1]


@dataclass
class FakeThrowable:
    """A Java throwable as py4j shows it."""

    cls: str
    message: str = ""
    frames: list[str] = field(default_factory=list)
    cause: FakeThrowable | None = None

    def getClass(self) -> FakeClass:
        return FakeClass(self.cls)

    def getMessage(self) -> str:
        return self.message

    def getCause(self) -> FakeThrowable | None:
        return self.cause

    def equals(self, other: Any) -> bool:
        return self is other

    def getStackTrace(self) -> list[FakeFrame]:
        return [FakeFrame(f) for f in self.frames]


class FakePy4JError(Exception):
    def __init__(self, java_exception: Any) -> None:
        super().__init__("An error occurred while calling o123.save")
        self.java_exception = java_exception


def _failed(*chain: FakeThrowable) -> FakePy4JError:
    """A Py4J error whose Java chain is `chain`, outermost first."""
    for outer, inner in pairwise(chain):
        outer.cause = inner
    return FakePy4JError(chain[0])


TASK_FAILED = "org.apache.spark.SparkException"


def test_a_hudi_metadata_exception_anywhere_in_the_chain_is_the_tables() -> None:
    failure = _failed(
        FakeThrowable("org.apache.hudi.exception.HoodieUpsertException", "Failed to upsert for commit time 1"),
        FakeThrowable("org.apache.hudi.exception.HoodieMetadataException", "Failed to retrieve files"),
        FakeThrowable("java.lang.RuntimeException", "bad block"),
    )
    assert environment_fault(failure) == "Hudi failed on the table itself (org.apache.hudi.exception.HoodieMetadataException)"


def test_an_io_exception_at_the_root_is_the_storages() -> None:
    failure = _failed(
        FakeThrowable("org.apache.hudi.exception.HoodieUpsertException", "Failed to upsert"),
        FakeThrowable("java.io.FileNotFoundException", "File file:/t/x.parquet does not exist"),
    )
    assert environment_fault(failure) == "the storage failed (java.io.FileNotFoundException: File file:/t/x.parquet does not exist)"


def test_a_root_cause_thrown_in_the_metadata_payload_is_the_tables() -> None:
    """Hudi 1.2.0's failure when its metadata table compacts mid-commit, seen in the plain bench job."""
    failure = _failed(
        FakeThrowable(TASK_FAILED, "Job aborted due to stage failure"),
        FakeThrowable(
            "java.lang.ArrayIndexOutOfBoundsException",
            "Index 9 out of bounds for length 7",
            frames=[
                "org.apache.avro.generic.GenericData$Record.get",
                "org.apache.hudi.org.apache.avro.Shaded.read",
                "org.apache.hudi.metadata.HoodieMetadataPayload.getInsertValue",
                "org.apache.hudi.io.HoodieAppendHandle.write",
            ],
        ),
    )
    assert environment_fault(failure) == (
        "Hudi failed maintaining the table (java.lang.ArrayIndexOutOfBoundsException in "
        "org.apache.hudi.metadata.HoodieMetadataPayload.getInsertValue)"
    )


@pytest.mark.parametrize(
    "frames",
    [
        # a value the data write cannot take: the innermost Hudi frame writes data, whatever called it
        ["org.apache.hudi.io.HoodieMergeHandle.write", "org.apache.hudi.metadata.HoodieMetadataWriteUtils.map"],
        # an expression that throws on one value, before Hudi sees the rows
        ["org.apache.spark.sql.catalyst.expressions.AssertTrue.eval", "org.apache.spark.scheduler.Task.run"],
        [],
    ],
)
def test_a_record_may_be_at_fault_for_anything_else(frames: list[str]) -> None:
    failure = _failed(
        FakeThrowable("org.apache.hudi.exception.HoodieUpsertException", "Failed to upsert"),
        FakeThrowable(TASK_FAILED, "Job aborted due to stage failure"),
        FakeThrowable("java.lang.RuntimeException", "poison value", frames=frames),
    )
    assert environment_fault(failure) is None


def test_a_kafka_client_exception_anywhere_in_the_chain_is_kafkas() -> None:
    """A lost executor's cached records are read from Kafka again, inside the table's Spark jobs."""
    failure = _failed(
        FakeThrowable(TASK_FAILED, "Job aborted due to stage failure"),
        FakeThrowable("org.apache.kafka.common.errors.TimeoutException", "Timeout of 60000ms expired before fetching"),
    )
    assert environment_fault(failure) == (
        "Kafka failed (org.apache.kafka.common.errors.TimeoutException: Timeout of 60000ms expired before fetching)"
    )


class FakeStreamingQueryError(Exception):
    """PySpark's captured StreamingQueryException: the Java throwable is `_origin`."""

    def __init__(self, origin: FakeThrowable) -> None:
        super().__init__("[STREAM_FAILED] Query terminated with exception")
        self._origin = origin


def test_a_query_stopped_by_kafka_names_the_kafka_exception() -> None:
    """Spark's Kafka source gave up fetching offsets: the brokers stopped answering."""
    cause = FakeThrowable("org.apache.kafka.common.errors.TimeoutException", "Timed out waiting for a node assignment. Call: listTopics")
    stopped = FakeThrowable("org.apache.spark.sql.streaming.StreamingQueryException", "Query terminated",
                            cause=FakeThrowable("java.util.concurrent.ExecutionException", "wrapped", cause=cause))  # fmt: skip
    assert kafka_fault(FakeStreamingQueryError(stopped)) == (
        "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment. Call: listTopics"
    )
    other = FakeThrowable("org.apache.spark.sql.streaming.StreamingQueryException", "Query terminated",
                          cause=FakeThrowable("java.io.IOException", "disk full"))  # fmt: skip
    assert kafka_fault(FakeStreamingQueryError(other)) is None
    # a setting Kafka's client refuses is not an outage: the query's own error stands
    misconfigured = FakeThrowable("org.apache.spark.sql.streaming.StreamingQueryException", "Query terminated",
                                  cause=FakeThrowable("org.apache.kafka.common.KafkaException", "Failed to create new KafkaAdminClient",
                                                      cause=FakeThrowable("org.apache.kafka.common.config.ConfigException", "bad")))  # fmt: skip
    assert kafka_fault(FakeStreamingQueryError(misconfigured)) is None
    assert kafka_fault(ValueError("kafka")) is None


@pytest.mark.parametrize(
    ("spark_says", "finding"),
    [
        # as Spark 3.5's Kafka source words its data-loss stops (the first two seen in tests/integration/test_kafka_data_loss.py)
        ("Cannot fetch offset 3 (GroupId: spark-kafka-source-a1-executor, TopicPartition: srv.db.t-0). "
         "Some data may have been lost because they are not available in Kafka any more",
         "srv.db.t-0: the records from offset 3 on are no longer in Kafka (deleted by retention, or by hand)"),
        ("Set(srv.db.t-0, srv.db.t-1) are gone. Some data may have been missed..",
         "srv.db.t-0, srv.db.t-1: in the checkpoint, but no longer read (a route was removed, or the topic was deleted)"),
        ("Partition srv.db.t-0's offset was changed from 78 to 0, some data may have been missed.",
         "srv.db.t-0: Kafka's offsets went back from 78 to 0 (the topic was deleted and created again)"),
        ("Added partition srv.db.t-2 starts from 5 instead of 0. Some data may have been missed",
         "srv.db.t-2: a new partition whose records before offset 5 are no longer in Kafka"),
    ],
)  # fmt: skip
def test_kafka_data_loss_names_the_partitions_and_offsets_spark_could_not_read(spark_says: str, finding: str) -> None:
    stopped = FakeThrowable("org.apache.spark.sql.streaming.StreamingQueryException", "Query terminated",
                            cause=FakeThrowable("java.lang.IllegalStateException", spark_says))  # fmt: skip
    lost = kafka_data_loss(FakeStreamingQueryError(stopped))
    assert lost is not None and lost.findings == [finding] and lost.topics == ["srv.db.t"]
    # raised from the error that carries it (a TableFailure from a failed read), or as Python text alone
    assert kafka_data_loss(ValueError("table t: batch 3 could not be written"), RuntimeError(spark_says)) == lost


@pytest.mark.parametrize("message", ["Config conflict(key\tcurrent value\texisting value):\nRecordKey:\tid,name\tid", ""])
def test_hudis_table_config_check_is_the_tables_fault_even_without_a_message(message: str) -> None:
    refused = FakeThrowable("org.apache.hudi.exception.HoodieException", message,
                            frames=["org.apache.hudi.HoodieWriterUtils$.validateTableConfig", "org.apache.hudi.DefaultSource.createRelation"])  # fmt: skip
    assert environment_fault(_failed(FakeThrowable(TASK_FAILED, "save failed"), refused)) == (
        f"Hudi refused the table's settings ({message.partition(chr(10))[0]})"
    )


def test_other_errors_are_not_data_loss() -> None:
    assert kafka_data_loss(ValueError("disk full"), None) is None
    other = FakeThrowable("org.apache.spark.sql.streaming.StreamingQueryException", "Query terminated",
                          cause=FakeThrowable("org.apache.kafka.common.errors.TimeoutException", "Timed out"))  # fmt: skip
    assert kafka_data_loss(FakeStreamingQueryError(other)) is None


def test_python_errors_and_a_gone_jvm_tell_nothing() -> None:
    assert environment_fault(ValueError("no Java here")) is None

    class Gone:
        def getClass(self) -> Any:
            raise ConnectionError("py4j gateway closed")

        def getCause(self) -> None:
            return None

    assert environment_fault(FakePy4JError(Gone())) is None


def _heartbeat_refusal() -> FakePy4JError:
    """What a job restarted right after a kill -9 mid-compaction got (kill -9 test, CI)."""
    return _failed(
        FakeThrowable("org.apache.hudi.exception.HoodieException", "Failed to instantiate Metadata table"),
        FakeThrowable(
            "org.apache.hudi.exception.HoodieLockException",
            "Cannot execute instant 20261126092311740 due to heartbeat by concurrent writer/job",
        ),
    )


def test_a_fresh_heartbeat_of_a_killed_writer_is_recognised() -> None:
    assert held_by_a_fresh_heartbeat(_heartbeat_refusal())
    other_lock = _failed(FakeThrowable("org.apache.hudi.exception.HoodieLockException", "Unable to acquire lock"))
    assert not held_by_a_fresh_heartbeat(other_lock)
    assert not held_by_a_fresh_heartbeat(ValueError("heartbeat"))


@dataclass
class FakeClock:
    """`isolation.time` for the heartbeat wait: sleeping and each try move the clock, nothing waits."""

    now: float = 0.0
    slept: list[float] = field(default_factory=list)

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_batch_waits_for_the_heartbeat_then_applies_or_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch is tried again while the heartbeat is fresh, at most the table's heartbeat expiry
    plus a margin from the first try, the tries' own time included."""
    calls: list[int] = []
    refusals = 2
    try_seconds = 0.0
    clock = FakeClock()

    def run_table(*_: Any) -> TableMetrics:
        calls.append(1)
        clock.now += try_seconds
        if len(calls) <= refusals:
            raise _heartbeat_refusal()
        return TableMetrics(table="t", read=1)

    monkeypatch.setattr(isolation, "time", clock)
    table = TableConfig(name="t", key=["id"], base_path="/unused")
    ctx = BatchContext(config=None, batch_id=3)  # type: ignore[arg-type]
    metrics = isolation.apply_waiting(run_table, None, None, table, ctx)  # type: ignore[arg-type]
    assert metrics.read == 1 and len(calls) == 3 and sum(clock.slept) == 2 * isolation.HEARTBEAT_POLL_SECONDS

    calls.clear()
    refusals = 10**6  # a heartbeat that never expires: another writer really runs
    with pytest.raises(FakePy4JError):
        isolation.apply_waiting(run_table, None, None, table, ctx)  # type: ignore[arg-type]
    budget = 120 + isolation.HEARTBEAT_WAIT_MARGIN_SECONDS  # Hudi's defaults: 2 missed beats of 60 s
    assert len(calls) == int(budget / isolation.HEARTBEAT_POLL_SECONDS) + 1

    calls.clear()
    try_seconds = 20.0  # each refused try takes time of its own: fewer tries fit in the budget
    with pytest.raises(FakePy4JError):
        isolation.apply_waiting(run_table, None, None, table, ctx)  # type: ignore[arg-type]
    # tries end at 20, 55, 90, 125 and 160 s after the first began: the fifth is past 150 s
    assert len(calls) == 5

    calls.clear()
    try_seconds = 0.0
    quick = table.model_copy(
        update={"hoodie_options": {"hoodie.client.heartbeat.interval_in_ms": 10_000, "hoodie.client.heartbeat.tolerable.misses": 3}}
    )
    with pytest.raises(FakePy4JError):
        isolation.apply_waiting(run_table, None, None, quick, ctx)  # type: ignore[arg-type]
    assert len(calls) == int((30 + isolation.HEARTBEAT_WAIT_MARGIN_SECONDS) / isolation.HEARTBEAT_POLL_SECONDS) + 1
