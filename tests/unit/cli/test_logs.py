"""`--log-format json`: one JSON object per line, with the batch line's fields as keys."""

from __future__ import annotations

import json
import logging

from hudi_cdc.cli.logs import JsonFormatter
from hudi_cdc.commit.metrics import OUTCOMES, BatchMetrics, TableMetrics


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_batch_line_becomes_one_json_object_with_its_counts_as_keys() -> None:
    kept = _Kept()
    logger = logging.getLogger("hudi_cdc.commit.metrics")
    logger.addHandler(kept)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        table = TableMetrics(table="orders", read=5, applied=3, duplicate=1, dead_letter=1, commit_time="20261204031500123")
        BatchMetrics(batch_id=7, tables=[table]).log()
    finally:
        logger.removeHandler(kept)
        logger.setLevel(old_level)
    (record,) = kept.records
    line = JsonFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["level"] == "INFO" and entry["logger"] == "hudi_cdc.commit.metrics"
    assert entry["message"].startswith("batch 7 table orders: read=5")
    assert (entry["batch_id"], entry["table"], entry["read"], entry["commit"]) == (7, "orders", 5, "20261204031500123")
    assert {name: entry[name] for name in OUTCOMES} == {name: getattr(table, name) for name in OUTCOMES}
    assert entry["time"].endswith("+00:00")


def test_an_error_keeps_its_traceback_in_one_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed %s", ("here",), sys.exc_info())
    entry = json.loads(JsonFormatter().format(record))
    assert entry["message"] == "failed here" and "ValueError: boom" in entry["error"]
