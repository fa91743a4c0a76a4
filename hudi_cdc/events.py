"""The change-event contract shared by decode, collapse and merge (semantics §1, §2, §5).

Decoding produces, per table, one DataFrame row per event with:

- the table's own columns, typed (absent columns NULL; see PRESENT),
- PRESENT: array<string> of the columns the event carries (explicit NULLs included),
- OP, ORDER, TS_MS, SOURCE: the `_cdc_*` values of semantics §5,
- KAFKA_TOPIC / KAFKA_PARTITION / KAFKA_OFFSET: the record's position, for lineage and errors.

ORDER is a string whose lexicographic order is the event order of semantics §2, so that
Spark's max/max_by, the reference model and a Presto `ORDER BY _cdc_order` agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Op(StrEnum):
    """Debezium's operation codes (io.debezium.data.Envelope.Operation)."""

    CREATE = "c"
    READ = "r"
    UPDATE = "u"
    DELETE = "d"
    TRUNCATE = "t"


class Outcome(StrEnum):
    """What happened to one consumed record (semantics §6): exactly one per record, counted per table."""

    APPLIED = "applied"
    """Its values are in the table after the batch."""
    COLLAPSED = "collapsed"
    """Superseded by a newer event of the same key in the same batch."""
    LATE = "late"
    """Older than everything it touches in the stored row (or than a remembered truncate)."""
    DUPLICATE = "duplicate"
    """The same event was already applied (a replay) or seen earlier in the batch."""
    DELETED = "deleted"
    """A delete, or an applied truncate."""
    TRUNCATE_IGNORED = "truncate_ignored"
    TOMBSTONE = "tombstone"
    SKIPPED = "skipped"
    """A record that carries no row change (logical message, schema change, transaction marker)."""
    DEAD_LETTER = "dead_letter"


# Columns the framework adds to every table (semantics §5). Names are stable: queries use them.
CDC_PREFIX = "_cdc_"
"""Prefix of every column (and commit metadata key) the framework adds."""
OP = CDC_PREFIX + "op"
ORDER = CDC_PREFIX + "order"
TS_MS = CDC_PREFIX + "ts_ms"
SOURCE = CDC_PREFIX + "source"
INGESTED_AT = CDC_PREFIX + "ingested_at"
DELETED = CDC_PREFIX + "deleted"
COLUMN_ORDERS = CDC_PREFIX + "column_orders"
"""Patch tables only: map column -> ORDER of its last write, plus DELETE_ORDER_KEY."""
DELETE_ORDER_KEY = "__delete__"

# Event-only columns (never stored).
PRESENT = CDC_PREFIX + "present"
KAFKA_TOPIC = "_kafka_topic"
KAFKA_PARTITION = "_kafka_partition"
KAFKA_OFFSET = "_kafka_offset"

SMT_DELETED = "__deleted"
"""The field ExtractNewRecordState's `rewrite` delete handling adds to a flattened row ("true"
on a delete). Debezium names it so whatever the SMT's `add.fields.prefix`."""

# Hudi's own delete marker for upserts.
HOODIE_IS_DELETED = "_hoodie_is_deleted"

RESERVED_PREFIXES = (CDC_PREFIX, "_kafka_", "_hoodie_")
"""Source column names that would collide: the framework's columns and Hudi's meta columns.
(`__` is not reserved: a flattened row's SMT_DELETED starts with it.)"""

UNSTORABLE = (
    "are not names Hudi can store (its Avro schema needs a letter or _ first, then letters, digits or _); set "
    "the connector's field.name.adjustment.mode=avro, which renames them, or leave them out with column.exclude.list"
)


def storable_name(name: str) -> bool:
    """Avro's rule for a field name (Java's letters and digits), which Hudi's writer enforces."""
    return bool(name) and (name[0].isalpha() or name[0] == "_") and all(c.isalnum() or c == "_" for c in name)


def column_names_problem(names: Iterable[str]) -> str | None:
    """Why a table cannot hold columns of these names, else None: a reserved prefix, a name Hudi's
    Avro schema refuses, or two names equal but for case (Spark resolves names ignoring case)."""
    names = list(names)
    reserved = [n for n in names if n.startswith(RESERVED_PREFIXES)]
    if reserved:
        return (
            f"column(s) {', '.join(map(repr, reserved))} start with a prefix hudi_cdc reserves "
            f"({', '.join(RESERVED_PREFIXES)}); leave them out with the connector's column.exclude.list, or rename them"
        )
    unstorable = [n for n in names if not storable_name(n)]
    if unstorable:
        return f"column(s) {', '.join(map(repr, unstorable))} {UNSTORABLE}"
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(name.lower(), name)
        if other != name:
            return f"columns {other!r} and {name!r} differ only in case, and Spark resolves names ignoring case; rename one"
    return None

