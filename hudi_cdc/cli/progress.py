"""Progress of long commands, on stderr only so that stdout (and `--json`) carries nothing but results.

On a terminal a status line is rewritten in place; otherwise (a pipe, a log file, a scheduler)
each step is a log record at INFO, through the handlers `cli.logs` configured.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

import click

log = logging.getLogger(__name__)

Step = Callable[[str], None]
"""What a library function calls with one line saying where it is (`relayout: rows written`)."""


class Reporter:
    """Reports the steps of one command: a status line on a terminal, log lines elsewhere.

    Use it as a context manager; its `step` is the callback library functions take.
    """

    def __init__(self, *, stream: TextIO | None = None, terminal: bool | None = None) -> None:
        self._stream: TextIO = stream if stream is not None else sys.stderr
        self._terminal = self._stream.isatty() if terminal is None else terminal
        self._shown = False
        self._started = time.monotonic()

    def step(self, text: str) -> None:
        """Say where the command is now."""
        if not self._terminal:
            log.info("%s", text)
            return
        elapsed = int(time.monotonic() - self._started)
        # \r and erase-to-end-of-line: the newest step replaces the line the previous one wrote
        click.echo(f"\r[{elapsed // 60:02d}:{elapsed % 60:02d}] {text}\x1b[K", file=self._stream, nl=False)
        self._shown = True

    def close(self) -> None:
        """End the status line, so that what follows starts on a line of its own."""
        if self._shown:
            click.echo("", file=self._stream)
            self._shown = False

    def __enter__(self) -> Reporter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
