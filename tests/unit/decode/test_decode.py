"""Decoding Debezium JSON (with and without the schema envelope), patch messages and bad records.

Fixtures follow the shapes of the Debezium connector documentation's example events (MySQL
`inventory.customers`, a PostgreSQL update with an unchanged TOASTed column, schemas.enable=false
payloads); the values are our own. Each batch is decoded once per module to keep Spark light.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import random
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import DecimalType, IntegerType, StringType, StructField, StructType

from devkit.debezium import Column, DebeziumTable, KafkaRecord, patch_message
from hudi_cdc.config.models import TableConfig
from hudi_cdc.decode.records import DecodeResult, decode
from hudi_cdc.events import DEFAULT_PLACEHOLDER as TOAST_PLACEHOLDER
from hudi_cdc.events import PRESENT, binlog_order, column_order, lsn_order, ts_order
from tests.support.decode_rows import KAFKA_COLUMNS, T0, TOPIC, by_offset, decode_cached, kafka_rows

# ---- MySQL with the schema envelope (the docs' inventory.customers, plus typed columns) ------
CUSTOMERS = DebeziumTable(
    server="dbserver1",
    database="inventory",
    table="customers",
    key=["id"],
    columns=[
        Column("id", "int32", optional=False),
        Column("first_name", "string", optional=False),
        Column("last_name", "string", optional=False),
        Column("email", "string", optional=False),
        Column("balance", "decimal", scale=2, precision=12),
        Column("born", "date"),
        Column("updated_at", "micro_timestamp"),
        Column("profile", "json"),
    ],
)
ANNE = {
    "id": 1004,
    "first_name": "Anne",
    "last_name": "Kretchmar",
    "email": "annek@noanswer.org",
    "balance": Decimal("-1234567890.12"),
    "born": dt.date(1961, 2, 3),
    "updated_at": dt.datetime(2024, 3, 1, 12, 30, 15, 123456),
    "profile": '{"vip": true}',
}
SALLY = {**ANNE, "id": 1001, "first_name": "Sally", "last_name": "Thomas", "email": "sally.thomas@acme.com"}
CUSTOMERS_TABLE = TableConfig(name="customers", key=["id"], base_path="/unused")


@pytest.fixture(scope="module")
def mysql(spark: SparkSession) -> tuple[DecodeResult, dict[int, dict[str, Any]]]:
    """Snapshot read, create, update, delete and tombstone of the customers table, one batch."""
    records = [
        CUSTOMERS.change("r", after=SALLY, pos=154),
        CUSTOMERS.change("c", after=ANNE, pos=4567, row=1, ts_ms=1_700_000_000_000),
        CUSTOMERS.change("u", before=ANNE, after={**ANNE, "email": "anne@example.org"}, pos=4890),
        CUSTOMERS.change("d", before=ANNE, pos=5012),
        CUSTOMERS.tombstone(ANNE),
        CUSTOMERS.change("u", after=SALLY, pos=154),  # captured at the snapshot's own position
    ]
    result = decode_cached(kafka_rows(spark, records), CUSTOMERS_TABLE)
    return result, by_offset(result.events)


def test_create_decodes_every_column_exactly(mysql: tuple[DecodeResult, dict[int, dict[str, Any]]]) -> None:
    create = mysql[1][1]
    assert {k: create[k] for k in ANNE} == ANNE
    assert sorted(create[PRESENT]) == sorted(ANNE)
    assert (create["_cdc_op"], create["_cdc_ts_ms"], create["_cdc_source"]) == (
        "c",
        1_700_000_000_000,
        "mysql-bin.000003:4567:1",
    )
    assert create["_cdc_order"] == binlog_order(
        file_seq=3, pos=4567, row=1, snapshot=False, partition=0, offset=1
    )


def test_decoded_schema_comes_from_the_envelope(
    mysql: tuple[DecodeResult, dict[int, dict[str, Any]]],
) -> None:
    types = {f.name: f.dataType.simpleString() for f in mysql[0].schema.fields}
    assert types == {
        "id": "int", "first_name": "string", "last_name": "string", "email": "string", "balance": "decimal(12,2)",
        "born": "date", "updated_at": "timestamp", "profile": "string",
    }  # fmt: skip


def test_update_carries_the_after_image(mysql: tuple[DecodeResult, dict[int, dict[str, Any]]]) -> None:
    update = mysql[1][2]
    assert (update["_cdc_op"], update["email"], update["first_name"]) == ("u", "anne@example.org", "Anne")
    assert sorted(update[PRESENT]) == sorted(ANNE)


def test_delete_takes_the_key_from_before_and_carries_no_columns(
    mysql: tuple[DecodeResult, dict[int, dict[str, Any]]],
) -> None:
    delete = mysql[1][3]
    assert (delete["id"], delete["_cdc_op"], delete[PRESENT]) == (1004, "d", [])
    assert delete["email"] is None and delete["balance"] is None  # absent columns read NULL


def test_tombstone_is_acknowledged_not_decoded(mysql: tuple[DecodeResult, dict[int, dict[str, Any]]]) -> None:
    result, events = mysql
    assert 4 not in events and result.rejects.count() == 0
    assert [tuple(r) for r in result.tombstones.collect()] == [(TOPIC, 0, 4)]


def test_snapshot_read_sorts_before_a_change_at_the_same_position(
    mysql: tuple[DecodeResult, dict[int, dict[str, Any]]],
) -> None:
    read, change = mysql[1][0], mysql[1][5]
    assert read["_cdc_order"] == binlog_order(
        file_seq=3, pos=154, row=0, snapshot=True, partition=0, offset=0
    )
    assert read["_cdc_order"] < change["_cdc_order"]


# ---- a hand-written MySQL update, schemas.enable=true, key with its own envelope ------------
def _mysql_update_by_hand() -> KafkaRecord:
    row_schema = {
        "type": "struct", "optional": True, "name": "dbserver1.inventory.customers.Value",
        "fields": [
            {"type": "int32", "optional": False, "field": "id"},
            {"type": "string", "optional": False, "field": "first_name"},
            {"type": "string", "optional": True, "field": "email"},
        ],
    }  # fmt: skip
    value = {
        "schema": {
            "type": "struct", "optional": False, "name": "dbserver1.inventory.customers.Envelope",
            "fields": [{**row_schema, "field": "before"}, {**row_schema, "field": "after"},
                       {"type": "struct", "fields": [], "optional": False, "field": "source"},
                       {"type": "string", "optional": False, "field": "op"}],
        },
        "payload": {
            "before": {"id": 1001, "first_name": "Sally", "email": "sally@old.example"},
            "after": {"id": 1001, "first_name": "Sally", "email": None},
            "source": {"version": "2.7.3.Final", "connector": "mysql", "name": "dbserver1", "ts_ms": 1718000000000,
                       "snapshot": "false", "db": "inventory", "table": "customers", "server_id": 223344,
                       "gtid": None, "file": "mysql-bin.000012", "pos": 805, "row": 2, "thread": 7, "query": None},
            "op": "u", "ts_ms": 1718000000123, "transaction": None,
        },
    }  # fmt: skip
    key = {
        "schema": {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"}]},
        "payload": {"id": 1001},
    }
    return json.dumps(key).encode(), json.dumps(value).encode()


def test_hand_written_update_with_explicit_null(spark: SparkSession) -> None:
    (event,) = decode_cached(kafka_rows(spark, [_mysql_update_by_hand()]), CUSTOMERS_TABLE).events.collect()
    assert (event["id"], event["email"], sorted(event[PRESENT])) == (
        1001,
        None,
        ["email", "first_name", "id"],
    )
    assert event["_cdc_source"] == "mysql-bin.000012:805:2"
    assert event["_cdc_order"] == binlog_order(
        file_seq=12, pos=805, row=2, snapshot=False, partition=0, offset=0
    )


# ---- schemas.enable=false, mixed with envelope records in one batch --------------------------
# a schemaless connector with decimal.handling.mode=string; its TIMESTAMP column is a ZonedTimestamp
PLAIN = DebeziumTable(
    server="dbserver1", database="inventory", table="customers", key=["id"], with_schema=False,
    columns=[Column("id", "int32"), Column("first_name", "string"), Column("last_name", "string"),
             Column("email", "string"), Column("balance", "string"), Column("updated_at", "zoned_timestamp")],
)  # fmt: skip
ANNE_PLAIN = {**ANNE, "balance": "-1234567890.12"}
DECLARED = TableConfig(
    name="customers", key=["id"], base_path="/unused",
    columns={"id": "int", "first_name": "string", "email": "string", "balance": "decimal(12,2)", "updated_at": "timestamp"},
)  # fmt: skip


def test_without_envelope_types_come_from_declared_columns_even_mixed(spark: SparkSession) -> None:
    records = [
        PLAIN.change("c", after=ANNE_PLAIN, pos=10),
        CUSTOMERS.change("c", after=SALLY, pos=20),  # an envelope record in the same batch
        PLAIN.change("d", before=ANNE_PLAIN, pos=30),
    ]
    result = decode_cached(kafka_rows(spark, records), DECLARED)
    events = by_offset(result.events)
    assert result.rejects.count() == 0
    plain = events[0]
    assert {k: plain[k] for k in DECLARED.columns} == {k: ANNE[k] for k in DECLARED.columns}
    # last_name is in the JSON but not declared: plain records cannot type it, so it is not PRESENT
    assert sorted(plain[PRESENT]) == ["balance", "email", "first_name", "id", "updated_at"]
    assert plain["last_name"] is None
    # the envelope record is typed by its own schema (base64 decimal, epoch µs), then by the declared types
    assert {k: events[1][k] for k in SALLY} == SALLY
    assert (events[2]["id"], events[2]["_cdc_op"], events[2][PRESENT]) == (1004, "d", [])
    types = {f.name: f.dataType.simpleString() for f in result.schema.fields}
    assert (types["balance"], types["updated_at"], types["born"]) == ("decimal(12,2)", "timestamp", "date")


def test_declared_timestamp_refuses_epoch_numbers(spark: SparkSession) -> None:
    value = {"op": "c", "after": {"id": 1, "updated_at": 1709296215123456}, "ts_ms": 1}
    (reject,) = decode_cached(kafka_rows(spark, [(None, json.dumps(value).encode())]), DECLARED).rejects.collect()
    assert (
        reject["error_class"] == "BadValue" and "declare epoch numbers as bigint" in reject["error_message"]
    )


def test_plain_record_without_declared_columns_is_rejected_with_what_to_do(spark: SparkSession) -> None:
    result = decode_cached(kafka_rows(spark, [PLAIN.change("c", after=ANNE_PLAIN)]), CUSTOMERS_TABLE)
    (reject,) = result.rejects.collect()
    assert reject["error_class"] == "NoSchema" and "declare `columns`" in reject["error_message"]


# ---- flattened rows: Debezium's ExtractNewRecordState ------------------------------------------
# as the MariaDB connector wrote them with `delete.tombstone.handling.mode=rewrite-with-tombstone`
# and `add.fields=op,source.ts_ms,source.file,source.pos,source.row,source.snapshot`
FLAT_FIELDS = [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "b"},
    {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
     "parameters": {"scale": "2", "connect.decimal.precision": "10"}, "field": "amount"},
    {"type": "string", "optional": True, "field": "__deleted"},
    {"type": "string", "optional": True, "field": "__op"},
    {"type": "int64", "optional": True, "field": "__source_ts_ms"},
    {"type": "string", "optional": True, "field": "__source_file"},
    {"type": "int64", "optional": True, "field": "__source_pos"},
    {"type": "int32", "optional": True, "field": "__source_row"},
    {"type": "string", "optional": True, "field": "__source_snapshot"},
]  # fmt: skip
FLAT_TABLE = TableConfig(name="t", key=["id"], base_path="/unused", mode="flattened")


def _flat(
    row: dict[str, Any], op: str | None, pos: int, *, deleted: bool = False, snapshot: str | None = None,
    prefix: str = "__",
) -> bytes:
    """A flattened row with its schema; `prefix`: the SMT's `add.fields.prefix`."""
    meta = {"__deleted": str(deleted).lower(), "__op": op, "__source_ts_ms": 1_700_000_000_000,
            "__source_file": "mariadb-bin.000001", "__source_pos": pos, "__source_row": 0, "__source_snapshot": snapshot}  # fmt: skip
    # the SMT puts its prefix before every field it adds but `__deleted`, which keeps its name
    renamed = {f"__{name}": f"{prefix}{name}" for name in ("op", "source_ts_ms", "source_file", "source_pos", "source_row", "source_snapshot")}
    meta = {renamed.get(name, name): value for name, value in meta.items()}
    fields = [f | {"field": renamed.get(str(f["field"]), f["field"])} for f in FLAT_FIELDS]
    schema = {"type": "struct", "fields": fields, "optional": False, "name": "srv.db.t.Value"}
    return json.dumps({"schema": schema, "payload": row | meta}).encode()


