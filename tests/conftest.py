"""Shared test set-up: hypothesis profiles and one local SparkSession for the whole run."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings
from pyspark.sql import SparkSession

# the workbench points hudi_cdc at the checkout's build/ (jars) unless HUDI_CDC_BUILD is set
import devkit  # noqa: F401

# `make test` keeps example counts small; `make test-deep` sets HYPOTHESIS_PROFILE=deep.
settings.register_profile(
    "ci", max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.register_profile(
    "deep", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One local Spark (with the Hudi bundle and Kafka source) shared by every test."""
    from hudi_cdc.spark_session import get_or_create_session

    session = get_or_create_session(app_name="hudi-cdc-tests")
    yield session
    session.stop()
