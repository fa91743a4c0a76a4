"""The parking lot: what a parked table must read again, when it is tried, and how it is kept."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from hudi_cdc.commit.offsets import KafkaRange
from hudi_cdc.errors import TableFailure, TerminalError
from hudi_cdc.job.parking import (
    FIRST_RETRY_SECONDS,
    MAX_RETRY_SECONDS,
    ParkingLot,
    parked_path,
    read_parked,
    request_retry,
    retry_request_path,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _failure(table: str = "orders", reason: str = "the storage failed (x)") -> TableFailure:
    return TableFailure(table, batch_id=3, positions="t[0]@5..9", reason=reason, error="java.io.IOException: x")


def test_a_parked_table_reads_again_from_its_first_unapplied_offset_to_the_last_held(spark: SparkSession, tmp_path: Path) -> None:
    clock = Clock()
    lot = ParkingLot(spark, str(tmp_path / "cp"), clock=clock)
    lot.park(_failure(), KafkaRange(first={"t": {"0": 5}}, last={"t": {"0": 9}}), records=5)
    # later batches: partition 0 goes on, partition 1 shows up for the first time
    lot.hold("orders", KafkaRange(first={"t": {"0": 10, "1": 0}}, last={"t": {"0": 12, "1": 4}}), records=8)
    lot.hold("orders", KafkaRange(first={"t": {"1": 5}}, last={"t": {"1": 6}}), records=2)
    parked = lot.get("orders")
    assert parked is not None
    assert (parked.first, parked.last, parked.backlog) == ({"t": {"0": 5, "1": 0}}, {"t": {"0": 12, "1": 6}}, 15)
    assert parked.pending.describe() == "t[0]@5..12, t[1]@0..6"


def test_tries_back_off_doubling_to_a_bound_and_an_operator_request_comes_first(spark: SparkSession, tmp_path: Path) -> None:
    clock = Clock()
    checkpoint = str(tmp_path / "cp")
    lot = ParkingLot(spark, checkpoint, clock=clock)
    lot.park(_failure(), KafkaRange(first={"t": {"0": 5}}, last={"t": {"0": 9}}), records=5)
    assert not lot.due("orders")
    clock.now += FIRST_RETRY_SECONDS
    assert lot.due("orders")
    waits = []
    for _ in range(8):
        before = clock.now
        lot.failed_again(_failure(reason="still failing"))
        parked = lot.get("orders")
        assert parked is not None
        waits.append(parked.next_try - before)
        clock.now = parked.next_try
    assert waits == [60.0, 120.0, 240.0, 480.0, MAX_RETRY_SECONDS, MAX_RETRY_SECONDS, MAX_RETRY_SECONDS, MAX_RETRY_SECONDS]
    assert "still failing" in parked.cause and parked.attempts == 8

    clock.now = parked.next_try - 1
    assert not lot.due("orders")
    request = Path(retry_request_path(checkpoint, "orders"))
    request.parent.mkdir(parents=True)
    request.write_text("retry\n")
    assert lot.due("orders") and not request.exists()  # the request is taken once
    assert not lot.due("orders")
    # one more request after the try that catches the table up goes with it
    request_retry(spark, checkpoint, "orders")
    lot.release("orders")
    assert not request.exists()


def test_an_operator_request_written_while_the_running_job_takes_requests_never_fails(spark: SparkSession, tmp_path: Path) -> None:
    """The job deletes a request the moment it sees it. A request created in place was seen and
    deleted before Hadoop set its permissions, and `retry-table` failed ("chmod: cannot access")."""
    clock = Clock()
    checkpoint = str(tmp_path / "cp")
    lot = ParkingLot(spark, checkpoint, clock=clock)
    lot.park(_failure(), KafkaRange(first={"t": {"0": 5}}, last={"t": {"0": 9}}), records=5)
    taken = 0
    asking = True

    def running_job() -> None:
        nonlocal taken
        while asking:
            taken += lot.due("orders")  # only a request makes it due: the clock stands before the backoff's end

    job = threading.Thread(target=running_job)
    job.start()
    try:
        for _ in range(200):
            request_retry(spark, checkpoint, "orders")
    finally:
        asking = False
        job.join()
    left = Path(retry_request_path(checkpoint, "orders")).exists()
    assert taken >= 1 and taken + left <= 200
    assert lot.due("orders") == left


def test_the_lot_survives_a_restart_and_every_parked_table_is_tried_first(spark: SparkSession, tmp_path: Path) -> None:
    clock = Clock()
    checkpoint = str(tmp_path / "cp")
    lot = ParkingLot(spark, checkpoint, clock=clock)
    lot.park(_failure(), KafkaRange(first={"t": {"0": 5}}, last={"t": {"0": 9}}), records=5)
    lot.save()
    restarted = ParkingLot(spark, checkpoint, clock=clock)
    assert [p.table for p in restarted.parked()] == ["orders"] and restarted.due("orders")
    restarted.release("orders")
    assert read_parked(spark, checkpoint) == []
    assert ParkingLot(spark, checkpoint).parked() == []


def test_a_crash_between_saves_leaves_a_whole_file_and_a_torn_one_stops_the_job(spark: SparkSession, tmp_path: Path) -> None:
    checkpoint = str(tmp_path / "cp")
    lot = ParkingLot(spark, checkpoint)
    lot.park(_failure(), KafkaRange(first={"t": {"0": 5}}, last={"t": {"0": 9}}), records=5)
    lot.save()
    path = Path(parked_path(checkpoint))
    path.rename(str(path) + ".new")  # the crash fell between deleting the old file and moving the new one
    assert [p.table for p in read_parked(spark, checkpoint)] == ["orders"]
    path.write_text('[{"table": "orders", "cau')
    with pytest.raises(TerminalError, match="do not delete it"):  # Hadoop's checksum refuses it
        read_parked(spark, checkpoint)
    path.with_name(f".{path.name}.crc").unlink(missing_ok=True)
    with pytest.raises(TerminalError, match="do not delete it"):  # torn JSON
        read_parked(spark, checkpoint)
