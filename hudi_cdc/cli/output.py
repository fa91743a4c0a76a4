"""How commands print: a table for people, JSON for machines."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import click


class Output(ABC):
    """Where command results go."""

    @abstractmethod
    def table(self, title: str, rows: Sequence[dict[str, Any]]) -> None: ...

    @abstractmethod
    def message(self, text: str) -> None: ...

    @abstractmethod
    def records(self, title: str, rows: Sequence[dict[str, Any]], *, heading: str) -> None:
        """Whole records, one block each (field `heading` names the block), for values too long for a table."""


class TextOutput(Output):
    """Aligned columns for a terminal."""

    def table(self, title: str, rows: Sequence[dict[str, Any]]) -> None:
        click.echo(click.style(title, bold=True))
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
    """One JSON document per call, on stdout."""

    def table(self, title: str, rows: Sequence[dict[str, Any]]) -> None:
        click.echo(json.dumps({"title": title, "rows": list(rows)}, default=str, sort_keys=True))

    def message(self, text: str) -> None:
        click.echo(json.dumps({"message": text}))

    def records(self, title: str, rows: Sequence[dict[str, Any]], *, heading: str) -> None:
        self.table(title, rows)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _block(value: Any) -> str:
    """Structured values (decoded JSON) pretty-printed; text as is."""
    if isinstance(value, dict | list):
        return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)
    return _text(value)


def output_for(as_json: bool) -> Output:
    return JsonOutput() if as_json else TextOutput()
