"""The workbench: local services, the demo, the benchmark driver and test-message builders.

Not packaged (the wheel holds only `hudi_cdc/`); used by the Makefile, the tests and the demo
from a checkout. Importing it points the package at the checkout's `build/` folder (jars,
service distributions, run files) unless $HUDI_CDC_BUILD already names one, so a local
SparkSession finds the Hudi bundle and Kafka source `make jars` fetched.
"""

from __future__ import annotations

import os
from pathlib import Path

from hudi_cdc.spark.session import BUILD_ENV

CHECKOUT = Path(__file__).resolve().parents[1]
"""The git checkout devkit/ lives in."""

os.environ.setdefault(BUILD_ENV, str(CHECKOUT / "build"))

RUN_ENV = "HUDI_CDC_RUN"
"""Names the folder local services keep their files in, instead of `build/run`: each pytest-xdist
worker of `make test` gets its own (tests/conftest.py), so two workers' brokers never share one."""


def build_dir() -> Path:
    """The git-ignored folder the Makefile fills: jars/, kafka/, connect/, trino/, run/<service>/."""
    return Path(os.environ.get(BUILD_ENV) or CHECKOUT / "build")


def run_root() -> Path:
    """The folder of local services' run files: $HUDI_CDC_RUN, else `build/run`."""
    return Path(os.environ.get(RUN_ENV) or build_dir() / "run")
