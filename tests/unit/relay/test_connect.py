"""The production Kafka Connect helpers behind `hudi-cdc resume-binlog` (no services needed)."""

from __future__ import annotations

import sys

import pytest

from hudi_cdc.errors import CdcError, ConnectError
from hudi_cdc.relay.connect import binlog_gtid_pos, binlog_offset


def test_binlog_offset_is_debeziums_partition_and_offset() -> None:
    assert binlog_offset("srv", "mariadb-bin.000003", 4567, "0-1-9") == {
        "partition": {"server": "srv"},
        "offset": {"file": "mariadb-bin.000003", "pos": 4567, "gtids": "0-1-9"},
    }


def test_gtid_lookup_without_pymysql_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pymysql", None)  # `import pymysql` raises ImportError

    with pytest.raises(ConnectError, match=r"hudi-cdc\[mysql\]") as raised:
        binlog_gtid_pos(host="db", port=3306, user="u", password="p", binlog_file="f.000001", binlog_pos=4)

    assert isinstance(raised.value, CdcError)
    assert raised.value.where == "source database"
