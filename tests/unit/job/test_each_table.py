"""pipeline.each_table: tables of one batch applied at most N at once, results in table order;
pipeline.oldest_first: the order a batch applies its tables in;
pipeline.tasks_for: how many tasks read a table's records from the batch."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest

from hudi_cdc.commit.offsets import KafkaRange
from hudi_cdc.config.models import TableConfig
from hudi_cdc.fold.tally import TableRecords
from hudi_cdc.job.pipeline import each_table, oldest_first, tasks_for


class _Gauge:
    """How many calls run at once, and the most seen."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.finished: list[str] = []

    def run(self, name: str, seconds: float) -> str:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(seconds)
        with self.lock:
            self.now -= 1
            self.finished.append(name)
        return name.upper()


def test_tables_run_concurrently_up_to_the_bound_and_results_keep_table_order() -> None:
    gauge = _Gauge()
    tables = ["a", "b", "c", "d", "e", "f"]
    # earlier tables take longer, so they finish after later ones
    pause = {t: 0.3 - 0.04 * i for i, t in enumerate(tables)}
    got = each_table(lambda t: gauge.run(t, pause[t]), tables, concurrency=3)
    assert got == ["A", "B", "C", "D", "E", "F"]
    assert gauge.most == 3
    assert gauge.finished != tables  # they did overlap


def test_concurrency_one_runs_tables_one_after_another() -> None:
    gauge = _Gauge()
    tables = ["a", "b", "c"]
    assert each_table(lambda t: gauge.run(t, 0.05), tables, concurrency=1) == ["A", "B", "C"]
    assert gauge.most == 1
    assert gauge.finished == tables


def test_a_failing_table_raises_after_every_other_table_finished() -> None:
    gauge = _Gauge()

    def apply(table: str) -> str:
        if table == "a":
            raise RuntimeError("table a failed")
        return gauge.run(table, 0.2)

    with pytest.raises(RuntimeError, match="table a failed"):
        each_table(apply, ["a", "b", "c"], concurrency=2)
    assert sorted(gauge.finished) == ["b", "c"]


def test_a_tables_records_are_read_by_one_task_per_ten_thousand() -> None:
    assert [tasks_for(n) for n in (0, 1, 10_000, 10_001, 1_000_000)] == [1, 1, 1, 2, 100]



def _received(oldest: dt.datetime | None) -> TableRecords:
    return TableRecords(read=1, tombstones=0, kafka=KafkaRange(first={}, last={}), oldest=oldest)


def test_a_batch_applies_the_table_whose_oldest_record_waited_longest_first() -> None:
    tables = [TableConfig(name=n, key=["id"], base_path=f"/unused/{n}") for n in ("a", "b", "c", "d", "e", "f")]
    t0 = dt.datetime(2026, 12, 5, 12, 0, 0)
    received = {
        "a": _received(t0 + dt.timedelta(seconds=30)),
        "b": _received(None),  # records without a timestamp
        "c": _received(t0),
        "d": _received(t0 + dt.timedelta(seconds=30)),  # a tie with a: the job's order
        "e": _received(t0 + dt.timedelta(seconds=5)),
        # f: parked, nothing of its own in this batch
    }
    assert [t.name for t in oldest_first(tables, received)] == ["c", "e", "a", "d", "b", "f"]
    # without timestamps the job's own order stands
    assert oldest_first(tables, {}) == tables
