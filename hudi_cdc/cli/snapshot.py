"""`hudi-cdc snapshot start|status|resume|finish`: the snapshot relay, thin over `hudi_cdc.relay`.

Exit codes (`cli.exit_codes`): 0 done, 3 refused (the relay's rules forbid the step now; nothing
was changed), 2 the configuration or bad usage, 75 a service failed (run again later), 1 otherwise.
Under `--json` each command prints the envelope of `cli.output`, an error or a refusal too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hudi_cdc.cli.exit_codes import REFUSED, exit_code
from hudi_cdc.cli.job_file import load_config
from hudi_cdc.cli.options import config_option, json_option
from hudi_cdc.cli.output import fail, output_for
from hudi_cdc.errors import CdcError, RelayRefused

if TYPE_CHECKING:
    from hudi_cdc.relay.actions import Relay
    from hudi_cdc.relay.ledger import Ledger
    from hudi_cdc.relay.observe import TableStatus

F = TypeVar("F", bound=Callable[..., Any])
EXIT_REFUSED = REFUSED
_BAR_WIDTH = 24

SNAPSHOT_CONFIG_HELP = "Job YAML file with a `connector` section: a local path, or hdfs://... or s3a://..."


def relay_errors(func: F) -> F:
    """A refusal exits 3 with its reason, any other CdcError with its code (`cli.exit_codes`); no traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json"))
        try:
            return func(*args, **kwargs)
        except RelayRefused as exc:
            fail(type(exc).__name__, str(exc), exit_code=EXIT_REFUSED, as_json=as_json, prefix="refused")
        except CdcError as exc:
            fail(type(exc).__name__, str(exc), exit_code=exit_code(exc), as_json=as_json)

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
@config_option(SNAPSHOT_CONFIG_HELP)
@click.option("--table", "tables", multiple=True, help="Source table `db.table` (repeatable; default: every one).")
@json_option
@relay_errors
def start_command(config_path: str, tables: tuple[str, ...], as_json: bool) -> None:
    """Record the source's binlog position (the FIRST position) and deploy a snapshot-only run."""
    from hudi_cdc.relay import actions

    relay = _relay(config_path)
    ledger = actions.start(relay, tables=tables)
    run = ledger.current_run
    output_for(as_json).message(
        f"{ledger.connector}: snapshot run {run.number} ({run.connector}) of {', '.join(run.tables)} deployed; "
        f"first position {ledger.first_position} recorded in {relay.folder}"
    )


@snapshot.command("status")
@config_option(SNAPSHOT_CONFIG_HELP)
@json_option
@relay_errors
def status_command(config_path: str, as_json: bool) -> None:
    """Per table: done / running / interrupted / not started, rows in the source, read, landed in Hudi."""
    import sys

    from hudi_cdc.relay import actions, observe

    relay = _relay(config_path)
    ledger, _ = actions.load_fresh(relay, now=_now())
    rows = observe.status_rows(relay.spark, relay.config, ledger, relay.rest)
    if as_json:
        # the relay's facts beside the rows: the envelope's `details`
        output_for(True).table(_title(ledger), [r.as_row() for r in rows], details=_details(ledger, rows))
        return
    _print_status(ledger, rows, bars=sys.stdout.isatty())


@snapshot.command("resume")
@config_option(SNAPSHOT_CONFIG_HELP)
@click.option("--force", is_flag=True, help="Also when the last run still runs: remove it and relay its tables anew.")
@json_option
@relay_errors
def resume_command(config_path: str, force: bool, as_json: bool) -> None:
    """Deploy a new snapshot-only run of the tables not done; the recorded first position stays."""
    from hudi_cdc.relay import actions

    ledger = actions.resume(_relay(config_path), force=force)
    run = ledger.current_run
    output_for(as_json).message(
        f"{ledger.connector}: snapshot run {run.number} ({run.connector}) of {', '.join(run.tables)} deployed; "
        f"incremental capture will still start from the first position {ledger.first_position}"
    )


@snapshot.command("finish")
@config_option(SNAPSHOT_CONFIG_HELP)
@click.option("--force", is_flag=True, help="Start even though tables are not done (they miss their snapshot rows).")
@json_option
@relay_errors
def finish_command(config_path: str, force: bool, as_json: bool) -> None:
    """Start incremental capture from the FIRST snapshot position; refused (exit 3) while a table is not done."""
    from hudi_cdc.relay import actions

    ledger, status = actions.finish(_relay(config_path), force=force)
    assert ledger.finished is not None
    forced = f"; forced past {', '.join(ledger.finished.forced_past)}" if ledger.finished.forced_past else ""
    output_for(as_json).message(
        f"{ledger.connector}: {status.get('connector', {}).get('state')} from the first position "
        f"{ledger.first_position}{forced}"
    )


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


def _title(ledger: Ledger) -> str:
    return f"snapshot relay of {ledger.connector}"


def _details(ledger: Ledger, rows: list[TableStatus]) -> dict[str, Any]:
    """The relay's facts under `--json`: its connector, the first position, every run, the finish, all done."""
    return {
        "connector": ledger.connector,
        "first_position": ledger.first_position.model_dump(),
        "runs": [r.model_dump(mode="json") for r in ledger.runs],
        "finished": ledger.finished.model_dump(mode="json") if ledger.finished else None,
        "all_done": all(r.state == "done" for r in rows),
    }


def _print_status(ledger: Ledger, rows: list[TableStatus], *, bars: bool) -> None:
    click.echo(click.style(_title(ledger), bold=True))
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
