"""`TableTimeline`: one meta client per table batch answers what separate reads answered."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from pyspark.sql import SparkSession

from hudi_cdc.commit.offsets import BATCH_KEY, OFFSETS_KEY
from hudi_cdc.config.models import TableConfig
from hudi_cdc.hoodie_keys import AUTO_ARCHIVE, AUTO_CLEAN
from hudi_cdc.hudi import writer
from hudi_cdc.hudi.retention import archival_options, cleaning_options
from hudi_cdc.hudi.table import latest_commit
from hudi_cdc.hudi.table_options import write_options
from hudi_cdc.hudi.timeline import TableTimeline, latest_job_metadata

ROW_SCHEMA = "id long, name string, amount decimal(10,2)"


def _write(spark: SparkSession, table: TableConfig, i: int, timeline: TableTimeline | None) -> writer.WriteResult:
    return writer.write(
        spark.createDataFrame([(1, f"v{i}", Decimal(i)), (i + 1, "new", Decimal(0))], ROW_SCHEMA),
        table=table.name, base_path=table.base_path, options=write_options(table),
        commit_metadata={OFFSETS_KEY: "{}", BATCH_KEY: str(i)}, archive_after_hours=table.archive_after_hours, timeline=timeline,
    )  # fmt: skip


def test_a_batch_reads_the_timeline_once_and_reads_back_its_own_commit(spark: SparkSession, tmp_path: Path) -> None:
    table = TableConfig(name="timed", key=["id"], base_path=str(tmp_path / "timed"))
    first = _write(spark, table, 0, None)
    second = _write(spark, table, 1, None)

    timeline = TableTimeline(spark, table.base_path)
    assert timeline.job_metadata() == latest_job_metadata(spark, table.base_path)
    assert timeline.job_metadata()[BATCH_KEY] == "1"
    assert timeline.commits().count() == 2
    # two commits, far inside the window: the commit is told to skip the archiver
    assert archival_options(spark, table.base_path, table.archive_after_hours, commits=timeline.commits())[AUTO_ARCHIVE] == "false"
    # and no clean is due for 10 commits
    assert timeline.commits().clean_state().since_last_clean == 2 and not timeline.commits().clean_state().pending
    assert cleaning_options(timeline.commits().clean_state(), write_options(table)) == {AUTO_CLEAN: "false"}

    third = _write(spark, table, 2, timeline)
    assert third.commit_time is not None
    assert len({first.commit_time, second.commit_time, third.commit_time}) == 3
    # read back through the batch's meta client, listed again: the commit just made
    assert third.commit_time == latest_commit(spark, table.base_path)
    assert TableTimeline(spark, table.base_path).commits().count() == 3
    assert latest_job_metadata(spark, table.base_path)[BATCH_KEY] == "2"
