"""`--slice K/N` cuts the selected tests into N slices that together hold each test exactly once."""

from __future__ import annotations

import pytest

from tests.conftest import slice_of

IDS = [f"tests/integration/test_{m}.py::test_{t}" for m in "abcde" for t in range(4)]


@pytest.mark.parametrize("n", [1, 2, 4, 7])
def test_the_slices_partition_the_tests_evenly(n: int) -> None:
    slices = [slice_of(IDS, f"{k}/{n}") for k in range(n)]
    assert set().union(*slices) == set(IDS)
    assert sum(len(s) for s in slices) == len(IDS)  # disjoint
    assert max(map(len, slices)) - min(map(len, slices)) <= 1
    # the same slice whatever order the tests were collected in (every xdist worker agrees)
    assert slices[0] == slice_of(list(reversed(IDS)), f"0/{n}")


@pytest.mark.parametrize("spec", ["4/4", "x/2", "1", "-1/3"])
def test_a_slice_that_names_no_slice_is_refused(spec: str) -> None:
    with pytest.raises(pytest.UsageError, match="--slice"):
        slice_of(IDS, spec)
