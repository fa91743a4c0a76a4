"""A key given twice in the job file is refused, wherever it is: PyYAML alone would keep the last."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_cdc.config.models import load_config
from hudi_cdc.config.yaml_file import read_yaml
from hudi_cdc.errors import ConfigError

JOB = """\
job:
  name: shop
  checkpoint_dir: {root}/cp
  dead_letter_path: {root}/dl
kafka:
  bootstrap_servers: localhost:9092
tables:
  - name: orders
    key: [id]
{extra}    base_path: {root}/orders
routes:
  - topic: shop.orders
    table: orders
"""


def test_the_job_file_loads_without_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(JOB.format(root=tmp_path, extra=""))
    assert load_config(path).table("orders").key == ["id"]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("job:\n  name: a\njob:\n  name: b\n", 3),
        ("a:\n  b: 1\n  c: 2\n  b: 3\n", 4),
        ("- {x: 1, x: 2}\n", 1),
    ],
)
def test_a_duplicate_key_is_an_error_naming_it_and_its_lines(text: str, line: int) -> None:
    with pytest.raises(Exception, match="duplicate key") as caught:
        read_yaml(text)
    assert f"line {line}" in str(caught.value)


def test_a_table_key_given_twice_stops_load_config(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(JOB.format(root=tmp_path, extra="    key: [sku]\n"))
    with pytest.raises(ConfigError, match=r"duplicate key 'key' \(first on line 9\)"):
        load_config(path)


def test_merge_keys_still_merge() -> None:
    assert read_yaml("base: &b {x: 1}\nt:\n  <<: *b\n  y: 2\n") == {"base": {"x": 1}, "t": {"x": 1, "y": 2}}