# ---- ORDER encoding -------------------------------------------------------------------------
# One fixed-width string per event. The first character names the kind of position, then the
# position, then the Kafka (partition, offset) tie-breaker of semantics §2.
#   b<file seq:10><pos:20><snapshot rank:1><row:10>   MySQL/MariaDB binlog
#   l<lsn:20><snapshot rank:1><last committed lsn:20><txId:20>   PostgreSQL (source.sequence[0], txId)
#   t<ts_ms:20>                                         only source.ts_ms known
#   c<value + 2^63:20>                                  a configured ordering column (numeric/timestamp)
#   k                                                   `ordering: kafka`: the Kafka position alone
# followed by <partition:5><offset:20>.
# Snapshot rank is 0 for op `r`: snapshot reads carry the snapshot's start position and must sort
# before every change captured at or after that position (semantics §2).
ORDER_SHIFT = 2**63
_KAFKA_SUFFIX = "{partition:05d}{offset:020d}"


def binlog_order(*, file_seq: int, pos: int, row: int, snapshot: bool, partition: int, offset: int) -> str:
    """ORDER of a MySQL/MariaDB event (pure Python twin of the Spark expression in decode)."""
    rank = 0 if snapshot else 1
    return f"b{file_seq:010d}{pos:020d}{rank}{row:010d}" + _KAFKA_SUFFIX.format(partition=partition, offset=offset)


def lsn_order(
    *, lsn: int, snapshot: bool, partition: int, offset: int, last_committed: int = 0, tx_id: int = 0
) -> str:
    """ORDER of a PostgreSQL event: lsn, then source.sequence's last committed lsn, then txId."""
    rank = 0 if snapshot else 1
    return f"l{lsn:020d}{rank}{last_committed:020d}{tx_id:020d}" + _KAFKA_SUFFIX.format(
        partition=partition, offset=offset
    )


def ts_order(*, ts_ms: int, partition: int, offset: int) -> str:
    """ORDER of an event whose source gives only ts_ms."""
    return f"t{ts_ms:020d}" + _KAFKA_SUFFIX.format(partition=partition, offset=offset)


KAFKA_ORDERING = "kafka"
"""A table's `ordering` that orders its events by Kafka position alone (see `kafka_order`)."""


def kafka_order(*, partition: int, offset: int) -> str:
    """ORDER by Kafka (partition, offset) alone: events without any source position (`ordering: kafka`).

    Exact when each key's changes sit in one partition in the order they happened, as Debezium's
    keyed topics hold them; across partitions it orders by partition number, which means nothing.
    """
    return "k" + _KAFKA_SUFFIX.format(partition=partition, offset=offset)


def column_order(*, value: int, partition: int, offset: int) -> str:
    """ORDER from a configured ordering column (long, or timestamp as epoch micros)."""
    return f"c{value + ORDER_SHIFT:020d}" + _KAFKA_SUFFIX.format(partition=partition, offset=offset)


# PostgreSQL's unchanged-TOAST placeholder as the connector is configured (its values: decode/toast.py)
DEFAULT_PLACEHOLDER = "__debezium_unavailable_value"
"""Debezium's default `unavailable.value.placeholder`."""

_HEX_PREFIX = "hex:"


def placeholder_bytes(setting: str) -> bytes:
    """The placeholder's bytes from the connector's setting: `hex:` then hex octets, else the text as UTF-8.

    Raises:
        ValueError: a `hex:` setting whose rest is not an even number of hex digits, or an empty placeholder.
    """
    if setting.startswith(_HEX_PREFIX):
        digits = setting[len(_HEX_PREFIX) :]
        try:
            raw = bytes.fromhex(digits)
        except ValueError:
            raise ValueError(f"{setting!r}: after `hex:` Debezium expects hex octets, e.g. `hex:5f5f`") from None
    else:
        raw = setting.encode()
    if not raw:
        raise ValueError("the unavailable-value placeholder is empty; Debezium's default is " + DEFAULT_PLACEHOLDER)
    return raw


KAFKA_POSITION = "%s[%d]@%s"
"""A record's Kafka position as every message and dead letter writes it, `topic[partition]@offset`
(a range: `topic[partition]@first..last`), in printf form for Python's `%` and Spark's `format_string`."""


def kafka_position(topic: str, partition: int, offset: int | str) -> str:
    """`topic[partition]@offset`: see KAFKA_POSITION."""
    return KAFKA_POSITION % (topic, partition, offset)