@pytest.mark.parametrize("prefix", ["__", "cdc_"])
def test_flattened_rows_decode_as_their_changes_and_deletes_as_rewritten(spark: SparkSession, prefix: str) -> None:
    records = [
        (None, _flat({"id": 2, "b": "y", "amount": None}, "r", 2079, snapshot="last", prefix=prefix)),
        (None, _flat({"id": 2, "b": "y", "amount": "AJY="}, "u", 2259, prefix=prefix)),
        # the SMT's rewrite of a delete: the row as it was, marked deleted
        (None, _flat({"id": 1, "b": "x", "amount": "AJY="}, "d", 2505, deleted=True, prefix=prefix)),
        # without `add.fields=op`: `__deleted` alone tells a delete from an update
        (None, _flat({"id": 3, "b": "z", "amount": None}, None, 2600, deleted=True, prefix=prefix)),
        (None, _flat({"id": 4, "b": None, "amount": "ASw="}, None, 2756, prefix=prefix)),
    ]
    table = FLAT_TABLE.model_copy(update={"flattened_prefix": prefix})
    result = decode_cached(kafka_rows(spark, records, topic="srv.db.t"), table)
    assert [f.name for f in result.schema.fields] == ["id", "b", "amount"]
    events = by_offset(result.events)
    assert [events[o]["_cdc_op"] for o in range(5)] == ["r", "u", "d", "d", "u"]
    assert events[1]["amount"] == Decimal("1.50") and sorted(events[1][PRESENT]) == ["amount", "b", "id"]
    assert (events[2]["id"], events[2][PRESENT], events[4]["b"]) == (1, [], None)
    assert events[0]["_cdc_order"] == binlog_order(file_seq=1, pos=2079, row=0, snapshot=True, partition=0, offset=0)
    assert events[4]["_cdc_order"] == binlog_order(file_seq=1, pos=2756, row=0, snapshot=False, partition=0, offset=4)
    assert events[4]["_cdc_source"] == "mariadb-bin.000001:2756:0" and result.rejects.count() == 0


def test_flattened_rows_with_unqualified_source_fields_order_like_qualified_ones(spark: SparkSession) -> None:
    """`add.fields=op,file,pos,row,snapshot` names the source fields `__file`, `__pos`... (the SMT
    takes an unqualified name other than op/ts_ms from `source`): the same order as `source.file`."""

    def unqualified(record: bytes) -> bytes:
        value = json.loads(record)
        rename = {f"__source_{n}": f"__{n}" for n in ("file", "pos", "row", "snapshot")}
        value["schema"]["fields"] = [f | {"field": rename.get(f["field"], f["field"])} for f in value["schema"]["fields"]]
        value["payload"] = {rename.get(k, k): v for k, v in value["payload"].items()}
        return json.dumps(value).encode()

    records = [
        (None, unqualified(_flat({"id": 2, "b": "y", "amount": None}, "r", 2079, snapshot="last"))),
        (None, unqualified(_flat({"id": 2, "b": "z", "amount": None}, "u", 2259))),
        (None, json.dumps({"id": 3, "b": "q", "__op": "u", "__lsn": 24023128, "__sequence": '["24023119","24023128"]', "__txId": 555}).encode()),
    ]
    declared = FLAT_TABLE.model_copy(update={"columns": {"id": "int", "b": "string", "amount": "decimal(10,2)"}})
    result = decode_cached(kafka_rows(spark, records, topic="srv.db.t"), declared)
    assert result.rejects.count() == 0 and [f.name for f in result.schema.fields] == ["id", "b", "amount"]
    events = by_offset(result.events)
    assert events[0]["_cdc_order"] == binlog_order(file_seq=1, pos=2079, row=0, snapshot=True, partition=0, offset=0)
    assert events[1]["_cdc_order"] == binlog_order(file_seq=1, pos=2259, row=0, snapshot=False, partition=0, offset=1)
    assert events[2]["_cdc_order"] == lsn_order(lsn=24023128, snapshot=False, partition=0, offset=2, last_committed=24023119, tx_id=555)


