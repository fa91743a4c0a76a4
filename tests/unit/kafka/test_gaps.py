"""What a lenient run went past: the planned offsets before the first read that Kafka no longer holds."""

from __future__ import annotations

from hudi_cdc.kafka.gaps import Gap, suspects, unread
from hudi_cdc.kafka.offset_log import source_offsets

T = "srv.db.t"


def test_offsets_deleted_before_the_first_read_are_a_gap() -> None:
    # planned 3..5; Kafka holds 5 on; the batch read from 5
    assert unread({T: {"0": 3}}, {T: {"0": 6}}, {T: {"0": 5}}, {T: {"0": 5}}) == [Gap(T, "0", 3, 4)]
    assert Gap(T, "0", 3, 4).offsets == 2


def test_a_batch_read_from_its_planned_start_went_past_nothing() -> None:
    assert unread({T: {"0": 3}}, {T: {"0": 6}}, {T: {"0": 3}}, {T: {"0": 0}}) == []


def test_offsets_skipped_but_still_in_kafka_are_no_loss() -> None:
    # transaction markers or a compacted topic: the first record read is past the start, yet
    # Kafka still holds the start
    assert unread({T: {"0": 3}}, {T: {"0": 9}}, {T: {"0": 6}}, {T: {"0": 0}}) == []


def test_offsets_deleted_after_the_batch_read_them_are_not_counted() -> None:
    # retention moved on after the read: only what lies before the first read counts
    assert unread({T: {"0": 3}}, {T: {"0": 9}}, {T: {"0": 5}}, {T: {"0": 8}}) == [Gap(T, "0", 3, 4)]


def test_a_batch_whose_whole_range_is_gone_lost_all_of_it() -> None:
    assert unread({T: {"0": 6}}, {T: {"0": 9}}, {}, {T: {"0": 9}}) == [Gap(T, "0", 6, 8)]
    # retention far past the batch's end: the batch's range only, the next batch counts its own
    assert unread({T: {"0": 6}}, {T: {"0": 9}}, {}, {T: {"0": 50}}) == [Gap(T, "0", 6, 8)]


def test_new_partitions_and_unanswered_partitions_count_nothing() -> None:
    end = {T: {"0": 9, "1": 4}}
    assert unread({T: {"0": 9}}, end, {T: {"1": 2}}, {T: {"0": 9, "1": 2}}) == []  # partition 1 is new
    assert unread({T: {"0": 3, "1": 0}}, end, {}, {T: {"1": 0}}) == []  # Kafka did not answer for 0


def test_a_topic_created_anew_ends_below_the_planned_start_and_its_records_before_the_end_are_skipped() -> None:
    # Spark drops the range 40..2 and goes on from 2: the new topic's offsets 0 and 1 are never read
    assert unread({T: {"0": 40}}, {T: {"0": 2}}, {}, {T: {"0": 0}}) == [Gap(T, "0", 0, 1, recreated=True)]
    # an empty new topic: nothing countable, still reported
    (empty,) = unread({T: {"0": 40}}, {T: {"0": 0}}, {}, {T: {"0": 0}})
    assert (empty.recreated, empty.offsets) == (True, 0)
    assert suspects({T: {"0": 40}}, {T: {"0": 2}}, {}) == {T: {"0": 40}}


def test_the_kafka_offsets_of_spark_checkpoint_files() -> None:
    offset_log = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}\n{"srv.db.t":{"0":3,"1":7}}'
    assert source_offsets(offset_log, line=2) == {T: {"0": 3, "1": 7}}
    initial = '\x00v1\n{"srv.db.t":{"0":0}}'  # the Kafka source's initial offsets: a zero byte first
    assert source_offsets(initial, line=1) == {T: {"0": 0}}
    assert source_offsets(None, line=2) is None
    assert source_offsets("v1\n{}\n-", line=2) is None  # a source without offsets


def test_kafka_is_asked_only_about_partitions_not_read_from_their_planned_start() -> None:
    start, end = {T: {"0": 3, "1": 5, "2": 7, "3": 2}}, {T: {"0": 6, "1": 9, "2": 7, "3": 4, "4": 1}}
    first_read = {T: {"0": 3, "1": 6}}  # 2: nothing planned; 3: planned, nothing read; 4: new partition
    assert suspects(start, end, first_read) == {T: {"1": 5, "3": 2}}
    assert suspects(start, end, {T: {"0": 3, "1": 5, "3": 2}}) == {}
