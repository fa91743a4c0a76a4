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


class TextOutput(Output):
    """Aligned columns for a terminal."""

    def table(self, title: str, rows: Sequence[dict[str, Any]]) -> None:
        click.echo(click.style(title, bold=True))
        if not rows:
            click.echo("  (none)")
            return
        headers = list(rows[0])
        cells = [[_text(row.get(h)) for h in headers] for row in rows]
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
        click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
        for line in cells:
            click.echo("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)))

    def message(self, text: str) -> None:
        click.echo(text)


class JsonOutput(Output):
    """One JSON document per call, on stdout."""

    def table(self, title: str, rows: Sequence[dict[str, Any]]) -> None:
        click.echo(json.dumps({"title": title, "rows": list(rows)}, default=str, sort_keys=True))

    def message(self, text: str) -> None:
        click.echo(json.dumps({"message": text}))


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def output_for(as_json: bool) -> Output:
    return JsonOutput() if as_json else TextOutput()