KAFKA_HEADER_COLUMNS = f"{KAFKA_COLUMNS}, headers array<struct<key:string,value:binary>>"


def _with_headers(spark: SparkSession, rows: Sequence[tuple[bytes, list[tuple[str, str]]]]) -> DataFrame:
    """Kafka source rows (offsets 0..) of flattened values with their headers, as Spark reads them
    with `includeHeaders`: each header's value is its text in UTF-8 (SimpleHeaderConverter)."""
    return spark.createDataFrame(
        [
            (None, value, "srv.db.t", 0, offset, T0, [(k, v.encode()) for k, v in headers])
            for offset, (value, headers) in enumerate(rows)
        ],
        KAFKA_HEADER_COLUMNS,
    )


def _binlog_headers(op: str | None, pos: int, *, snapshot: str | None = None, prefix: str = "__") -> list[tuple[str, str]]:
    """What `add.headers=op,source.ts_ms,source.file,source.pos,source.row,source.snapshot` adds."""
    headers = [("source_ts_ms", "1700000000000"), ("source_file", "mariadb-bin.000001"), ("source_pos", str(pos)), ("source_row", "0")]
    headers += [("op", op)] if op else []
    headers += [("source_snapshot", snapshot)] if snapshot else []
    return [(prefix + name, value) for name, value in headers]


@pytest.mark.parametrize("header_prefix", ["__", "hdr_"])
def test_flattened_rows_read_their_position_and_op_from_the_smts_headers(spark: SparkSession, header_prefix: str) -> None:
    """`add.headers` instead of `add.fields`: the row holds only its columns (and `__deleted`), the
    metadata comes as Kafka headers behind `add.headers.prefix`; it orders and judges the same."""

    def row(values: dict[str, Any], *, deleted: bool = False) -> bytes:
        return json.dumps(values | {"__deleted": str(deleted).lower()}).encode()

    rows = [
        (row({"id": 2, "b": "y"}), _binlog_headers("r", 2079, snapshot="last", prefix=header_prefix)),
        (row({"id": 2, "b": "z"}), _binlog_headers("u", 2259, prefix=header_prefix)),
        (row({"id": 1, "b": "x"}, deleted=True), _binlog_headers(None, 2505, prefix=header_prefix)),
        # a field wins over a header of the same meaning; of repeated headers the last one counts
        (json.dumps({"id": 3, "b": "q", "__deleted": "false", "__source_pos": 3000}).encode(),
         [*_binlog_headers("c", 1, prefix=header_prefix), (f"{header_prefix}source_row", "4")]),
        # other headers are no metadata
        (row({"id": 4, "b": "w"}), [("traceparent", "00-abc"), *_binlog_headers("c", 3100, prefix=header_prefix)]),
    ]  # fmt: skip
    table = FLAT_TABLE.model_copy(
        update={"columns": {"id": "int", "b": "string"}, "flattened_header_prefix": header_prefix}
    )
    result = decode_cached(_with_headers(spark, rows), table)
    assert result.rejects.count() == 0 and [f.name for f in result.schema.fields] == ["id", "b"]
    events = by_offset(result.events)
    assert [events[o]["_cdc_op"] for o in range(5)] == ["r", "u", "d", "c", "c"]
    assert events[0]["_cdc_order"] == binlog_order(file_seq=1, pos=2079, row=0, snapshot=True, partition=0, offset=0)
    assert events[1]["_cdc_order"] == binlog_order(file_seq=1, pos=2259, row=0, snapshot=False, partition=0, offset=1)
    assert events[3]["_cdc_order"] == binlog_order(file_seq=1, pos=3000, row=4, snapshot=False, partition=0, offset=3)
    assert events[1]["_cdc_source"] == "mariadb-bin.000001:2259:0" and events[1]["_cdc_ts_ms"] == 1_700_000_000_000
    assert (events[2]["id"], events[2][PRESENT]) == (1, [])


def test_flattened_rows_with_headers_of_another_prefix_or_a_bad_position_are_dead_lettered(spark: SparkSession) -> None:
    """Headers behind a prefix the table does not name carry no position (MissingOrder, which says
    where it looks); a header position that is not a number is BadOrder, never a weaker order."""
    row = json.dumps({"id": 1, "b": "x", "__deleted": "false"}).encode()
    bad_pos = [(n, "12a" if n == "__source_pos" else v) for n, v in _binlog_headers("u", 1)]
    bad_lsn = [("__op", "u"), ("__lsn", "0/16B3748"), ("__source_ts_ms", "1700000000000")]
    table = FLAT_TABLE.model_copy(update={"columns": {"id": "int", "b": "string"}})
    raw = _with_headers(spark, [(row, _binlog_headers("u", 1, prefix="hdr_")), (row, bad_pos), (row, bad_lsn)])
    rejects = by_offset(decode_cached(raw, table).rejects)
    assert [rejects[o]["error_class"] for o in range(3)] == ["MissingOrder", "BadOrder", "BadOrder"]
    assert "add.headers" in rejects[0]["error_message"] and "`__`" in rejects[0]["error_message"]
    # the dead letter keeps the headers, so a replay reads the same metadata
    assert rejects[1]["headers"] == [(n, v.encode()) for n, v in bad_pos]


def test_flattened_rows_without_a_position_or_schema_say_what_to_add(spark: SparkSession) -> None:
    plain_row = json.dumps({"id": 5, "b": "p", "__deleted": "false"}).encode()
    declared = FLAT_TABLE.model_copy(update={"columns": {"id": "int", "b": "string"}})
    (reject,) = decode_cached(kafka_rows(spark, [(None, plain_row)], topic="srv.db.t"), declared).rejects.collect()
    assert reject["error_class"] == "MissingOrder" and "add.fields" in reject["error_message"]
    assert "`__source_pos`" in reject["error_message"]
    # rows of an SMT whose prefix the table does not name: no position either, never a guessed one
    other = _flat({"id": 4, "b": None, "amount": "ASw="}, "u", 2756, prefix="cdc_")
    (reject,) = decode_cached(kafka_rows(spark, [(None, other)], topic="srv.db.t"), FLAT_TABLE).rejects.collect()
    assert reject["error_class"] == "MissingOrder"


