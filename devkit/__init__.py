"""The workbench: local services, the demo, the benchmark driver and test-message builders.

Not packaged (the wheel holds only `hudi_cdc/`); used by the Makefile, the tests and the demo
from a checkout. Importing it points the package at the checkout's `build/` folder (jars,
service distributions, run files) unless $HUDI_CDC_BUILD already names one, so a local
SparkSession finds the Hudi bundle and Kafka source `make jars` fetched.
"""

from __future__ import annotations

import os
from pathlib import Path

from hudi_cdc.spark_session import BUILD_ENV

CHECKOUT = Path(__file__).resolve().parents[1]
"""The git checkout devkit/ lives in."""

os.environ.setdefault(BUILD_ENV, str(CHECKOUT / "build"))


def build_dir() -> Path:
    """The git-ignored folder the Makefile fills: jars/, kafka/, connect/, trino/, run/<service>/."""
    return Path(os.environ.get(BUILD_ENV) or CHECKOUT / "build")
