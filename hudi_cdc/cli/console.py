"""`hudi-cdc`: thin commands over the library; errors exit with their code (`cli.exit_codes`) through one decorator."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hudi_cdc.cli.exit_codes import exit_code
from hudi_cdc.cli.job_file import load_config
from hudi_cdc.cli.logs import LogFormat, configure
from hudi_cdc.cli.options import config_option, json_option, table_option
from hudi_cdc.cli.output import fail, output_for
from hudi_cdc.cli.progress import Reporter
from hudi_cdc.config.models import Config, JobConfig, TableConfig
from hudi_cdc.errors import CdcError, ConfigError
from hudi_cdc.version import __version__

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

F = TypeVar("F", bound=Callable[..., Any])


def catch_errors(func: F) -> F:
    """Print a CdcError's message (it says what to do) and exit with its code (`cli.exit_codes`), without a traceback.

    Under `--json` the error's envelope goes to stdout as well (`cli.output.fail`).
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except CdcError as exc:
            fail(type(exc).__name__, str(exc), exit_code=exit_code(exc), as_json=bool(kwargs.get("as_json")))

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="hudi-cdc", message="%(prog)s %(version)s")
@click.option(
    "--log-level",
    default="INFO",
    show_default=True,
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    help="Python log level.",
)
@click.option(
    "--log-format",
    default="text",
    show_default=True,
    type=click.Choice(["text", "json"]),
    help="text: a line per record; json: one JSON object per line, a batch line's counts as keys.",
)
def cli(log_level: str, log_format: LogFormat) -> None:
    """Land Debezium change streams from Kafka in Apache Hudi tables."""
    configure(log_level, log_format)


@cli.command()
@config_option()
@click.option("--once", is_flag=True, help="Process what is in Kafka now, then stop (scheduled runs).")
@catch_errors
def run(config_path: str, once: bool) -> None:
    """Run the ingestion job (continuous unless --once)."""
    from hudi_cdc.job import stream
    from hudi_cdc.spark.session import get_or_create_session

    config = load_config(config_path)
    stream.run(get_or_create_session(app_name=config.job.name), config, once=once, source=config_path)


@cli.command()
@config_option()
@click.option(
    "--kafka",
    "ask_kafka",
    is_flag=True,
    help="Also show what the templates make of the topics Kafka holds now.",
)
@json_option
@catch_errors
def validate(config_path: str, ask_kafka: bool, as_json: bool) -> None:
    """Check a configuration file and print the tables it defines (and, with --kafka, those its templates make)."""
    config = load_config(config_path)
    rows = [_table_row(t, source="declared") for t in config.tables]
    for template in config.templates:
        sample = template.sample()
        row = _table_row(sample, source=f"template {template.pattern}")
        rows.append(
            {
                **row,
                "table": template.name,
                "key": ",".join(template.key or ["(Kafka key)"]),
                "path": template.base_path,
            }
        )
    if ask_kafka and config.templates:
        from hudi_cdc.kafka.check import topic_names

        problems = []
        for topic in topic_names(config.kafka):
            problems += config.topic_problems(topic)
            claims = config.template_claims(topic)
            if len(claims) == 1 and not problems:
                template, name, groups = claims[0]
                table = template.table(name, groups=groups, sample_key=True)
                key = template.declared_key(name)
                rows.append(
                    {**_table_row(table, source=f"topic {topic}"), "key": ",".join(key or ["(Kafka key)"])}
                )
        if problems:
            raise ConfigError(config_path, problems)
    output_for(as_json).table(f"{config_path}: OK", rows)


def _table_row(table: TableConfig, *, source: str) -> dict[str, str]:
    return {"table": table.name, "from": source, "type": table.type, "key": ",".join(table.key),
            "deletes": table.deletes, "path": table.base_path}  # fmt: skip


@cli.command()
def schema() -> None:
    """Print the job file's JSON Schema (for editors' YAML language servers and CI checks)."""
    import json

    from hudi_cdc.config.json_schema import config_schema

    click.echo(json.dumps(config_schema(), indent=2, sort_keys=True))