def test_records_the_smt_passes_through_are_skipped_and_rows_named_like_them_are_not(spark: SparkSession) -> None:
    source = {"connector": "mysql", "name": "srv", "file": "mariadb-bin.000001", "pos": 4}
    change_schema = {"type": "struct", "optional": False, "name": "io.debezium.connector.mariadb.SchemaChangeValue",
                     "fields": [{"type": "struct", "field": "source", "fields": []},
                                {"type": "string", "field": "ddl"}, {"type": "array", "field": "tableChanges"}]}  # fmt: skip
    records = [
        (None, json.dumps({"source": source, "ddl": "ALTER TABLE t ADD c INT", "tableChanges": []}).encode()),
        # the same with its schema: it must type no column of the table
        (None, json.dumps({"schema": change_schema, "payload": {"source": source, "ddl": "DROP TABLE x", "tableChanges": []}}).encode()),
        (None, json.dumps({"status": "END", "id": "571:53195832", "ts_ms": 1, "event_count": 2, "data_collections": []}).encode()),
        (None, json.dumps({"op": "m", "ts_ms": 1, "source": source | {"connector": "postgresql"}, "message": {"prefix": "p"}}).encode()),
        # a row whose columns look like a marker's or an envelope's: still a row
        (None, json.dumps({"id": 7, "b": "x", "status": "END", "source": "{not the connector}", "__source_ts_ms": 5}).encode()),
        (None, _flat({"id": 2, "b": "y", "amount": None}, "u", 2259)),
    ]
    declared = FLAT_TABLE.model_copy(update={"columns": {"id": "int", "b": "string", "status": "string", "source": "string"}})
    result = decode_cached(kafka_rows(spark, records, topic="srv.db.t"), declared)
    assert sorted(r["offset"] for r in result.skipped.collect()) == [0, 1, 2, 3]
    events = by_offset(result.events)
    assert sorted(events) == [4, 5] and (events[4]["status"], events[4]["_cdc_op"]) == ("END", "u")
    assert [f.name for f in result.schema.fields] == ["id", "b", "status", "source", "amount"]
    assert result.rejects.count() == 0


# ---- PostgreSQL: lsn order, TOAST placeholders, key-only `before` ----------------------------
DOCS = DebeziumTable(
    server="fulfillment", database="postgres", table="docs", key=["id"], connector="postgresql",
    columns=[Column("id", "int64", optional=False), Column("title", "string"), Column("body", "string"),
             Column("blob", "bytes"), Column("version", "int32")],
)  # fmt: skip

DOCS_TABLE = TableConfig(name="docs", key=["id"], base_path="/unused")


def test_postgres_update_with_toast_placeholders_leaves_them_absent(spark: SparkSession) -> None:
    def array(field: str, **items: str) -> dict[str, Any]:
        return {"type": "array", "items": {"optional": True, **items}, "optional": True, "field": field}

    # TOASTed columns of other types, each with the placeholder Debezium 3.5 sends for it
    extra = {
        "tags": (array("tags", type="string"), [TOAST_PLACEHOLDER]),
        "ints": (array("ints", type="int32"), list(b"__debezium_unavailable_value")),
        "blobs": (array("blobs", type="bytes"), ["X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="]),
        "ids": (array("ids", type="string", name="io.debezium.data.Uuid"), ["b68a35a7-17ad-35b3-af2a-ae46edb4545a"]),
        "props": (
            {"type": "string", "optional": True, "name": "io.debezium.data.Json", "field": "props"},
            '{"__debezium_unavailable_value":"__debezium_unavailable_value"}',
        ),
    }
    key, value = DOCS.change(
        "u",
        after={"id": 7, "title": None, "body": TOAST_PLACEHOLDER, "blob": TOAST_PLACEHOLDER, "version": 3},
        lsn=33_227_720,
    )
    envelope = json.loads(value or b"")
    for part in envelope["schema"]["fields"][:2]:
        part["fields"].extend(schema for schema, _ in extra.values())
    envelope["payload"]["after"].update({name: placeholder for name, (_, placeholder) in extra.items()})
    (event,) = decode_cached(
        kafka_rows(spark, [(key, json.dumps(envelope).encode())], topic=DOCS.topic), DOCS_TABLE
    ).events.collect()
    assert sorted(event[PRESENT]) == ["id", "title", "version"]
    assert (event["body"], event["blob"], event["title"], event["version"]) == (None, None, None, 3)
    assert all(event[name] is None for name in extra)
    assert event["_cdc_order"] == lsn_order(lsn=33_227_720, snapshot=False, partition=0, offset=0, last_committed=33_227_712, tx_id=780)
    assert event["_cdc_source"] == "33227720"


def test_a_configured_placeholder_means_absent_and_the_default_one_is_then_a_value(spark: SparkSession) -> None:
    # the connector set `unavailable.value.placeholder: hex:c2a47e` ("¤~")
    table = DOCS_TABLE.model_copy(update={"unavailable_value_placeholder": "hex:c2a47e"})
    key, value = DOCS.change(
        "u", after={"id": 7, "title": TOAST_PLACEHOLDER, "body": "¤~", "blob": None, "version": 3}, lsn=33_227_720
    )
    envelope = json.loads(value or b"")
    envelope["payload"]["after"]["blob"] = "wqR+"  # bytea: the placeholder's bytes
    records = [(key, json.dumps(envelope).encode())]
    (event,) = decode_cached(kafka_rows(spark, records, topic=DOCS.topic), table).events.collect()
    assert sorted(event[PRESENT]) == ["id", "title", "version"]
    assert (event["title"], event["body"], event["blob"]) == (TOAST_PLACEHOLDER, None, None)


def test_postgres_delete_with_key_only_before_and_boolean_snapshot_flag(spark: SparkSession) -> None:
    key, value = DOCS.change("d", before={"id": 8}, lsn=33_227_900)
    envelope = json.loads(value or b"")
    envelope["payload"]["source"]["snapshot"] = True  # old connectors wrote a JSON boolean
    (event,) = decode_cached(
        kafka_rows(spark, [(key, json.dumps(envelope).encode())], topic=DOCS.topic), DOCS_TABLE
    ).events.collect()
    assert (event["id"], event["_cdc_op"], event[PRESENT]) == (8, "d", [])
    assert event["_cdc_order"] == lsn_order(lsn=33_227_900, snapshot=True, partition=0, offset=0, last_committed=33_227_892, tx_id=780)


# ---- keys: Kafka key first, then the row; truncates have none --------------------------------
def test_delete_with_null_before_takes_the_key_from_the_kafka_key(spark: SparkSession) -> None:
    key, value = CUSTOMERS.change("d", before=ANNE)
    envelope = json.loads(value or b"")
    envelope["payload"]["before"] = None
    plain_key = json.dumps({"id": 1005}).encode()  # schemas.enable=false on the key converter
    connect_key = json.loads(key or b"")
    reordered = json.dumps({"payload": {"id": 1006}, "schema": connect_key["schema"]}).encode()
    no_payload = json.dumps({"schema": connect_key["schema"], "payload": None}).encode()
    keys = [key, plain_key, reordered, no_payload]
    result = decode_cached(kafka_rows(spark, [(k, json.dumps(envelope).encode()) for k in keys]), CUSTOMERS_TABLE)
    events = by_offset(result.events)
    assert [events[offset]["id"] for offset in range(3)] == [1004, 1005, 1006]
    # an envelope key without a payload gives no key, and the delete has no image to take one from
    assert [(r["offset"], r["error_class"]) for r in result.rejects.collect()] == [(3, "MissingKey")]


def test_a_key_column_named_like_a_connect_envelopes_part_is_read_from_either_form_of_key(spark: SparkSession) -> None:
    table = TableConfig(name="t", key=["payload"], base_path="/unused", columns={"payload": "int", "v": "string"})
    value = {"op": "c", "after": {"v": "x"}, "source": {"connector": "mysql", "ts_ms": 1}, "ts_ms": 1}
    plain = json.dumps({"payload": 7}).encode()
    schema = {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "payload"}], "optional": False}
    connect = json.dumps({"schema": schema, "payload": {"payload": 8}}).encode()
    records = [(plain, json.dumps(value).encode()), (connect, json.dumps(value).encode())]
    events = by_offset(decode_cached(kafka_rows(spark, records), table).events)
    assert [(events[o]["payload"], events[o]["v"]) for o in range(2)] == [(7, "x"), (8, "x")]


def test_truncate_has_no_key_and_no_columns(spark: SparkSession) -> None:
    (event,) = decode_cached(
        kafka_rows(spark, [CUSTOMERS.change("t", pos=9000, with_key=False)]), CUSTOMERS_TABLE
    ).events.collect()
    assert (event["id"], event[PRESENT], event["_cdc_op"]) == (None, [], "t")
    assert event["_cdc_order"] == binlog_order(
        file_seq=3, pos=9000, row=0, snapshot=False, partition=0, offset=0
    )


