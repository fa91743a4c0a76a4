"""Every error hudi_cdc raises. Each carries the facts needed to act and says what happens next.

`TerminalError` subclasses stop the affected table (retrying cannot help); `TransientError`
subclasses may be retried (a service is down, a commit raced).
"""

from __future__ import annotations


class CdcError(Exception):
    """Base of all hudi_cdc errors."""


class TerminalError(CdcError):
    """Retrying will not help: a person must act (the message says how)."""


class TransientError(CdcError):
    """The same call may succeed later (service outage, timeout)."""


class ConfigError(TerminalError):
    """The configuration file is invalid: names the file, the field and what is allowed."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid configuration in {path}:\n{lines}\nFix the file and start again.")


class SchemaChangeError(TerminalError):
    """An incompatible source schema change: the table stops before writing."""

    def __init__(self, table: str, problems: list[str]) -> None:
        self.table = table
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"table {table}: incompatible schema change, nothing was written for it:\n{lines}\n"
            "Its records of this batch went to the dead-letter store (error_class SchemaChangeError), "
            "other tables keep flowing. Rewrite the table with the new schema (or opt in per table with "
            "`schema_policy: allow_incompatible`), then replay them with `hudi-cdc dead-letters replay --error-class SchemaChangeError`."
        )


class KeyColumnsMissing(TerminalError):
    """A table's `key` names columns its records do not carry: the table cannot fold a single event."""

    def __init__(self, table: str, *, missing: list[str], carried: list[str], positions: str) -> None:
        self.table = table
        self.missing = missing
        self.carried = carried
        super().__init__(
            f"table {table}: key column(s) {', '.join(missing)} are not among the columns its records "
            f"carry ({', '.join(carried)}), read at {positions}; nothing was written for the table and Kafka "
            "keeps the batch. Set the table's `key` to the source table's primary key columns (the fields "
            "of Debezium's Kafka key) and start again."
        )

    @property
    def cause(self) -> str:
        """The whole message: what a parked table shows as its cause (`job.parking`)."""
        return str(self)


class MissingJarsError(TerminalError):
    """The Spark session cannot load Hudi's or Kafka's classes: the jars were not given to Spark."""

    def __init__(self, missing: list[str]) -> None:
        self.missing = missing
        super().__init__(
            f"Spark cannot load the classes of {', '.join(missing)}: their jars are not on the class path. "
            f"Give them to Spark: spark-submit --packages {','.join(missing)} (or --jars with the downloaded "
            "files); from a checkout, `make jars` fetches them into build/jars and HUDI_CDC_BUILD=<checkout>/build "
            "makes a local session load them."
        )


class SessionSettingsError(TerminalError):
    """A Spark session hudi_cdc did not create lacks settings the job needs and only its creator can set."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"the Spark session lacks settings the job needs:\n{lines}\n"
            "They take effect only when the session starts (SparkSession.builder.config(...), spark-submit "
            "--conf): hudi_cdc does not change a session it did not create. Nothing was run."
        )


class ConnectError(CdcError):
    """Kafka Connect or the source database refused a `resume-binlog` step; the steps after it did not run.

    `where` names the side that answered ("connect" or "source database"); `http_status` is
    Connect's HTTP status when it answered with one.
    """

    def __init__(self, message: str, *, where: str = "connect", http_status: int | None = None) -> None:
        self.where = where
        self.http_status = http_status
        super().__init__(f"{where}: {message}")


class RelayRefused(TerminalError):
    """A `hudi-cdc snapshot` step would break the relay (e.g. streaming before every table is done); nothing changed."""


class LedgerConflict(TransientError):
    """Another `hudi-cdc snapshot` command wrote the ledger at the same moment; run the command again."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"{path} was written by another command meanwhile; nothing was changed, run the command again")


class KafkaUnreachableError(TransientError):
    """The Kafka brokers did not answer at run start, within `kafka.connect_timeout`."""

    def __init__(self, bootstrap_servers: str, *, timeout: str, reason: str) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.timeout = timeout
        self.reason = reason
        super().__init__(
            f"Kafka at {bootstrap_servers} did not answer within {timeout}: {reason}\n"
            "Nothing was read or written. Check that the brokers run and that `kafka.bootstrap_servers` and the "
            "security settings in `kafka.properties` are right, then start again "
            "(a slow cluster may need a longer `kafka.connect_timeout`)."
        )


class KafkaLostError(TransientError):
    """The Kafka brokers stopped answering while the job ran, for longer than the Kafka source retries."""

    def __init__(self, bootstrap_servers: str, *, reason: str) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.reason = reason
        super().__init__(
            f"Kafka at {bootstrap_servers} stopped answering while the job ran: {reason}\n"
            "Nothing was lost: every committed batch stands, the checkpoint holds the Kafka offsets of the last "
            "one, and Kafka keeps the rest. Start the job again once the brokers answer (a supervisor restarts "
            "it). Shorter outages are ridden out in place; how long is Spark's `fetchOffset.numRetries` (3) times "
            "the admin client's `default.api.timeout.ms` (`kafka.properties`, 60 s by default)."
        )


