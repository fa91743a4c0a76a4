"""How commands print: text tables show every row's columns, whichever row names them first; JSON envelopes."""

from __future__ import annotations

import json

import click
from click.testing import CliRunner

from hudi_cdc.cli.output import FORMAT, JsonOutput, TextOutput


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


def test_json_envelopes_carry_the_format_and_the_command_one_document_per_line() -> None:
    @click.command()
    def show() -> None:
        out = JsonOutput("dead-letters list")
        out.table("3 dead letters", [{"table": "a", "offset": 7}])
        out.message("done")
        out.table("status", [], details={"all_done": True})
        out.error("ConfigError", "job.yaml: bad", exit_code=2)

    lines = CliRunner().invoke(show).stdout.splitlines()
    assert [json.loads(line) for line in lines] == [
        {"format": FORMAT, "command": "dead-letters list", "title": "3 dead letters", "rows": [{"table": "a", "offset": 7}]},
        {"format": FORMAT, "command": "dead-letters list", "message": "done"},
        {"format": FORMAT, "command": "dead-letters list", "title": "status", "rows": [], "details": {"all_done": True}},
        {"format": FORMAT, "command": "dead-letters list", "error": {"type": "ConfigError", "message": "job.yaml: bad", "exit_code": 2}},
    ]
    assert FORMAT == 1


def test_text_tables_show_details_before_the_rows() -> None:
    @click.command()
    def show() -> None:
        TextOutput().table("relay", [{"table": "a"}], details={"connector": "c", "all_done": False})

    assert CliRunner().invoke(show).output.splitlines() == ["relay", "  connector  c", "  all_done   False", "table", "a    "]
