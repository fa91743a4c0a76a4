"""`hudi-cdc snapshot start|status|resume|finish`: the snapshot relay, thin over `hudi_cdc.relay`.

Exit codes: 0 done, 1 error (a service or the configuration; the message says which),
2 bad usage, 3 refused (the relay's rules forbid the step now; nothing was changed).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hudi_cdc.cli.exit_codes import REFUSED, exit_code
from hudi_cdc.cli.output import output_for
from hudi_cdc.config.models import load_config
from hudi_cdc.errors import CdcError, RelayRefused

if TYPE_CHECKING:
    from hudi_cdc.relay.actions import Relay
    from hudi_cdc.relay.ledger import Ledger
    from hudi_cdc.relay.observe import TableStatus

F = TypeVar("F", bound=Callable[..., Any])
EXIT_REFUSED = REFUSED
_BAR_WIDTH = 24

config_option = click.option(
    "--config", "config_path", required=True, type=click.Path(exists=True, dir_okay=False),
    help="Job YAML file with a `connector` section.",
)  # fmt: skip


def relay_errors(func: F) -> F:
    """A refusal exits 3 with its reason, any other CdcError with its code (`cli.exit_codes`); no traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RelayRefused as exc:
            click.echo(f"refused: {exc}", err=True)
            sys.exit(EXIT_REFUSED)
        except CdcError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exit_code(exc))

    return wrapper  # type: ignore[return-value]


def _relay(config_path: str) -> Relay:
    from hudi_cdc.relay.actions import relay_for
    from hudi_cdc.relay.store import ledger_folder
    from hudi_cdc.spark.session import job_session

    config = load_config(config_path)
    ledger_folder(config, source=config_path)  # refuse a config without `connector` before Spark starts
    return relay_for(job_session(config.job, "snapshot"), config, source=config_path)


@click.group("snapshot")
def snapshot() -> None:
    """Relay a long initial snapshot table by table, then stream the binlog from the FIRST run's position."""


@snapshot.command("start")
@config_option
@click.option("--table", "tables", multiple=True, help="Source table `db.table` (repeatable; default: every one).")
@relay_errors
def start_command(config_path: str, tables: tuple[str, ...]) -> None:
    """Record the source's binlog position (the FIRST position) and deploy a snapshot-only run."""
    from hudi_cdc.relay import actions

    relay = _relay(config_path)
    ledger = actions.start(relay, tables=tables)
    run = ledger.current_run
    output_for(False).message(
        f"{ledger.connector}: snapshot run {run.number} ({run.connector}) of {', '.join(run.tables)} deployed; "
        f"first position {ledger.first_position} recorded in {relay.folder}"
    )


@snapshot.command("status")
@config_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (one JSON document).")
@relay_errors
def status_command(config_path: str, as_json: bool) -> None:
    """Per table: done / running / interrupted / not started, rows in the source, read, landed in Hudi."""
    import json

    from hudi_cdc.relay import actions, observe

    relay = _relay(config_path)
    ledger, _ = actions.load_fresh(relay, now=_now())
    rows = observe.status_rows(relay.spark, relay.config, ledger, relay.rest)
    if as_json:
        click.echo(json.dumps(_document(ledger, rows), default=str, sort_keys=True))
        return
    _print_status(ledger, rows, bars=sys.stdout.isatty())


@snapshot.command("resume")
@config_option
@click.option("--force", is_flag=True, help="Also when the last run still runs: remove it and relay its tables anew.")
@relay_errors
def resume_command(config_path: str, force: bool) -> None:
    """Deploy a new snapshot-only run of the tables not done; the recorded first position stays."""
    from hudi_cdc.relay import actions

    ledger = actions.resume(_relay(config_path), force=force)
    run = ledger.current_run
    output_for(False).message(
        f"{ledger.connector}: snapshot run {run.number} ({run.connector}) of {', '.join(run.tables)} deployed; "
        f"incremental capture will still start from the first position {ledger.first_position}"
    )


@snapshot.command("finish")
@config_option
@click.option("--force", is_flag=True, help="Start even though tables are not done (they miss their snapshot rows).")
@relay_errors
def finish_command(config_path: str, force: bool) -> None:
    """Start incremental capture from the FIRST snapshot position; refused (exit 3) while a table is not done."""
    from hudi_cdc.relay import actions

    ledger, status = actions.finish(_relay(config_path), force=force)
    assert ledger.finished is not None
    forced = f"; forced past {', '.join(ledger.finished.forced_past)}" if ledger.finished.forced_past else ""
    output_for(False).message(
        f"{ledger.connector}: {status.get('connector', {}).get('state')} from the first position "
        f"{ledger.first_position}{forced}"
    )


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


def _document(ledger: Ledger, rows: list[TableStatus]) -> dict[str, Any]:
    return {
        "connector": ledger.connector,
        "first_position": ledger.first_position.model_dump(),
        "runs": [r.model_dump(mode="json") for r in ledger.runs],
        "finished": ledger.finished.model_dump(mode="json") if ledger.finished else None,
        "all_done": all(r.state == "done" for r in rows),
        "tables": [r.as_row() for r in rows],
    }


def _print_status(ledger: Ledger, rows: list[TableStatus], *, bars: bool) -> None:
    click.echo(click.style(f"snapshot relay of {ledger.connector}", bold=True))
    click.echo(f"  first position  {ledger.first_position}  (run 1, {ledger.runs[0].started_at:%Y-%m-%d %H:%M}Z)")
    click.echo(f"  runs            {len(ledger.runs)}, newest {ledger.current_run.connector}")
    if ledger.finished:
        click.echo(f"  binlog capture  started {ledger.finished.at:%Y-%m-%d %H:%M}Z from {ledger.finished.position}")
    table_rows = []
    for r in rows:
        line: dict[str, Any] = {
            "table": r.source_table, "hudi": r.table, "state": r.state, "run": r.run,
            "source rows": r.rows_source, "read": r.rows_read, "landed": r.rows_landed,
        }  # fmt: skip
        if bars:
            line["progress"] = _bar(r)
        table_rows.append(line)
    output_for(False).table("tables", table_rows)


def _bar(row: TableStatus) -> str:
    """`[#######.....]  58%`: snapshot rows read of the source's rows (done is 100%)."""
    if row.state == "done":
        share = 1.0
    elif row.rows_source:
        share = min(row.rows_read / row.rows_source, 1.0)
    else:
        share = 0.0
    filled = round(share * _BAR_WIDTH)
    return "[" + "#" * filled + "." * (_BAR_WIDTH - filled) + f"] {share:4.0%}"