class KafkaDataLossError(TerminalError):
    """Kafka no longer holds records the checkpoint has not applied, and `kafka.fail_on_data_loss` is on."""

    def __init__(self, findings: list[str], *, tables: list[str]) -> None:
        self.findings = findings
        self.tables = tables
        lines = "\n".join(f"  {f}" for f in findings)
        super().__init__(
            f"Kafka no longer holds records this job has not applied (tables: {', '.join(tables) or 'none routed'}):\n"
            f"{lines}\n"
            "The job stops rather than skip them (`kafka.fail_on_data_loss: true`); nothing of the batch was "
            "committed, every committed batch stands. A route removed on purpose: run once with "
            "`kafka.fail_on_data_loss: false`, which drops the topic from the checkpoint, then set it back. "
            "Records deleted (retention shorter than the job's downtime) or a topic created again: those tables "
            "miss the changes; take a new snapshot of them at the source (e.g. a Debezium incremental "
            "snapshot), and run once with `kafka.fail_on_data_loss: false` to go past the gap (that run logs "
            "and counts the records it goes past)."
        )


class DeadLetterRetentionError(TerminalError):
    """`dead-letters purge` was asked to purge without a retention to apply."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(
            f"{path}: no `job.dead_letter_retention` is set, so purge does not know what is old; "
            "set it (e.g. `30 days`) or pass --older-than. Nothing was deleted."
        )


class RegistryUnavailableError(TransientError):
    """The schema registry did not answer within the retry budget; nothing of the batch was committed."""

    def __init__(self, url: str, *, schema_id: int, budget: float, reason: str) -> None:
        self.url = url
        self.schema_id = schema_id
        self.reason = reason
        super().__init__(
            f"schema registry {url} did not return schema id {schema_id} within {budget:.0f}s: {reason}\n"
            "Nothing of this batch was committed; the job stops and, restarted, reads the batch again. "
            "Check that the registry runs and that `schema_registry.url` and its credentials are right."
        )


def table_repair(table: str) -> str:
    """What to check when a table's batch fails as the table's, the storage's or Kafka's fault."""
    return (
        "Check that the storage and Kafka are reachable; for a metadata table that cannot be read, "
        f"stop the job, run `hudi-cdc rebuild-metadata --table {table}` (the next commit rebuilds it from the "
        "data files where the table's settings keep one) and start again."
    )


class TableFailure(TransientError):
    """A table's batch could not be written because the table, its storage or Kafka failed, not a record.

    Nothing of the batch was dead-lettered. With `job.on_table_failure: park` (and not Kafka's
    fault) the table is parked and the others go on (`job.parking`); otherwise the job stops and
    Kafka keeps the batch. `positions` names the batch's records, e.g. `orders[0]@120..180`.
    """

    def __init__(self, table: str, *, batch_id: int, positions: str, reason: str, error: str, kafka: bool = False) -> None:
        self.table = table
        self.batch_id = batch_id
        self.positions = positions
        self.reason = reason
        self.error = error
        self.kafka = kafka
        """Kafka failed, not the table: every table would fail alike, so the job stops."""
        super().__init__(
            f"{self.cause}\n"
            "No record was dead-lettered: this failure is the table's, the storage's or Kafka's, not a record's. "
            "The job stops; restarted, it reads the batch again (Hudi rolls the failed commit back first). "
            f"If it fails the same way again: {table_repair(table)}"
        )

    @property
    def cause(self) -> str:
        """What failed, where: the table, the batch's records, the reason and the error."""
        return f"table {self.table}: batch {self.batch_id} ({self.positions}) could not be written: {self.reason}\n  {self.error}"


class TablesParked(TransientError):
    """A `--once` run ended with tables parked: the other tables were written; these wait in Kafka."""

    def __init__(self, causes: dict[str, str]) -> None:
        self.tables = sorted(causes)
        listed = "\n".join(f"- {causes[t]}" for t in self.tables)
        super().__init__(
            f"{len(causes)} table(s) parked: {', '.join(self.tables)}\n{listed}\n"
            "No record was dead-lettered: the other tables were written, and these tables' records wait in Kafka. "
            "The next run tries them first and applies what they missed, in order. "
            + " ".join(table_repair(t) for t in self.tables[:1])
            + (" (the same for the other tables)" if len(self.tables) > 1 else "")
        )


class RelayoutError(TerminalError):
    """`hudi-cdc relayout` cannot rewrite the table (none there, nothing committed, no row): names it."""
