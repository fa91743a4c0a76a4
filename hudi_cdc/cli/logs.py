"""Log handlers for the entry points (cli/, jobs/); library modules only call getLogger."""

from __future__ import annotations

import logging


def configure(level: str = "INFO") -> None:
    """One line per record on stderr; Spark/py4j chatter kept at WARNING."""
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("py4j", "pyspark"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