@cli.command()
@config_option()
@table_option(help="Only these tables (repeatable; default: every table).")
@json_option
@catch_errors
def status(config_path: str, tables: tuple[str, ...], as_json: bool) -> None:
    """Per table: last commit, what it applied through, compaction and file statistics, and whether it is parked."""
    from hudi_cdc.hudi.hive_sync import read_state, state_path
    from hudi_cdc.hudi.status import table_status
    from hudi_cdc.job.catalog import with_made_tables
    from hudi_cdc.job.parking import read_parked

    config = load_config(config_path)
    spark = _session(config.job, "status")
    config = with_made_tables(spark, config)
    _known_tables(config, config_path, tables)
    sync = read_state(spark, state_path(config.job.checkpoint_dir)) if config.job.metastore_uris else {}
    parked = {p.table: p for p in read_parked(spark, config.job.checkpoint_dir)}
    rows = []
    for table in config.tables:
        if tables and table.name not in tables:
            continue
        row = table_status(spark, table, sync).as_row()
        if table.name in parked:
            p = parked[table.name]
            row |= {"parked": p.cause.partition("\n")[0], "parked_since": datetime.fromtimestamp(p.since, UTC).isoformat(),
                    "parked_backlog": p.backlog, "retries": p.attempts}  # fmt: skip
        rows.append(row)
    output_for(as_json).table("tables", rows)


@cli.command("retry-table")
@config_option()
@table_option(required=True, positional=True, help="A parked table (repeatable).")
@json_option
@catch_errors
def retry_table(config_path: str, tables: tuple[str, ...], as_json: bool) -> None:
    """Have the running job try parked tables again now (its next trigger), instead of after their backoff.

    A job that is not running tries every parked table first when it starts.
    """
    from hudi_cdc.job.parking import read_parked, request_retry

    config = load_config(config_path)
    spark = _session(config.job, "retry-table")
    parked = [p.table for p in read_parked(spark, config.job.checkpoint_dir)]
    if problems := [f"table {t!r} is not parked; parked tables: {', '.join(parked) or 'none'}" for t in tables if t not in parked]:
        raise ConfigError(config_path, problems)
    out = output_for(as_json)
    for table in tables:
        request_retry(spark, config.job.checkpoint_dir, table)
        out.message(f"table {table}: the running job tries it again at its next trigger")


@cli.command()
@config_option()
@table_option(help="Only these tables (repeatable; default: every MOR table).")
@json_option
@catch_errors
def compact(config_path: str, tables: tuple[str, ...], as_json: bool) -> None:
    """Run pending (and schedule due) compactions of merge-on-read tables, off the ingestion path."""
    from hudi_cdc.hudi.compactor import run_compaction
    from hudi_cdc.job.catalog import with_made_tables

    config = load_config(config_path, hudi_sql=True)
    spark = _session(config.job, "compact", hudi_sql=True)
    config = with_made_tables(spark, config)
    _known_tables(config, config_path, tables)
    chosen = [t for t in config.tables if t.type == "MERGE_ON_READ" and (not tables or t.name in tables)]
    rows = []
    with Reporter() as progress:
        for n, table in enumerate(chosen, start=1):
            progress.step(f"compact: table {table.name} ({n}/{len(chosen)})")
            rows.append(run_compaction(spark, table))
    output_for(as_json).table("compactions", rows)


@cli.command("replay-dead-letters", hidden=True)
@config_option()
@table_option(help="Only these tables (repeatable; default: all).")
@click.option("--error-class", default="SchemaChangeError", show_default=True, help="Which rejects to replay.")
@json_option
@catch_errors
def replay_dead_letters(config_path: str, tables: tuple[str, ...], error_class: str, as_json: bool) -> None:
    """Deprecated: `dead-letters replay --error-class SchemaChangeError` does the same; this goes in the next release."""
    click.echo(
        "warning: replay-dead-letters is deprecated; use `hudi-cdc dead-letters replay --error-class SchemaChangeError`",
        err=True,
    )
    config, spark = _config_and_spark(config_path, "replay")
    output_for(as_json).table("replayed", _replay(spark, config, tables, (error_class,), since=None, until=None))


