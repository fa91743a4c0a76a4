"""Shared test set-up: hypothesis profiles, one local SparkSession per test process, and how
`make test` shares the tests between its pytest-xdist workers."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings
from pyspark.sql import SparkSession

# the workbench points hudi_cdc at the checkout's build/ (jars) unless HUDI_CDC_BUILD is set
import devkit

# the shared builders' asserts explain their failures as a test's own do
pytest.register_assert_rewrite("tests.support")

from tests.support.service_groups import SERVICE_GROUPS  # noqa: E402 - after the rewrite is registered

# Each xdist worker starts its own services (Kafka, the metastore, ...): their files go to
# build/run/<worker>/, so two workers' brokers never share a folder.
if _worker := os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault(devkit.RUN_ENV, str(devkit.build_dir() / "run" / _worker))

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
    from hudi_cdc.spark.session import get_or_create_session

    # Hudi's SQL: tests compact in this session (a job's own session goes without, as
    # `hudi-cdc run` starts it; the tests that run the CLI or spark-submit run that one)
    session = get_or_create_session(app_name="hudi-cdc-tests", hudi_sql=True)
    yield session
    session.stop()


def _group(item: pytest.Item) -> str:
    fixtures = getattr(item, "fixturenames", ())  # test functions have them; other items none
    for group, services in SERVICE_GROUPS.items():
        if any(name in fixtures for name in services):
            return group
    module = item.nodeid.split("::", 1)[0]  # tests/unit/fold/test_x.py -> unit/fold/test_x: xdist shows it after each id
    return module.removeprefix("tests/").removesuffix(".py")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slice",
        default=None,
        metavar="K/N",
        help="run only slice K of N (0 <= K < N) of the selected tests, by a hash of each test's id "
        "(CI runs one slice of `make test-deep` per landing, chosen from the commit)",
    )


class _Slicer:
    """Keeps the tests of `--slice` among those the markers (`-m`) selected: after their deselection."""

    def __init__(self, spec: str) -> None:
        self.spec = spec

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        kept = slice_of([item.nodeid for item in items], self.spec)
        left_out = [item for item in items if item.nodeid not in kept]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if item.nodeid in kept]


def pytest_configure(config: pytest.Config) -> None:
    spec = config.getoption("--slice")
    if spec is not None:
        config.pluginmanager.register(_Slicer(spec), "hudi-cdc-slice")


def slice_of(nodeids: list[str], spec: str) -> set[str]:
    """The tests of slice `spec` ("K/N"): every N-th of the ids in sorted order, from the K-th.

    Sorted, not as collected: every worker and every run cuts the same slices, of sizes that
    differ by one at most.
    """
    k, _, n = spec.partition("/")
    if not (k.isdigit() and n.isdigit() and 0 <= int(k) < int(n)):
        raise pytest.UsageError(f"--slice {spec!r}: write K/N with 0 <= K < N, e.g. 1/4")
    return set(sorted(nodeids)[int(k) :: int(n)])


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups off the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test its xdist group, and run the service groups first, then the other
    integration modules, then the unit tests: long units first keep the workers' ends even.

    A stable sort: within a group, tests keep their collected order.
    """
    groups = {item.nodeid: _group(item) for item in items}
    for item in items:
        item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))

    def rank(item: pytest.Item) -> int:
        if groups[item.nodeid] in SERVICE_GROUPS:
            return 0
        return 1 if item.get_closest_marker("integration") is not None else 2

    items.sort(key=rank)
