"""spark-submit entry point of the ingestion job.

    spark-submit --jars <hudi bundle>,<spark-sql-kafka + deps> --py-files hudi_cdc.zip \
        jobs/ingest.py --config job.yaml [--once]
"""

from __future__ import annotations

import argparse

from hudi_cdc.cli.logs import configure
from hudi_cdc.config.models import load_config
from hudi_cdc.job import stream
from hudi_cdc.spark.session import get_or_create_session


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Ingest Debezium topics into Hudi tables.")
    parser.add_argument("--config", required=True, help="job YAML file")
    parser.add_argument("--once", action="store_true", help="process what is in Kafka now, then stop")
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--log-format", default="text", choices=["text", "json"])
    args = parser.parse_args(argv)
    configure(args.log_level, args.log_format)
    config = load_config(args.config)
    stream.run(get_or_create_session(app_name=config.job.name), config, once=args.once)


if __name__ == "__main__":
    main()
