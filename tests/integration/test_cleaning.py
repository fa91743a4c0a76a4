"""Hudi's cleaner at the project's defaults (`hoodie_keys.py`): it keeps the file versions of the
last 10 commits, and runs once every 10 commits rather than after each one (twelfth round of
docs/performance-journal.md: a clean costs about the same whatever it deletes)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from hudi_cdc.config.models import TableConfig
from hudi_cdc.hudi import writer
from hudi_cdc.hudi.table import read_table
from hudi_cdc.hudi.table_options import write_options
from hudi_cdc.hudi.timeline import TableTimeline

pytestmark = pytest.mark.integration

ROW_SCHEMA = "id long, name string, amount decimal(10,2)"
UPDATES = 24
"""Commits after the first: past the second time the cleaner is due, and far more cleans than
that if it ran after every commit."""


def _rows(spark: SparkSession, rows: list[tuple[int, str, Decimal]]) -> DataFrame:
    return spark.createDataFrame(rows, ROW_SCHEMA)


def _completed(table: TableConfig, action: str) -> int:
    timeline = Path(table.base_path) / ".hoodie" / "timeline"
    return sum(1 for p in timeline.iterdir() if p.suffix == f".{action}")


def _base_file_versions(table: TableConfig) -> int:
    """Parquet files of the table's data (every version of every file group), metadata excluded."""
    return sum(1 for p in Path(table.base_path).glob("*.parquet"))


@pytest.mark.parametrize("batch_timeline", [False, True], ids=["cleaner-checks-each-commit", "job-reads-the-trigger"])
def test_a_copy_on_write_table_cleans_every_10_commits_and_keeps_the_last_10_versions(
    spark: SparkSession, tmp_path: Path, batch_timeline: bool
) -> None:
    """`batch_timeline`: as the job writes, with the timeline its batch read, which turns Hudi's
    cleaner off for the commits where no clean can be due (`hudi.retention.cleaning_options`)."""
    table = TableConfig(name="cleaned", key=["id"], base_path=str(tmp_path / "cleaned"))
    options = write_options(table)
    writer.write(
        _rows(spark, [(i, f"n{i}", Decimal(i)) for i in range(1, 7)]),
        table=table.name, base_path=table.base_path, options=options, commit_metadata={},
        archive_after_hours=table.archive_after_hours,
    )  # fmt: skip
    for i in range(1, UPDATES + 1):
        # one row of the one file group: every commit writes a new version of it
        writer.write(
            _rows(spark, [(1, f"v{i}", Decimal(i))]),
            table=table.name, base_path=table.base_path, options=options, commit_metadata={},
            archive_after_hours=table.archive_after_hours,
            timeline=TableTimeline(spark, table.base_path) if batch_timeline else None,
        )  # fmt: skip

    assert _completed(table, "commit") == UPDATES + 1
    cleans = _completed(table, "clean")
    # due after commits 10 and 20; cleaning after every commit would have cleaned about 15 times
    assert 1 <= cleans <= 3, f"{cleans} cleans in {UPDATES + 1} commits"
    versions = _base_file_versions(table)
    # at least the 10 retained commits' versions stay; between two cleans at most 10 more pile up
    assert 10 <= versions <= 21, f"{versions} file versions after {cleans} cleans"
    stored = read_table(spark, table.base_path)
    assert stored is not None
    assert {(r["id"], r["name"]) for r in stored.select("id", "name").collect()} == {
        (1, f"v{UPDATES}"),
        *((i, f"n{i}") for i in range(2, 7)),
    }
