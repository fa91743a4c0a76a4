"""Text tables show every row's columns, whichever row names them first."""

from __future__ import annotations

import click
from click.testing import CliRunner

from hudi_cdc.cli.output import TextOutput


def test_a_first_row_with_fewer_columns_drops_no_other_rows_columns() -> None:
    rows = [
        {"table": "new_one", "state": "not created"},
        {"table": "orders", "state": "ok", "last_commit": "20261204031500123", "applied_through": "orders[0]@41"},
    ]

    @click.command()
    def show() -> None:
        TextOutput().table("tables", rows)

    printed = CliRunner().invoke(show).output.splitlines()
    assert printed[1].split() == ["table", "state", "last_commit", "applied_through"]
    assert printed[3].split() == ["orders", "ok", "20261204031500123", "orders[0]@41"]
    assert printed[2].split() == ["new_one", "not", "created"]
