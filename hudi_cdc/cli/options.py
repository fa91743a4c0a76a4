"""Options every command spells the same way: `--json`, `--config PATH|URI`, and tables chosen
with `--table NAME`.

The positional TABLE some commands took before `--table` still works for one release: it is
hidden from help and prints a deprecation warning on stderr.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Machine-readable output: one JSON envelope per line (format 1)."
)


CONFIG_HELP = "Job YAML file: a local path, or hdfs://... or s3a://... (read through the session's Hadoop file systems)."


def config_option(help: str = CONFIG_HELP) -> Callable[[F], F]:
    """`--config PATH|URI`, required; the command receives `config_path: str` and reads it with
    `cli.job_file.load_config`, which also takes the cluster's storage."""
    return click.option("--config", "config_path", required=True, metavar="PATH|URI", help=help)


class _DeprecatedTable(click.Argument):
    """The old positional TABLE: accepted, left out of the usage line and of help."""

    def get_usage_pieces(self, ctx: click.Context) -> list[str]:
        return []


def table_option(
    *, single: bool = False, required: bool = False, positional: bool = False, help: str
) -> Callable[[F], F]:
    """`--table NAME`, repeatable unless `single`; with `positional`, the deprecated TABLE argument too.

    The command receives `table: str` when `single`, else `tables: tuple[str, ...]`. `required`
    makes at least one table necessary (a usage error, exit 2, otherwise).
    """

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def resolved(*args: Any, legacy_table: str | None = None, tables: tuple[str, ...] = (), **kwargs: Any) -> Any:
            chosen = list(tables)
            if legacy_table is not None:
                click.echo(
                    f"warning: the positional TABLE is deprecated and goes in the next release; "
                    f"write --table {legacy_table}",
                    err=True,
                )
                chosen = [legacy_table, *(t for t in chosen if t != legacy_table)]
            if required and not chosen:
                raise click.UsageError("Missing option '--table'.")
            if single:
                if len(set(chosen)) > 1:
                    raise click.UsageError(f"one table only, got {', '.join(chosen)}")
                return func(*args, table=chosen[0] if chosen else None, **kwargs)
            return func(*args, tables=tuple(dict.fromkeys(chosen)), **kwargs)

        need = "  [required]" if required else ""
        command = click.option("--table", "tables", multiple=True, metavar="NAME", help=help + need)(resolved)
        if positional:
            command = click.argument("legacy_table", required=False, cls=_DeprecatedTable)(command)
        return command  # type: ignore[return-value]

    return decorate