def _point_in_time(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    from hudi_cdc.dead_letters.ops import point_in_time

    if value is None:
        return None
    try:
        return point_in_time(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def dead_letter_filters(func: F) -> F:
    """--config, --table, --error-class, --since, --until: the selection every dead-letters command takes."""
    options = [
        config_option(),
        table_option(help="Only these tables (repeatable; default: all)."),
        click.option("--error-class", "error_classes", multiple=True, help="Only these error classes (repeatable)."),
        click.option("--since", callback=_point_in_time, help="Detected at or after: ISO time (UTC) or a duration ago, `2 hours`."),
        click.option("--until", callback=_point_in_time, help="Detected before: ISO time (UTC) or a duration ago."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@cli.group("dead-letters")
def dead_letters() -> None:
    """Look at, replay and purge the records the job could not apply (job.dead_letter_path)."""


@dead_letters.command("list")
@dead_letter_filters
@json_option
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1), help="Newest N records.")
@click.option("--summary", is_flag=True, help="Counts per table and error class instead of records.")
@catch_errors
def dead_letters_list(
    config_path: str,
    tables: tuple[str, ...],
    error_classes: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
    as_json: bool,
    limit: int,
    summary: bool,
) -> None:
    """One line per dead letter, newest first (messages shortened; `show` prints them whole)."""
    from hudi_cdc.dead_letters import ops
    config, spark = _config_and_spark(config_path, "dead-letters")
    selection = ops.Selection(tables=tables, error_classes=error_classes, since=since, until=until)
    letters = ops.select(spark, config.job.dead_letter_path, selection)
    out = output_for(as_json)
    if summary:
        out.table("dead letters by table and error class", ops.summary(letters) if letters is not None else [])
        return
    total, rows = ops.listing(letters, limit=limit) if letters is not None else (0, [])
    out.table(f"{total} dead letters" + (f" (newest {limit})" if total > limit else ""), rows)


@dead_letters.command("show")
@dead_letter_filters
@json_option
@click.option("--topic", help="Only records of this topic.")
@click.option("--partition", type=int, help="Only records of this Kafka partition.")
@click.option("--offset", type=int, help="Only the record at this offset.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1), help="At most N records.")
@catch_errors
def dead_letters_show(
    config_path: str,
    tables: tuple[str, ...],
    error_classes: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
    as_json: bool,
    topic: str | None,
    partition: int | None,
    offset: int | None,
    limit: int,
) -> None:
    """Whole records: topic[partition]@offset, class, message, key and value (decoded when JSON or Avro)."""
    from hudi_cdc.dead_letters import ops
    config, spark = _config_and_spark(config_path, "dead-letters")
    selection = ops.Selection(
        tables=tables, error_classes=error_classes, since=since, until=until, topic=topic, partition=partition, offset=offset
    )
    letters = ops.select(spark, config.job.dead_letter_path, selection)
    avro = None
    if config.schema_registry is not None:  # Avro tables: show their bodies decoded
        from hudi_cdc.avro.readable import AvroBodies
        from hudi_cdc.avro.registry import fetcher_for

        avro = AvroBodies(fetcher_for(config.schema_registry))
    rows = ops.records(letters, limit=limit, avro=avro) if letters is not None else []
    output_for(as_json).records("dead letters", rows, heading="record")


@dead_letters.command("replay")
@dead_letter_filters
@json_option
@catch_errors
def dead_letters_replay(
    config_path: str,
    tables: tuple[str, ...],
    error_classes: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
    as_json: bool,
) -> None:
    """Run the selected records through the pipeline again (after a fix); safe to repeat.

    Records applied before count as duplicates and change nothing; a record that fails again
    stays in the store once (no duplicate). Replayed records stay until purged.
    """
    config, spark = _config_and_spark(config_path, "replay")
    output_for(as_json).table("replayed", _replay(spark, config, tables, error_classes or (None,), since=since, until=until))


def _replay(
    spark: SparkSession,
    config: Config,
    tables: tuple[str, ...],
    error_classes: tuple[str | None, ...],
    *,
    since: datetime | None,
    until: datetime | None,
) -> list[dict[str, Any]]:
    """Replay each error class in turn (None: every class), telling the progress; a row per table and class."""
    from hudi_cdc.job import replay

    rows: list[dict[str, Any]] = []
    with Reporter() as progress:
        for n, error_class in enumerate(error_classes, start=1):
            which = error_class or "every error class"
            progress.step(f"replay: {which} ({n}/{len(error_classes)}) of {', '.join(tables) or 'every table'}")
            metrics = replay.replay_dead_letters(
                spark, config, tables=list(tables), error_class=error_class, since=since, until=until
            )
            for t in metrics.tables:
                progress.step(f"replay: {which}: table {t.table} done")
                rows.append(vars(t))
    return rows


@dead_letters.command("purge")
@config_option()
@table_option(help="Only these tables (repeatable; default: all).")
@click.option("--older-than", help="Override job.dead_letter_retention, e.g. `30 days`.")
@click.option("--dry-run", is_flag=True, help="Count what would be deleted, delete nothing.")
@json_option
@catch_errors
def dead_letters_purge(
    config_path: str, tables: tuple[str, ...], older_than: str | None, dry_run: bool, as_json: bool
) -> None:
    """Delete dead letters detected longer ago than the retention (job.dead_letter_retention)."""
    from hudi_cdc.config.durations import parse_duration
    from hudi_cdc.dead_letters import ops
    from hudi_cdc.errors import DeadLetterRetentionError

    config = load_config(config_path)
    try:
        retention = parse_duration(older_than) if older_than else config.job.dead_letter_retention
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--older-than") from None
    if retention is None:
        raise DeadLetterRetentionError(config_path)
    spark = _session(config.job, "dead-letters")
    result = ops.purge(spark, config.job.dead_letter_path, older_than=retention, tables=tables, dry_run=dry_run)
    output_for(as_json).table("purge (dry run)" if dry_run else "purged", [vars(result)])


def _session(job: JobConfig, purpose: str, *, hudi_sql: bool = False) -> SparkSession:
    from hudi_cdc.spark.session import job_session

    return job_session(job, purpose, hudi_sql=hudi_sql)


def _config_and_spark(config_path: str, purpose: str) -> tuple[Config, SparkSession]:
    config = load_config(config_path)
    return config, _session(config.job, purpose)


@cli.command()
@config_option()
@table_option(single=True, required=True, positional=True, help="The table.")
@click.option(
    "--wait-until",
    "until",
    callback=_point_in_time,
    help="Wait until the table is complete up to this source time (ISO-8601; UTC unless an offset is given).",
)
@click.option("--timeout", default="1 hour", show_default=True, help="Give up waiting after this long.")
@click.option("--poll", default="30 seconds", show_default=True, help="How often to look while waiting.")
@json_option
@catch_errors
def watermark(config_path: str, table: str, until: datetime | None, timeout: str, poll: str, as_json: bool) -> None:
    """Print a table's freshness watermark: the source time up to which every change is in the table.

    With --wait-until T, wait until the watermark reaches T. Exit codes: 0 reached (or, without
    --wait-until, the table has a watermark), 3 not reached before --timeout (or no watermark
    yet), 2 bad configuration or unknown table, 75 the storage failed.
    """
    from hudi_cdc.commit.progress import Progress
    from hudi_cdc.commit.watermark import EXIT_NOT_REACHED, Freshness, wait_until
    from hudi_cdc.config.durations import parse_duration
    from hudi_cdc.hudi.table import table_exists
    from hudi_cdc.hudi.timeline import latest_job_metadata

    try:
        limits = parse_duration(timeout, allow_zero=True), parse_duration(poll)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    config = load_config(config_path)
    target = _named_table(config, config_path, table, "watermark")
    spark = _session(config.job, "watermark")

    def read() -> int | None:
        if not table_exists(spark, target.base_path):
            return None
        return Progress.from_metadata(latest_job_metadata(spark, target.base_path)).watermark_ts_ms

    with Reporter() as progress:

        def polled(short: Freshness, left: float) -> None:
            seen = short.as_row()["watermark"] or "none yet"
            progress.step(f"watermark: table {table} at {seen}, waiting for {short.as_row()['until']} ({left:.0f} s left)")

        freshness = wait_until(read, table=table, until=until, timeout=limits[0], poll=limits[1], on_poll=polled)
    output_for(as_json).table("watermark", [freshness.as_row()])
    if not freshness.reached:
        sys.exit(EXIT_NOT_REACHED)


@cli.command("rebuild-metadata")
@config_option()
@table_option(single=True, required=True, positional=True, help="The table.")
@json_option
@catch_errors
def rebuild_metadata(config_path: str, table: str, as_json: bool) -> None:
    """Delete a table's Hudi metadata table; the next commit rebuilds it from the data files where
    the table's settings keep one.

    The repair for a metadata table that cannot be read (the job stops with TableFailure and says
    so). Stop the job first. The old metadata table is kept as a backup beside it.
    """
    from hudi_cdc.hudi.recovery import drop_metadata_table

    config = load_config(config_path)
    target = _named_table(config, config_path, table, "rebuild-metadata")
    from hudi_cdc.hoodie_keys import METADATA_TABLE
    from hudi_cdc.hudi.table_options import write_options

    backup = drop_metadata_table(_session(config.job, "rebuild-metadata"), target.base_path)
    # the table's settings as for a table without one: an unpartitioned simple or bucket table keeps none
    rebuilt = write_options(target)[METADATA_TABLE] == "true"
    after = (
        "the next run rebuilds it"
        if rebuilt
        else "the table goes on without one (set `hoodie.metadata.enable: true` in its `hoodie_options` to rebuild it)"
    )
    done = f"deleted; backup at {backup}; {after}" if backup else "none to delete"
    output_for(as_json).message(f"table {table}: metadata table {done}")


@cli.command()
@config_option()
@table_option(single=True, required=True, positional=True, help="The table.")
@json_option
@catch_errors
def relayout(config_path: str, table: str, as_json: bool) -> None:
    """Rewrite a table's rows with the `index`, `buckets` and `table_version` its config now asks for.

    The way to change a bucket table's buckets, to move a table to or from `index: bucket`, or to
    take a version 9 table to `table_version: 6`, which the job refuses under a written table.
    Stop the job first. The current rows and the job's position are written anew at the table's
    path; the table as it was is kept beside it (`<base_path>.before-relayout-<instant>`). Run it
    again if it was interrupted.
    """
    from hudi_cdc.hudi.relayout import relayout as rewrite

    config = load_config(config_path)
    target = _named_table(config, config_path, table, "relayout")
    with Reporter() as progress:
        done = rewrite(_session(config.job, "relayout"), target, step=progress.step)
    rows = "rows written earlier" if done.rows is None else f"{done.rows} rows"
    output_for(as_json).message(
        f"table {table}: {done.previous} -> {done.layout}, {rows}; the table as it was: {done.backup or 'moved earlier'}"
    )


def _named_table(config: Config, config_path: str, name: str, purpose: str) -> TableConfig:
    """Table `name`: a declared one, else one the templates made (read beside the checkpoint)."""
    if config.templates and name not in [t.name for t in config.tables]:
        from hudi_cdc.job.catalog import with_made_tables

        config = with_made_tables(_session(config.job, purpose), config)
    names = [t.name for t in config.tables]
    if name not in names:
        raise ConfigError(config_path, [f"no table {name!r}; its tables are {', '.join(names)}"])
    return config.table(name)


def _known_tables(config: Config, config_path: str, tables: tuple[str, ...]) -> None:
    """Refuse names in `tables` that are not tables of `config` (declared or made)."""
    names = [t.name for t in config.tables]
    if unknown := [name for name in tables if name not in names]:
        raise ConfigError(config_path, [f"no table {name!r}; its tables are {', '.join(names)}" for name in unknown])


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
@json_option
@catch_errors
def resume_binlog(
    connect_url: str,
    name: str,
    binlog_file: str,
    binlog_pos: int,
    connector_config: str | None,
    gtids: str | None,
    as_json: bool,
) -> None:
    """Start (or restart) a Debezium MySQL/MariaDB connector from an explicit binlog file and position.

    Use it after a resumable snapshot: incremental capture must start from the position of the
    FIRST snapshot, or changes made while the snapshot ran are lost.
    """
    import json
    from pathlib import Path

    from hudi_cdc.relay.connect import ConnectRest, start_connector_at_binlog

    config = json.loads(Path(connector_config).read_text()) if connector_config else {}
    config = config.get("config", config)
    state = start_connector_at_binlog(
        ConnectRest(connect_url), name, config, binlog_file=binlog_file, binlog_pos=binlog_pos, gtids=gtids
    )
    output_for(as_json).message(f"{name}: {state.get('connector', {}).get('state')} from {binlog_file}:{binlog_pos}")


from hudi_cdc.cli.snapshot import snapshot  # noqa: E402 - the group registers after `cli` exists

cli.add_command(snapshot)
from hudi_cdc.cli.check import check  # noqa: E402 - registers after `cli` exists, as snapshot

cli.add_command(check)


@cli.command("submit-file")
def submit_file() -> None:
    """Print the file spark-submit runs for any command: `spark-submit ... $(hudi-cdc submit-file) run --config ...`."""
    from pathlib import Path

    from hudi_cdc import version

    # named, not imported: the entry file imports this module
    click.echo(Path(version.__file__).parent / "__main__.py")


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
