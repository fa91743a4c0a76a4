"""ORDER, TS_MS and SOURCE of an event as Spark expressions: the twins of events.py's Python functions.

Every expression here must produce exactly the string its events.py twin produces for the same
position (unit-tested), so Spark, the reference model and SQL readers order events alike.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ByteType,
    DataType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from hudi_cdc.events import ORDER_SHIFT, Op

# Debezium's SnapshotRecord values that mark a snapshot read (`incremental` and `false` do not).
SNAPSHOT_FLAGS = ("true", "first", "last", "first_in_data_collection", "last_in_data_collection")

SOURCE_STRUCT = StructType(
    [
        StructField("file", StringType()),
        StructField("pos", LongType()),
        StructField("row", LongType()),
        StructField("lsn", LongType()),
        # PostgreSQL: '["<last committed lsn>","<lsn>"]' and the transaction id break lsn ties
        StructField("sequence", StringType()),
        StructField("txId", LongType()),
        StructField("ts_ms", LongType()),
        # a string: MySQL writes "true"/"last", old PostgreSQL connectors a JSON boolean
        StructField("snapshot", StringType()),
    ]
)
"""The `source` fields decode reads (every connector's other fields are ignored)."""

BINLOG_FILE_PATTERN = r"^[^\s]+\.[0-9]{1,10}$"
"""A binlog file name: anything without spaces, then a dot and the sequence number (`mysql-bin.000003`)."""

_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1


def kafka_suffix() -> Column:
    """<partition:5><offset:20>, the final tie-breaker of every ORDER."""
    return F.concat(_digits(F.col("partition"), 5), _digits(F.col("offset"), 20))


def _digits(value: Column, width: int) -> Column:
    """A non-negative integer zero-padded to `width` digits, a wider one whole: printf's `%0<width>d`.

    Why not `format_string`: Spark runs a java.util.Formatter per row, which parses its pattern
    with regular expressions each time; three per record were 8% of decode's samples
    (docs/performance-journal.md, round 35).
    """
    text = value.cast("string")
    if width >= 20:  # a long has at most 19 digits
        return F.lpad(text, width, "0")
    return F.when(value < F.lit(10**width), F.lpad(text, width, "0")).otherwise(text)


def _all_present(*columns: Column) -> Column:
    condition = columns[0].isNotNull()
    for column in columns[1:]:
        condition = condition & column.isNotNull()
    return condition


def is_snapshot(op: Column, source: Column) -> Column:
    """True for snapshot reads: op `r`, or a snapshot flag in `source.snapshot`."""
    return (op == Op.READ.value) | F.coalesce(F.lower(source["snapshot"]).isin(*SNAPSHOT_FLAGS), F.lit(False))


def source_ts_ms(op_ts_ms: Column, source: Column) -> Column:
    """source.ts_ms, else the envelope's own ts_ms."""
    return F.coalesce(source["ts_ms"], op_ts_ms)


def _non_negative(*values: Column) -> Column:
    condition = values[0] >= 0
    for value in values[1:]:
        condition = condition & (value >= 0)
    return condition


def _lsn_tie_breakers(source: Column) -> tuple[Column, Column]:
    """(last committed lsn from source.sequence, txId): 0 when absent, NULL when malformed."""
    sequence = F.from_json(source["sequence"], "array<string>")
    zero = F.lit(0).cast("long")
    committed = (
        F.when(source["sequence"].isNull(), zero)
        .when(sequence.isNull(), F.lit(None).cast("long"))  # not a JSON array
        .when(sequence[0].isNull(), zero)
        .otherwise(sequence[0].cast("long"))  # NULL for a non-numeric lsn
    )
    return committed, F.coalesce(source["txId"], zero)


def binlog_given(source: Column) -> Column:
    """Does `source` carry a binlog position? An empty file name with position 0 (or none) does not.

    Producers that write Debezium's format without reading a binlog (Flink CDC's MySQL source,
    Flink SQL's `debezium-json`, test streams) fill `"file": ""` and `"pos": 0`: that is the
    absence of a position, ordered like any position-less event, never a malformed one.
    """
    return ~((F.coalesce(source["file"], F.lit("")) == "") & (F.coalesce(source["pos"], F.lit(0).cast("long")) == 0))


def kafka_order() -> Column:
    """ORDER by Kafka position alone (`ordering: kafka`). Twin of events.kafka_order."""
    return F.concat(F.lit("k"), kafka_suffix())


def source_order(op: Column, op_ts_ms: Column, source: Column) -> Column:
    """ORDER from the connector's position: binlog, else lsn, else ts_ms; NULL when none is known.

    A position that is present but malformed (a file name without a numeric suffix, a negative
    pos/row/lsn/ts_ms, an unparseable sequence) gives NULL, so the record is rejected rather
    than applied with a guessed order (semantics §3). Twin of events.binlog_order / lsn_order / ts_order.
    """
    rank = F.when(is_snapshot(op, source), F.lit(0)).otherwise(F.lit(1))
    # the binlog file's sequence number: the digits after the last dot of `mysql-bin.000003`
    file_ok = source["file"].rlike(BINLOG_FILE_PATTERN)
    file_seq = F.substring_index(source["file"], ".", -1).cast("long")
    row = F.coalesce(source["row"], F.lit(0).cast("long"))
    ts_ms = source_ts_ms(op_ts_ms, source)
    committed, tx_id = _lsn_tie_breakers(source)
    binlog = F.when(
        file_ok & source["pos"].isNotNull() & _non_negative(source["pos"], row),
        F.concat(F.lit("b"), _digits(file_seq, 10), _digits(source["pos"], 20), rank.cast("string"), _digits(row, 10)),
    )
    lsn = F.when(
        _non_negative(source["lsn"], committed, tx_id),
        F.concat(F.lit("l"), _digits(source["lsn"], 20), rank.cast("string"), _digits(committed, 20), _digits(tx_id, 20)),
    )
    position = (
        F.when(binlog_given(source), binlog)
        .when(source["lsn"].isNotNull(), lsn)
        .when(ts_ms.isNotNull(), F.when(ts_ms >= 0, F.concat(F.lit("t"), _digits(ts_ms, 20))))
    )
    return F.concat(position, kafka_suffix())


def ordering_number(value: Column, dtype: DataType) -> Column | None:
    """A configured ordering column as decimal(20,0): integers as-is, timestamps in µs, dates in days.

    None when the type cannot order events (the caller rejects such records with a clear message).
    """
    if isinstance(dtype, (ByteType, ShortType, IntegerType, LongType)):
        return value.cast("decimal(20,0)")
    if isinstance(dtype, DecimalType) and dtype.scale == 0:
        return value.cast("decimal(20,0)")
    if isinstance(dtype, TimestampType):
        return F.unix_micros(value).cast("decimal(20,0)")
    if isinstance(dtype, DateType):
        return F.unix_date(value).cast("decimal(20,0)")
    return None


def column_order(number: Column) -> Column:
    """ORDER from an ordering value (decimal(20,0)); NULL outside the long range. Twin of events.column_order."""
    shifted = (number + F.lit(str(ORDER_SHIFT)).cast("decimal(20,0)")).cast("string")
    in_range = number.between(F.lit(_LONG_MIN).cast("decimal(20,0)"), F.lit(_LONG_MAX).cast("decimal(20,0)"))
    return F.when(
        _all_present(number) & in_range, F.concat(F.lit("c"), F.lpad(shifted, 20, "0"), kafka_suffix())
    )


def source_text(op_ts_ms: Column, source: Column) -> Column:
    """_cdc_source: 'file:pos:row' for a binlog, the lsn for PostgreSQL, else the ts_ms."""
    return (
        F.when(
            source["file"].isNotNull() & source["pos"].isNotNull() & binlog_given(source),
            F.concat_ws(":", source["file"], source["pos"].cast("string"), F.coalesce(source["row"], F.lit(0).cast("long")).cast("string")),
        )
        .when(source["lsn"].isNotNull(), source["lsn"].cast("string"))
        .otherwise(source_ts_ms(op_ts_ms, source).cast("string"))
    )
