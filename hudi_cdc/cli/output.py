"""How commands print: a table for people, JSON for machines.

Under `--json` every command prints one envelope per document, one document per line on stdout:
`{"format": 1, "command": "status", "title": ..., "rows": [...]}` for a table,
`{"format": 1, "command": ..., "message": ...}` for a message and
`{"format": 1, "command": ..., "error": {"type", "message", "exit_code"}}` for a failure (its text
also goes to stderr). `format` changes only when a key changes meaning or goes away.
"""

from __future__ import annotations

import json
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

import click

FORMAT = 1
"""The envelope's version: scripts may rely on its keys while it stays the same."""


class Output(ABC):
    """Where command results go."""

    @abstractmethod
    def table(self, title: str, rows: Sequence[dict[str, Any]], *, details: Mapping[str, Any] | None = None) -> None:
        """Rows under a title; `details`, facts about the whole result, before them."""

    @abstractmethod
    def message(self, text: str) -> None: ...

    @abstractmethod
    def records(self, title: str, rows: Sequence[dict[str, Any]], *, heading: str) -> None:
        """Whole records, one block each (field `heading` names the block), for values too long for a table."""


class TextOutput(Output):
    """Aligned columns for a terminal."""

    def table(self, title: str, rows: Sequence[dict[str, Any]], *, details: Mapping[str, Any] | None = None) -> None:
        click.echo(click.style(title, bold=True))
        width = max((len(name) for name in details or {}), default=0)
        for name, value in (details or {}).items():
            click.echo(f"  {name.ljust(width)}  {_text(value)}")
        if not rows:
            click.echo("  (none)")
            return
        # every row's columns, in the order they first appear: a row may lack some (a table not created yet)
        headers = list(dict.fromkeys(name for row in rows for name in row))
        cells = [[_text(row.get(h)) for h in headers] for row in rows]
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
        click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
        for line in cells:
            click.echo("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)))

    def message(self, text: str) -> None:
        click.echo(text)

    def records(self, title: str, rows: Sequence[dict[str, Any]], *, heading: str) -> None:
        click.echo(click.style(title, bold=True))
        if not rows:
            click.echo("  (none)")
        for row in rows:
            click.echo("")
            click.echo(click.style(_text(row.get(heading)), bold=True))
            fields = [name for name in row if name != heading]
            width = max((len(name) for name in fields), default=0)
            for name in fields:
                lines = _block(row[name]).splitlines() or [""]
                click.echo(f"  {name.ljust(width)}  {lines[0]}")
                for line in lines[1:]:
                    click.echo(f"  {' ' * width}  {line}")


class JsonOutput(Output):
    """One JSON envelope per call, on one line of stdout (`FORMAT`, the command's name, then the result)."""

    def __init__(self, command: str) -> None:
        self.command = command

    def table(self, title: str, rows: Sequence[dict[str, Any]], *, details: Mapping[str, Any] | None = None) -> None:
        """A table's envelope; `details` (a command's facts beside its rows) under their own key."""
        self._emit({"title": title, "rows": list(rows), **({"details": dict(details)} if details is not None else {})})

    def message(self, text: str) -> None:
        self._emit({"message": text})

    def records(self, title: str, rows: Sequence[dict[str, Any]], *, heading: str) -> None:
        self.table(title, rows)

    def error(self, error_type: str, text: str, *, exit_code: int) -> None:
        """The envelope of a command that failed (its text goes to stderr as well)."""
        self._emit({"error": {"type": error_type, "message": text, "exit_code": exit_code}})

    def _emit(self, body: dict[str, Any]) -> None:
        document = {"format": FORMAT, "command": self.command, **body}
        click.echo(json.dumps(document, default=str, sort_keys=True, ensure_ascii=False))


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _block(value: Any) -> str:
    """Structured values (decoded JSON) pretty-printed; text as is."""
    if isinstance(value, dict | list):
        return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)
    return _text(value)


def command_name(ctx: click.Context | None = None) -> str:
    """The running command as typed after the program's name (`status`, `dead-letters list`)."""
    ctx = ctx or click.get_current_context(silent=True)
    names: list[str] = []
    while ctx is not None and ctx.parent is not None:  # the root context is the program itself
        names.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(names)


def output_for(as_json: bool, *, command: str | None = None) -> Output:
    """Text, or JSON envelopes naming `command` (default: the running click command)."""
    return JsonOutput(command if command is not None else command_name()) if as_json else TextOutput()


def fail(error_type: str, text: str, *, exit_code: int, as_json: bool, prefix: str = "error") -> NoReturn:
    """End a command that failed: `prefix: text` on stderr, its error envelope on stdout under --json, the exit code."""
    click.echo(f"{prefix}: {text}", err=True)
    if as_json:
        JsonOutput(command_name()).error(error_type, text, exit_code=exit_code)
    sys.exit(exit_code)
