"""Progress goes to stderr: a status line rewritten in place on a terminal, log lines elsewhere."""

from __future__ import annotations

import io
import logging

import pytest

from hudi_cdc.cli.progress import Reporter


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_each_step_rewrites_one_status_line_and_close_ends_it() -> None:
    stream = Terminal()
    with Reporter(stream=stream) as progress:
        progress.step("compact: table a (1/2)")
        progress.step("compact: table b (2/2)")
    written = stream.getvalue()
    steps = written.split("\r")[1:]
    assert [s.split("] ", 1)[1].removesuffix("\x1b[K").removesuffix("\x1b[K\n") for s in steps] == [
        "compact: table a (1/2)", "compact: table b (2/2)"]  # fmt: skip
    assert written.endswith("\n") and written.count("\n") == 1


def test_off_a_terminal_each_step_is_a_log_line_and_nothing_is_written(caplog: pytest.LogCaptureFixture) -> None:
    stream = io.StringIO()  # a pipe or a file: not a terminal
    with caplog.at_level(logging.INFO, logger="hudi_cdc.cli.progress"), Reporter(stream=stream) as progress:
        progress.step("relayout: table a: writing its rows")
    assert stream.getvalue() == ""
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [("INFO", "relayout: table a: writing its rows")]


def test_a_reporter_that_said_nothing_writes_nothing() -> None:
    stream = Terminal()
    with Reporter(stream=stream):
        pass
    assert stream.getvalue() == ""
