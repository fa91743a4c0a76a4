"""`hudi-cdc`: thin commands over the library; errors exit 1 through one decorator."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from hudi_cdc.cli.output import output_for
from hudi_cdc.config import load_config
from hudi_cdc.errors import CdcError
from hudi_cdc.logging_setup import configure

F = TypeVar("F", bound=Callable[..., Any])


def catch_errors(func: F) -> F:
    """Print a CdcError's message (it says what to do) and exit 1, without a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except CdcError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


config_option = click.option(
    "--config", "config_path", required=True, type=click.Path(exists=True, dir_okay=False), help="Job YAML file."
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--log-level", default="INFO", show_default=True, help="Python log level.")
def cli(log_level: str) -> None:
    """Land Debezium change streams from Kafka in Apache Hudi tables."""
    configure(log_level)


@cli.command()
@config_option
@click.option("--once", is_flag=True, help="Process what is in Kafka now, then stop (scheduled runs).")
@catch_errors
def run(config_path: str, once: bool) -> None:
    """Run the ingestion job (continuous unless --once)."""
    from hudi_cdc import stream
    from hudi_cdc.spark_session import get_or_create_session

    config = load_config(config_path)
    stream.run(get_or_create_session(app_name=config.job.name), config, once=once)


@cli.command()
@config_option
@catch_errors
def validate(config_path: str) -> None:
    """Check a configuration file and print the tables it defines."""
    config = load_config(config_path)
    rows = [
        {"table": t.name, "type": t.type, "key": ",".join(t.key), "deletes": t.deletes, "path": t.base_path}
        for t in config.tables
    ]
    output_for(False).table(f"{config_path}: OK", rows)


@cli.command()
@config_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@catch_errors
def status(config_path: str, as_json: bool) -> None:
    """Per table: last commit, what it applied through, compaction and file statistics."""
    from hudi_cdc.hudi.hive_sync import read_state, state_path
    from hudi_cdc.hudi.status import table_status
    from hudi_cdc.spark_session import get_or_create_session

    config = load_config(config_path)
    spark = get_or_create_session(app_name=f"{config.job.name}-status")
    sync = read_state(spark, state_path(config.job.checkpoint_dir)) if config.job.metastore_uris else {}
    output_for(as_json).table("tables", [table_status(spark, t, sync).as_row() for t in config.tables])


@cli.command()
@config_option
@click.option("--table", "tables", multiple=True, help="Only these tables (default: every MOR table).")
@catch_errors
def compact(config_path: str, tables: tuple[str, ...]) -> None:
    """Run pending (and schedule due) compactions of merge-on-read tables, off the ingestion path."""
    from hudi_cdc.hudi.compactor import run_compaction
    from hudi_cdc.spark_session import get_or_create_session

    config = load_config(config_path)
    spark = get_or_create_session(app_name=f"{config.job.name}-compact")
    out = output_for(False)
    rows = []
    for table in config.tables:
        if table.type == "MERGE_ON_READ" and (not tables or table.name in tables):
            rows.append(run_compaction(spark, table))
    out.table("compactions", rows)


@cli.command("replay-dead-letters")
@config_option
@click.option("--table", "tables", multiple=True, help="Only these tables (default: all).")
@click.option("--error-class", default="SchemaChangeError", show_default=True, help="Which rejects to replay.")
@catch_errors
def replay_dead_letters(config_path: str, tables: tuple[str, ...], error_class: str) -> None:
    """Re-apply dead-lettered records (e.g. after fixing a schema change); safe to repeat."""
    from hudi_cdc import stream
    from hudi_cdc.spark_session import get_or_create_session

    config = load_config(config_path)
    spark = get_or_create_session(app_name=f"{config.job.name}-replay")
    metrics = stream.replay_dead_letters(spark, config, tables=list(tables), error_class=error_class)
    output_for(False).table("replayed", [vars(t) for t in metrics.tables])


@cli.command("resume-binlog")
@click.option("--connect-url", required=True, help="Kafka Connect REST URL, e.g. http://connect:8083")
@click.option("--connector", "name", required=True, help="Debezium connector name.")
@click.option("--file", "binlog_file", required=True, help="Binlog file, e.g. mariadb-bin.000003")
@click.option("--pos", "binlog_pos", required=True, type=click.IntRange(min=4), help="Event boundary in that file.")
@click.option(
    "--connector-config",
    type=click.Path(exists=True, dir_okay=False),
    help="JSON config to create the connector with, if it does not exist yet.",
)
@click.option("--gtids", default=None, help="GTID state at that position (looked up on the source if omitted).")
@catch_errors
def resume_binlog(
    connect_url: str, name: str, binlog_file: str, binlog_pos: int, connector_config: str | None, gtids: str | None
) -> None:
    """Start (or restart) a Debezium MySQL/MariaDB connector from an explicit binlog file and position.

    Use it after a resumable snapshot: incremental capture must start from the position of the
    FIRST snapshot, or changes made while the snapshot ran are lost.
    """
    import json
    from pathlib import Path

    from hudi_cdc.connect import ConnectRest, start_connector_at_binlog

    config = json.loads(Path(connector_config).read_text()) if connector_config else {}
    config = config.get("config", config)
    state = start_connector_at_binlog(
        ConnectRest(connect_url), name, config, binlog_file=binlog_file, binlog_pos=binlog_pos, gtids=gtids
    )
    output_for(False).message(f"{name}: {state.get('connector', {}).get('state')} from {binlog_file}:{binlog_pos}")


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