# ---- ordering: ts-only sources, ordering columns, patches -----------------------------------
def test_source_with_only_ts_ms_orders_by_it(spark: SparkSession) -> None:
    value = {
        "op": "c",
        "after": {"id": 1, "first_name": "x"},
        "source": {"connector": "sqlserver", "ts_ms": 1718000000001},
        "ts_ms": 5,
    }
    table = TableConfig(
        name="customers", key=["id"], base_path="/unused", columns={"id": "int", "first_name": "string"}
    )
    (event,) = decode_cached(kafka_rows(spark, [(None, json.dumps(value).encode())]), table).events.collect()
    assert event["_cdc_order"] == ts_order(ts_ms=1718000000001, partition=0, offset=0)
    assert (event["_cdc_source"], event["_cdc_ts_ms"]) == ("1718000000001", 1718000000001)


WIDE = "12345678901234567890.123"
"""More significant digits than a double holds (17)."""
_SOURCE = '"source": {"file": "mysql-bin.000001", "pos": 5, "ts_ms": 1}'


@pytest.mark.parametrize(
    ("mode", "key", "value"),
    [
        ("full", ["id"], '{"op": "c", "ts_ms": 1, SOURCE, "after": {"id": 1, "amount": WIDE}}'),
        # no Kafka key: a delete's key comes from its `before`
        ("full", ["amount"], '{"op": "d", "ts_ms": 1, SOURCE, "before": {"id": 1, "amount": WIDE}, "after": null}'),
        ("patch", ["id"], '{"id": 1, "ts": 7, "data": {"amount": WIDE}}'),
        ("flattened", ["id"], '{"id": 1, "amount": WIDE, "__op": "c", "__source_ts_ms": 1}'),
    ],
    ids=["after", "before of a delete", "patch", "flattened"],
)
def test_a_json_number_with_more_digits_than_a_double_keeps_them_in_a_declared_decimal(
    spark: SparkSession, mode: str, key: list[str], value: str
) -> None:
    table = TableConfig(
        name="t", key=key, base_path="/unused", columns={"id": "int", "amount": "decimal(38,3)", "ts": "bigint"},
        mode=mode, **({"ordering": "ts"} if mode == "patch" else {}),
    )  # fmt: skip
    kafka_key = b'{"id": 1}' if key == ["id"] else None
    text = value.replace("SOURCE", _SOURCE).replace("WIDE", WIDE)
    result = decode_cached(kafka_rows(spark, [(kafka_key, text.encode())]), table)
    assert result.rejects.collect() == []
    (event,) = result.events.collect()
    assert event["amount"] == Decimal(WIDE)


@pytest.mark.parametrize("partial_results", ["true", "false"])
def test_one_bad_value_in_an_envelope_image_names_that_column_only(spark: SparkSession, partial_results: str) -> None:
    """The image is typed in place (see the test above); a value that does not fit its wire type
    must not take the image's other columns down with it in the reject's message, whether Spark
    keeps a nested struct's other fields (Spark 3.5's default) or drops it."""
    conf = "spark.sql.json.enablePartialResults"
    previous = str(spark.conf.get(conf))
    spark.conf.set(conf, partial_results)
    try:
        _one_bad_value_names_that_column_only(spark)
    finally:
        spark.conf.set(conf, previous)


def _one_bad_value_names_that_column_only(spark: SparkSession) -> None:
    source = DebeziumTable(server="s", database="d", table="t", key=["id"], columns=[
        Column("id", "int32"), Column("n", "int32"), Column("m", "int32")])  # fmt: skip
    records = [source.change("c", after={"id": 1, "n": "many", "m": 2}), source.change("c", after={"id": 2, "n": 3, "m": 4})]
    result = decode_cached(kafka_rows(spark, records, topic="s.d.t"), TableConfig(name="t", key=["id"], base_path="/x"))
    (reject,) = result.rejects.collect()
    assert reject["error_class"] == "BadValue"
    assert "n (int)" in reject["error_message"] and "m (int)" not in reject["error_message"]
    assert [(e["id"], e["n"], e["m"]) for e in result.events.collect()] == [(2, 3, 4)]


def test_ordering_column_timestamp_uses_epoch_micros(spark: SparkSession) -> None:
    table = CUSTOMERS_TABLE.model_copy(update={"ordering": "updated_at"})
    late = {**ANNE, "updated_at": dt.datetime(1969, 12, 31, 23, 59, 59, 999999)}
    events = by_offset(
        decode_cached(
            kafka_rows(spark, [CUSTOMERS.change("c", after=ANNE), CUSTOMERS.change("u", after=late)]), table
        ).events
    )
    assert events[0]["_cdc_order"] == column_order(value=1709296215123456, partition=0, offset=0)
    assert events[1]["_cdc_order"] == column_order(value=-1, partition=0, offset=1)
    assert events[1]["_cdc_order"] < events[0]["_cdc_order"]


PEOPLE = TableConfig(
    name="people", key=["id"], base_path="/unused", mode="patch", ordering="ts",
    columns={"id": "bigint", "age": "int", "name": "string", "ts": "bigint"},
)  # fmt: skip


def test_patch_messages_carry_present_fields_key_and_order(spark: SparkSession) -> None:
    records = [
        patch_message({"id": 123}, 1435290195610, {"age": 25}),
        patch_message(
            {"id": 124}, 1435290195611, {"name": None, "ts": 1}
        ),  # top-level ts wins over the image's
        (
            json.dumps({"id": 125}).encode(),
            json.dumps({"ts": 7, "data": {"age": 3}}).encode(),
        ),  # key only in the Kafka key
    ]
    result = decode_cached(kafka_rows(spark, records, topic="people"), PEOPLE)
    events = by_offset(result.events)
    assert (events[0]["id"], events[0]["age"], sorted(events[0][PRESENT]), events[0]["_cdc_op"]) == (
        123,
        25,
        ["age", "id"],
        "u",
    )
    assert events[0]["_cdc_order"] == column_order(value=1435290195610, partition=0, offset=0)
    assert events[0]["_cdc_ts_ms"] == 1435290195610
    assert (events[1]["name"], sorted(events[1][PRESENT])) == (None, ["id", "name", "ts"])
    assert events[1]["_cdc_order"] == column_order(value=1435290195611, partition=0, offset=1)
    assert (events[2]["id"], events[2]["age"]) == (125, 3)


