"""spark-submit entry point of the compaction job (merge-on-read tables, off the ingestion path)."""

from __future__ import annotations

import argparse

from hudi_cdc.cli.logs import configure
from hudi_cdc.config.models import load_config
from hudi_cdc.hudi.compactor import run_compaction
from hudi_cdc.spark.session import job_session


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Compact merge-on-read Hudi tables.")
    parser.add_argument("--config", required=True, help="job YAML file")
    parser.add_argument("--table", action="append", default=[], help="only this table (repeatable)")
    args = parser.parse_args(argv)
    configure()
    config = load_config(args.config)
    spark = job_session(config.job, "compact", hudi_sql=True)
    for table in config.tables:
        if table.type == "MERGE_ON_READ" and (not args.table or table.name in args.table):
            run_compaction(spark, table)


if __name__ == "__main__":
    main()
