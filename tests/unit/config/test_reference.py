"""docs/configuration.md's reference is what the configuration models say, and every key says something."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from pydantic import BaseModel

from hudi_cdc.config import reference
from hudi_cdc.config.connector import ConnectorSection
from hudi_cdc.config.models import Config, HiveSync, TableConfig

PAGE = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"


def test_every_field_of_the_configuration_has_a_docstring() -> None:
    missing = reference.undocumented()
    assert not missing, (
        "write a docstring (a string literal on the line after the field) for: " + ", ".join(missing)
    )


def test_the_page_holds_what_the_models_say() -> None:
    page = PAGE.read_text()
    expected = reference.replace_generated(page, reference.render())
    diff = "".join(
        difflib.unified_diff(page.splitlines(True), expected.splitlines(True), "docs/configuration.md", "render()", n=1)
    )
    assert page == expected, f"docs/configuration.md is out of date: run `make docs`\n{diff[:4000]}"


def test_every_model_has_a_section_and_every_field_a_row() -> None:
    rendered = reference.render()
    paths = {s.path: s.model for s in reference.sections()}
    assert paths[""] is Config and paths["tables[]"] is TableConfig
    assert paths["tables[].hive"] is HiveSync and paths["connector"] is ConnectorSection
    for model in paths.values():
        assert f"({model.__name__})" in rendered
        for name in model.model_fields:
            assert f"| `{name}` |" in rendered, f"{model.__name__}.{name} has no row"


class _Half(BaseModel):
    """A model with one documented field and one without."""

    documented: int = 1
    """Says what it is."""
    bare: str = "x"


def test_a_field_without_a_docstring_is_found() -> None:
    """The docstring reader can fail: a field without a string literal after it has no docstring."""
    assert reference.field_docstrings(_Half) == {"documented": "Says what it is."}


def test_the_rows_say_type_default_and_meaning() -> None:
    rendered = reference.render()
    assert "| `trigger_interval` | duration | `30 seconds` |" in rendered
    assert "| `key` | list of text, not empty | required |" in rendered
    assert "| `buckets` | integer, > 0 | `8` |" in rendered
    assert "| `hive` | [HiveSync](#tables-hive) | [its defaults](#tables-hive) |" in rendered
    assert "| `max_offsets_per_trigger` | integer or null, > 0 | none |" in rendered
    assert "| `type` | one of `COPY_ON_WRITE`, `MERGE_ON_READ` | `COPY_ON_WRITE` |" in rendered


def test_markdown_is_escaped_outside_code() -> None:
    assert reference._one_line("a `<b>|*` <c> *d* | e") == "a `<b>\\|*` &lt;c&gt; \\*d\\* \\| e"


def test_a_page_without_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="BEGIN"):
        reference.replace_generated("# no markers\n", "x")