def test_order_expressions_equal_their_python_twins(spark: SparkSession) -> None:
    """Spark's ORDER strings equal events.py's for many positions, boundaries included."""
    rng = random.Random(20240601)
    rows, expected = [], {}
    for i in range(90):
        # values at and past each field's width: printf's %0Nd pads, and writes a wider value whole
        file_seq, row = rng.choice([0, 1, 999_999, 9_999_999_999]), rng.choice([rng.randrange(500), 10**10, 2**63 - 1])
        pos = rng.choice([0, 4, 2**63 - 1, rng.randrange(2**40)])
        partition, offset = rng.choice([rng.randrange(100), 99_999, 100_000, 2**31 - 1]), rng.choice([0, i, 2**62 + i])
        op, flag = rng.choice(
            [("r", "true"), ("r", "incremental"), ("c", "false"), ("u", "last"), ("d", None)]
        )
        snapshot = op == "r" or flag == "last"
        if i % 3 == 0:
            source: dict[str, Any] = {
                "file": f"mysql-bin.{file_seq:06d}",
                "pos": pos,
                "row": row,
                "snapshot": flag,
                "ts_ms": 1,
            }
            expected[i] = binlog_order(
                file_seq=file_seq, pos=pos, row=row, snapshot=snapshot, partition=partition, offset=offset
            )
        elif i % 3 == 1:
            committed, tx_id = rng.choice([(None, None), (pos // 2, 0), (0, 2**40), (pos, 780)])
            source = {"lsn": pos, "snapshot": flag, "ts_ms": 1, "txId": tx_id}
            if committed is not None:
                source["sequence"] = json.dumps([str(committed), str(pos)])
            expected[i] = lsn_order(
                lsn=pos,
                snapshot=snapshot,
                partition=partition,
                offset=offset,
                last_committed=committed or 0,
                tx_id=tx_id or 0,
            )
        else:
            source = {"ts_ms": pos}
            expected[i] = ts_order(ts_ms=pos, partition=partition, offset=offset)
        value = {"op": op, "before": {"id": i}, "after": {"id": i}, "source": source}
        rows.append((None, json.dumps(value).encode(), "t", partition, offset, T0))
    table = TableConfig(name="t", key=["id"], base_path="/unused", columns={"id": "int"})
    events = decode_cached(spark.createDataFrame(rows, KAFKA_COLUMNS), table).events.collect()
    assert {r["id"]: r["_cdc_order"] for r in events} == expected
    binlogs = {i: json.loads(rows[i][1])["source"] for i in range(0, 90, 3)}
    assert {r["id"]: r["_cdc_source"] for r in events if r["id"] in binlogs} == {
        i: f"{s['file']}:{s['pos']}:{s['row']}" for i, s in binlogs.items()
    }


# ---- rejects: one batch of bad records next to a good one ------------------------------------
BAD: dict[str, tuple[bytes, str, str]] = {
    "malformed-json": (b'{"op": "c", "after": {"id": 1', "MalformedJson", "not a JSON object"),
    "not-an-object": (b"[1, 2, 3]", "MalformedJson", "not a JSON object"),
    # Spark keeps the fields read before the fault (op): only its corrupt-record field tells
    "malformed-inside-after": (b'{"op": "c", "after": {"id": 1,}, "ts_ms": 1}', "MalformedJson", "not a JSON object"),
    "missing-op": (json.dumps({"after": {"id": 1}, "source": {"ts_ms": 1}}).encode(), "MissingOp", "valid ops are c, r, u, d, t"),
    "unknown-op": (json.dumps({"op": "x", "after": {"id": 1}, "ts_ms": 1}).encode(), "UnknownOp", "unknown op 'x'; valid ops are c, r, u, d, t"),
    "missing-after": (json.dumps({"op": "c", "after": None, "ts_ms": 1}).encode(), "MissingImage", "has no `after` object"),
    "after-a-string": (json.dumps({"op": "c", "after": "x", "ts_ms": 1}).encode(), "MissingImage", "`after` is not a JSON object"),
    "after-an-array": (json.dumps({"op": "u", "after": [1], "ts_ms": 1}).encode(), "MissingImage", "`after` is not a JSON object"),
    "before-of-a-delete-a-number": (json.dumps({"op": "d", "before": 5, "ts_ms": 1}).encode(), "MissingImage", "is not a JSON object"),
    "missing-key": (json.dumps({"op": "c", "after": {"first_name": "x"}, "ts_ms": 1}).encode(), "MissingKey", "key column(s) id"),
    "null-key": (json.dumps({"op": "u", "after": {"id": None}, "ts_ms": 1}).encode(), "MissingKey", "check the table's `key`"),
    "bad-value": (json.dumps({"op": "c", "after": {"id": 1, "balance": "12.x"}, "ts_ms": 1}).encode(), "BadValue", "balance (decimal(12,2))"),
    "no-position": (json.dumps({"op": "c", "after": {"id": 1}}).encode(), "MissingOrder", "no source position"),
    "negative-pos": (json.dumps({"op": "c", "after": {"id": 1}, "source": {"file": "mysql-bin.000003", "pos": -5, "ts_ms": 1}}).encode(), "BadOrder", "malformed source position"),
    "negative-row": (json.dumps({"op": "c", "after": {"id": 1}, "source": {"file": "mysql-bin.000003", "pos": 5, "row": -1}}).encode(), "BadOrder", "malformed source position"),
    "bad-binlog-file": (json.dumps({"op": "c", "after": {"id": 1}, "source": {"file": "garbage", "pos": 5, "ts_ms": 1}}).encode(), "BadOrder", "binlog file name"),
    "file-without-pos": (json.dumps({"op": "c", "after": {"id": 1}, "source": {"file": "mysql-bin.000003", "ts_ms": 1}}).encode(), "BadOrder", "malformed source position"),
    "pos-not-a-number": (json.dumps({"op": "c", "after": {"id": 1}, "source": {"file": "mysql-bin.000003", "pos": "x", "ts_ms": 1}}).encode(), "BadOrder", "malformed source position"),
    "negative-lsn": (json.dumps({"op": "c", "after": {"id": 1}, "source": {"lsn": -1, "ts_ms": 1}}).encode(), "BadOrder", "malformed source position"),
    "bad-sequence": (json.dumps({"op": "c", "after": {"id": 1}, "source": {"lsn": 10, "sequence": "[\"x\",\"10\"]", "ts_ms": 1}}).encode(), "BadOrder", "source.sequence"),
    "negative-ts-ms": (json.dumps({"op": "c", "after": {"id": 1}, "ts_ms": -3}).encode(), "BadOrder", "malformed source position"),
    "schema-not-json": (b'{"schema": "text", "payload": {"op": "c", "after": {"id": 1}, "ts_ms": 1}}', "BadSchema", "not a Kafka Connect schema"),
    "schema-not-an-object": (b'{"schema": 7, "payload": {"op": "c", "after": {"id": 1}, "ts_ms": 1}}', "BadSchema", "not a Kafka Connect schema"),
    # compact, as JsonConverter writes it
    "compact-schema-not-json": (b'{"schema":{"type":"struct",oops},"payload":{"op":"c","after":{"id":1},"ts_ms":1}}', "MalformedJson", "not a JSON object"),
    "compact-payload-not-json": (b'{"schema":{"type":"struct","fields":[]},"payload":{"op":"c","after":{"id":1},"ts_ms":}', "MalformedJson", "not a JSON object"),
}  # fmt: skip


def _with_after(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": [{"field": "after", "type": "struct", "fields": list(fields)}]}


_DECIMAL = "org.apache.kafka.connect.data.Decimal"
_NOT_CONNECT = "is not a Kafka Connect schema ("
ODD_SCHEMAS: dict[str, tuple[Any, str]] = {
    "fields not a list": ({"type": "struct", "fields": 5}, _NOT_CONNECT),
    "a field not an object": ({"type": "struct", "fields": ["x"]}, _NOT_CONNECT),
    "after's fields not a list": ({"type": "struct", "fields": [{"field": "after", "type": "struct", "fields": 5}]}, _NOT_CONNECT),
    "a decimal scale not a number": (_with_after({"field": "id", "type": "bytes", "name": _DECIMAL, "parameters": {"scale": "x"}}), _NOT_CONNECT),
    "decimal parameters not an object": (_with_after({"field": "id", "type": "bytes", "name": _DECIMAL, "parameters": "x"}), _NOT_CONNECT),
    "a struct field without a name": (_with_after({"field": "name", "type": "struct", "fields": [{"type": "int32"}]}), _NOT_CONNECT),
    "array items not a schema": (_with_after({"field": "name", "type": "array", "items": "x"}), _NOT_CONNECT),
    "a field name not a string": (_with_after({"field": 7, "type": "int32"}), _NOT_CONNECT),
    # names the framework's own columns use: a source column of such a name would be overwritten
    "a _cdc_ column": (_with_after({"field": "id", "type": "int32"}, {"field": "_cdc_order", "type": "string"}), "'_cdc_order' start with a prefix hudi_cdc reserves"),
    "a Hudi meta column": (_with_after({"field": "id", "type": "int32"}, {"field": "_hoodie_commit_time", "type": "string"}), "'_hoodie_commit_time' start with"),
    "names equal but for case": (_with_after({"field": "id", "type": "int32"}, {"field": "ID", "type": "int32"}), "'id' and 'ID' differ only in case"),
    # Hudi's writer refuses them (org.apache.avro.SchemaParseException: Illegal character), failing the whole batch
    "a struct field name Avro refuses": (_with_after({"field": "id", "type": "int32"}, {"field": "point", "type": "struct", "fields": [{"field": "x y", "type": "int32"}]}), "struct field(s) 'point.x y' are not names Hudi can store"),
    "a name Avro refuses": (_with_after({"field": "id", "type": "int32"}, {"field": "first name", "type": "string"}, {"field": "order-id", "type": "int32"}), "'first name', 'order-id' are not names Hudi can store"),
}  # fmt: skip


def test_a_schema_decode_cannot_use_rejects_its_records_only(spark: SparkSession) -> None:
    """The schemas are read on the driver: each of these stopped the whole batch with a Python or
    Spark error, or (reserved names) put a source column beside the framework's column of that name."""
    payload = {"op": "c", "ts_ms": 5, "after": {"id": 2, "name": "x"}}
    odd = [(b'{"id": 2}', json.dumps({"schema": schema, "payload": payload}).encode()) for schema, _ in ODD_SCHEMAS.values()]
    result = decode_cached(kafka_rows(spark, [CUSTOMERS.change("c", after=ANNE), *odd]), DECLARED)
    rejects = by_offset(result.rejects)
    assert [e["id"] for e in result.events.collect()] == [ANNE["id"]]
    assert sorted(rejects) == list(range(1, len(ODD_SCHEMAS) + 1))
    for (case, (_, message)), offset in zip(ODD_SCHEMAS.items(), sorted(rejects), strict=True):
        assert rejects[offset]["error_class"] == "BadSchema", case
        assert "the envelope's `schema` cannot type the table: " in rejects[offset]["error_message"], case
        assert message in rejects[offset]["error_message"], case


@pytest.mark.parametrize(
    "columns", [{"id": "int", "_cdc_op": "string"}, {"id": "int", "Id": "int"}, {"id": "int", "a.b": "int"}]
)
def test_declared_columns_a_table_cannot_hold_are_a_config_error(columns: dict[str, str]) -> None:
    with pytest.raises(ValueError, match=r"prefix hudi_cdc reserves|differ only in case|not names Hudi can store"):
        TableConfig(name="t", key=["id"], base_path="/x", columns=columns)


@pytest.fixture(scope="module")
def rejected(spark: SparkSession) -> tuple[dict[int, dict[str, Any]], int]:
    """The bad records (offsets 1..) decoded in one batch after one good record (offset 0)."""
    records = [CUSTOMERS.change("c", after=ANNE)] + [
        (b"\x00not-json-key", value) for value, _, _ in BAD.values()
    ]
    result = decode_cached(kafka_rows(spark, records), DECLARED)
    return by_offset(result.rejects), result.events.count()


@pytest.mark.parametrize("case", list(BAD))
def test_bad_record_is_rejected_with_position_reason_and_bytes(
    rejected: tuple[dict[int, dict[str, Any]], int], case: str
) -> None:
    offset = list(BAD).index(case) + 1
    value, error_class, reason = BAD[case]
    reject = rejected[0][offset]
    assert (reject["error_class"], reject["table"], reject["topic"], reject["partition"]) == (
        error_class,
        "customers",
        TOPIC,
        0,
    )
    assert reason in reject["error_message"], reject["error_message"]
    assert reject["error_message"].startswith(f"{TOPIC}[0]@{offset} table customers: ")
    assert (bytes(reject["value"]), bytes(reject["key"])) == (value, b"\x00not-json-key")


def test_good_record_of_a_bad_batch_is_unaffected(rejected: tuple[dict[int, dict[str, Any]], int]) -> None:
    assert rejected[1] == 1 and 0 not in rejected[0] and len(rejected[0]) == len(BAD)


def test_an_update_whose_before_is_no_object_lands_from_its_after(spark: SparkSession) -> None:
    # `before` is read only for a delete: an odd one beside a good `after` costs the record nothing
    odd = {"op": "u", "before": "x", "after": {"id": 2, "first_name": "B"}, "source": {"ts_ms": 1}, "ts_ms": 1}
    result = decode_cached(kafka_rows(spark, [(b'{"id": 2}', json.dumps(odd).encode())]), DECLARED)
    assert result.rejects.count() == 0
    assert [(e["id"], e["first_name"]) for e in result.events.collect()] == [(2, "B")]


def test_missing_ordering_column_is_rejected(spark: SparkSession) -> None:
    records = [
        patch_message({"id": 1}, 5, {"age": 2}),
        (None, json.dumps({"id": 2, "data": {"age": 3}}).encode()),
    ]
    result = decode_cached(kafka_rows(spark, records, topic="people"), PEOPLE)
    (reject,) = result.rejects.collect()
    assert (reject["offset"], reject["error_class"]) == (1, "MissingOrder")
    assert "ordering column `ts`" in reject["error_message"]


# ---- a source schema change inside one batch -------------------------------------------------
def test_each_record_is_typed_by_its_own_schema_within_a_batch(spark: SparkSession) -> None:
    old = DebeziumTable(server="s", database="d", table="t", key=["id"], columns=[
        Column("id", "int32"), Column("qty", "int32"), Column("at", "timestamp"), Column("code", "int32")])  # fmt: skip
    new = DebeziumTable(server="s", database="d", table="t", key=["id"], columns=[
        Column("id", "int32"), Column("qty", "int64"), Column("at", "micro_timestamp"), Column("code", "string"),
        Column("note", "string")])  # fmt: skip
    at = dt.datetime(2024, 1, 2, 3, 4, 5, 678000)
    records = [
        old.change("c", after={"id": 1, "qty": 5, "at": at}),
        old.change("c", after={"id": 2, "qty": 6, "at": at, "code": 7}),  # code: int32 cannot become string
        new.change("c", after={"id": 3, "qty": 2**40, "at": at, "code": "A7", "note": "n"}),
        # the newer schema is the most used one in the batch: it decides `code`
        new.change("c", after={"id": 4, "qty": 1, "at": at, "code": "B", "note": None}),
        new.change("c", after={"id": 5, "qty": 1, "at": at, "code": "C", "note": None}),
    ]
    result = decode_cached(
        kafka_rows(spark, records, topic="s.d.t"), TableConfig(name="t", key=["id"], base_path="/unused")
    )
    types = {f.name: f.dataType.simpleString() for f in result.schema.fields}
    assert types == {"id": "int", "qty": "bigint", "at": "timestamp", "code": "string", "note": "string"}
    events = by_offset(result.events)
    assert (events[0]["qty"], events[0]["at"], sorted(events[0][PRESENT])) == (
        5,
        at,
        ["at", "code", "id", "qty"],
    )
    assert (events[2]["qty"], events[2]["at"], events[2]["code"], events[2]["note"]) == (2**40, at, "A7", "n")
    (reject,) = result.rejects.collect()
    assert (reject["offset"], reject["error_class"]) == (1, "SchemaConflict")
    assert "code is int in this record's schema, string in the batch" in reject["error_message"]


def test_a_few_contradicting_records_do_not_decide_a_new_tables_types(spark: SparkSession) -> None:
    """The schema most records carry types the batch; the minority is rejected, not adopted."""
    usual = DebeziumTable(server="s", database="d", table="t", key=["id"], columns=[
        Column("id", "int32"), Column("balance", "decimal", scale=2, precision=10)])  # fmt: skip
    odd = DebeziumTable(server="s", database="d", table="t", key=["id"], columns=[
        Column("id", "int32"), Column("balance", "string")])  # fmt: skip
    records = [odd.change("c", after={"id": 0, "balance": "lots"})]
    records += [usual.change("c", after={"id": i, "balance": Decimal("1.50")}) for i in range(1, 4)]
    records += [odd.change("c", after={"id": 9, "balance": "more"})]  # the newest record is odd too
    result = decode_cached(kafka_rows(spark, records, topic="s.d.t"), TableConfig(name="t", key=["id"], base_path="/x"))
    assert {f.name: f.dataType.simpleString() for f in result.schema.fields}["balance"] == "decimal(10,2)"
    assert sorted(e["id"] for e in result.events.collect()) == [1, 2, 3]
    assert {(r["offset"], r["error_class"]) for r in result.rejects.collect()} == {(0, "SchemaConflict"), (4, "SchemaConflict")}


def test_a_decimal_widened_beyond_38_digits_is_held_in_the_tables_decimal(spark: SparkSession) -> None:
    """Semantics §7, decimal precision up with the same scale: DECIMAL(20,2) -> DECIMAL(50,2) at the
    source. A new table stores the wide column as exact text; a table holding decimal(20,2) widens
    to decimal(38,2) (a decimal cannot become text in place), and a value beyond 38 digits is a
    bad value that names the way out, never a NULL."""
    source = DebeziumTable(server="s", database="d", table="t", key=["id"], columns=[
        Column("id", "int32"), Column("amount", "decimal", scale=2, precision=50)])  # fmt: skip
    fits, beyond = Decimal("123456789012345678901234567890123456.78"), Decimal("1" + "0" * 40 + ".25")
    raw = kafka_rows(spark, [source.change("c", after={"id": 1, "amount": fits}),
                             source.change("c", after={"id": 2, "amount": beyond})], topic="s.d.t")  # fmt: skip
    table = TableConfig(name="t", key=["id"], base_path="/x")
    new = decode(raw, table).cached()
    assert new.schema["amount"].dataType == StringType()
    assert {e["id"]: e["amount"] for e in new.events.collect()} == {1: str(fits), 2: str(beyond)}

    stored = StructType([StructField("id", IntegerType()), StructField("amount", DecimalType(20, 2))])
    held = decode(raw, table, stored=stored).cached()
    assert held.schema["amount"].dataType == DecimalType(38, 2)
    assert {e["id"]: e["amount"] for e in held.events.collect()} == {1: fits}
    (reject,) = held.rejects.collect()
    assert (reject["offset"], reject["error_class"]) == (1, "BadValue")
    assert "amount (decimal(38,2)): more than 38 digits" in reject["error_message"]

    other_scale = StructType([StructField("id", IntegerType()), StructField("amount", DecimalType(20, 3))])
    assert decode(raw, table, stored=other_scale).schema["amount"].dataType == StringType()  # a scale change


def test_binary_column_round_trips(spark: SparkSession) -> None:
    key, value = DOCS.change("c", after={"id": 1, "blob": b"\x00\xff\x10", "version": 1})
    (event,) = decode_cached(kafka_rows(spark, [(key, value)], topic=DOCS.topic), DOCS_TABLE).events.collect()
    assert bytes(event["blob"]) == b"\x00\xff\x10"
    assert base64.b64decode(json.loads(value or b"")["payload"]["after"]["blob"]) == b"\x00\xff\x10"


def test_postgres_changes_sharing_an_lsn_are_ordered_by_sequence_then_txid(spark: SparkSession) -> None:
    """Semantics §2: equal lsn -> source.sequence's last committed lsn, then txId, before the Kafka offset."""

    def change(version: int, committed: int, tx_id: int) -> KafkaRecord:
        key, value = DOCS.change("u", after={"id": 1, "title": f"v{version}", "version": version}, lsn=5_000)
        envelope = json.loads(value or b"")
        envelope["payload"]["source"].update(sequence=json.dumps([str(committed), "5000"]), txId=tx_id)
        return key, json.dumps(envelope).encode()

    # arrival (Kafka offset) order is the reverse of the source's order
    records = [change(3, committed=4_900, tx_id=781), change(2, committed=4_900, tx_id=780), change(1, committed=4_800, tx_id=999)]
    events = by_offset(decode_cached(kafka_rows(spark, records, topic=DOCS.topic), DOCS_TABLE).events)
    ordered = sorted(events.values(), key=lambda e: e["_cdc_order"])
    assert [e["version"] for e in ordered] == [1, 2, 3]


def test_records_without_a_row_change_are_skipped_with_a_reason(spark: SparkSession) -> None:
    """PostgreSQL logical messages, schema-change records and transaction markers are not bad data."""
    message = {"op": "m", "ts_ms": 1, "source": {"lsn": 10, "ts_ms": 1}, "message": {"prefix": "audit", "content": "AQ=="}}
    ddl = {"source": {"file": "mysql-bin.000003", "pos": 4, "ts_ms": 1}, "databaseName": "inventory",
           "ddl": "ALTER TABLE customers ADD COLUMN x INT", "tableChanges": []}  # fmt: skip
    marker = {"status": "BEGIN", "id": "571:53195829", "event_count": None, "data_collections": None}
    records = [CUSTOMERS.change("c", after=ANNE)] + [(None, json.dumps(v).encode()) for v in (message, ddl, marker)]
    result = decode_cached(kafka_rows(spark, records), CUSTOMERS_TABLE)
    skipped = {r["offset"]: r["reason"] for r in result.skipped.collect()}
    assert skipped == {
        1: "logical decoding message (op m)",
        2: "schema change record (ddl)",
        3: "transaction marker",
    }
    assert result.rejects.count() == 0 and [e["id"] for e in result.events.collect()] == [1004]


def test_an_envelope_with_a_null_schema_is_read_as_a_plain_payload(spark: SparkSession) -> None:
    table = TableConfig(name="customers", key=["id"], base_path="/unused", columns={"id": "int", "first_name": "string"})
    _, value = CUSTOMERS.change("d", before=ANNE)
    envelope = json.loads(value or b"")
    envelope["schema"] = None
    (event,) = decode_cached(kafka_rows(spark, [(None, json.dumps(envelope).encode())]), table).events.collect()
    assert (event["id"], event["_cdc_op"]) == (1004, "d")


def test_schemaless_debezium_encodings_are_read_exactly_with_declared_connect_schemas(spark: SparkSession) -> None:
    """schemas.enable=false sends base64 decimals and epoch dates/timestamps; declare them as Connect types."""
    plain = DebeziumTable(server="dbserver1", database="inventory", table="customers", key=["id"], with_schema=False,
                          columns=[c for c in CUSTOMERS.columns if c.name != "profile"])  # fmt: skip
    table = TableConfig(
        name="customers",
        key=["id"],
        base_path="/unused",
        columns={
            "id": "int",
            "first_name": "string",
            "last_name": "string",
            "email": "string",
            "balance": {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
                        "parameters": {"scale": "2", "connect.decimal.precision": "12"}},
            "born": {"type": "int32", "name": "io.debezium.time.Date"},
            "updated_at": {"type": "int64", "name": "io.debezium.time.MicroTimestamp"},
        },
    )  # fmt: skip
    row = {k: v for k, v in ANNE.items() if k != "profile"}
    (event,) = decode_cached(kafka_rows(spark, [plain.change("c", after=row)]), table).events.collect()
    assert {k: event[k] for k in row} == row


# ---- expressions built once per shape (plan_cache) -------------------------------------------
def test_a_later_batch_of_the_same_shape_reuses_the_plan_and_decodes_its_own_records(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hudi_cdc.decode.records as decode_module

    table = TableConfig(name="customers_plan_cache", key=["id"], base_path="/unused")
    built: list[int] = []
    real_plan = decode_module._plan

    def counted(*args: Any, **kwargs: Any) -> Any:
        built.append(1)
        return real_plan(*args, **kwargs)

    monkeypatch.setattr(decode_module, "_plan", counted)
    first = decode_cached(kafka_rows(spark, [CUSTOMERS.change("c", after=ANNE, pos=10)]), table)
    second = decode_cached(kafka_rows(spark, [CUSTOMERS.change("c", after=SALLY, pos=20)]), table)
    assert len(built) == 1
    assert [r["first_name"] for r in first.events.collect()] == ["Anne"]
    assert [r["first_name"] for r in second.events.collect()] == ["Sally"]

    # a source schema change is another shape: the new column is typed, not dropped
    wider = DebeziumTable(
        server=CUSTOMERS.server, database=CUSTOMERS.database, table=CUSTOMERS.table, key=CUSTOMERS.key,
        columns=[*CUSTOMERS.columns, Column("vip", "boolean")],
    )  # fmt: skip
    third = decode_cached(kafka_rows(spark, [wider.change("c", after={**ANNE, "vip": True}, pos=30)]), table)
    assert len(built) == 2
    assert [(r["first_name"], r["vip"]) for r in third.events.collect()] == [("Anne", True)]
